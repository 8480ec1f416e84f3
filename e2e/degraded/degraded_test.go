//go:build e2e

package degraded

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute"
	"github.com/keyroute/keyroute/e2e/internal/bedsuite"
	"github.com/keyroute/keyroute/e2e/internal/standalone"
	"github.com/keyroute/keyroute/internal/testbed"
	"github.com/keyroute/keyroute/producer"
	"github.com/keyroute/keyroute/topology"
)

const (
	rate   = 2000 // messages per second offered, over all clusters
	keys   = 10_000
	window = 6 * time.Second // of offered load, after each start

	startTimeout = 2 * time.Second
	downAfter    = time.Second
	probeEvery   = 250 * time.Millisecond
	// tick is the producer's health monitor period (DownAfter/8, see
	// producer/health.go): a new attempt starts only at a tick.
	tick = downAfter / 8
	// opTimeout is every cluster's OperationTimeout, and keepAlive the
	// clients' keep-alive: they bound one attempt to open a cluster that
	// gives no answer (pulsar-client-go v0.21.0 waits for a stopped
	// broker's handshake until its keep-alive gives up, and retries a
	// refused lookup with back-off until the operation timeout).
	opTimeout = 5 * time.Second
	keepAlive = 5 * time.Second
)

// fault is one way to take the fifth cluster out before New, and to bring
// it back.
type fault struct {
	name string
	brk  func(*testbed.Cluster) error
	mend func(context.Context, *testbed.Cluster) error
}

var faults = []fault{
	{"SIGSTOP then SIGCONT", (*testbed.Cluster).Pause, func(_ context.Context, c *testbed.Cluster) error { return c.Resume() }},
	{"SIGKILL then restart", (*testbed.Cluster).Kill, func(ctx context.Context, c *testbed.Cluster) error { return c.Restart(ctx) }},
}

