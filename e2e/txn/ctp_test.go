//go:build e2e

package txn

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/consumer"
	"github.com/keyroute/keyroute/e2e/internal/consume"
	"github.com/keyroute/keyroute/producer"
)

// process reads up to batch messages from c and, in one transaction of
// p, writes each as "out:<value>" with its key and acknowledges it. With
// commit false it stages the transaction and returns without ending it,
// as a process that dies before Commit. It returns how many it read.
func process(ctx context.Context, c *consumer.Consumer, p *producer.Producer, batch int, commit bool) int {
	ms, err := c.ReceiveBatch(ctx, batch)
	Expect(err).NotTo(HaveOccurred())
	tx, err := p.BeginTxn()
	Expect(err).NotTo(HaveOccurred())
	for i := range ms {
		m := &ms[i]
		Expect(tx.Send(&producer.Message{Key: m.Key, Value: append([]byte("out:"), m.Value...)})).To(Succeed())
		a, err := c.TxnAck(m)
		Expect(err).NotTo(HaveOccurred())
		Expect(tx.Ack(a)).To(Succeed())
	}
	if commit {
		_, err = tx.Commit(ctx)
		Expect(err).NotTo(HaveOccurred())
	}
	return len(ms)
}

var _ = Describe("consume, transform and produce in one transaction", func() {
	It("writes every input exactly once, in key order, across a restart that drops a staged transaction, and leaves no backlog", func(sctx SpecContext) {
		ctx, cancel := context.WithTimeout(sctx, 4*time.Minute)
		defer cancel()
		in, out := uniqueTopic("ctp-in"), uniqueTopic("ctp-out")
		Expect(createTopic(ctx, bed, in)).To(Succeed())
		Expect(createTopic(ctx, bed, out)).To(Succeed())
		const n, keys, batch = 600, 60, 25

		src, err := newProducer(ctx, bed, in)
		Expect(err).NotTo(HaveOccurred())
		for i := range n {
			k := fmt.Sprintf("k%d", i%keys)
			_, err := src.Send(ctx, &producer.Message{Key: k, Value: fmt.Appendf(nil, "%s/%05d", k, i/keys)})
			Expect(err).NotTo(HaveOccurred())
		}
		Expect(src.Close(ctx)).To(Succeed())

		open := func() (*consumer.Consumer, *producer.Producer) {
			c, err := consumer.New(ctx, bed.Topology(), consumer.Topic(in), consumer.Subscription("ctp"),
				consumer.InitialPosition(consumer.Earliest))
			Expect(err).NotTo(HaveOccurred())
			p, err := newProducer(ctx, bed, out)
			Expect(err).NotTo(HaveOccurred())
			return c, p
		}

		// The first pair commits a third, stages one more transaction
		// (written and acknowledged nowhere yet) and goes away.
		c, p := open()
		done := 0
		for done < n/3 {
			done += process(ctx, c, p, batch, true)
		}
		dropped := process(ctx, c, p, batch, false)
		GinkgoWriter.Printf("first pair: %d committed, %d staged and dropped\n", done, dropped)
		Expect(c.Close(ctx)).To(Succeed())
		Expect(p.Close(ctx)).To(Succeed())

		// The second pair gets the dropped messages again and finishes.
		c, p = open()
		for done < n {
			done += process(ctx, c, p, batch, true)
		}
		Expect(done).To(Equal(n), "the inputs not committed came again, those committed did not")
		Eventually(func() int64 {
			var backlog int64
			for _, h := range c.Health(ctx) {
				Expect(h.BacklogErr).NotTo(HaveOccurred())
				backlog += h.Backlog
			}
			return backlog
		}).WithContext(ctx).WithPolling(time.Second).Should(BeZero(), "every input acknowledged by a commit")
		Expect(c.Close(ctx)).To(Succeed())
		Expect(p.Close(ctx)).To(Succeed())

		got, err := consume.All(ctx, bed.Clusters(), out, "check", n, 2*time.Second)
		Expect(err).NotTo(HaveOccurred())
		seen := map[string]int{}
		last := map[string]string{}
		reordered := 0
		for _, m := range got {
			v := strings.TrimPrefix(m.Payload, "out:")
			seen[v]++
			if v < last[m.Key] {
				reordered++
			}
			last[m.Key] = v
		}
		Expect(got).To(HaveLen(n), "no output lost or duplicated")
		Expect(seen).To(HaveLen(n))
		Expect(reordered).To(BeZero())
	})
})
