//go:build e2e

package consumerparity

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/consumer"
	"github.com/keyroute/keyroute/e2e/internal/bedsuite"
	"github.com/keyroute/keyroute/internal/testbed"
	"github.com/keyroute/keyroute/producer"
)

func TestConsumerParity(t *testing.T) { bedsuite.Run(t, "Consumer Parity Suite") }

const (
	clusters   = 2
	partitions = 2
)

var (
	suite *bedsuite.Suite
	bed   *testbed.Bed
)

var _ = BeforeSuite(func() {
	suite = bedsuite.Start(testbed.Options{Clusters: clusters})
	bed = suite.Bed
})

// specCtx bounds a spec: a guard against a hang, not a timing assertion.
func specCtx(sctx SpecContext, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(sctx, d)
	DeferCleanup(cancel)
	return ctx
}

// newTopic creates a partitioned topic with a unique name on every
// cluster.
func newTopic(ctx context.Context, name string) string {
	GinkgoHelper()
	topic := "persistent://public/default/" + bedsuite.Unique(name)
	bedsuite.CreateTopic(ctx, bed.Clusters(), topic, partitions)
	return topic
}

// openProducer opens a keyroute producer on topic, closed at the spec's
// end.
func openProducer(ctx context.Context, topic string, opts ...producer.Opt) *producer.Producer {
	GinkgoHelper()
	p, err := producer.New(ctx, bed.Topology(), append([]producer.Opt{producer.Topic(topic)}, opts...)...)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(ctx SpecContext) { _ = p.Close(ctx) })
	return p
}

// openConsumer opens a keyroute consumer on a subscription of topic that
// starts at the earliest message, closed at the spec's end.
func openConsumer(ctx context.Context, topic, sub string, opts ...consumer.Opt) *consumer.Consumer {
	GinkgoHelper()
	c, err := consumer.New(ctx, bed.Topology(), append([]consumer.Opt{consumer.Topic(topic), consumer.Subscription(sub),
		consumer.InitialPosition(consumer.Earliest)}, opts...)...)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// receiveN takes n messages, acknowledging each.
func receiveN(ctx context.Context, c *consumer.Consumer, n int) []*consumer.Message {
	GinkgoHelper()
	var got []*consumer.Message
	for len(got) < n {
		m, err := c.Receive(ctx)
		Expect(err).NotTo(HaveOccurred(), "after %d of %d", len(got), n)
		Expect(c.Ack(ctx, m)).To(Succeed())
		got = append(got, m)
	}
	return got
}
