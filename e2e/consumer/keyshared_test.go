//go:build e2e

package consumer

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/consumer"
	"github.com/keyroute/keyroute/producer"
)

const (
	sharedKeys   = 2_000
	sharedPerKey = 10 // 20,000 messages a phase
)

// keysOf returns the keys of got.
func keysOf(got []delivery) map[string]bool {
	out := map[string]bool{}
	for _, d := range got {
		out[d.key] = true
	}
	return out
}

var _ = Describe("two KeyShared consumers on one subscription", func() {
	It("give each key to one of them only, in order, and together take everything; once one closes, the other takes every key", func(sctx SpecContext) {
		ctx := specCtx(sctx, 6*time.Minute)
		topic := newTopic(ctx, "keyshared")
		opts := []consumer.Opt{consumer.Topic(topic), consumer.Subscription("keyshared"),
			consumer.Type(consumer.KeyShared), consumer.InitialPosition(consumer.Earliest)}
		a, err := consumer.New(ctx, topo(), opts...)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(a.Close)
		b, err := consumer.New(ctx, topo(), opts...)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(b.Close)
		ra, rb := startReader(ctx, a), startReader(ctx, b)

		// A KeyShared subscription hands out whole entries, by the key of
		// an entry's first message: a batch that mixed keys would take
		// them all to one consumer. Key-based batching makes each batch
		// one key's.
		ks := keys("shared", sharedKeys)
		p := openProducer(ctx, topic, producer.KeyBasedBatching(true))

		suite.Step("both up")
		start := time.Now()
		want := produce(ctx, p, ks, 0, sharedPerKey)
		got, allTaken := drain(ctx, want, ra, rb)
		ga, gb := got[0], got[1]
		f := check(append(append([]delivery(nil), ga...), gb...), want)
		na, exa := ordered(ga)
		nb, exb := ordered(gb)
		keysA, keysB := keysOf(ga), keysOf(gb)
		var both []string
		for k := range keysA {
			if keysB[k] {
				both = append(both, k)
			}
		}
		GinkgoWriter.Printf("both up: %s in %s; instance A took %d messages of %d keys, B %d of %d; keys seen by both: %d\n",
			f, allTaken.Sub(start).Round(time.Millisecond), len(ga), len(keysA), len(gb), len(keysB), len(both))
		Expect(f.lost).To(BeZero(), "lost: %v", f.examples)
		Expect(f.duplicates).To(BeZero(), "duplicates: %v", f.examples)
		Expect(f.misplaced).To(BeZero(), "misplaced: %v", f.examples)
		Expect(f.unknown).To(BeZero(), "unknown: %v", f.examples)
		Expect(na).To(BeZero(), "per-key order within A: %s", exa)
		Expect(nb).To(BeZero(), "per-key order within B: %s", exb)
		Expect(both).To(BeEmpty(), "keys that reached both instances while both were up")
		Expect(keysA).NotTo(BeEmpty(), "A gets keys")
		Expect(keysB).NotTo(BeEmpty(), "B gets keys")
		Expect(len(keysA) + len(keysB)).To(Equal(sharedKeys))

		// A closes (which sends its grouped acknowledgements): every key,
		// A's included, now goes to B, and nothing A took comes again.
		suite.Step("one up")
		Expect(a.Close(ctx)).To(Succeed())
		rb2 := startReader(ctx, b)
		start = time.Now()
		want2 := produce(ctx, p, ks, sharedPerKey, sharedPerKey)
		got2, allTaken2 := drain(ctx, want2, rb2)
		f2 := check(got2[0], want2)
		fromA := 0
		for k := range keysOf(got2[0]) {
			if keysA[k] {
				fromA++
			}
		}
		GinkgoWriter.Printf("A closed: B took %s in %s, %d keys of which %d had been A's\n",
			f2, allTaken2.Sub(start).Round(time.Millisecond), len(keysOf(got2[0])), fromA)
		Expect(f2.lost).To(BeZero(), "lost: %v", f2.examples)
		Expect(f2.reordered).To(BeZero(), "reordered: %v", f2.examples)
		Expect(f2.duplicates).To(BeZero(), "duplicates: %v", f2.examples)
		Expect(f2.unknown).To(BeZero(), "taken again from the first phase, or never written: %v", f2.examples)
		Expect(fromA).To(Equal(len(keysA)), "B takes every key A had")
		Expect(b.Close(ctx)).To(Succeed())
	})
})
