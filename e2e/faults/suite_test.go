//go:build e2e

package faults

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/internal/testbed"
)

func TestFaults(t *testing.T) {
	RegisterFailHandler(Fail)
	suiteConfig, reporterConfig := GinkgoConfiguration()
	reporterConfig.Verbose = true // the figures are printed to GinkgoWriter
	RunSpecs(t, "Fault Suite", suiteConfig, reporterConfig)
}

var bed *testbed.Bed

var _ = BeforeSuite(func() {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	var err error
	bed, err = testbed.Start(ctx, testbed.Options{
		Clusters: 5,
		Log:      GinkgoWriter,
		// Deduplication by producer name and sequence id, so that messages
		// the client resends after a reconnect are not written twice.
		ExtraConfig: map[string]string{"brokerDeduplicationEnabled": "true"},
	})
	Expect(err).NotTo(HaveOccurred(), "the test bed must start five clusters")
	DeferCleanup(func() { Expect(bed.Stop()).To(Succeed()) })
})
