//go:build e2e

package consumer

import (
	"context"
	"maps"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/consumer"
)

const (
	seekKeys       = 1_000
	seekEarlyPer   = 5  // 5,000 messages before t0
	seekLatePerKey = 10 // 10,000 after
)

// seekAndTake seeks c to t, then takes messages until every one of want
// has come, and checks that exactly want came, each key from its first
// message on, in order, from every cluster. It returns how many came.
func seekAndTake(ctx context.Context, c *consumer.Consumer, t time.Time, name string, want written) int {
	GinkgoHelper()
	sought := time.Now()
	Expect(c.SeekByTime(ctx, t)).To(Succeed())
	got, allTaken := drain(ctx, want, startReader(ctx, c))
	f := check(got[0], want)
	GinkgoWriter.Printf("after SeekByTime(%s): %s, in %s; per cluster %v\n",
		name, f, allTaken.Sub(sought).Round(time.Millisecond), byCluster(got[0]))
	expectComplete(f)
	Expect(byCluster(got[0])).To(HaveLen(clusters), "every cluster delivers again")
	return len(got[0])
}

var _ = Describe("SeekByTime", func() {
	It("after everything is taken, to a time before the production: every message comes again from the first on every cluster; to a time between two productions: exactly the later one", func(sctx SpecContext) {
		ctx := specCtx(sctx, 6*time.Minute)
		topic := newTopic(ctx, "seek")
		ks := keys("seek", seekKeys)
		c, err := consumer.New(ctx, topo(), consumer.Topic(topic), consumer.Subscription("seek"),
			consumer.InitialPosition(consumer.Earliest))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(c.Close)

		// Publish times are the producing client's clock, in
		// milliseconds, and the seek is by the first message at or after
		// t (in milliseconds too): t0 is a millisecond after the early
		// messages were written, so none of them is at or after it.
		suite.Step("produce before and after t0")
		before := time.Now()
		p := openProducer(ctx, topic)
		early := produce(ctx, p, ks, 0, seekEarlyPer)
		t0 := time.Now().Truncate(time.Millisecond).Add(time.Millisecond)
		time.Sleep(time.Until(t0))
		late := produce(ctx, p, ks, seekEarlyPer, seekLatePerKey)
		all := maps.Clone(early)
		maps.Copy(all, late)

		suite.Step("take everything")
		got, _ := drain(ctx, all, startReader(ctx, c))
		f := check(got[0], all)
		GinkgoWriter.Printf("first pass: %s\n", f)
		expectComplete(f)

		suite.Step("seek before the production")
		n2 := seekAndTake(ctx, c, before, "before the production", all)
		suite.Step("seek between the productions")
		n3 := seekAndTake(ctx, c, t0, "t0, between the productions", late)

		var received uint64
		for _, h := range c.Health(ctx) {
			received += h.Delivered
		}
		Expect(received).To(BeEquivalentTo(len(got[0])+n2+n3), "Health's Delivered counts every pass")
		Expect(c.Close(ctx)).To(Succeed())
	})
})
