//go:build e2e

package changefaults

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/consumer"
	"github.com/keyroute/keyroute/e2e/internal/ordercheck"
	"github.com/keyroute/keyroute/producer"
)

// handoverTimeout is the HandoverTimeout of the specs that stop an old
// owner: short, so that OnClusterDown decides soon after the stop.
const handoverTimeout = sendTimeout / 2

var _ = Describe("the old owner stopped (SIGSTOP) during a hand-over", func() {
	for _, policy := range []producer.DownPolicy{producer.FailFast, producer.WaitUp, producer.Spill} {
		It("under "+policy.String()+": every message gets one outcome, every acknowledged one is read, and each break of order is reported", func(sctx SpecContext) {
			ctx := specCtx(sctx, 4*updateBound)
			a, b, c := clusters()
			topic := newTopic(ctx, "stop-"+policy.String(), a, b, c)
			fullTopo, drainedTopo := topoOf(a.Name, b.Name, c.Name), topoOf(a.Name, c.Name)

			cons := openConsumer(ctx, fullTopo, topic, "stop")
			p := openProducer(ctx, fullTopo, topic, producer.HandoverTimeout(handoverTimeout), producer.OnClusterDown(policy))
			rd := startReader(ctx, cons)
			l := ordercheck.NewLedger()
			keys := keysN("k", 100)
			snd := startAsync(ctx, p, l, "p", keys, 5*time.Millisecond)
			Eventually(snd.count).WithTimeout(sendBound).Should(BeNumerically(">=", 2*len(keys)))

			By("stopping " + b.Name + "'s JVM, then draining it")
			resume := pause(b)
			stopped := time.Now()
			took, err := within(ctx, updateBound, func(ctx context.Context) error { return p.Update(ctx, drainedTopo) })
			GinkgoWriter.Printf("Update took %s: %v\n", took.Round(time.Millisecond), err)
			Expect(err).NotTo(HaveOccurred())

			// The markers on the stopped cluster cannot be acknowledged:
			// OnClusterDown decides at HandoverTimeout (under WaitUp,
			// DownWait later).
			Eventually(func() int {
				ch, _ := p.LastChange()
				return ch.Forced
			}).WithTimeout(handoverTimeout+producer.DefaultDownWait+sendBound).Should(BeNumerically(">", 0),
				"a forced decision at HandoverTimeout (%s), or DownWait (%s) later", handoverTimeout, producer.DefaultDownWait)
			GinkgoWriter.Printf("forced decision %s after the stop\n", time.Since(stopped).Round(time.Millisecond))
			n0 := snd.count()
			Eventually(snd.count).WithTimeout(sendBound).Should(BeNumerically(">=", n0+len(keys)), "messages go on being sent while the stop lasts")

			By("resuming " + b.Name)
			resume()
			Eventually(func() bool {
				ch, _ := p.LastChange()
				return ch.Done
			}).WithTimeout(sendBound).Should(BeTrue(), "the change's hand-overs end once the old owner answers")
			n0 = snd.count()
			Eventually(snd.count).WithTimeout(sendBound).Should(BeNumerically(">=", n0+len(keys)))
			snd.end(sendBound)
			ch, _ := p.LastChange()
			GinkgoWriter.Printf("change: %+v (stopped for %s)\n", ch, time.Since(stopped).Round(time.Millisecond))
			took, err = within(ctx, closeBound, p.Close)
			GinkgoWriter.Printf("Close took %s: %v\n", took.Round(time.Millisecond), err)
			Expect(err).NotTo(HaveOccurred())

			// The consumer holds the moved keys' messages up to its
			// HoldTimeout while the old owner is stopped.
			got := rd.waitAll(l, consumer.DefaultHoldTimeout+sendBound)
			r := checkRead(ctx, "consumer", l, got, cons)
			var unordered uint64
			for _, h := range cons.Health(ctx) {
				unordered += h.Unordered
			}
			switch policy {
			case producer.FailFast:
				// The held messages failed, not written; none was sent
				// unordered.
				Expect(snd.byErr["cluster down"]).To(BeNumerically(">", 0))
				Expect(unordered).To(BeZero())
				Expect(r.Reordered).To(BeZero(), "%v", r.Examples)
			case producer.WaitUp:
				// The held messages waited DownWait past HandoverTimeout
				// (the old owner still stopped), then failed, not
				// written; none was sent unordered.
				Expect(snd.byErr["cluster down"]).To(BeNumerically(">", 0))
				Expect(unordered).To(BeZero())
				Expect(r.Reordered).To(BeZero(), "%v", r.Examples)
			case producer.Spill:
				// The held messages were written to their new owner,
				// marked unordered; none failed for the stop's sake.
				Expect(snd.byErr).NotTo(HaveKey("cluster down"))
				Expect(unordered).To(BeNumerically(">", 0))
			}
		})
	}
})