// The pause runs first: a standalone killed and restarted here is less
// steady for minutes afterwards (see package e2e/internal/standalone).
var _ = Describe("one of five clusters out before New", Ordered, func() {
	for _, f := range faults {
		It(f.name+": New starts within its bound, the other four keep their rate, the fifth joins by itself", func(sctx SpecContext) {
			bed := suite.Bed
			ctx, cancel := context.WithTimeout(sctx, 5*time.Minute)
			defer cancel()
			victim := bed.Clusters()[4]
			topic := "persistent://public/default/" + bedsuite.Unique("degraded")
			bedsuite.CreateTopic(ctx, bed.Clusters(), topic, 3)
			topo := withTimeouts(bed.Topology())
			opts := []producer.Opt{
				producer.Topic(topic), producer.StartTimeout(startTimeout), producer.DownAfter(downAfter),
				producer.DownProbeInterval(probeEvery), producer.SendTimeout(10 * time.Second),
				producer.ConfigureClient(func(_ string, o *pulsar.ClientOptions) { o.KeepAliveInterval = keepAlive }),
			}

			suite.Step("healthy start and load")
			// The other container's SIGKILL spec may have run just before
			// (Ginkgo orders top-level containers at random), and a
			// restarted standalone refuses new ledgers for a while: the
			// healthy start, the baseline, waits that out; only its last
			// attempt is timed.
			var p *producer.Producer
			var healthyNew time.Duration
			Expect(standalone.Retry(ctx, func() (err error) {
				t0 := time.Now()
				p, err = producer.New(ctx, topo, opts...)
				healthyNew = time.Since(t0)
				return err
			})).To(Succeed())
			healthy := offer(ctx, p)
			Expect(p.Close(ctx)).To(Succeed())
			Expect(healthy.failed).To(BeEmpty(), "a healthy start fails nothing")

			suite.Step("break " + victim.Name + ", degraded start and load")
			Expect(f.brk(victim)).To(Succeed())
			t1 := time.Now()
			p, err := producer.New(ctx, topo, opts...)
			startTook := time.Since(t1)
			Expect(err).NotTo(HaveOccurred(), "New starts with four of five clusters")
			DeferCleanup(func() { _ = p.Close(context.Background()) })
			// New waits StartTimeout for the fifth; the four open as fast
			// as in the healthy start; DownAfter is room for a JVM stall.
			startBound := startTimeout + 2*healthyNew + downAfter
			Expect(startTook).To(BeNumerically("<=", startBound))
			h := health(p, victim.Name)
			Expect(h.Up).To(BeFalse())
			Expect(h.Connected).To(BeFalse())
			Expect(h.Err).To(MatchError(producer.ErrConnect), "Health says why")
			Expect(p.Partitions()[4]).To(BeZero())
			degraded := offer(ctx, p)

			// The same through shared clients with transactions, whose
			// clients look up their coordinator when they are made.
			t2 := time.Now()
			cs, err := keyroute.NewClients(topo, keyroute.Transactions(true), keyroute.StartTimeout(startTimeout),
				keyroute.ConfigureClient(func(_ string, o *pulsar.ClientOptions) { o.KeepAliveInterval = keepAlive }))
			Expect(err).NotTo(HaveOccurred(), "NewClients starts with four of five clusters")
			DeferCleanup(func() { _ = cs.Close(context.Background()) })
			_, err = cs.Client(victim.Name)
			Expect(err).To(MatchError(keyroute.ErrNotOpen))
			shared, err := producer.New(ctx, topo, append(opts[:len(opts)-1:len(opts)-1],
				producer.WithClients(cs), producer.Transactions(true))...)
			sharedTook := time.Since(t2)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(func() { _ = shared.Close(context.Background()) })
			Expect(sharedTook).To(BeNumerically("<=", startTimeout+startBound))
			Expect(health(shared, victim.Name).Connected).To(BeFalse())
			// On a loaded machine one of the four may have made its client
			// after StartTimeout: it joins by itself.
			for _, c := range bed.Clusters()[:4] {
				Eventually(func() bool { return health(shared, c.Name).Connected }).
					WithTimeout(opTimeout+time.Second+probeEvery+tick+2*healthyNew+downAfter).WithPolling(tick/2).
					Should(BeTrue(), c.Name)
			}
			for _, k := range keysOf(shared, bed.Clusters()[0].Name, 5) {
				_, err := shared.Send(ctx, &producer.Message{Key: k, Value: []byte(k)})
				Expect(err).NotTo(HaveOccurred())
			}

			// A cluster's rate is the messages of its keys acknowledged over
			// the time the window's messages took to hand over.
			GinkgoWriter.Printf("window handed over in %s after a healthy start, %s after a degraded one\n",
				healthy.took.Round(time.Millisecond), degraded.took.Round(time.Millisecond))
			for _, c := range bed.Clusters()[:4] {
				Expect(healthy.acked[c.Name]).To(BeNumerically(">", 0), c.Name)
				hr := float64(healthy.acked[c.Name]) / healthy.took.Seconds()
				dr := float64(degraded.acked[c.Name]) / degraded.took.Seconds()
				GinkgoWriter.Printf("%s: %.0f msg/s after a healthy start, %.0f after a degraded one: %.3f\n", c.Name, hr, dr, dr/hr)
				Expect(dr/hr).To(BeNumerically(">=", 0.95), c.Name)
			}
			Expect(degraded.refused).To(BeNumerically(">", 0), "the fifth's keys fail fast")
			Expect(degraded.failed).To(BeEmpty(), "nothing fails but the fifth's keys, with ErrClusterDown")

			suite.Step("mend " + victim.Name + " and wait for it to join")
			mending := time.Now()
			Expect(f.mend(ctx, victim)).To(Succeed())
			if victim.PID() != 0 {
				suite.Track(victim.PID())
			}
			mended := time.Now()
			// An attempt in flight may sit in pulsar-client-go's lookup
			// back-off until the operation timeout; the next starts at the
			// first monitor tick a DownProbeInterval after it.
			joinBound := opTimeout + probeEvery + tick + 2*healthyNew + downAfter
			Eventually(func() bool { h := health(p, victim.Name); return h.Connected && h.Up }).
				WithTimeout(joinBound).WithPolling(tick/2).Should(BeTrue(), "the fifth joins by itself")
			// It is up from the moment it joined (Health.Since), which
			// may come before a restart's own readiness check ends.
			joinedAt := health(p, victim.Name).Since
			Expect(joinedAt.Sub(mended)).To(BeNumerically("<=", joinBound))
			// The shared clients try a client that is not made every
			// second; then the producer's next attempt takes it.
			sharedBound := joinBound + time.Second
			Eventually(func() bool { h := health(shared, victim.Name); return h.Connected && h.Up }).
				WithTimeout(sharedBound).WithPolling(tick/2).Should(BeTrue(), "the fifth joins the shared clients' producer")
			sharedJoined := health(shared, victim.Name).Since
			Expect(sharedJoined.Sub(mended)).To(BeNumerically("<=", sharedBound))
			err = shared.RunInTxn(ctx, func(_ context.Context, tx *producer.Txn) error {
				for _, k := range keysOf(shared, victim.Name, 5) {
					if err := tx.Send(&producer.Message{Key: k, Value: []byte(k)}); err != nil {
						return err
					}
				}
				return nil
			})
			Expect(err).NotTo(HaveOccurred(), "a transaction on the fifth once it joined")
			GinkgoWriter.Printf("%s: shared clients with transactions: NewClients and New %s; joined %s after the mend began\n",
				f.name, sharedTook.Round(time.Millisecond), sharedJoined.Sub(mending).Round(time.Millisecond))
			Expect(p.Partitions()[4]).To(Equal(3))
			for _, k := range keysOf(p, victim.Name, 20) {
				id, err := p.Send(ctx, &producer.Message{Key: k, Value: []byte(k)})
				Expect(err).NotTo(HaveOccurred())
				Expect(id.Cluster).To(Equal(victim.Name))
			}
			GinkgoWriter.Printf("%s: healthy New %s; degraded New %s (bound %s); joined %s after the mend began, which took %s (bound %s after it)\n",
				f.name, healthyNew.Round(time.Millisecond), startTook.Round(time.Millisecond), startBound.Round(time.Millisecond),
				joinedAt.Sub(mending).Round(time.Millisecond), mended.Sub(mending).Round(time.Millisecond), joinBound.Round(time.Millisecond))
			Expect(p.Close(ctx)).To(Succeed())
			suite.Step("")
		})
	}
})

