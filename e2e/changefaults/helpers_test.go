//go:build e2e

package changefaults

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/consumer"
	"github.com/keyroute/keyroute/e2e/internal/bedsuite"
	"github.com/keyroute/keyroute/e2e/internal/ordercheck"
	"github.com/keyroute/keyroute/internal/testbed"
	"github.com/keyroute/keyroute/producer"
	"github.com/keyroute/keyroute/router"
	"github.com/keyroute/keyroute/topology"
)

// Settings the specs set, from which their bounds are derived.
const (
	startTimeout = 10 * time.Second // producers' and consumers' StartTimeout
	sendTimeout  = 10 * time.Second // producers' SendTimeout
	drainTimeout = 30 * time.Second // consumers' DrainTimeout
	partitions   = 2
)

// sendBound bounds one Send: a message fails within about twice
// SendTimeout (producer.SendTimeout), after a hand-over held it for up to
// HandoverTimeout (default SendTimeout + DownAfter); doubled for slack.
const sendBound = 2 * (sendTimeout + producer.DefaultDownAfter + 2*sendTimeout)

// newTopic makes a partitioned topic with a unique name on clusters.
func newTopic(ctx context.Context, name string, clusters ...*testbed.Cluster) string {
	GinkgoHelper()
	topic := "persistent://" + namespace + "/" + bedsuite.Unique(name)
	bedsuite.CreateTopic(ctx, clusters, topic, partitions)
	return topic
}

// topoOf returns the bed's topology reduced to the named clusters, in
// that order.
func topoOf(names ...string) *topology.Topology {
	GinkgoHelper()
	all := bed.Topology()
	t := &topology.Topology{}
	for _, n := range names {
		found := false
		for _, c := range all.Clusters {
			if c.Name == n {
				t.Clusters = append(t.Clusters, c)
				found = true
			}
		}
		Expect(found).To(BeTrue(), "cluster %s", n)
	}
	return t
}

// owners returns, for each key, the cluster topo routes it to.
func owners(topo *topology.Topology, keys []string) map[string]string {
	GinkgoHelper()
	ms := make([]router.Member, len(topo.Clusters))
	for i, c := range topo.Clusters {
		ms[i] = router.Member{Name: c.Name, Weight: c.Weight}
	}
	r, err := router.New(ms)
	Expect(err).NotTo(HaveOccurred())
	out := make(map[string]string, len(keys))
	for _, k := range keys {
		out[k] = r.Name(r.Cluster(router.Hash(k)))
	}
	return out
}

func keysN(prefix string, n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return keys
}

// pause stops c's JVM (SIGSTOP) and returns what resumes it: once, by
// the spec or at its end.
func pause(c *testbed.Cluster) (resume func()) {
	GinkgoHelper()
	Expect(c.Pause()).To(Succeed())
	resumed := false
	resume = func() {
		if !resumed {
			resumed = true
			Expect(c.Resume()).To(Succeed())
		}
	}
	DeferCleanup(resume)
	return resume
}

// clusters returns the bed's three clusters.
func clusters() (a, b, c *testbed.Cluster) {
	cs := bed.Clusters()
	return cs[0], cs[1], cs[2]
}

// openProducer makes a producer with the suite's settings and opts; the
// spec closes it at its end (again, if the spec closed it: Close then
// returns the first Close's error).
func openProducer(ctx context.Context, topo *topology.Topology, topic string, opts ...producer.Opt) *producer.Producer {
	GinkgoHelper()
	opts = append([]producer.Opt{producer.Topic(topic), producer.SendTimeout(sendTimeout), producer.StartTimeout(startTimeout)}, opts...)
	p, err := producer.New(ctx, topo, opts...)
	Expect(err).NotTo(HaveOccurred(), topic)
	DeferCleanup(func(ctx SpecContext) {
		_, err := within(ctx, closeBound, p.Close)
		Expect(err).NotTo(HaveOccurred())
	})
	return p
}

// openConsumer makes a consumer reading topic from the earliest message
// with the suite's settings and opts; the spec closes it at its end.
func openConsumer(ctx context.Context, topo *topology.Topology, topic, sub string, opts ...consumer.Opt) *consumer.Consumer {
	GinkgoHelper()
	opts = append([]consumer.Opt{consumer.Topic(topic), consumer.Subscription(sub), consumer.InitialPosition(consumer.Earliest),
		consumer.StartTimeout(startTimeout), consumer.DrainTimeout(drainTimeout)}, opts...)
	c, err := consumer.New(ctx, topo, opts...)
	Expect(err).NotTo(HaveOccurred(), topic)
	DeferCleanup(func(ctx SpecContext) {
		_, err := within(ctx, closeBound, c.Close)
		Expect(err).NotTo(HaveOccurred())
	})
	return c
}

