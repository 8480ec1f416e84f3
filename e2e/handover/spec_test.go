//go:build e2e

package handover

import (
	"context"
	"math/rand/v2"
	"sort"
	"strconv"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/e2e/internal/bedsuite"
	"github.com/keyroute/keyroute/e2e/internal/ordercheck"
	"github.com/keyroute/keyroute/e2e/internal/specreader"
	"github.com/keyroute/keyroute/internal/testbed"
)

const (
	specKeys   = 400
	specRounds = 5 // messages per key and producer before the change, and again after
	specParts  = 3
	// holdTimeout is the SPEC reader's hold bound in the specs that must
	// see no forced release: longer than any of their steps is allowed to
	// take (the spec's ctx), so a release by time is a failure.
	holdTimeout = 4 * time.Minute
	// quiet is how long a spec keeps reading after the last message it
	// expects, to see late copies: an observation period, not a bound.
	quiet = 2 * time.Second
)

// collector keeps what a SPEC reader delivered, and its releases.
type collector struct {
	mu       sync.Mutex
	got      []specreader.Delivery
	released []specreader.Release
}

func (c *collector) deliver(d specreader.Delivery) {
	c.mu.Lock()
	c.got = append(c.got, d)
	c.mu.Unlock()
}

func (c *collector) release(r specreader.Release) {
	c.mu.Lock()
	c.released = append(c.released, r)
	c.mu.Unlock()
}

func (c *collector) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.got)
}

// delivered returns the deliveries in the reader's order, and in the order
// it received them: what a naive reader, delivering on receipt, would have
// delivered from the same subscription data.
func (c *collector) delivered() (spec, naive []ordercheck.Got) {
	c.mu.Lock()
	ds := append([]specreader.Delivery(nil), c.got...)
	c.mu.Unlock()
	for _, d := range ds {
		spec = append(spec, ordercheck.Got{Payload: d.Payload, At: d.At})
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i].Seq < ds[j].Seq })
	for _, d := range ds {
		naive = append(naive, ordercheck.Got{Payload: d.Payload, At: d.ReceivedAt})
	}
	return spec, naive
}

var _ = Describe("a hand-over written by the SPEC on plain pulsar-client-go", func() {
	It("is read in order by the SPEC reader, although its new owner is read first and a naive merge reorders", func(sctx SpecContext) {
		ctx, cancel := context.WithTimeout(sctx, holdTimeout)
		defer cancel()
		cs := suite.Bed.Clusters()[:3]
		a, b, c := cs[0].Name, cs[1].Name, cs[2].Name
		topic := "persistent://public/default/" + bedsuite.Unique("spec")
		bedsuite.CreateTopic(ctx, cs, topic, specParts)
		clients := clientsOf(cs)
		DeferCleanup(func() {
			for _, cl := range clients {
				cl.Close()
			}
		})
		keys := make([]string, specKeys)
		for i := range keys {
			keys[i] = "key-" + strconv.Itoa(i)
		}
		before, after := newPlacement([]string{a, b}, specParts), newPlacement([]string{a, b, c}, specParts)

		suite.Step("two SPEC producers write, hand over " + a + "/" + b + " -> " + c + ", write again")
		ledger := ordercheck.NewLedger()
		sps := []*specProducer{
			newSpecProducer(ctx, rand.Uint64(), clients, topic, specParts, before, ledger),
			newSpecProducer(ctx, rand.Uint64(), clients, topic, specParts, before, ledger),
		}
		for _, sp := range sps {
			DeferCleanup(sp.close)
		}
		round := func() {
			for _, k := range keys {
				for _, sp := range sps {
					sp.send(ctx, k)
				}
			}
		}
		for range specRounds {
			round()
		}
		var moved map[string]bool
		markers := 0
		for _, sp := range sps {
			moved = sp.change(ctx, keys, after)
			markers += len(sp.origins)
		}
		for range specRounds {
			round()
		}
		onC := 0
		for _, sp := range sps {
			sp.flush()
			Expect(sp.failed).To(BeEmpty())
			onC += sp.written[c]
		}
		frac := float64(len(moved)) / float64(len(keys))
		GinkgoWriter.Printf("%d keys, %d moved to %s (%.3f), %d markers, %d messages, %d on %s\n",
			len(keys), len(moved), c, frac, markers, len(ledger.All()), onC, c)
		Expect(moved).NotTo(BeEmpty())
		Expect(onC).To(Equal(len(moved)*specRounds*len(sps)), "only moved keys' later messages are on the new cluster")

		suite.Step("read " + c + " first, then " + a + " and " + b)
		col := &collector{}
		r, err := specreader.New(ctx, specreader.Options{
			Clusters: readerClusters(cs), Topic: topic, Subscription: "spec",
			Deferred: []string{a, b}, HoldTimeout: holdTimeout, HoldLimit: 1 << 20,
			Deliver: col.deliver, Released: col.release,
		})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(r.Close)
		Eventually(func() int64 { return r.Stats().Received }).WithContext(ctx).Should(BeEquivalentTo(onC))
		Expect(col.count()).To(BeZero(), "every message on %s waits for its origin", c)
		Expect(r.HeldNow()).To(Equal(onC))
		Expect(r.Subscribe(ctx, a)).To(Succeed())
		Expect(r.Subscribe(ctx, b)).To(Succeed())
		acked := len(ledger.All())
		Eventually(col.count).WithContext(ctx).Should(BeNumerically(">=", acked))
		time.Sleep(quiet)

		suite.Step("check")
		spec, naive := col.delivered()
		want := ordercheck.Check(ledger, spec)
		got := ordercheck.Check(ledger, naive)
		st := r.Stats()
		GinkgoWriter.Printf("SPEC reader: %s; held %d (at most %d at once), markers %d (acked %d), forced %d\n",
			want, st.Held, st.MaxHeld, st.Markers, st.MarkersAcked, st.Forced)
		GinkgoWriter.Printf("naive merge of the same receipts: %s\n", got)
		Expect(want.Lost).To(BeZero(), "%v", want.Examples)
		Expect(want.Duplicated).To(BeZero(), "%v", want.Examples)
		Expect(want.Reordered).To(BeZero(), "%v", want.Examples)
		Expect(want.Unknown).To(BeZero(), "%v", want.Examples)
		Expect(want.Acked).To(Equal(acked))
		Expect(got.Reordered).To(BeNumerically(">=", len(moved)*len(sps)),
			"the scenario reorders every moved key of each producer for a reader that does not hold")
		Expect(col.released).To(BeEmpty(), "no hold is released by force")
		Expect(st.Forced).To(BeZero())
		Expect(st.Held).To(BeEquivalentTo(onC))
		Expect(st.Markers).To(BeEquivalentTo(markers))
		Expect(st.MarkersAcked).To(Equal(st.Markers), "each marker is acknowledged once within the frontier")
		Expect(st.BadTags).To(BeZero())
	})
})

// readerClusters returns the SPEC reader's view of clusters.
func readerClusters(cs []*testbed.Cluster) []specreader.Cluster {
	out := make([]specreader.Cluster, len(cs))
	for i, c := range cs {
		out[i] = specreader.Cluster{Name: c.Name, ServiceURL: c.ServiceURL}
	}
	return out
}
