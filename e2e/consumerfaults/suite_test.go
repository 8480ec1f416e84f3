//go:build e2e

package consumerfaults

import (
	"strconv"
	"testing"

	. "github.com/onsi/ginkgo/v2"

	"github.com/keyroute/keyroute/e2e/internal/bedsuite"
	"github.com/keyroute/keyroute/internal/testbed"
)

func TestConsumerFaults(t *testing.T) { bedsuite.Run(t, "Consumer Fault Suite") }

// markDeleteRate is the brokers' managedLedgerDefaultMarkDeleteRateLimit:
// how many times a second a subscription's acknowledged position is
// written to its cursor ledger. The broker answers an acknowledgement
// before that write, so a broker killed with SIGKILL forgets the
// acknowledgements answered since its last completed write, usually those
// of the last 1/markDeleteRate and a write before the kill, and those
// messages come again (see forgotten). The standalone's own default is 0.1
// (ten seconds); 1 is the broker.conf default of a real cluster.
const markDeleteRate = 1.0

var (
	suite *bedsuite.Suite
	bed   *testbed.Bed
)

var _ = BeforeSuite(func() {
	suite = bedsuite.Start(testbed.Options{
		Clusters: 5,
		ExtraConfig: map[string]string{
			// Messages the producer's client sends again after its
			// connection to the killed broker broke are written once.
			"brokerDeduplicationEnabled":              "true",
			"managedLedgerDefaultMarkDeleteRateLimit": strconv.FormatFloat(markDeleteRate, 'g', -1, 64),
		},
	})
	bed = suite.Bed
})
