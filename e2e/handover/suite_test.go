//go:build e2e

package handover

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"

	"github.com/keyroute/keyroute/e2e/internal/bedsuite"
	"github.com/keyroute/keyroute/internal/testbed"
)

func TestHandover(t *testing.T) { bedsuite.Run(t, "Hand-over Suite") }

// clusterCount is how many clusters the suite starts: the hand-written
// SPEC producer's spec needs three; the load specs of producer.Update
// raise it (live_test.go).
var clusterCount = 3

var suite *bedsuite.Suite

var _ = BeforeSuite(func() {
	suite = bedsuite.Start(testbed.Options{Clusters: clusterCount})
})
