//go:build e2e

package smoke

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/e2e/internal/bedsuite"
	"github.com/keyroute/keyroute/internal/testbed"
)

func TestSmoke(t *testing.T) {
	RegisterFailHandler(Fail)
	// Verbose, so that `go test -v` shows the per-step timings written to
	// GinkgoWriter even when every spec passes.
	suiteConfig, reporterConfig := GinkgoConfiguration()
	reporterConfig.Verbose = true
	RunSpecs(t, "Smoke Suite", suiteConfig, reporterConfig)
}

var (
	bed   *testbed.Bed
	suite *bedsuite.Suite
)

func step(name string) { suite.Step(name) }

var _ = BeforeSuite(func() {
	suite = bedsuite.Start(5)
	bed = suite.Bed
	step("")
})
