//go:build e2e

package handover

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/consumer"
	"github.com/keyroute/keyroute/e2e/internal/bedsuite"
	"github.com/keyroute/keyroute/e2e/internal/ordercheck"
	"github.com/keyroute/keyroute/e2e/internal/specreader"
	"github.com/keyroute/keyroute/internal/admin"
	"github.com/keyroute/keyroute/producer"
	"github.com/keyroute/keyroute/router"
	"github.com/keyroute/keyroute/topology"
)

// The load specs of a live topology change need a sixth cluster.
func init() { clusterCount = 6 }

const (
	liveRate  = 5000 // messages per second offered, over all clusters
	liveKeys  = 10_000
	liveParts = 5
	// liveWarm is load before the measured window: connections open and
	// the brokers' JIT settles. liveWindow is the measured window before
	// the change, and again from the change on; liveTail is load after it.
	liveWarm   = 4 * time.Second
	liveWindow = 8 * time.Second
	liveTail   = 2 * time.Second
	// discovery is the producer's and the readers' partition discovery
	// interval; opTimeout is pulsar-client-go's default operation timeout,
	// which bounds one discovery's lookups.
	discovery = time.Second
	opTimeout = 30 * time.Second
	// liveHold is both readers' hold bound: far longer than a hold lasts
	// (a marker's acknowledgement, then the old owner read up to it), so
	// that a release by time is a failure, reported with what it waited
	// for.
	liveHold = time.Minute
	// moveTolerance is how far the moved keys' fraction may be from the
	// weights' expectation (10,000 keys: about 2.5 standard deviations).
	moveTolerance = 0.01
)

// topoOf returns the bed's first n clusters as a topology, with the
// weights given (1 otherwise).
func topoOf(n int, weight map[string]float64) *topology.Topology {
	t := suite.Bed.Topology()
	t.Clusters = t.Clusters[:n]
	for i := range t.Clusters {
		if w, ok := weight[t.Clusters[i].Name]; ok {
			t.Clusters[i].Weight = w
		}
	}
	return t
}

// liveChange is one live change under load.
type liveChange struct {
	// name says what the change is (add, drain, reweight, growth) in the
	// printed figures; changed names the cluster it adds, drains,
	// reweights or grows, whose unmoved keys' latency is printed apart.
	name, changed string
	from          *topology.Topology
	// apply applies the change to the consumer and the producer and
	// returns once the producer runs under it, with how long each side
	// took.
	apply     func(ctx context.Context, topic string, p *producer.Producer, c *consumer.Consumer) applyTimes
	epochs    uint64  // the producer's Epoch after apply
	wantMoved float64 // the moved keys' fraction the weights give
	popts     []producer.Opt
	// check, if set, checks every key's owner before and after the
	// change against what router predicts.
	check func(keys []string, before, after map[string]owner)
}

// applyTimes is how long a change took on each side: the Update calls
// (summed over a change of several), or for a growth the time from the
// start of the admin call that grows the topic until each side runs over
// the new partitions (the call, a discovery interval, and the subscribe
// or open that follows).
type applyTimes struct{ producer, consumer time.Duration }

// krReader reads a keyroute consumer from its own goroutine.
type krReader struct {
	mu   sync.Mutex
	got  []ordercheck.Got
	errs []error
	done chan struct{}
}

func readConsumer(ctx context.Context, c *consumer.Consumer) *krReader {
	r := &krReader{done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for {
			m, err := c.Receive(ctx)
			if err != nil {
				if ctx.Err() == nil {
					r.mu.Lock()
					r.errs = append(r.errs, err)
					r.mu.Unlock()
				}
				return
			}
			now := time.Now()
			aerr := c.Ack(ctx, m)
			r.mu.Lock()
			r.got = append(r.got, ordercheck.Got{Payload: m.Value, At: now})
			if aerr != nil {
				r.errs = append(r.errs, aerr)
			}
			r.mu.Unlock()
		}
	}()
	return r
}

func (r *krReader) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}

func (r *krReader) all() []ordercheck.Got {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]ordercheck.Got(nil), r.got...)
}

// pace calls send(i) for i = 0, 1, ... at rate a second until stop is
// closed or ctx ends; at each wake-up it sends what is due by then, so
// that a sender starved of CPU catches up and only send itself can hold
// the offered load back.
func pace(ctx context.Context, rate float64, stop <-chan struct{}, send func(i int)) {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	start := time.Now()
	for i := 0; ; {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for due := int(time.Since(start).Seconds() * rate); i < due; i++ {
			send(i)
		}
	}
}

