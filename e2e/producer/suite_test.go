//go:build e2e

package producer

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/e2e/internal/bedsuite"
	"github.com/keyroute/keyroute/internal/testbed"
	"github.com/keyroute/keyroute/producer"
)

func TestProducerE2E(t *testing.T) { bedsuite.Run(t, "Producer E2E Suite") }

// partitions is the partition count of every test topic on every cluster: a
// multiple of the cluster count, to show there is no skew.
const partitions = 5

var bed *testbed.Bed

var _ = BeforeSuite(func() { bed = bedsuite.Start(testbed.Options{Clusters: 5}).Bed })

// newTopic creates a partitioned topic with a unique name on every cluster.
func newTopic(ctx context.Context, name string) string {
	topic := "persistent://public/default/" + bedsuite.Unique(name)
	bedsuite.CreateTopic(ctx, bed.Clusters(), topic, partitions)
	return topic
}

// openProducer opens a keyroute producer on topic over the bed's clusters
// with opts, and closes it when the spec ends.
func openProducer(ctx context.Context, topic string, opts ...producer.Opt) *producer.Producer {
	GinkgoHelper()
	p, err := producer.New(ctx, bed.Topology(), append([]producer.Opt{producer.Topic(topic)}, opts...)...)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(p.Close, context.Background())
	return p
}
