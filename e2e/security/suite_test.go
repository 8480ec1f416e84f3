//go:build e2e

package security

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/internal/testbed"
)

func TestSecurity(t *testing.T) {
	RegisterFailHandler(Fail)
	suiteConfig, reporterConfig := GinkgoConfiguration()
	reporterConfig.Verbose = true
	RunSpecs(t, "Security Suite", suiteConfig, reporterConfig)
}

// clusters is how many secure clusters the suite starts (see doc.go).
const clusters = 2

var (
	bed *testbed.Bed
	// bedLog holds everything the test bed wrote, checked for tokens.
	bedLog syncBuffer
	pids   []int
)

// syncBuffer is a bytes.Buffer safe for the test bed's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var _ = BeforeSuite(func() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	var err error
	bed, err = testbed.Start(ctx, testbed.Options{
		Clusters: clusters,
		Secure:   true,
		Log:      io.MultiWriter(GinkgoWriter, &bedLog),
	})
	// Never skip: a test bed that cannot start is a failure.
	Expect(err).NotTo(HaveOccurred(), "the test bed must start %d secure clusters", clusters)
	GinkgoWriter.Printf("secure bed of %d clusters ready in %s\n", clusters, time.Since(start).Round(time.Millisecond))
	Expect(bed.Secure()).To(BeTrue())
	for _, c := range bed.Clusters() {
		pids = append(pids, c.PID())
	}
	secretsDir := filepath.Dir(bed.Topology().Clusters[0].TLS.CAFile)

	DeferCleanup(func() {
		Expect(bed.Stop()).To(Succeed())
		for _, pid := range pids {
			err := syscall.Kill(pid, 0)
			Expect(errors.Is(err, syscall.ESRCH)).To(BeTrue(), "JVM pid %d still exists", pid)
		}
		_, err := os.Stat(secretsDir)
		Expect(errors.Is(err, os.ErrNotExist)).To(BeTrue(), "Stop removes the secrets dir %s", secretsDir)
	})
})