// sendTracked sends one message of key through p, recorded in l under
// name, with a ctx bounded by sendBound, and returns the Send's error.
// It fails the spec when the Send outlived its ctx or returned the ctx's
// error: no Send may hang.
func sendTracked(ctx context.Context, p *producer.Producer, l *ordercheck.Ledger, name, key string) error {
	GinkgoHelper()
	s, payload := l.Next(name, key)
	sctx, cancel := context.WithTimeout(ctx, sendBound)
	defer cancel()
	_, err := p.Send(sctx, &producer.Message{Key: key, Value: payload})
	l.Done(s, time.Now(), err)
	Expect(sctx.Err()).NotTo(HaveOccurred(), "%s: Send of %s was still running at its ctx's end (%s)", name, key, sendBound)
	return err
}

// asyncSender hands messages to SendAsync, one key after another every
// tick, until stopped, and checks that each gets exactly one outcome.
type asyncSender struct {
	stop     chan struct{}  // closed by end
	done     chan struct{}  // closed when the sending goroutine returns
	outcomes sync.WaitGroup // one per message, until its callback

	mu                         sync.Mutex // guards the counts below
	sent, acked, failed, twice int
	byErr                      map[string]int // failures by errKind
}

func startAsync(ctx context.Context, p *producer.Producer, l *ordercheck.Ledger, name string, keys []string, tick time.Duration) *asyncSender {
	s := &asyncSender{stop: make(chan struct{}), done: make(chan struct{}), byErr: map[string]int{}}
	go func() {
		defer close(s.done)
		t := time.NewTicker(tick)
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-s.stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			rec, payload := l.Next(name, keys[i%len(keys)])
			var once sync.Once
			s.outcomes.Add(1)
			s.mu.Lock()
			s.sent++
			s.mu.Unlock()
			p.SendAsync(ctx, &producer.Message{Key: rec.Key, Value: payload}, func(_ producer.ID, _ *producer.Message, err error) {
				first := false
				once.Do(func() { first = true })
				s.mu.Lock()
				defer s.mu.Unlock()
				if !first {
					s.twice++
					return
				}
				l.Done(rec, time.Now(), err)
				if err != nil {
					s.failed++
					s.byErr[errKind(err)]++
				} else {
					s.acked++
				}
				s.outcomes.Done()
			})
		}
	}()
	return s
}

// errKind names an outcome's error by the producer's sentinel it matches.
func errKind(err error) string {
	for _, k := range []struct {
		name string
		err  error
	}{
		{"cluster down", producer.ErrClusterDown},
		{"send timeout", producer.ErrSendTimeout},
		{"closed", producer.ErrClosed},
	} {
		if errors.Is(err, k.err) {
			return k.name
		}
	}
	return err.Error()
}

func (s *asyncSender) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sent
}

// end stops sending and waits, within bound, for every outcome.
func (s *asyncSender) end(bound time.Duration) {
	GinkgoHelper()
	close(s.stop)
	<-s.done
	all := make(chan struct{})
	go func() { s.outcomes.Wait(); close(all) }()
	Eventually(all).WithTimeout(bound).Should(BeClosed(), "every message has its outcome within %s", bound)
	s.mu.Lock()
	defer s.mu.Unlock()
	GinkgoWriter.Printf("sent %d: acknowledged %d, failed %d %v, outcome twice %d\n", s.sent, s.acked, s.failed, s.byErr, s.twice)
	Expect(s.acked + s.failed).To(Equal(s.sent))
	Expect(s.twice).To(BeZero())
}

// reader receives from a keyroute consumer and acknowledges each message
// until stopped, keeping them in delivery order.
type reader struct {
	c      *consumer.Consumer
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex // guards got, err
	got    []ordercheck.Got
	err    error // the first error other than the stop
}

func startReader(ctx context.Context, c *consumer.Consumer) *reader {
	rctx, cancel := context.WithCancel(ctx)
	r := &reader{c: c, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for {
			m, err := c.Receive(rctx)
			if err == nil {
				err = c.Ack(rctx, m)
			}
			r.mu.Lock()
			if err != nil {
				if rctx.Err() == nil && r.err == nil {
					r.err = err
				}
				r.mu.Unlock()
				return
			}
			r.got = append(r.got, ordercheck.Got{Payload: m.Value, At: time.Now()})
			r.mu.Unlock()
		}
	}()
	return r
}