// offerLive sends liveRate messages a second over keys from one
// goroutine (pace) until stop is closed, recording each in ledger.
func offerLive(ctx context.Context, p *producer.Producer, ledger *ordercheck.Ledger, keys []string, stop <-chan struct{}) (<-chan struct{}, *inCalls) {
	done := make(chan struct{})
	in := &inCalls{}
	go func() {
		defer close(done)
		pace(ctx, liveRate, stop, func(i int) {
			k := keys[i%len(keys)]
			rec, payload := ledger.Next("p1", k)
			t0 := time.Now()
			p.SendAsync(ctx, &producer.Message{Key: k, Value: payload}, func(_ producer.ID, _ *producer.Message, err error) {
				ledger.Done(rec, time.Now(), err)
			})
			in.add(t0, time.Since(t0))
		})
	}()
	return done, in
}

// inCalls records the time the sender spent inside SendAsync, so that a
// sender held back by the SDK (back-pressure) tells from one starved of
// CPU. Written by the sending goroutine, read after it ended.
type inCalls struct {
	at []time.Time
	d  []time.Duration
}

func (c *inCalls) add(at time.Time, d time.Duration) { c.at, c.d = append(c.at, at), append(c.d, d) }

// within sums the time of the calls begun in [from, to).
func (c *inCalls) within(from, to time.Time) time.Duration {
	var sum time.Duration
	for i, at := range c.at {
		if !at.Before(from) && at.Before(to) {
			sum += c.d[i]
		}
	}
	return sum
}

// loadIdle writes, until stop is closed, to each bed cluster that from
// does not hold, on a topic of its own, a cluster's share of liveRate
// with plain pulsar-client-go: a cluster added later is then as warm as
// the others (a cold broker's JIT takes seconds of a loaded machine's
// CPU), and the machine carries the same load before the change as
// during it, so that the rates compared measure the SDK.
func loadIdle(ctx context.Context, from *topology.Topology, stop <-chan struct{}) <-chan struct{} {
	in := map[string]bool{}
	for _, c := range from.Clusters {
		in[c.Name] = true
	}
	var wg sync.WaitGroup
	for _, c := range suite.Bed.Clusters() {
		if in[c.Name] {
			continue
		}
		cl, err := bedsuite.Client(c.ServiceURL, false)
		Expect(err).NotTo(HaveOccurred(), c.Name)
		DeferCleanup(cl.Close)
		w, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: bedsuite.Unique("idle")})
		Expect(err).NotTo(HaveOccurred(), c.Name)
		DeferCleanup(w.Close)
		payload := make([]byte, 40)
		wg.Go(func() {
			pace(ctx, liveRate/float64(len(from.Clusters)), stop, func(int) {
				w.SendAsync(ctx, &pulsar.ProducerMessage{Payload: payload}, func(pulsar.MessageID, *pulsar.ProducerMessage, error) {})
			})
		})
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	return done
}

// placements returns every key's owner under p's topology in use.
func placements(p *producer.Producer, keys []string) map[string]owner {
	out := make(map[string]owner, len(keys))
	for _, k := range keys {
		c, part := p.Placement(k)
		out[k] = owner{c, part}
	}
	return out
}

