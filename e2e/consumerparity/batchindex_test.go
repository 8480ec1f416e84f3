//go:build e2e

package consumerparity

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/consumer"
	"github.com/keyroute/keyroute/e2e/internal/bedsuite"
	"github.com/keyroute/keyroute/internal/testbed"
	"github.com/keyroute/keyroute/producer"
)

// The brokers' acknowledgmentAtBatchIndexLevelEnabled, which BatchIndexAck
// needs, also changes where a cursor reset inside a batch starts (see
// consumer/position.go), so these specs run on a cluster of their own with
// it on, not on the suite's.
var _ = Describe("Batch-index acknowledgements", Ordered, func() {
	var own *testbed.Bed
	BeforeAll(func(ctx SpecContext) {
		var err error
		own, err = testbed.Start(ctx, testbed.Options{Clusters: 1, NamePrefix: "batchidx-", Log: GinkgoWriter,
			ExtraConfig: map[string]string{"acknowledgmentAtBatchIndexLevelEnabled": "true"}})
		Expect(err).NotTo(HaveOccurred(), "the test bed must start a cluster with acknowledgmentAtBatchIndexLevelEnabled")
		DeferCleanup(func() { Expect(own.Stop()).To(Succeed()) })
	}, NodeTimeout(10*time.Minute))

	It("BatchIndexAck(true): the acknowledged messages of a batch are not delivered again to the next consumer of the subscription; the broker shows the consumer's Name", func(sctx SpecContext) {
		batchIndexSpec(specCtx(sctx, 3*time.Minute), own, true)
	})
	It("BatchIndexAck(false): the same acknowledgements send nothing, and the next consumer gets the whole batch again", func(sctx SpecContext) {
		batchIndexSpec(specCtx(sctx, 3*time.Minute), own, false)
	})
})

// batchIndexSpec writes one batch of n messages of one key, has a consumer
// acknowledge (with the broker's answer) its first acked messages and
// close, and reads the rest with a second consumer on the same
// subscription: with BatchIndexAck the messages after the acknowledged
// ones, without it the whole batch, as pulsar-client-go acknowledges a
// batch only whole.
func batchIndexSpec(ctx context.Context, own *testbed.Bed, on bool) {
	const n, acked = 10, 4
	topic := "persistent://public/default/" + bedsuite.Unique("batchidx")
	bedsuite.CreateTopic(ctx, own.Clusters(), topic, 1)

	// One batch: it leaves when it holds n messages or at Flush, whichever
	// comes first, never at the linger.
	p, err := producer.New(ctx, own.Topology(), producer.Topic(topic), producer.Linger(time.Hour), producer.BatchMaxMessages(n))
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(ctx SpecContext) { _ = p.Close(ctx) })
	failed := make(chan error, n)
	for i := range n {
		p.SendAsync(ctx, &producer.Message{Key: "k", Value: []byte(strconv.Itoa(i))}, func(_ producer.ID, _ *producer.Message, err error) {
			if err != nil {
				failed <- err
			}
		})
	}
	Expect(p.Flush(ctx)).To(Succeed())
	Expect(failed).To(BeEmpty())

	const sub = "batchidx"
	name := fmt.Sprintf("batchidx-reader-%t", on)
	open := func() *consumer.Consumer {
		GinkgoHelper()
		c, err := consumer.New(ctx, own.Topology(), consumer.Topic(topic), consumer.Subscription(sub),
			consumer.InitialPosition(consumer.Earliest), consumer.AckWithResponse(true), consumer.BatchIndexAck(on),
			consumer.Name(name))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = c.Close(context.Background()) })
		return c
	}
	receive := func(c *consumer.Consumer, k int) []string {
		GinkgoHelper()
		var values []string
		for range k {
			m, err := c.Receive(ctx)
			Expect(err).NotTo(HaveOccurred(), "after %v", values)
			values = append(values, string(m.Value))
			if len(values) == 1 {
				Expect(m.ID.Pulsar.BatchSize()).To(BeEquivalentTo(n), "the producer wrote one batch of %d: %s", n, m.ID)
			}
			if len(values) <= acked {
				Expect(c.Ack(ctx, m)).To(Succeed())
			}
		}
		return values
	}

	first := open()
	Expect(consumerNames(ctx, own.Clusters()[0], topic, sub)).To(Equal([]string{name}), "the broker shows the consumer's Name")
	Expect(receive(first, n)).To(Equal(sequence(0, n)))
	Expect(first.Close(ctx)).To(Succeed())

	second := open()
	if on {
		Expect(receive(second, n-acked)).To(Equal(sequence(acked, n)), "the batch again, without the %d messages acknowledged", acked)
	} else {
		Expect(receive(second, n)).To(Equal(sequence(0, n)), "the whole batch again")
	}
}

// sequence returns the values from, from+1, ..., to-1 as text.
func sequence(from, to int) []string {
	var s []string
	for i := from; i < to; i++ {
		s = append(s, strconv.Itoa(i))
	}
	return s
}

// consumerNames returns the names of the consumers of subscription sub on
// the one partition of topic on cl, from the admin API.
func consumerNames(ctx context.Context, cl *testbed.Cluster, topic, sub string) []string {
	GinkgoHelper()
	url := cl.AdminURL + "/admin/v2/" + strings.Replace(topic, "://", "/", 1) + "-partition-0/stats"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	Expect(err).NotTo(HaveOccurred())
	resp, err := http.DefaultClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	Expect(resp.StatusCode).To(Equal(http.StatusOK), url)
	var stats struct {
		Subscriptions map[string]struct {
			Consumers []struct {
				ConsumerName string `json:"consumerName"`
			} `json:"consumers"`
		} `json:"subscriptions"`
	}
	Expect(json.NewDecoder(resp.Body).Decode(&stats)).To(Succeed())
	var names []string
	for _, c := range stats.Subscriptions[sub].Consumers {
		names = append(names, c.ConsumerName)
	}
	return names
}