// withTimeouts sets every cluster's operation and connection timeouts.
func withTimeouts(t *topology.Topology) *topology.Topology {
	for i := range t.Clusters {
		t.Clusters[i].Client.OperationTimeout = opTimeout
		t.Clusters[i].Client.ConnectionTimeout = time.Second
	}
	return t
}

func health(p *producer.Producer, name string) producer.ClusterHealth {
	for _, h := range p.Health() {
		if h.Name == name {
			return h
		}
	}
	Fail("no cluster " + name)
	return producer.ClusterHealth{}
}

// keysOf returns n keys whose own cluster is the named one.
func keysOf(p *producer.Producer, cluster string, n int) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		k := fmt.Sprintf("join-%d", i)
		if c, _ := p.Placement(k); c == cluster {
			out = append(out, k)
		}
	}
	return out
}

// outcome is what one offered load got.
type outcome struct {
	acked   map[string]int // per cluster
	refused int            // ErrClusterDown
	failed  []error        // anything else
	took    time.Duration  // to hand the window's messages over
}

// offer sends rate messages a second over keys keys, from one goroutine,
// for window, then flushes; it counts the outcomes.
func offer(ctx context.Context, p *producer.Producer) outcome {
	out := outcome{acked: map[string]int{}}
	var mu sync.Mutex
	cb := func(id producer.ID, _ *producer.Message, err error) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err == nil:
			out.acked[id.Cluster]++
		case errors.Is(err, producer.ErrClusterDown):
			out.refused++
		default:
			out.failed = append(out.failed, err)
		}
	}
	// At each wake-up it sends what is due by then, so that a sender
	// starved of CPU by a loaded machine catches up: each start is offered
	// the same messages, in the same order, unless the Producer itself
	// holds the sender up.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	start := time.Now()
	for i := 0; i < rate*int(window/time.Second); {
		<-tick.C
		due := min(int(time.Since(start).Seconds()*rate), rate*int(window/time.Second))
		for ; i < due; i++ {
			k := fmt.Sprintf("key-%05d", i%keys)
			p.SendAsync(ctx, &producer.Message{Key: k, Value: []byte(k)}, cb)
		}
	}
	out.took = time.Since(start)
	fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	Expect(p.Flush(fctx)).To(Succeed())
	mu.Lock()
	defer mu.Unlock()
	return out
}
