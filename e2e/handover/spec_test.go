//go:build e2e

package handover

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/e2e/internal/bedsuite"
	"github.com/keyroute/keyroute/e2e/internal/ordercheck"
	"github.com/keyroute/keyroute/e2e/internal/specreader"
	"github.com/keyroute/keyroute/internal/admin"
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

// written is what two SPEC producers wrote around one change.
type written struct {
	ledger  *ordercheck.Ledger
	moved   map[string]bool
	markers int
	on      map[string]int // messages per cluster
}

// handOver has two SPEC producer instances write specRounds messages of
// every key under before, run grow, apply the change to after (markers,
// section 5.2), and write specRounds more of every key.
func handOver(ctx context.Context, clients map[string]pulsar.Client, topic string, keys []string,
	before, after placement, grow func()) written {
	w := written{ledger: ordercheck.NewLedger(), on: map[string]int{}}
	sps := []*specProducer{
		newSpecProducer(ctx, rand.Uint64(), clients, topic, before, w.ledger),
		newSpecProducer(ctx, rand.Uint64(), clients, topic, before, w.ledger),
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
	grow()
	for _, sp := range sps {
		w.moved = sp.change(ctx, keys, after)
		w.markers += len(sp.origins)
	}
	for range specRounds {
		round()
	}
	for _, sp := range sps {
		sp.flush()
		Expect(sp.failed).To(BeEmpty())
		for c, n := range sp.written {
			w.on[c] += n
		}
	}
	GinkgoWriter.Printf("%d keys, %d moved (%.3f), %d markers, %d messages: %v per cluster\n",
		len(keys), len(w.moved), float64(len(w.moved))/float64(len(keys)), w.markers, len(w.ledger.All()), w.on)
	Expect(w.moved).NotTo(BeEmpty())
	return w
}

// checkRead waits until col has at least every message w wrote, reads on
// for quiet, and checks that r delivered each key of each producer in
// order, none lost or twice, and released nothing by force. It returns
// what a naive merge of the same receipts gives.
func checkRead(ctx context.Context, w written, r *specreader.Reader, col *collector) ordercheck.Result {
	all := len(w.ledger.All())
	Eventually(col.count).WithContext(ctx).Should(BeNumerically(">=", all))
	time.Sleep(quiet)
	spec, naive := col.delivered()
	got := ordercheck.Check(w.ledger, spec)
	nv := ordercheck.Check(w.ledger, naive)
	st := r.Stats()
	GinkgoWriter.Printf("SPEC reader: %s; held %d (at most %d at once), markers %d (acked %d), forced %d\n",
		got, st.Held, st.MaxHeld, st.Markers, st.MarkersAcked, st.Forced)
	GinkgoWriter.Printf("naive merge of the same receipts: %s\n", nv)
	Expect(got.Lost).To(BeZero(), "%v", got.Examples)
	Expect(got.Duplicated).To(BeZero(), "%v", got.Examples)
	Expect(got.Reordered).To(BeZero(), "%v", got.Examples)
	Expect(got.Unknown).To(BeZero(), "%v", got.Examples)
	Expect(got.Acked).To(Equal(all))
	Expect(col.released).To(BeEmpty(), "no hold is released by force")
	Expect(st.Forced).To(BeZero())
	Expect(st.Markers).To(BeEquivalentTo(w.markers))
	Expect(st.MarkersAcked).To(Equal(st.Markers), "each marker is acknowledged once within the frontier")
	Expect(st.BadTags).To(BeZero())
	return nv
}

// specTopic creates a topic of parts partitions on cs and returns it with
// a client per cluster and the suite's keys.
func specTopic(ctx context.Context, cs []*testbed.Cluster, parts int) (string, map[string]pulsar.Client, []string) {
	topic := "persistent://public/default/" + bedsuite.Unique("spec")
	bedsuite.CreateTopic(ctx, cs, topic, parts)
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
	return topic, clients, keys
}

var _ = Describe("a hand-over written by the SPEC on plain pulsar-client-go", func() {
	for _, failover := range []bool{false, true} {
		It(fmt.Sprintf("is read in order by the SPEC reader (Failover %v), although its new owner is read first and a naive merge reorders", failover), func(sctx SpecContext) {
			ctx, cancel := context.WithTimeout(sctx, holdTimeout)
			defer cancel()
			cs := suite.Bed.Clusters()[:3]
			a, b, c := cs[0].Name, cs[1].Name, cs[2].Name
			topic, clients, keys := specTopic(ctx, cs, specParts)

			suite.Step("two SPEC producers write, hand over " + a + "/" + b + " -> " + c + ", write again")
			w := handOver(ctx, clients, topic, keys, newPlacement(evenly(specParts, a, b)),
				newPlacement(evenly(specParts, a, b, c)), func() {})
			Expect(w.on[c]).To(Equal(len(w.moved)*specRounds*2), "only moved keys' later messages are on the new cluster")

			suite.Step("read " + c + " first, then " + a + " and " + b)
			col := &collector{}
			r := newSpecReaderOf(ctx, cs, topic, "spec", failover, col, holdTimeout, 1<<20, a, b)
			heldAll(ctx, r, col, c, w.on[c])
			Expect(r.Subscribe(ctx, a)).To(Succeed())
			Expect(r.Subscribe(ctx, b)).To(Succeed())

			suite.Step("check")
			naive := checkRead(ctx, w, r, col)
			Expect(naive.Reordered).To(BeNumerically(">=", len(w.moved)*2),
				"the scenario reorders every moved key of each producer for a reader that does not hold")
			Expect(r.Stats().Held).To(BeEquivalentTo(w.on[c]))
		})
	}

	It("is read again in order by a SPEC reader restarted while it holds (HANDOVER.md 7.4)", func(sctx SpecContext) {
		ctx, cancel := context.WithTimeout(sctx, holdTimeout)
		defer cancel()
		cs := suite.Bed.Clusters()[:3]
		a, b, c := cs[0].Name, cs[1].Name, cs[2].Name
		topic, clients, keys := specTopic(ctx, cs, specParts)
		w := handOver(ctx, clients, topic, keys, newPlacement(evenly(specParts, a, b)),
			newPlacement(evenly(specParts, a, b, c)), func() {})

		suite.Step("a first reader holds every message of " + c + ", then closes")
		first := &collector{}
		r1 := newSpecReader(ctx, cs, topic, "spec", first, holdTimeout, a, b)
		heldAll(ctx, r1, first, c, w.on[c])
		r1.Close()

		suite.Step("a second reader on the same subscription")
		col := &collector{}
		r2 := newSpecReader(ctx, cs, topic, "spec", col, holdTimeout, a, b)
		heldAll(ctx, r2, col, c, w.on[c]) // nothing held was acknowledged: it comes again
		Expect(r2.Subscribe(ctx, a)).To(Succeed())
		Expect(r2.Subscribe(ctx, b)).To(Succeed())
		checkRead(ctx, w, r2, col)
		Expect(first.count()).To(BeZero())
	})

	It("is read in order from its backlog with a HoldLimit far below the messages moved: the partitions that hold are stopped, none released by force", func(sctx SpecContext) {
		ctx, cancel := context.WithTimeout(sctx, holdTimeout)
		defer cancel()
		cs := suite.Bed.Clusters()[:3]
		a, b, c := cs[0].Name, cs[1].Name, cs[2].Name
		topic, clients, keys := specTopic(ctx, cs, specParts)
		w := handOver(ctx, clients, topic, keys, newPlacement(evenly(specParts, a, b)),
			newPlacement(evenly(specParts, a, b, c)), func() {})
		const limit = 8
		// The bound on what a reader holds: HoldLimit, plus one message
		// per partition taken as the partition stops.
		bound := limit + len(cs)*specParts
		Expect(w.on[c]).To(BeNumerically(">", 10*bound))

		suite.Step(fmt.Sprintf("a SPEC reader with HoldLimit %d reads %s first: each of its partitions stops", limit, c))
		col := &collector{}
		r := newSpecReaderOf(ctx, cs, topic, "spec", false, col, holdTimeout, limit, a, b)
		Eventually(func() int64 { return r.Stats().Stops }).WithContext(ctx).Should(BeNumerically(">=", specParts))
		st := r.Stats()
		GinkgoWriter.Printf("%s alone: %d of its %d messages received, %d held, %d stops\n", c, st.Received, w.on[c], r.HeldNow(), st.Stops)
		Expect(st.Received).To(BeNumerically("<=", limit+specParts), "nothing is taken from a stopped partition")
		Expect(col.count()).To(BeZero(), "every message of %s waits for its origin", c)
		Expect(r.Subscribe(ctx, a)).To(Succeed())
		Expect(r.Subscribe(ctx, b)).To(Succeed())
		naive := checkRead(ctx, w, r, col)
		Expect(naive.Reordered).To(BeNumerically(">", 0), "a reader that does not hold reorders the same receipts")
		Expect(r.Stats().MaxHeld).To(BeNumerically("<=", bound))

		// New subscribes in the order of the clusters: c first, so that
		// its partitions are likely read ahead of the origins.
		suite.Step(fmt.Sprintf("a SPEC reader with HoldLimit %d subscribes %s, then %s and %s at once", limit, c, a, b))
		all := &collector{}
		r2 := newSpecReaderOf(ctx, []*testbed.Cluster{cs[2], cs[0], cs[1]}, topic, "spec-all", false, all, holdTimeout, limit)
		checkRead(ctx, w, r2, all)
		st = r2.Stats()
		GinkgoWriter.Printf("every cluster at once: %d stops\n", st.Stops)
		Expect(st.MaxHeld).To(BeNumerically("<=", bound))
	})

	It("keeps order across partition growth on one cluster, read live: the new partitions found by discovery", func(sctx SpecContext) {
		ctx, cancel := context.WithTimeout(sctx, holdTimeout)
		defer cancel()
		cs := suite.Bed.Clusters()[:2]
		a, b := cs[0].Name, cs[1].Name
		topic, clients, keys := specTopic(ctx, cs, specParts)
		grown := specParts + 2

		suite.Step("subscribe the SPEC reader on both clusters")
		col := &collector{}
		r := newSpecReader(ctx, cs, topic, "spec", col, holdTimeout)

		suite.Step(fmt.Sprintf("two SPEC producers write, grow %s to %d partitions, hand over, write again", a, grown))
		before, after := evenly(specParts, a, b), evenly(specParts, a, b)
		after[a] = grown
		w := handOver(ctx, clients, topic, keys, newPlacement(before), newPlacement(after), func() {
			Expect(admin.Plain(cs[0].AdminURL).UpdatePartitions(ctx, topic, grown)).To(Succeed())
		})
		for k := range w.moved {
			Expect(newPlacement(before).owner(k).cluster).To(Equal(a), "only %s's keys move", a)
		}

		suite.Step("check the live reader")
		checkRead(ctx, w, r, col)
		parts := map[int32]bool{}
		col.mu.Lock()
		for _, d := range col.got {
			if d.Cluster == a {
				parts[d.Partition] = true
			}
		}
		col.mu.Unlock()
		Expect(parts).To(HaveLen(grown), "every partition of %s is read", a)

		// A reader caught up meets each marker before the moved messages
		// written after it; one that subscribes now reads the partitions'
		// backlogs side by side, and may meet them in any order.
		suite.Step("a second SPEC reader subscribes after the writes")
		late := &collector{}
		checkRead(ctx, w, newSpecReader(ctx, cs, topic, "spec-late", late, holdTimeout), late)
	})
})

// heldAll waits until r, reading cluster c alone, has received its n
// messages, and checks that it holds them all: each waits for its origin
// on a cluster r does not read yet.
func heldAll(ctx context.Context, r *specreader.Reader, col *collector, c string, n int) {
	Eventually(func() int64 { return r.Stats().Received }).WithContext(ctx).Should(BeEquivalentTo(n))
	Expect(col.count()).To(BeZero(), "every message on %s waits for its origin", c)
	Expect(r.HeldNow()).To(Equal(n))
}

// newSpecReader subscribes a SPEC reader to topic on cs, but for the
// deferred clusters, delivering to col, with hold as its HoldTimeout and
// a HoldLimit it does not reach; it is closed when the spec ends.
func newSpecReader(ctx context.Context, cs []*testbed.Cluster, topic, sub string, col *collector, hold time.Duration,
	deferred ...string) *specreader.Reader {
	return newSpecReaderOf(ctx, cs, topic, sub, false, col, hold, 1<<20, deferred...)
}

// newSpecReaderOf is newSpecReader with a Failover subscription when
// failover is true (one consumer name on every cluster), and limit as
// its HoldLimit.
func newSpecReaderOf(ctx context.Context, cs []*testbed.Cluster, topic, sub string, failover bool, col *collector, hold time.Duration,
	limit int, deferred ...string) *specreader.Reader {
	r, err := specreader.New(ctx, specreader.Options{
		Clusters: readerClusters(cs), Topic: topic, Subscription: sub, Deferred: deferred,
		Failover: failover, ConsumerName: "spec-reader",
		HoldTimeout: hold, HoldLimit: limit, Deliver: col.deliver, Released: col.release,
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(r.Close)
	return r
}

// readerClusters returns the SPEC reader's view of clusters.
func readerClusters(cs []*testbed.Cluster) []specreader.Cluster {
	out := make([]specreader.Cluster, len(cs))
	for i, c := range cs {
		out[i] = specreader.Cluster{Name: c.Name, ServiceURL: c.ServiceURL}
	}
	return out
}
