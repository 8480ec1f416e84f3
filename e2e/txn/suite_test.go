//go:build e2e

package txn

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/internal/testbed"
)

func TestTxn(t *testing.T) {
	RegisterFailHandler(Fail)
	suiteConfig, reporterConfig := GinkgoConfiguration()
	reporterConfig.Verbose = true
	RunSpecs(t, "Transactions Suite", suiteConfig, reporterConfig)
}

var bed *testbed.Bed

var _ = BeforeSuite(func() {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	var err error
	bed, err = testbed.Start(ctx, testbed.Options{Clusters: 5, Log: GinkgoWriter})
	// Never skip: a test bed that cannot start is a failure.
	Expect(err).NotTo(HaveOccurred(), "the test bed must start five clusters")
	Expect(bed.Clusters()).To(HaveLen(5))
	DeferCleanup(func() {
		Expect(bed.Stop()).To(Succeed())
	})
})
