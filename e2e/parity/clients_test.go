//go:build e2e

package parity

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute"
	"github.com/keyroute/keyroute/consumer"
	"github.com/keyroute/keyroute/producer"
)

// sendKeys sends n messages with keys prefix0..prefix(n-1) (values equal
// to the keys) through p and fails the spec on any error.
func sendKeys(ctx context.Context, p *producer.Producer, prefix string, n int) []string {
	GinkgoHelper()
	keys := make([]string, n)
	for i := range n {
		keys[i] = fmt.Sprintf("%s%d", prefix, i)
		_, err := p.Send(ctx, &producer.Message{Key: keys[i], Value: []byte(keys[i])})
		Expect(err).NotTo(HaveOccurred(), keys[i])
	}
	return keys
}

// receiveKeys takes n messages from c (acknowledging them) and returns
// their keys, sorted.
func receiveKeys(ctx context.Context, c *consumer.Consumer, n int) []string {
	GinkgoHelper()
	var keys []string
	for range n {
		m, err := c.Receive(ctx)
		Expect(err).NotTo(HaveOccurred(), "after %d of %d messages", len(keys), n)
		Expect(string(m.Value)).To(Equal(m.Key))
		Expect(c.Ack(ctx, m)).To(Succeed())
		keys = append(keys, m.Key)
	}
	sort.Strings(keys)
	return keys
}

// keysOf returns the keys of msgs, sorted.
func keysOf(msgs map[string][]pulsar.Message) []string {
	var keys []string
	for _, ms := range msgs {
		for _, m := range ms {
			keys = append(keys, m.Key())
		}
	}
	sort.Strings(keys)
	return keys
}

func sorted(s []string) []string {
	s = append([]string(nil), s...)
	sort.Strings(s)
	return s
}

// addresses returns, for topic on every cluster, the client addresses
// (host:port of the client's end of the connection) of its publishers and
// of the consumers of subscription sub ("" for none).
func addresses(ctx context.Context, topic, sub string) map[string]map[string]bool {
	GinkgoHelper()
	out := map[string]map[string]bool{}
	for _, c := range bed.Clusters() {
		set := map[string]bool{}
		for _, st := range topicStats(ctx, c, topic) {
			for _, p := range st.Publishers {
				set[p.Address] = true
			}
			for _, cons := range st.Subscriptions[sub].Consumers {
				set[cons.Address] = true
			}
		}
		out[c.Name] = set
	}
	return out
}

