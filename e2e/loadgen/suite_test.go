//go:build e2e

package loadgen

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
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
	binary = filepath.Join(tmpDir, "loadgen")
	root, err := filepath.Abs(filepath.Join("..", ".."))
	Expect(err).NotTo(HaveOccurred())
	t0 := time.Now()
	cmd := exec.Command("go", "build", "-o", binary, "./examples/loadgen")
	cmd.Dir = root
	cmd.Env = os.Environ()
	out, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "go build ./examples/loadgen:\n%s", out)
	GinkgoWriter.Printf("built %s in %s\n", binary, time.Since(t0).Round(time.Millisecond))
})