// runLive runs ch under steady load, read back by the keyroute consumer
// and by the SPEC reader, and checks both.
func runLive(sctx SpecContext, ch liveChange) {
	ctx, cancel := context.WithTimeout(sctx, 5*time.Minute)
	defer cancel()
	cs := suite.Bed.Clusters()
	topic := "persistent://public/default/" + bedsuite.Unique("live")
	bedsuite.CreateTopic(ctx, cs, topic, liveParts)
	keys := make([]string, liveKeys)
	for i := range keys {
		keys[i] = fmt.Sprintf("key-%05d", i)
	}

	suite.Step("subscribe the keyroute consumer and the SPEC reader")
	hlog := &handoverLog{}
	rctx, stopReading := context.WithCancel(ctx)
	defer stopReading()
	c, err := consumer.New(ctx, ch.from, consumer.Topic(topic), consumer.Subscription("kr"),
		consumer.InitialPosition(consumer.Earliest), consumer.HoldTimeout(liveHold), consumer.MaxHeld(1<<20),
		consumer.PartitionsAutoDiscoveryInterval(discovery), consumer.Observe(hlog))
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = c.Close(context.Background()) })
	kr := readConsumer(rctx, c)
	col := &collector{}
	sr := newSpecReader(ctx, cs, topic, "spec", col, liveHold) // its discovery interval is also a second

	suite.Step("steady load, then the change")
	p, err := producer.New(ctx, ch.from, append([]producer.Opt{producer.Topic(topic)}, ch.popts...)...)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = p.Close(context.Background()) })
	ledger := ordercheck.NewLedger()
	stop, stopIdle := make(chan struct{}), make(chan struct{})
	loaded, inSend := offerLive(ctx, p, ledger, keys, stop)
	idle := loadIdle(ctx, ch.from, stopIdle)
	time.Sleep(liveWarm)
	b0 := time.Now()
	time.Sleep(liveWindow)
	b1 := time.Now()
	before := placements(p, keys)
	close(stopIdle)
	<-idle
	c0 := time.Now()
	took := ch.apply(ctx, topic, p, c)
	c1 := time.Now()
	after := placements(p, keys)
	Expect(p.Epoch()).To(Equal(ch.epochs))
	if ch.check != nil {
		ch.check(keys, before, after)
	}
	time.Sleep(time.Until(c0.Add(liveWindow + liveTail)))
	close(stop)
	<-loaded
	Expect(p.Flush(ctx)).To(Succeed())

	// A reader caught up meets each marker before the moved messages
	// written after it, and holds nothing; one that subscribes now reads
	// every partition's backlog side by side, and meets them in any order.
	suite.Step("a second SPEC reader subscribes after the load; read back and check")
	late := &collector{}
	lr := newSpecReader(ctx, cs, topic, "spec-late", late, liveHold)
	sent := ledger.All()
	// A hold that never ends is released at liveHold and reported: the
	// wait ends by then.
	Eventually(kr.count).WithTimeout(liveHold+quiet).Should(BeNumerically(">=", len(sent)), func() string {
		return fmt.Sprintf("the keyroute consumer reads everything: %+v", c.Health(ctx))
	})
	specs := []struct {
		name string
		r    *specreader.Reader
		col  *collector
	}{{"SPEC reader", sr, col}, {"SPEC reader subscribed after the load", lr, late}}
	for _, s := range specs {
		Eventually(s.col.count).WithTimeout(liveHold+quiet).Should(BeNumerically(">=", len(sent)), func() string {
			return fmt.Sprintf("the %s reads everything: %+v, %d held now, released %v", s.name, s.r.Stats(), s.r.HeldNow(), s.col.released)
		})
	}
	time.Sleep(quiet)
	stopReading()
	<-kr.done
	checkOwners(late, before, after)

	moved, frac := ordercheck.Moved(keys, func(k string) owner { return before[k] }, func(k string) owner { return after[k] })
	isMoved := func(k string) bool { return moved[k] }
	unmoved := func(k string) bool { return !moved[k] }
	d0, d1 := c0, c0.Add(liveWindow)
	// The unmoved keys' acknowledged rate against what the sender
	// offered them, from the change on against before it: a ratio of
	// the SDK's keeping up, which a sender starved of CPU by the loaded
	// machine (all on one goroutine here) does not move. The raw rates,
	// and the time the sender spent inside SendAsync (which back-pressure
	// of the held messages would raise), are printed with it.
	kept := func(from, to time.Time) float64 {
		return ordercheck.Rate(ledger, unmoved, from, to) / ordercheck.Offered(ledger, unmoved, from, to)
	}
	ratio := kept(d0, d1) / kept(b0, b1)
	raw := ordercheck.Rate(ledger, unmoved, d0, d1) / ordercheck.Rate(ledger, unmoved, b0, b1)
	GinkgoWriter.Printf("change applied in %s; %d messages sent; moved keys %.4f (want %.4f +- %.2f); unmoved keys' acked/offered during/before %.3f (acked rate during/before %.3f); time inside SendAsync before/during %s/%s\n",
		c1.Sub(c0).Round(time.Millisecond), len(sent), frac, ch.wantMoved, moveTolerance, ratio, raw,
		inSend.within(b0, b1).Round(time.Millisecond), inSend.within(d0, d1).Round(time.Millisecond))
	GinkgoWriter.Printf("unmoved keys before/during: offered %.0f/%.0f msg/s, acked %.0f/%.0f msg/s, longest time without an ack %s/%s\n",
		ordercheck.Offered(ledger, unmoved, b0, b1), ordercheck.Offered(ledger, unmoved, d0, d1),
		ordercheck.Rate(ledger, unmoved, b0, b1), ordercheck.Rate(ledger, unmoved, d0, d1),
		ordercheck.MaxGap(ledger, unmoved, b0, b1).Round(time.Millisecond), ordercheck.MaxGap(ledger, unmoved, d0, d1).Round(time.Millisecond))

	type read struct {
		name string
		got  []ordercheck.Got
	}
	krGot := kr.all()
	reads := []read{{"keyroute consumer", krGot}}
	for _, s := range specs {
		got, _ := s.col.delivered()
		reads = append(reads, read{s.name, got})
	}
	var krDup int
	for i, rd := range reads {
		res := ordercheck.Check(ledger, rd.got)
		if i == 0 {
			krDup = res.Duplicated
		}
		GinkgoWriter.Printf("%s: %s\n", rd.name, res)
		if i < 2 { // the readers that read while the load ran
			baseline := time.Duration(ordercheck.Latency(rd.got, func(string) bool { return true }, b0, b1).ValueAtQuantile(50)) * time.Microsecond
			GinkgoWriter.Printf("  latency before the change p50 %s; extra latency from the change on: moved keys %s, unmoved keys %s\n",
				baseline, ordercheck.Figures(ordercheck.Stall(rd.got, isMoved, d0, d1, baseline)),
				ordercheck.Figures(ordercheck.Stall(rd.got, unmoved, d0, d1, baseline)))
		}
		Expect(res.Failed).To(BeZero(), "%s: no send fails", rd.name)
		Expect(res.Lost).To(BeZero(), "%s: %v", rd.name, res.Examples)
		Expect(res.Duplicated).To(BeZero(), "%s: %v", rd.name, res.Examples)
		Expect(res.Reordered).To(BeZero(), "%s: %v", rd.name, res.Examples)
		Expect(res.Unknown).To(BeZero(), "%s: %v", rd.name, res.Examples)
	}
	kr.mu.Lock()
	Expect(kr.errs).To(BeEmpty())
	kr.mu.Unlock()
	var held, markers, forced, bad uint64
	for _, h := range c.Health(ctx) {
		held, markers, forced, bad = held+h.HeldTotal, markers+h.Markers, forced+h.ForcedReleases, bad+h.BadHandover
	}
	GinkgoWriter.Printf("keyroute consumer: held %d, markers %d, forced releases %d\n", held, markers, forced)
	Expect(forced).To(BeZero(), "the keyroute consumer releases no hold by force: %v", hlog.first(5))
	Expect(bad).To(BeZero())
	for _, s := range specs {
		st := s.r.Stats()
		GinkgoWriter.Printf("%s: held %d (at most %d at once), markers %d (acked %d)\n", s.name, st.Held, st.MaxHeld, st.Markers, st.MarkersAcked)
		Expect(s.col.released).To(BeEmpty(), "the %s releases no hold by force", s.name)
		Expect(st.Markers).To(BeNumerically(">", 0), "%s: the producer wrote markers", s.name)
		Expect(st.MarkersAcked).To(Equal(st.Markers), s.name)
		Expect(st.BadTags).To(BeZero(), s.name)
	}
	printFigures(ch, frac, took, krGot, krDup, func(k string) (bool, bool) { return moved[k], before[k].cluster == ch.changed },
		[2]time.Time{b0, b1}, [2]time.Time{d0, d1})
	Expect(frac).To(BeNumerically("~", ch.wantMoved, moveTolerance))
	Expect(ratio).To(BeNumerically(">=", 0.95), "unmoved keys are not slowed")
}

