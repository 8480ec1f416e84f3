//go:build e2e

package changefaults

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/e2e/internal/ordercheck"
	"github.com/keyroute/keyroute/internal/admin"
	"github.com/keyroute/keyroute/producer"
	"github.com/keyroute/keyroute/topology"
)

// silentListener accepts TCP connections and never answers on them,
// until the spec ends.
func silentListener() net.Listener {
	GinkgoHelper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	var (
		mu    sync.Mutex // guards conns
		conns []net.Conn
		done  = make(chan struct{})
	)
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	DeferCleanup(func() {
		ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln
}

// withSilent returns topo with a cluster named "silent" added, served by
// a silentListener.
func withSilent(topo *topology.Topology) (*topology.Topology, topology.Cluster) {
	GinkgoHelper()
	ln := silentListener()
	silent := topology.Cluster{Name: "silent", ServiceURL: "pulsar://" + ln.Addr().String(), Weight: 1}
	return &topology.Topology{Clusters: append(slices.Clone(topo.Clusters), silent)}, silent
}

var _ = Describe("producer.Update adding a cluster that does not work", func() {
	It("adds a cluster that never answers down (its keys fail fast, the others go on), refuses one where the topic is missing, and Close returns within its ctx", func(sctx SpecContext) {
		ctx := specCtx(sctx, 4*updateBound)
		a, b, c := clusters()
		topic := newTopic(ctx, "added", a, b) // missing on c
		oldTopo := topoOf(a.Name, b.Name)
		downTopo, silent := withSilent(oldTopo)
		refusedTopo := &topology.Topology{Clusters: append(slices.Clone(downTopo.Clusters), topoOf(c.Name).Clusters...)}

		p := openProducer(ctx, oldTopo, topic, producer.OnClusterDown(producer.FailFast))
		l := ordercheck.NewLedger()
		keys := keysN("k", 200)
		for _, k := range keys {
			Expect(sendTracked(ctx, p, l, "before", k)).To(Succeed())
		}

		// sendAll sends every key once: those the silent cluster owns fail
		// with ErrClusterDown, not written; the others are acknowledged.
		owner := owners(downTopo, keys)
		sendAll := func(round string) {
			GinkgoHelper()
			var down, ok int
			var slowest time.Duration
			for _, k := range keys {
				t0 := time.Now()
				err := sendTracked(ctx, p, l, round, k)
				if owner[k] != silent.Name {
					Expect(err).NotTo(HaveOccurred(), "%s: key %s on %s", round, k, owner[k])
					ok++
					continue
				}
				slowest = max(slowest, time.Since(t0))
				Expect(errors.Is(err, producer.ErrClusterDown)).To(BeTrue(), "%s: key %s on the silent cluster: %v", round, k, err)
				Expect(producer.NotWritten(err)).To(BeTrue(), "%v", err)
				down++
			}
			GinkgoWriter.Printf("%s: %d keys acknowledged, %d failed (cluster down), slowest failure %s\n", round, ok, down, slowest.Round(time.Millisecond))
			Expect(down).To(BeNumerically(">", 0))
		}

		By("adding a cluster that never answers, with a ctx that ends before StartTimeout")
		short := startTimeout / 5
		sctxShort, cancel := context.WithTimeout(ctx, short)
		t0 := time.Now()
		err := p.Update(sctxShort, downTopo)
		took := time.Since(t0)
		cancel()
		GinkgoWriter.Printf("Update with a ctx of %s took %s: %v\n", short, took.Round(time.Millisecond), err)
		Expect(errors.Is(err, context.DeadlineExceeded)).To(BeTrue(), "the error matches the ctx's: %v", err)
		Expect(took).To(BeNumerically("<", startTimeout), "Update returned at its ctx's end, not at StartTimeout")
		Expect(p.Epoch()).To(BeZero(), "nothing applied")
		for _, k := range keys {
			Expect(sendTracked(ctx, p, l, "after the ended ctx", k)).To(Succeed())
		}

		By("adding a cluster that accepts connections and never answers")
		took, err = within(ctx, updateBound, func(ctx context.Context) error { return p.Update(ctx, downTopo) })
		GinkgoWriter.Printf("Update adding the silent cluster took %s (StartTimeout %s): %v\n", took.Round(time.Millisecond), startTimeout, err)
		Expect(err).NotTo(HaveOccurred(), "an added cluster that does not answer within StartTimeout is added down")
		Expect(p.Epoch()).To(Equal(uint64(1)))
		for _, h := range p.Health() {
			if h.Name == silent.Name {
				Expect(h.Up).To(BeFalse(), "the silent cluster is down")
			}
		}
		sendAll("added down")

		By("adding a cluster where the topic is missing")
		took, err = within(ctx, updateBound, func(ctx context.Context) error { return p.Update(ctx, refusedTopo) })
		GinkgoWriter.Printf("Update adding the refusing cluster took %s: %v\n", took.Round(time.Millisecond), err)
		Expect(errors.Is(err, producer.ErrConnect)).To(BeTrue(), "refused with ErrConnect: %v", err)
		Expect(err.Error()).To(ContainSubstring(c.Name))
		Expect(p.Epoch()).To(Equal(uint64(1)), "nothing applied")
		exists, err := admin.Plain(c.AdminURL).TopicExists(ctx, topic)
		Expect(err).NotTo(HaveOccurred())
		Expect(exists).To(BeFalse(), "nothing made on the refusing cluster")
		sendAll("after the refusal")

		By("closing with the silent cluster in the topology")
		took, err = within(ctx, closeBound, p.Close)
		GinkgoWriter.Printf("Close took %s: %v\n", took.Round(time.Millisecond), err)
		Expect(err).NotTo(HaveOccurred())

		all := l.All()
		for _, s := range all {
			Expect(s.Failed || !s.AckAt.IsZero()).To(BeTrue(), "every message has an outcome: %s #%d", s.Key, s.Seq)
		}
		// Each key lives on one cluster (the moved keys' messages all
		// failed), so per-cluster reading keeps its order too.
		r := checkPlain("topic", l, readPlain(ctx, topic, acked(l), a.Name, b.Name))
		Expect(r.Reordered).To(BeZero(), "%v", r.Examples)
	})
})

var _ = Describe("Close with a silent cluster added", func() {
	It("returns at its ctx's end, with the ctx's error, while a connection attempt to that cluster still runs", func(sctx SpecContext) {
		ctx := specCtx(sctx, 4*updateBound)
		a, b, _ := clusters()
		topic := newTopic(ctx, "closectx", a, b)
		oldTopo := topoOf(a.Name, b.Name)
		downTopo, _ := withSilent(oldTopo)
		// Closed by the spec with a short ctx; the cleanup only makes
		// sure of it (a second Close returns the first one's error).
		p, err := producer.New(ctx, oldTopo, producer.Topic(topic), producer.SendTimeout(sendTimeout), producer.StartTimeout(startTimeout))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) { _ = p.Close(ctx) })
		_, err = within(ctx, updateBound, func(ctx context.Context) error { return p.Update(ctx, downTopo) })
		Expect(err).NotTo(HaveOccurred())

		short := startTimeout / 5
		cctx, cancel := context.WithTimeout(ctx, short)
		defer cancel()
		t0 := time.Now()
		err = p.Close(cctx)
		took := time.Since(t0)
		GinkgoWriter.Printf("Close with a ctx of %s took %s: %v\n", short, took.Round(time.Millisecond), err)
		Expect(err == nil || errors.Is(err, context.DeadlineExceeded)).To(BeTrue(), "nil or the ctx's error: %v", err)
		Expect(took).To(BeNumerically("<", startTimeout), "Close returned at its ctx's end (%s), not with the silent cluster's timeouts", short)
		_, err = p.Send(ctx, &producer.Message{Key: "late", Value: []byte("late")})
		Expect(err).To(MatchError(producer.ErrClosed))
	})
})

