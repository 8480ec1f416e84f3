//go:build e2e

package security

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/e2e/internal/bedsuite"
	"github.com/keyroute/keyroute/internal/testbed"
)

func TestSecurity(t *testing.T) { bedsuite.Run(t, "Security Suite") }

// clusters is how many secure clusters the suite starts (see doc.go).
const clusters = 2

var (
	bed *testbed.Bed
	// bedLog holds everything the test bed wrote, checked for tokens.
	bedLog syncBuffer
	suite  *bedsuite.Suite
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
	// Registered before the bed's own cleanup, so that it runs after Stop.
	var secretsDir string
	DeferCleanup(func() {
		_, err := os.Stat(secretsDir)
		Expect(errors.Is(err, os.ErrNotExist)).To(BeTrue(), "Stop removes the secrets dir %s", secretsDir)
	})
	start := time.Now()
	suite = bedsuite.Start(testbed.Options{
		Clusters: clusters,
		Secure:   true,
		Log:      io.MultiWriter(GinkgoWriter, &bedLog),
	})
	bed = suite.Bed
	GinkgoWriter.Printf("secure bed of %d clusters ready in %s\n", clusters, time.Since(start).Round(time.Millisecond))
	Expect(bed.Secure()).To(BeTrue())
	secretsDir = filepath.Dir(bed.Topology().Clusters[0].TLS.CAFile)
})
