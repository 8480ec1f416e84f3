//go:build e2e

package consumerparity

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/consumer"
	"github.com/keyroute/keyroute/e2e/internal/bedsuite"
	"github.com/keyroute/keyroute/internal/testbed"
	"github.com/keyroute/keyroute/producer"
)

// brokerTick is the standalone's delayedDeliveryTickTimeMillis (its
// default, which the test bed keeps): with isDelayedDeliveryDeliverAtTimeStrict
// off (the default too), the broker may deliver a delayed message up to
// one tick before its time.
const brokerTick = time.Second

var _ = Describe("Retry topics", func() {
	for _, typ := range []consumer.SubscriptionType{consumer.Shared, consumer.KeyShared} {
		It(fmt.Sprintf("on a %s subscription, brings a reconsumed message back after its delay from its own cluster's retry topic, with its key and properties, and after MaxReconsumes sends it to that cluster's dead-letter topic; other keys flow meanwhile, nothing lost or duplicated", typ), func(sctx SpecContext) {
			retrySpec(sctx, typ)
		})
	}
})

var _ = Describe("Retry topics on an Exclusive subscription", func() {
	It("acknowledges cumulatively a retried message on its cluster's retry topic only, never the topic's messages", func(sctx SpecContext) {
		ctx := specCtx(sctx, 3*time.Minute)
		topic := newTopic(ctx, "retrycumul")
		p := openProducer(ctx, topic)
		on := bed.Clusters()[0]
		key := keyOn(p, on.Name) // both on one partition of one cluster
		for _, v := range []string{"a", "b"} {
			_, err := p.Send(ctx, &producer.Message{Key: key, Value: []byte(v)})
			Expect(err).NotTo(HaveOccurred())
		}
		const sub = "cumul"
		retryTopic := consumer.RetryTopic(topic, sub)
		c := openConsumer(ctx, topic, sub, consumer.Retry(consumer.RetryPolicy{MaxReconsumes: 1}))
		a, err := c.Receive(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(a.Value)).To(Equal("a"))
		// The broker's delayed delivery does not apply to an Exclusive
		// subscription: the time a retried message takes back is
		// reported, not asserted.
		const delay = 10 * brokerTick
		sent := time.Now()
		Expect(c.ReconsumeLater(ctx, a, delay, nil)).To(Succeed())
		// b from the topic and a again from the retry topic, in either
		// order: the two topics have no order between them.
		var b, again *consumer.Message
		for b == nil || again == nil {
			m, err := c.Receive(ctx)
			Expect(err).NotTo(HaveOccurred())
			if m.Raw().Topic() == retryTopic {
				Expect(again).To(BeNil())
				again = m
				GinkgoWriter.Printf("exclusive: reconsumed with a delay of %s, back after %s\n", delay, time.Since(sent).Round(time.Millisecond))
			} else {
				Expect(b).To(BeNil())
				b = m
			}
		}
		Expect(string(b.Value)).To(Equal("b"))
		Expect(string(again.Value)).To(Equal("a"))
		Expect(c.AckCumulative(ctx, again)).To(Succeed())

		// b is acknowledged by nothing but the caller: the topic's backlog
		// stays 1 while the retry topic's reaches 0.
		Eventually(ctx, func() (int64, error) { return subscriptionBacklog(ctx, on, retryTopic, sub) }).
			WithPolling(100 * time.Millisecond).Should(BeZero())
		Expect(backlogOf(ctx, c, on.Name)).To(BeEquivalentTo(1), "b is not acknowledged")
		Expect(c.AckCumulative(ctx, b)).To(Succeed())
		Eventually(ctx, func() int64 { return backlogOf(ctx, c, on.Name) }).WithPolling(100 * time.Millisecond).Should(BeZero())
	})
})

// backlogOf returns the topic's backlog on a cluster, as Health reports it.
func backlogOf(ctx context.Context, c *consumer.Consumer, cluster string) int64 {
	for _, h := range c.Health(ctx) {
		if h.Cluster == cluster {
			return h.Backlog
		}
	}
	return -1
}

