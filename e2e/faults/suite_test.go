//go:build e2e

package faults

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"

	"github.com/keyroute/keyroute/e2e/internal/bedsuite"
	"github.com/keyroute/keyroute/internal/testbed"
)

func TestFaults(t *testing.T) { bedsuite.Run(t, "Fault Suite") }

var bed *testbed.Bed

var _ = BeforeSuite(func() {
	bed = bedsuite.Start(testbed.Options{
		Clusters: 5,
		// Deduplication by producer name and sequence id, so that messages
		// the client resends after a reconnect are not written twice.
		ExtraConfig: map[string]string{"brokerDeduplicationEnabled": "true"},
	}).Bed
})
