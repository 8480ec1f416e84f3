//go:build e2e

package smoke

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

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
	bed      *testbed.Bed
	allPIDs  []int // every JVM pid seen, checked for survivors at the end
	suiteT0  time.Time
	stepT0   time.Time
	stepName string
)

// step prints the duration of the previous step and starts timing the next.
func step(name string) {
	now := time.Now()
	if stepName != "" {
		GinkgoWriter.Printf("step %-45s %8s\n", stepName, now.Sub(stepT0).Round(time.Millisecond))
	}
	stepName, stepT0 = name, now
}

var _ = BeforeSuite(func() {
	suiteT0 = time.Now()
	step("start 5 clusters")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	var err error
	bed, err = testbed.Start(ctx, testbed.Options{Clusters: 5, Log: GinkgoWriter})
	// Never skip: a test bed that cannot start is a failure.
	Expect(err).NotTo(HaveOccurred(), "the test bed must start five clusters")
	Expect(bed.Clusters()).To(HaveLen(5))
	for _, c := range bed.Clusters() {
		Expect(c.PID()).To(BeNumerically(">", 0))
		allPIDs = append(allPIDs, c.PID())
	}
	step("")

	DeferCleanup(func() {
		step("stop all clusters")
		Expect(bed.Stop()).To(Succeed())
		step("")
		for _, pid := range allPIDs {
			err := syscall.Kill(pid, 0)
			Expect(errors.Is(err, syscall.ESRCH)).To(BeTrue(), "JVM pid %d still exists (kill(pid, 0) = %v)", pid, err)
		}
		GinkgoWriter.Printf("suite total %s\n", time.Since(suiteT0).Round(time.Millisecond))
	})
})