var _ = Describe("keyroute.Clients shared by producers and a consumer", func() {
	It("serves two producers on two topics and a keyroute consumer over one connection per cluster; closing one producer leaves the rest working; Close closes the rest, and later calls fail with the documented errors", func(sctx SpecContext) {
		ctx := specCtx(sctx, 3*time.Minute)
		const n = 30
		orders := newTopic(ctx, "", "shared-orders")
		events := newTopic(ctx, "", "shared-events")
		topo := bed.Topology()

		cs, err := keyroute.NewClients(topo)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(cs.Close)
		pOrders, err := producer.New(ctx, topo, producer.Topic(orders), producer.WithClients(cs))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(pOrders.Close, context.Background())
		pEvents, err := producer.New(ctx, topo, producer.Topic(events), producer.WithClients(cs))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(pEvents.Close, context.Background())
		billing, err := consumer.New(ctx, topo, consumer.Topic(orders), consumer.Subscription("billing"),
			consumer.InitialPosition(consumer.Earliest), consumer.WithClients(cs))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(billing.Close)
		// A producer with clients of its own, as a control: it must not
		// share the others' connections, and the Clients' Close must not
		// touch it.
		own := openProducer(ctx, events)

		By("writing through both producers")
		sentOrders := sendKeys(ctx, pOrders, "order-", n)
		sentEvents := sendKeys(ctx, pEvents, "event-", n)
		sentOwn := sendKeys(ctx, own, "own-", n)
		Expect(receiveKeys(ctx, billing, n)).To(Equal(sorted(sentOrders)))
		events0 := drainAll(ctx, events, pulsar.ConsumerOptions{SubscriptionName: "verify"})
		Expect(keysOf(events0)).To(Equal(sorted(append(sentEvents, sentOwn...))))

		By("checking that the two producers and the consumer share one connection per cluster")
		ordersAddr := addresses(ctx, orders, "billing")
		for _, c := range bed.Clusters() {
			eventsAddr := map[string]bool{}
			for _, st := range topicStats(ctx, c, events) {
				for _, p := range st.Publishers {
					eventsAddr[p.Address] = true
				}
			}
			GinkgoWriter.Printf("%s: orders (producer and consumer) from %v; events (shared and own producers) from %v\n", c.Name, ordersAddr[c.Name], eventsAddr)
			Expect(ordersAddr[c.Name]).To(HaveLen(1), "%s: the orders producer and the billing consumer use one connection", c.Name)
			Expect(eventsAddr).To(HaveLen(2), "%s: the events topic has the shared clients' connection and the own producer's", c.Name)
			for a := range ordersAddr[c.Name] {
				Expect(eventsAddr).To(HaveKey(a), "%s: the events producer shares the orders producer's connection", c.Name)
			}
		}

		By("closing the orders producer: the events producer and the consumer go on, and a new producer can still be made")
		Expect(pOrders.Close(ctx)).To(Succeed())
		_, err = pOrders.Send(ctx, &producer.Message{Key: "late", Value: []byte("late")})
		Expect(err).To(MatchError(producer.ErrClosed))
		Expect(producer.NotWritten(err)).To(BeTrue(), "%v", err)
		for _, c := range bed.Clusters() {
			_, err := cs.Client(c.Name)
			Expect(err).NotTo(HaveOccurred(), "%s: the clients stay open", c.Name)
		}
		moreEvents := sendKeys(ctx, pEvents, "event-after-", n)
		pOrders2, err := producer.New(ctx, topo, producer.Topic(orders), producer.WithClients(cs))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(pOrders2.Close, context.Background())
		moreOrders := sendKeys(ctx, pOrders2, "order-after-", n)
		Expect(receiveKeys(ctx, billing, n)).To(Equal(sorted(moreOrders)))
		events1 := drainAll(ctx, events, pulsar.ConsumerOptions{SubscriptionName: "verify-2"})
		Expect(keysOf(events1)).To(Equal(sorted(append(append(sentEvents, sentOwn...), moreEvents...))))

		By("closing the Clients: every producer and consumer still open on them is closed")
		Expect(cs.Close(context.Background())).To(Succeed())
		Expect(cs.Close(context.Background())).To(Succeed(), "a second Close")
		for _, p := range []*producer.Producer{pEvents, pOrders2} {
			_, err := p.Send(ctx, &producer.Message{Key: "late", Value: []byte("late")})
			Expect(err).To(MatchError(producer.ErrClosed))
			Expect(producer.NotWritten(err)).To(BeTrue(), "%v", err)
			Expect(p.Flush(ctx)).To(MatchError(producer.ErrClosed))
		}
		_, err = billing.Receive(ctx)
		Expect(err).To(MatchError(consumer.ErrClosed))
		Expect(billing.Chan()).To(BeClosed(), "Receive saw it closed")
		for _, c := range bed.Clusters() {
			_, err := cs.Client(c.Name)
			Expect(err).To(MatchError(keyroute.ErrClosed), c.Name)
		}
		_, err = producer.New(ctx, topo, producer.Topic(orders), producer.WithClients(cs))
		Expect(err).To(MatchError(keyroute.ErrClosed))
		_, err = consumer.New(ctx, topo, consumer.Topic(orders), consumer.Subscription("late"), consumer.WithClients(cs))
		Expect(err).To(MatchError(keyroute.ErrClosed))
		Expect(pEvents.Close(ctx)).To(Succeed(), "Close after the Clients closed it")
		Expect(billing.Close(ctx)).To(Succeed(), "Close after the Clients closed it")

		By("checking at the brokers: only the own producer's connection is left")
		after := addresses(ctx, events, "")
		for _, c := range bed.Clusters() {
			Expect(addresses(ctx, orders, "billing")[c.Name]).To(BeEmpty(), "%s: no publisher or consumer left on orders", c.Name)
			Expect(after[c.Name]).To(HaveLen(1), "%s: the own producer's connection", c.Name)
			for a := range ordersAddr[c.Name] {
				Expect(after[c.Name]).NotTo(HaveKey(a), c.Name)
			}
		}
		last := sendKeys(ctx, own, "own-after-", n)
		events2 := drainAll(ctx, events, pulsar.ConsumerOptions{SubscriptionName: "verify-3"})
		Expect(keysOf(events2)).To(Equal(sorted(append(append(append(sentEvents, sentOwn...), moreEvents...), last...))))
	})
})