var _ = Describe("Close without a ctx deadline, with a silent cluster added", func() {
	It("returns within the silent cluster's timeouts: its operation timeout and the keep-alive that bounds pulsar-client-go's handshake", func(sctx SpecContext) {
		ctx := specCtx(sctx, 4*updateBound)
		a, b, _ := clusters()
		topic := newTopic(ctx, "closenodeadline", a, b)
		// The silent cluster's operation timeout and keep-alive; the
		// StartTimeout is shorter, so that the Update adds it down with an
		// attempt in flight (an operation timeout that ends first is an
		// answer: a refusal).
		const timeouts, start = 5 * time.Second, 2 * time.Second
		downTopo, _ := withSilent(topoOf(a.Name, b.Name))
		downTopo.Clusters[len(downTopo.Clusters)-1].Client.OperationTimeout = timeouts
		keep := producer.ConfigureClient(func(_ string, o *pulsar.ClientOptions) { o.KeepAliveInterval = timeouts })
		p, err := producer.New(ctx, topoOf(a.Name, b.Name), producer.Topic(topic), producer.SendTimeout(sendTimeout), producer.StartTimeout(start), keep)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) { _ = p.Close(ctx) })
		_, err = within(ctx, updateBound, func(ctx context.Context) error { return p.Update(ctx, downTopo) })
		Expect(err).NotTo(HaveOccurred())

		// A join attempt to the silent cluster is in flight: Close waits
		// for it, and it lasts one handshake (the keep-alive) per lookup
		// try, within the operation timeout.
		t0 := time.Now()
		err = p.Close(context.Background())
		took := time.Since(t0)
		GinkgoWriter.Printf("Close without a deadline took %s (operation timeout and keep-alive %s): %v\n", took.Round(time.Millisecond), timeouts, err)
		Expect(err).NotTo(HaveOccurred())
		Expect(took).To(BeNumerically("<=", 2*timeouts), "one attempt in flight: its operation timeout, or one keep-alive more for the handshake under way")
	})
})
