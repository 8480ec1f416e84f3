//go:build e2e

package changefaults

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/e2e/internal/ordercheck"
	"github.com/keyroute/keyroute/producer"
)

var _ = Describe("two producer instances applying the same change apart (HANDOVER.md section 9)", func() {
	It("keeps each instance's per-key order at the reader while the two write a moved key to different owners", func(sctx SpecContext) {
		ctx := specCtx(sctx, 4*updateBound)
		a, b, c := clusters()
		topic := newTopic(ctx, "two", a, b, c)
		oldTopo, newTopo := topoOf(a.Name, b.Name), topoOf(a.Name, b.Name, c.Name)

		// The reader reads every cluster either producer may write: it
		// takes the added cluster before the producers (section 9).
		cons := openConsumer(ctx, newTopo, topic, "two")
		p1, p2 := openProducer(ctx, oldTopo, topic), openProducer(ctx, oldTopo, topic)
		rd := startReader(ctx, cons)
		l := ordercheck.NewLedger()
		keys := keysN("k", 100)
		s1 := startAsync(ctx, p1, l, "p1", keys, 5*time.Millisecond)
		s2 := startAsync(ctx, p2, l, "p2", keys, 5*time.Millisecond)
		Eventually(s1.count).WithTimeout(sendBound).Should(BeNumerically(">=", 2*len(keys)))
		Eventually(s2.count).WithTimeout(sendBound).Should(BeNumerically(">=", 2*len(keys)))

		By("the first instance applies the change")
		took, err := within(ctx, updateBound, func(ctx context.Context) error { return p1.Update(ctx, newTopo) })
		Expect(err).NotTo(HaveOccurred())
		GinkgoWriter.Printf("first Update took %s\n", took.Round(time.Millisecond))
		Eventually(func() bool { ch, _ := p1.LastChange(); return ch.Done }).WithTimeout(sendBound).Should(BeTrue())
		// Both write every key again while only the first has the change:
		// a moved key goes to its new owner from one, its old from the other.
		n1, n2 := s1.count(), s2.count()
		Eventually(s1.count).WithTimeout(sendBound).Should(BeNumerically(">=", n1+2*len(keys)))
		Eventually(s2.count).WithTimeout(sendBound).Should(BeNumerically(">=", n2+2*len(keys)))

		By("the second instance applies the same change")
		took, err = within(ctx, updateBound, func(ctx context.Context) error { return p2.Update(ctx, newTopo) })
		Expect(err).NotTo(HaveOccurred())
		GinkgoWriter.Printf("second Update took %s\n", took.Round(time.Millisecond))
		Eventually(func() bool { ch, _ := p2.LastChange(); return ch.Done }).WithTimeout(sendBound).Should(BeTrue())
		n2 = s2.count()
		Eventually(s2.count).WithTimeout(sendBound).Should(BeNumerically(">=", n2+2*len(keys)))
		s1.end(sendBound)
		s2.end(sendBound)
		for i, p := range []*producer.Producer{p1, p2} {
			ch, _ := p.LastChange()
			GinkgoWriter.Printf("p%d change: %+v\n", i+1, ch)
			Expect(ch.Forced).To(BeZero())
		}

		got := rd.waitAll(l, sendBound)
		r := checkRead(ctx, "consumer", l, got, cons)
		Expect(r.Failed).To(BeZero())
		Expect(r.Reordered).To(BeZero(), "with every cluster up, no break of order: %v", r.Examples)
	})
})