func (r *reader) snapshot() []ordercheck.Got {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]ordercheck.Got(nil), r.got...)
}

// waitAll waits, within bound, until every message l has acknowledged was
// delivered, then stops the reader and returns what it got.
func (r *reader) waitAll(l *ordercheck.Ledger, bound time.Duration) []ordercheck.Got {
	GinkgoHelper()
	Eventually(func() int {
		r.mu.Lock()
		err := r.err
		r.mu.Unlock()
		Expect(err).NotTo(HaveOccurred(), "the reader failed")
		return ordercheck.Check(l, r.snapshot()).Lost
	}).WithTimeout(bound).WithPolling(200*time.Millisecond).Should(BeZero(), "acknowledged messages not delivered within %s", bound)
	r.cancel()
	<-r.done
	return r.snapshot()
}

// checkRead checks what a keyroute consumer delivered against l: nothing
// acknowledged lost, nothing unknown, duplicates no more than the
// redeliveries its Health counts, reorders no more than the breaks it
// reports (forced releases, unordered messages).
func checkRead(ctx context.Context, what string, l *ordercheck.Ledger, got []ordercheck.Got, c *consumer.Consumer) ordercheck.Result {
	GinkgoHelper()
	r := ordercheck.Check(l, got)
	var redelivered, reported uint64
	for _, h := range c.Health(ctx) {
		redelivered += h.Redelivered
		reported += h.ForcedReleases + h.Unordered
		GinkgoWriter.Printf("%s: %s: delivered %d, redelivered %d, held %d, markers %d, forced %d, unordered %d, bad %d\n",
			what, h.Cluster, h.Delivered, h.Redelivered, h.HeldTotal, h.Markers, h.ForcedReleases, h.Unordered, h.BadHandover)
	}
	GinkgoWriter.Printf("%s: %s\n", what, r)
	Expect(r.Lost).To(BeZero(), "%s: %v", what, r.Examples)
	Expect(r.Unknown).To(BeZero(), "%s: %v", what, r.Examples)
	Expect(uint64(r.Duplicated)).To(BeNumerically("<=", redelivered), "%s: duplicates beyond the redeliveries counted: %v", what, r.Examples)
	Expect(uint64(r.Reordered)).To(BeNumerically("<=", reported), "%s: reorders not reported: %v", what, r.Examples)
	return r
}

// checkPlain checks what plain per-cluster readers got against l: nothing
// acknowledged lost, nothing twice (their merge has no order to check).
func checkPlain(what string, l *ordercheck.Ledger, payloads []string) ordercheck.Result {
	GinkgoHelper()
	got := make([]ordercheck.Got, len(payloads))
	for i, p := range payloads {
		got[i] = ordercheck.Got{Payload: []byte(p)}
	}
	r := ordercheck.Check(l, got)
	GinkgoWriter.Printf("%s: %s\n", what, r)
	Expect(r.Lost).To(BeZero(), "%s: %v", what, r.Examples)
	Expect(r.Unknown).To(BeZero(), "%s: %v", what, r.Examples)
	Expect(r.Duplicated).To(BeZero(), "%s: %v", what, r.Examples)
	return r
}

// acked counts the messages of l that were acknowledged.
func acked(l *ordercheck.Ledger) int {
	n := 0
	for _, s := range l.All() {
		if !s.AckAt.IsZero() {
			n++
		}
	}
	return n
}

// within runs call with a ctx of bound and checks that it came back by
// itself before the ctx ended. It returns how long the call took and its
// error.
func within(ctx context.Context, bound time.Duration, call func(context.Context) error) (time.Duration, error) {
	GinkgoHelper()
	cctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	t0 := time.Now()
	err := call(cctx)
	took := time.Since(t0)
	Expect(errors.Is(err, context.DeadlineExceeded) || cctx.Err() != nil).To(BeFalse(), "the call ran into its ctx's end (%s): %v", bound, err)
	return took, err
}

// clusterNames lists the clusters of a consumer's Health.
func clusterNames(hs []consumer.ClusterHealth) []string {
	var out []string
	for _, h := range hs {
		out = append(out, h.Cluster)
	}
	return out
}
