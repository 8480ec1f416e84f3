//go:build e2e

package loadgen

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/e2e/internal/program"
)

func TestLoadgen(t *testing.T) {
	RegisterFailHandler(Fail)
	suiteConfig, reporterConfig := GinkgoConfiguration()
	reporterConfig.Verbose = true
	RunSpecs(t, "Loadgen Suite", suiteConfig, reporterConfig)
}

var (
	binary string // the built loadgen
	tmpDir string
)

var _ = BeforeSuite(func() {
	tmpDir = GinkgoT().TempDir()
	binary = program.Build("./examples/loadgen", tmpDir)
})