// printFigures prints the change's figures on one line, from the
// keyroute consumer's reads (got; dup its duplicates): the moved keys'
// fraction, each side's time to apply it, the end-to-end latency p99
// (delivery less send time) of the unmoved keys sent before the change
// (window b) and from it on (window d), on the changed cluster and on
// the others, and of the moved keys sent from the change on. of tells
// whether a key moved and whether it was on the changed cluster.
func printFigures(ch liveChange, frac float64, took applyTimes, got []ordercheck.Got, dup int,
	of func(key string) (moved, onChanged bool), b, d [2]time.Time) {
	p99 := func(pick func(string) bool, w [2]time.Time) string {
		h := ordercheck.Latency(got, pick, w[0], w[1])
		if h.TotalCount() == 0 {
			return "-" // no such key
		}
		return (time.Duration(h.ValueAtQuantile(99)) * time.Microsecond).Round(time.Millisecond).String()
	}
	pick := func(wantMoved, wantOnChanged bool) func(string) bool {
		return func(k string) bool {
			m, on := of(k)
			return m == wantMoved && (wantMoved || on == wantOnChanged)
		}
	}
	short := func(d time.Duration) time.Duration { // a drain's consumer Update takes microseconds
		if d < time.Millisecond {
			return d.Round(time.Microsecond)
		}
		return d.Round(time.Millisecond)
	}
	unChanged, unElse, movedKeys := pick(false, true), pick(false, false), pick(true, false)
	GinkgoWriter.Printf("FIGURES %s (%s): keys moved %.4f; producer %s, consumer %s; unmoved keys' e2e p99 before/after on %s %s/%s, elsewhere %s/%s; moved keys' e2e p99 %s; duplicates %d\n",
		ch.name, ch.changed, frac, short(took.producer), short(took.consumer),
		ch.changed, p99(unChanged, b), p99(unChanged, d), p99(unElse, b), p99(unElse, d), p99(movedKeys, d), dup)
}

