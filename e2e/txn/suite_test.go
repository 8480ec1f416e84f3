//go:build e2e

package txn

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"

	"github.com/keyroute/keyroute/e2e/internal/bedsuite"
	"github.com/keyroute/keyroute/internal/testbed"
)

func TestTxn(t *testing.T) { bedsuite.Run(t, "Transactions Suite") }

var (
	bed   *testbed.Bed
	suite *bedsuite.Suite
)

var _ = BeforeSuite(func() {
	suite = bedsuite.Start(testbed.Options{Clusters: 5})
	bed = suite.Bed
})
