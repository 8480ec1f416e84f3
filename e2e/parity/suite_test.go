//go:build e2e

package parity

import (
	"context"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/e2e/internal/bedsuite"
	"github.com/keyroute/keyroute/internal/testbed"
	"github.com/keyroute/keyroute/producer"
)

func TestParity(t *testing.T) {
	if childMode() {
		t.Skip("a child process of the deduplication spec runs TestParityChild only")
	}
	bedsuite.Run(t, "Producer Parity Suite")
}

const (
	// clusters is how many clusters the suite starts: enough for a
	// cluster to differ from the others (a schema, an override) and for
	// keys to spread.
	clusters = 3
	// partitions is the partition count of every test topic.
	partitions = 3
	// maxMessageSize is the brokers' maxMessageSize (default 5 MiB): low,
	// so that a message above it is small enough to make and send fast.
	maxMessageSize = 256 << 10
)

var (
	bed   *testbed.Bed
	suite *bedsuite.Suite
)

var _ = BeforeSuite(func() {
	suite = bedsuite.Start(testbed.Options{
		Clusters: clusters,
		ExtraConfig: map[string]string{
			"maxMessageSize": strconv.Itoa(maxMessageSize),
			// A delayed message is dispatched only once its time has
			// passed, not up to delayedDeliveryTickTimeMillis early.
			"isDelayedDeliveryDeliverAtTimeStrict": "true",
		},
	})
	bed = suite.Bed
})

// newTopic creates a partitioned topic with a unique name in namespace ns
// ("public/default" when "") on every cluster.
func newTopic(ctx context.Context, ns, name string) string {
	GinkgoHelper()
	if ns == "" {
		ns = "public/default"
	}
	topic := "persistent://" + ns + "/" + bedsuite.Unique(name)
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

// clusterNamed returns the bed cluster called name.
func clusterNamed(name string) *testbed.Cluster {
	GinkgoHelper()
	c := bed.Cluster(name)
	Expect(c).NotTo(BeNil(), "no bed cluster %q", name)
	return c
}

// keyOn returns a key (prefix plus a number) that p places on cluster.
func keyOn(p *producer.Producer, prefix, cluster string) string {
	GinkgoHelper()
	for i := range 10_000 {
		k := prefix + strconv.Itoa(i)
		if c, _ := p.Placement(k); c == cluster {
			return k
		}
	}
	Fail("no key with prefix " + prefix + " is placed on " + cluster)
	return ""
}

// keysTogether returns n distinct keys (prefix plus a number) that p
// places on one cluster and partition.
func keysTogether(p *producer.Producer, prefix string, n int) []string {
	GinkgoHelper()
	first := prefix + "0"
	c0, p0 := p.Placement(first)
	keys := []string{first}
	for i := 1; len(keys) < n && i < 100_000; i++ {
		k := prefix + strconv.Itoa(i)
		if c, part := p.Placement(k); c == c0 && part == p0 {
			keys = append(keys, k)
		}
	}
	Expect(keys).To(HaveLen(n), "keys placed together")
	return keys
}

// specCtx bounds a spec.
func specCtx(sctx SpecContext, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(sctx, d)
	DeferCleanup(cancel)
	return ctx
}