func retrySpec(sctx SpecContext, typ consumer.SubscriptionType) {
	ctx := specCtx(sctx, 4*time.Minute)
	topic := newTopic(ctx, "retry")
	p := openProducer(ctx, topic)
	poisonOn, otherOn := bed.Clusters()[1], bed.Clusters()[0]
	poisonKey := keyOn(p, poisonOn.Name)
	const maxReconsumes, batch, sub = 2, 10, "retry"
	retryTopic, dlqTopic := consumer.RetryTopic(topic, sub), consumer.DeadLetterTopic(topic, sub)

	c := openConsumer(ctx, topic, sub, consumer.Type(typ), consumer.NackRedeliveryDelay(brokerTick),
		consumer.Retry(consumer.RetryPolicy{MaxReconsumes: maxReconsumes}),
		consumer.DeadLetter(consumer.DeadLetterPolicy{MaxDeliveries: maxReconsumes, InitialSubscription: "audit"}))

	good := 0
	sendGood := func(n int) {
		GinkgoHelper()
		for range n {
			_, err := p.Send(ctx, &producer.Message{Key: fmt.Sprint("good-", good), Value: []byte("ok")})
			Expect(err).NotTo(HaveOccurred())
			good++
		}
	}
	goodSeen := map[string]int{}
	var poison []*consumer.Message
	var poisonAt []time.Duration // from its ReconsumeLater to its return
	var goodsWhileAway []int     // good messages taken while it was away

	// The baseline: the first batch and the poison message, sent and
	// taken; the delay is set from it and the broker's tick, so that the
	// next batch has time to flow before the retried message is due.
	start := time.Now()
	sendGood(2 * batch)
	_, err := p.Send(ctx, &producer.Message{Key: poisonKey, Value: []byte("poison"), Properties: map[string]string{"why": "test"}})
	Expect(err).NotTo(HaveOccurred())
	var away time.Time
	awayGoods := 0
	for len(poison) == 0 || len(goodSeen) < good {
		m, err := c.Receive(ctx)
		Expect(err).NotTo(HaveOccurred())
		if m.Key != poisonKey {
			goodSeen[m.Key]++
			awayGoods++
			Expect(c.Ack(ctx, m)).To(Succeed())
			continue
		}
		poison = append(poison, m)
	}
	baseline := time.Since(start)
	delay := max(2*brokerTick, 4*baseline).Round(time.Millisecond)
	GinkgoWriter.Printf("%s: baseline %s (%d messages sent and taken), delay %s\n", typ, baseline.Round(time.Millisecond), good+1, delay)

	for {
		m := poison[len(poison)-1]
		n := len(poison) // this delivery's number
		Expect(m.ID.Cluster).To(Equal(poisonOn.Name))
		Expect(m.Key).To(Equal(poisonKey))
		Expect(string(m.Value)).To(Equal("poison"))
		Expect(m.Properties).To(HaveKeyWithValue("why", "test"))
		Expect(m.Reconsumes()).To(Equal(n - 1))
		if n > 1 {
			Expect(m.Raw().Topic()).To(Equal(retryTopic), "read from the retry topic")
			Expect(m.Properties).To(HaveKeyWithValue("attempt", fmt.Sprint(n-1)))
			Expect(poisonAt[n-2]).To(BeNumerically(">=", delay-brokerTick), "not before its delay")
			goodsWhileAway = append(goodsWhileAway, awayGoods)
		} else {
			Expect(m.Raw().Topic()).To(HavePrefix(topic + "-partition-"))
		}
		away, awayGoods = time.Now(), 0
		Expect(c.ReconsumeLater(ctx, m, delay, map[string]string{"attempt": fmt.Sprint(n)})).To(Succeed())
		sendGood(batch)
		if n > maxReconsumes {
			break // to the dead-letter topic
		}
		for {
			m, err := c.Receive(ctx)
			Expect(err).NotTo(HaveOccurred())
			if m.Key == poisonKey {
				poisonAt = append(poisonAt, time.Since(away))
				poison = append(poison, m)
				break
			}
			goodSeen[m.Key]++
			awayGoods++
			Expect(c.Ack(ctx, m)).To(Succeed())
		}
	}
	for len(goodSeen) < good {
		m, err := c.Receive(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(m.Key).NotTo(Equal(poisonKey), "dead-lettered, not delivered again")
		goodSeen[m.Key]++
		Expect(c.Ack(ctx, m)).To(Succeed())
	}
	GinkgoWriter.Printf("%s: back after %v; good messages taken meanwhile %v\n", typ, poisonAt, goodsWhileAway)
	Expect(poison).To(HaveLen(maxReconsumes + 1))
	for _, n := range goodsWhileAway {
		Expect(n).To(BeNumerically(">", 0), "other keys flow while a message waits on the retry topic")
	}
	Expect(goodSeen).To(HaveLen(good))
	for k, n := range goodSeen {
		Expect(n).To(Equal(1), k)
	}

	By("the dead-letter topic of the poison's cluster holds it, once; the other cluster's retry and dead-letter topics hold nothing")
	client, err := bedsuite.Client(poisonOn.ServiceURL, false)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(client.Close)
	r, err := client.CreateReader(pulsar.ReaderOptions{Topic: dlqTopic, StartMessageID: pulsar.EarliestMessageID()})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(r.Close)
	dm, err := r.Next(ctx)
	Expect(err).NotTo(HaveOccurred())
	Expect(string(dm.Payload())).To(Equal("poison"))
	Expect(dm.Key()).To(Equal(poisonKey))
	Expect(dm.Properties()).To(HaveKeyWithValue("why", "test"))
	Expect(dm.Properties()).To(HaveKeyWithValue("attempt", fmt.Sprint(maxReconsumes+1)))
	Expect(dm.Properties()).To(HaveKeyWithValue(pulsar.SysPropertyReconsumeTimes, fmt.Sprint(maxReconsumes+1)))
	Expect(r.HasNext()).To(BeFalse(), "once")
	other, err := bedsuite.Client(otherOn.ServiceURL, false)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(other.Close)
	for _, t := range []string{retryTopic, dlqTopic} {
		r, err := other.CreateReader(pulsar.ReaderOptions{Topic: t, StartMessageID: pulsar.EarliestMessageID()})
		Expect(err).NotTo(HaveOccurred())
		Expect(r.HasNext()).To(BeFalse(), t)
		r.Close()
	}

	By("what pulsar-client-go's consumer over two topics changes: SeekByTime fails, an ack by an ID rebuilt from its bytes fails")
	Expect(c.SeekByTime(ctx, start)).NotTo(Succeed())
	sendGood(1)
	m, err := c.Receive(ctx)
	Expect(err).NotTo(HaveOccurred())
	rebuilt, err := pulsar.DeserializeMessageID(m.ID.Pulsar.Serialize())
	Expect(err).NotTo(HaveOccurred())
	Expect(c.AckID(ctx, consumer.ID{Cluster: m.ID.Cluster, Partition: m.ID.Partition, Pulsar: rebuilt})).NotTo(Succeed())
	Expect(c.Ack(ctx, m)).To(Succeed())

	By("a retried message is acknowledged on the retry topic: Nack brings it again from there, Ack settles it (the backlogs below)")
	_, err = p.Send(ctx, &producer.Message{Key: "again", Value: []byte("again")})
	Expect(err).NotTo(HaveOccurred())
	m, err = c.Receive(ctx)
	Expect(err).NotTo(HaveOccurred())
	Expect(m.Key).To(Equal("again"))
	Expect(c.ReconsumeLater(ctx, m, delay, nil)).To(Succeed())
	for _, redelivered := range []uint32{0, 1} {
		r, err := c.Receive(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(r.Key).To(Equal("again"))
		Expect(r.ID.Cluster).To(Equal(m.ID.Cluster))
		Expect(r.Raw().Topic()).To(Equal(retryTopic))
		Expect(r.RedeliveryCount).To(Equal(redelivered))
		if redelivered == 0 {
			Expect(c.Nack(r)).To(Succeed())
		} else {
			Expect(c.Ack(ctx, r)).To(Succeed())
		}
	}

	By("every message is acknowledged: the topic's and the retry topic's backlogs reach 0 on both clusters")
	Eventually(ctx, func(g Gomega) {
		for _, h := range c.Health(ctx) {
			g.Expect(h.Backlog).To(BeZero(), h.Cluster)
		}
		for _, cl := range bed.Clusters() {
			g.Expect(subscriptionBacklog(ctx, cl, retryTopic, sub)).To(BeZero(), cl.Name)
		}
	}).WithPolling(100 * time.Millisecond).Should(Succeed())
}

// subscriptionBacklog returns the backlog of subscription sub on the
// non-partitioned topic on cluster cl, from the admin API.
func subscriptionBacklog(ctx context.Context, cl *testbed.Cluster, topic, sub string) (int64, error) {
	url := cl.AdminURL + "/admin/v2/" + strings.Replace(topic, "://", "/", 1) + "/stats"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	var stats struct {
		Subscriptions map[string]struct {
			MsgBacklog int64 `json:"msgBacklog"`
		} `json:"subscriptions"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&stats); err != nil {
		return 0, err
	}
	s, ok := stats.Subscriptions[sub]
	if !ok {
		return 0, fmt.Errorf("%s has no subscription %q", topic, sub)
	}
	return s.MsgBacklog, nil
}