// update applies topo to the consumer, then to the producer (HANDOVER.md
// section 9: a new cluster's subscription exists before a producer
// writes there), and returns how long each took.
func update(ctx context.Context, topo *topology.Topology, p *producer.Producer, c *consumer.Consumer) applyTimes {
	t0 := time.Now()
	Expect(c.Update(ctx, topo)).To(Succeed())
	t1 := time.Now()
	Expect(p.Update(ctx, topo)).To(Succeed())
	return applyTimes{producer: time.Since(t1), consumer: t1.Sub(t0)}
}

var _ = Describe("a live topology change under steady load (producer.Update)", func() {
	It("5 -> 6 clusters: every key in order for both readers, 1/6 of keys move, the others keep their rate", func(sctx SpecContext) {
		runLive(sctx, liveChange{
			name: "add", changed: "local-6", from: topoOf(5, nil), epochs: 1, wantMoved: 1.0 / 6,
			apply: func(ctx context.Context, _ string, p *producer.Producer, c *consumer.Consumer) applyTimes {
				return update(ctx, topoOf(6, nil), p, c)
			},
		})
	})

	It("6 -> 5 clusters (drain): the drained cluster's keys move in order", func(sctx SpecContext) {
		runLive(sctx, liveChange{
			name: "drain", changed: "local-6", from: topoOf(6, nil), epochs: 1, wantMoved: 1.0 / 6,
			// The producer first: the consumer reads a removed cluster
			// until its backlog is empty, which a producer still writing
			// there could reach for a moment.
			apply: func(ctx context.Context, _ string, p *producer.Producer, c *consumer.Consumer) applyTimes {
				t0 := time.Now()
				Expect(p.Update(ctx, topoOf(5, nil))).To(Succeed())
				t1 := time.Now()
				Expect(c.Update(ctx, topoOf(5, nil))).To(Succeed())
				return applyTimes{producer: t1.Sub(t0), consumer: time.Since(t1)}
			},
		})
	})

	It("a reweight (local-1 from 1 to 2 of 6): 1/3 - 1/5 of keys move to it", func(sctx SpecContext) {
		runLive(sctx, liveChange{
			name: "reweight", changed: "local-1", from: topoOf(5, nil), epochs: 1, wantMoved: 2.0/6 - 1.0/5,
			apply: func(ctx context.Context, _ string, p *producer.Producer, c *consumer.Consumer) applyTimes {
				return update(ctx, topoOf(5, map[string]float64{"local-1": 2}), p, c)
			},
		})
	})

	It("partitions 5 -> 8 on local-2: 3/8 of its keys move to the new partitions, in order, and no other key moves", func(sctx SpecContext) {
		runLive(sctx, liveChange{
			name: "growth", changed: "local-2", from: topoOf(5, nil), epochs: 1, wantMoved: 3.0 / 8 / 5,
			popts: []producer.Opt{producer.PartitionsAutoDiscoveryInterval(discovery)},
			check: func(keys []string, before, after map[string]owner) { checkGrowth(keys, before, after, "local-2", 5, 8) },
			apply: func(ctx context.Context, topic string, p *producer.Producer, c *consumer.Consumer) applyTimes {
				// Timed from the admin call on: the producer's discovery
				// may find the new partitions before the call returns.
				t0 := time.Now()
				Expect(admin.Plain(suite.Bed.Cluster("local-2").AdminURL).UpdatePartitions(ctx, topic, 8)).To(Succeed())
				// One discovery interval, then its lookup within the
				// operation timeout; the consumer's subscribe again too.
				// Health is asked with a ctx already ended, so that it
				// does not ask every cluster's admin API for its backlog
				// at each poll: only Partitions is read.
				ended, end := context.WithCancel(ctx)
				end()
				var took applyTimes
				Eventually(func() bool {
					if took.producer == 0 && p.Partitions()[1] == 8 {
						took.producer = time.Since(t0)
					}
					if took.consumer == 0 && c.Health(ended)[1].Partitions == 8 {
						took.consumer = time.Since(t0)
					}
					return took.producer > 0 && took.consumer > 0
				}).WithTimeout(2*discovery + 2*opTimeout).Should(BeTrue())
				return took
			},
		})
	})

	It("two changes back to back (5 -> 6, then local-6 to weight 2): the second waits for the first", func(sctx SpecContext) {
		runLive(sctx, liveChange{
			name: "add then reweight", changed: "local-6", from: topoOf(5, nil), epochs: 2, wantMoved: 2.0 / 7,
			apply: func(ctx context.Context, _ string, p *producer.Producer, c *consumer.Consumer) applyTimes {
				a := update(ctx, topoOf(6, nil), p, c)
				b := update(ctx, topoOf(6, map[string]float64{"local-6": 2}), p, c)
				return applyTimes{producer: a.producer + b.producer, consumer: a.consumer + b.consumer}
			},
		})
	})
})

