//go:build e2e

package smoke

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"

	"github.com/keyroute/keyroute/e2e/internal/bedsuite"
	"github.com/keyroute/keyroute/internal/testbed"
)

func TestSmoke(t *testing.T) { bedsuite.Run(t, "Smoke Suite") }

var (
	bed   *testbed.Bed
	suite *bedsuite.Suite
)

func step(name string) { suite.Step(name) }

var _ = BeforeSuite(func() {
	suite = bedsuite.Start(testbed.Options{Clusters: 5})
	bed = suite.Bed
})
