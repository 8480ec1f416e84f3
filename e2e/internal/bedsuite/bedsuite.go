package bedsuite

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsar/log"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/internal/testbed"
)

// Suite is a started test bed and the suite's step timer.
type Suite struct {
	Bed *testbed.Bed

	pids     []int // every JVM seen, checked for survivors at the end
	t0       time.Time
	stepT0   time.Time
	stepName string
}

// Run runs the suite's specs, verbose so that the step timings and figures
// written to GinkgoWriter show even when every spec passes.
func Run(t *testing.T, name string) {
	RegisterFailHandler(Fail)
	suiteConfig, reporterConfig := GinkgoConfiguration()
	reporterConfig.Verbose = true
	RunSpecs(t, name, suiteConfig, reporterConfig)
}

// Start starts the test bed o describes (its log goes to GinkgoWriter when
// o.Log is nil); call it in BeforeSuite. The bed is stopped, and every JVM
// checked gone, when the suite ends.
func Start(o testbed.Options) *Suite {
	if o.Log == nil {
		o.Log = GinkgoWriter
	}
	s := &Suite{t0: time.Now()}
	s.Step(fmt.Sprintf("start %d clusters", o.Clusters))
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	bed, err := testbed.Start(ctx, o)
	Expect(err).NotTo(HaveOccurred(), "the test bed must start %d clusters", o.Clusters)
	Expect(bed.Clusters()).To(HaveLen(o.Clusters))
	s.Bed = bed
	for _, c := range bed.Clusters() {
		s.Track(c.PID())
	}
	DeferCleanup(func() {
		s.Step("stop all clusters")
		Expect(bed.Stop()).To(Succeed())
		s.Step("")
		for _, pid := range s.pids {
			err := syscall.Kill(pid, 0)
			Expect(errors.Is(err, syscall.ESRCH)).To(BeTrue(), "JVM pid %d still exists (kill(pid, 0) = %v)", pid, err)
		}
		GinkgoWriter.Printf("suite total %s\n", time.Since(s.t0).Round(time.Millisecond))
	})
	s.Step("")
	return s
}

// Client returns a pulsar-client-go client for a bed cluster, with its logs
// off.
func Client(serviceURL string, txn bool) (pulsar.Client, error) {
	return pulsar.NewClient(pulsar.ClientOptions{
		URL:               serviceURL,
		OperationTimeout:  30 * time.Second,
		ConnectionTimeout: 5 * time.Second,
		EnableTransaction: txn,
		Logger:            log.DefaultNopLogger(),
	})
}

// Track adds a JVM (a restarted cluster's) to those checked at the end.
func (s *Suite) Track(pid int) {
	Expect(pid).To(BeNumerically(">", 0))
	s.pids = append(s.pids, pid)
}

// Step prints how long the previous step took and starts timing the next;
// "" ends the previous step without starting another.
func (s *Suite) Step(name string) {
	now := time.Now()
	if s.stepName != "" {
		GinkgoWriter.Printf("step %-45s %8s\n", s.stepName, now.Sub(s.stepT0).Round(time.Millisecond))
	}
	s.stepName, s.stepT0 = name, now
}
