//go:build e2e

package consumerparity

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/consumer"
)

var _ = Describe("Several topics", func() {
	It("reads three topics, each written by its own producer, through one consumer: every message once, each key of each topic in order, IDs naming their topic; SeekByID of one topic's partition reads that partition again and nothing else", func(sctx SpecContext) {
		ctx := specCtx(sctx, 4*time.Minute)
		const perTopic = 600
		var topics []string
		sent := map[string]map[string]int{} // by topic, then key
		for i := range 3 {
			t := newTopic(ctx, fmt.Sprint("topics-", i))
			topics = append(topics, t)
			sent[t] = map[string]int{}
			sendKeyed(ctx, openProducer(ctx, t), sent[t], perTopic)
		}
		c, err := consumer.New(ctx, bed.Topology(), consumer.Topics(topics...), consumer.Subscription("topics"),
			consumer.InitialPosition(consumer.Earliest))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = c.Close(ctx) })

		type read struct {
			id   consumer.ID
			part string
			key  string
			seq  int
		}
		var all []read
		next := map[string]int{} // by topic and key
		for len(all) < len(topics)*perTopic {
			ms, err := c.ReceiveBatch(ctx, 50)
			Expect(err).NotTo(HaveOccurred())
			for i := range ms {
				m := &ms[i]
				Expect(topics).To(ContainElement(m.ID.Topic))
				Expect(strings.HasPrefix(m.Raw().Topic(), m.ID.Topic)).To(BeTrue(), "%s read from %s", m.ID, m.Raw().Topic())
				tk := m.ID.Topic + " " + m.Key
				Expect(seqOf(m)).To(Equal(next[tk]), "%s: key %s out of order or twice", m.ID, m.Key)
				next[tk]++
				all = append(all, read{m.ID, m.ID.Topic + " " + partOf(m), m.Key, seqOf(m)})
				Expect(c.Ack(ctx, m)).To(Succeed())
			}
		}
		for _, t := range topics {
			for k, n := range sent[t] {
				Expect(next[t+" "+k]).To(Equal(n), "topic %s key %s complete", t, k)
			}
		}
		hs := c.Health(ctx)
		Expect(hs).To(HaveLen(len(topics) * clusters))
		per := map[string]uint64{}
		for _, h := range hs {
			Expect(h.Connected).To(BeTrue(), "%s %s", h.Topic, h.Cluster)
			per[h.Topic] += h.Delivered
		}
		for _, t := range topics {
			Expect(per[t]).To(BeEquivalentTo(perTopic), "Health's Delivered of %s", t)
		}

		// Back to a message of the second topic, by its saved text: the
		// sixth of its key, so that nine of that key come again.
		var pick read
		for _, r := range all {
			if r.id.Topic == topics[1] && r.seq == 5 {
				pick = r
				break
			}
		}
		var want []read
		for _, r := range all {
			if r.part == pick.part && r.seq > pick.seq && r.key == pick.key {
				want = append(want, r)
			}
		}
		saved, err := consumer.ParseID(pick.id.String())
		Expect(err).NotTo(HaveOccurred())
		Expect(c.SeekByID(ctx, saved)).To(Succeed())
		got := map[string]int{}
		for i := 0; i < len(all); i++ {
			if got[pick.key] == len(want) {
				break
			}
			m, err := c.Receive(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(m.ID.Topic+" "+partOf(m)).To(Equal(pick.part), "only the partition sought comes again; got %s", m.ID)
			if m.Key == pick.key {
				Expect(seqOf(m)).To(Equal(want[got[pick.key]].seq), "key %s after %s", m.Key, pick.id)
			}
			got[m.Key]++
			Expect(c.Ack(ctx, m)).To(Succeed())
		}
		Expect(got[pick.key]).To(Equal(len(want)))
		GinkgoWriter.Printf("%d messages over %d topics read once each, in order; sought back to %s\n", len(all), len(topics), pick.id)
		Expect(c.Close(ctx)).To(Succeed())
	})
})
