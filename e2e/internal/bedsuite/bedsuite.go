package bedsuite

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

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

// Start starts n clusters; call it in BeforeSuite. The bed is stopped, and
// every JVM checked gone, when the suite ends.
func Start(n int) *Suite {
	s := &Suite{t0: time.Now()}
	s.Step(fmt.Sprintf("start %d clusters", n))
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	bed, err := testbed.Start(ctx, testbed.Options{Clusters: n, Log: GinkgoWriter})
	Expect(err).NotTo(HaveOccurred(), "the test bed must start %d clusters", n)
	Expect(bed.Clusters()).To(HaveLen(n))
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
	return s
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
