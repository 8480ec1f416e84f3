//go:build e2e

package changefaults

import (
	"context"
	"errors"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/consumer"
	"github.com/keyroute/keyroute/e2e/internal/bedsuite"
	"github.com/keyroute/keyroute/e2e/internal/ordercheck"
	"github.com/keyroute/keyroute/internal/testbed"
)

var _ = Describe("consumer.Update adding a cluster where the retry topic is missing", func() {
	It("is refused naming the cluster, with nothing applied, while ReconsumeLater calls run; they return within their ctx and their messages come back", func(sctx SpecContext) {
		ctx := specCtx(sctx, 4*updateBound)
		a, b, c := clusters()
		const sub = "retry"
		topic := newTopic(ctx, "retry", a, b, c)
		// The namespace makes no topic on first use: the retry topic
		// cannot be subscribed (nor written) on c.
		bedsuite.CreateTopic(ctx, []*testbed.Cluster{a, b}, consumer.RetryTopic(topic, sub), partitions)
		oldTopo, newTopo := topoOf(a.Name, b.Name), topoOf(a.Name, b.Name, c.Name)

		cons := openConsumer(ctx, oldTopo, topic, sub, consumer.Retry(consumer.RetryPolicy{MaxReconsumes: 3}))
		p := openProducer(ctx, oldTopo, topic)
		l := ordercheck.NewLedger()
		keys := keysN("k", 40)
		for _, k := range keys {
			Expect(sendTracked(ctx, p, l, "p", k)).To(Succeed())
		}
		var ms []*consumer.Message
		for range keys {
			m, err := cons.Receive(ctx)
			Expect(err).NotTo(HaveOccurred())
			ms = append(ms, m)
		}

		By("reconsuming every message while an Update adds " + c.Name)
		reconsumed := make(chan error, len(ms))
		go func() {
			for _, m := range ms {
				rctx, cancel := context.WithTimeout(ctx, sendBound)
				err := cons.ReconsumeLater(rctx, m, 0, nil)
				if rctx.Err() != nil {
					err = errors.Join(err, rctx.Err())
				}
				cancel()
				reconsumed <- err
			}
		}()
		took, err := within(ctx, updateBound, func(ctx context.Context) error { return cons.Update(ctx, newTopo) })
		GinkgoWriter.Printf("Update took %s: %v\n", took.Round(time.Millisecond), err)
		Expect(err).To(HaveOccurred(), "the retry topic is missing on %s", c.Name)
		var ce *consumer.ClusterError
		Expect(errors.As(err, &ce)).To(BeTrue(), "a *consumer.ClusterError: %v", err)
		Expect(ce.Cluster).To(Equal(c.Name))
		Expect(err.Error()).To(ContainSubstring(c.Name))
		Expect(took).To(BeNumerically("<", startTimeout), "refused when the cluster answers, not added down at StartTimeout")
		for _, h := range cons.Health(ctx) {
			Expect(h.Draining).To(BeFalse(), h.Cluster)
		}
		Expect(clusterNames(cons.Health(ctx))).To(Equal([]string{a.Name, b.Name}), "nothing applied")
		for range ms {
			Expect(<-reconsumed).NotTo(HaveOccurred(), "ReconsumeLater within its ctx")
		}

		By("reading the retried messages back")
		back := map[string]bool{}
		for len(back) < len(ms) {
			rctx, cancel := context.WithTimeout(ctx, sendBound)
			m, err := cons.Receive(rctx)
			cancel()
			Expect(err).NotTo(HaveOccurred(), "%d of %d retried messages came back", len(back), len(ms))
			if m.Reconsumes() == 1 {
				back[string(m.Value)] = true
				Expect(cons.Ack(ctx, m)).To(Succeed())
			}
		}
		took, err = within(ctx, closeBound, cons.Close)
		GinkgoWriter.Printf("Close took %s: %v\n", took.Round(time.Millisecond), err)
		Expect(err).NotTo(HaveOccurred())
	})
})
