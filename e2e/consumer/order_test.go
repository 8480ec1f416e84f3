//go:build e2e

package consumer

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/consumer"
)

const (
	orderKeys   = 10_000
	orderPerKey = 20 // 200,000 messages
)

var _ = Describe("one consumer over five clusters", func() {
	It("takes 200,000 messages over 10,000 keys, each key in send order, none lost, none twice; Health counts them all and the backlog drains on every cluster", func(sctx SpecContext) {
		ctx := specCtx(sctx, 10*time.Minute)
		topic := newTopic(ctx, "order")
		ks := keys("order", orderKeys)
		for _, cl := range topo().Clusters {
			Expect(cl.AdminURL).NotTo(BeEmpty(), "%s has an admin URL: Health reads its backlog there", cl.Name)
		}

		suite.Step("produce 200,000")
		p := openProducer(ctx, topic)
		want := produce(ctx, p, ks, 0, orderPerKey)

		// The subscription is made after the production: only
		// InitialPosition(Earliest) gets the messages already written.
		suite.Step("consume 200,000")
		start := time.Now()
		c, err := consumer.New(ctx, topo(), consumer.Topic(topic), consumer.Subscription("order"),
			consumer.InitialPosition(consumer.Earliest))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(c.Close)
		r := startReader(ctx, c)
		all, allTaken := drain(ctx, want, r)
		got := all[0]
		elapsed := allTaken.Sub(start)

		suite.Step("check")
		f := check(got, want)
		GinkgoWriter.Printf("one consumer: %s; elapsed %s from New to the last message, %.0f msg/s\n",
			f, elapsed.Round(time.Millisecond), float64(f.messages)/elapsed.Seconds())
		// One consumer and no fault: nothing is redelivered, so no
		// duplicate either.
		expectComplete(f)
		per := byCluster(got)
		Expect(per).To(HaveLen(clusters), "every cluster delivers")

		// Health: the counters are the reader's, and the backlog drains.
		// The acknowledgements are sent within AckGroupingTime of the
		// last Ack; the broker then has the operation timeout to apply
		// them, as for any request.
		hs := c.Health(ctx)
		Expect(hs).To(HaveLen(clusters))
		var received, acked uint64
		for _, h := range hs {
			GinkgoWriter.Printf("  %s: connected %v, received %d, acked %d, nacked %d, redelivered %d, backlog %d\n",
				h.Cluster, h.Connected, h.Delivered, h.Acked, h.Nacked, h.Redelivered, h.Backlog)
			Expect(h.Connected).To(BeTrue(), h.Cluster)
			Expect(h.Delivered).To(BeEquivalentTo(per[h.Cluster]), "%s: Delivered counts what was taken from it", h.Cluster)
			Expect(h.Acked).To(BeEquivalentTo(per[h.Cluster]), "%s: Acked counts the Acks made", h.Cluster)
			Expect(h.Nacked).To(BeZero(), h.Cluster)
			received += h.Delivered
			acked += h.Acked
		}
		Expect(received).To(BeEquivalentTo(len(got)), "Delivered sums to the total")
		Expect(acked).To(BeEquivalentTo(len(got)), "Acked sums to the total")
		bound := consumer.DefaultAckGroupingTime + opTimeout
		drained := time.Now()
		Eventually(func(g Gomega) {
			hctx, cancel := context.WithTimeout(ctx, opTimeout)
			defer cancel()
			for _, h := range c.Health(hctx) {
				g.Expect(h.BacklogErr).NotTo(HaveOccurred(), h.Cluster)
				g.Expect(h.Backlog).To(BeZero(), "%s: backlog", h.Cluster)
			}
		}).WithTimeout(bound).WithPolling(consumer.DefaultAckGroupingTime).Should(Succeed(),
			"the backlog is 0 on every cluster within AckGroupingTime + the operation timeout (%s)", bound)
		GinkgoWriter.Printf("backlog 0 on every cluster %s after the check began (bound %s)\n",
			time.Since(drained).Round(time.Millisecond), bound)
		Expect(c.Close(ctx)).To(Succeed())
	})
})