// checkGrowth checks a growth of cluster's partitions from P to Q: every
// key of cluster is on the partition router.Partition gives for Q, which
// is its old one or a new one (>= P), the others did not move; it prints
// the fractions moved of the grown cluster's keys and of the others',
// and holds the first to 40% ((Q-P)/Q is the least any function moves).
func checkGrowth(keys []string, before, after map[string]owner, cluster string, from, to int) {
	var grown, movedGrown, other, movedOther int
	for _, k := range keys {
		b, a := before[k], after[k]
		if b.cluster != cluster {
			other++
			if a != b {
				movedOther++
			}
			continue
		}
		grown++
		Expect(a).To(Equal(owner{cluster, router.Partition(router.Hash(k), to)}), "%s: the owner router predicts", k)
		if a != b {
			movedGrown++
			Expect(a.partition).To(BeNumerically(">=", from), "%s moved from partition %d to an old one", k, b.partition)
		}
	}
	fg, fo := float64(movedGrown)/float64(grown), float64(movedOther)/float64(other)
	GinkgoWriter.Printf("partitions %d -> %d on %s: moved %.4f of its %d keys (least possible %.4f), %.4f of the other clusters' %d keys\n",
		from, to, cluster, fg, grown, float64(to-from)/float64(to), fo, other)
	Expect(movedOther).To(BeZero(), "no key of another cluster moves")
	Expect(fg).To(BeNumerically("<=", 0.40))
}

// checkOwners checks where the messages read by col lie: each key's on
// its owner before the change or after it, and each key that moved (with
// messages sent after the change: every key, at liveRate over liveKeys)
// on its new owner too.
func checkOwners(col *collector, before, after map[string]owner) {
	col.mu.Lock()
	defer col.mu.Unlock()
	onNew := map[string]bool{}
	for _, d := range col.got {
		b, ok := before[d.Key]
		if !ok {
			continue // a marker
		}
		at, a := owner{d.Cluster, int(d.Partition)}, after[d.Key]
		Expect(at == b || at == a).To(BeTrue(), "%s read on %v: its owner was %v, is %v", d.Key, at, b, a)
		if a != b && at == a {
			onNew[d.Key] = true
		}
	}
	moved := 0
	for k, b := range before {
		if after[k] != b {
			moved++
			Expect(onNew[k]).To(BeTrue(), "%s moved %v -> %v: read there", k, b, after[k])
		}
	}
	GinkgoWriter.Printf("%d messages read where router placed them, before or after the change; the %d keys that moved read on their new owner\n", len(col.got), moved)
}

// handoverLog keeps the keyroute consumer's hand-over events.
type handoverLog struct {
	mu     sync.Mutex
	events []consumer.HandoverEvent
}

func (l *handoverLog) OnReceive(*consumer.Message) {}
func (l *handoverLog) OnAck(consumer.ID, error)    {}
func (l *handoverLog) OnNack(consumer.ID)          {}
func (l *handoverLog) OnHandover(e consumer.HandoverEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

// first returns up to n events, as text.
func (l *handoverLog) first(n int) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, e := range l.events[:min(n, len(l.events))] {
		out = append(out, fmt.Sprintf("%+v", e))
	}
	return out
}
