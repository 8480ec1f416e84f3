package producer

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/keyroute/keyroute"
	"github.com/keyroute/keyroute/router"
	"github.com/keyroute/keyroute/topology"
)

// Producer sends messages to the clusters of a topology. It is safe for
// concurrent use.
type Producer struct {
	cfg cfg
	id  uint64 // the producer id (HANDOVER.md section 1), random

	// snap is the routing state (see snapshot). A cluster that has not
	// joined is a stand-in there, which join replaces; a change (Update)
	// replaces it whole. Both do so under joinMu; joinsStopped (set by
	// Close) ends joins and changes.
	snap         atomic.Pointer[snapshot]
	joins        []*joinState // by New's topology index; fixed by New
	joinEvents   chan int     // an attempt ended (New waits on it); capacity len(joins)
	joinMu       sync.Mutex
	joinsStopped bool
	draining     map[*cluster]struct{} // removed by a change, closed when its hand-over ends; guarded by joinMu

	updating   chan struct{}          // capacity 1: held by the Update applying a change
	lastChange atomic.Pointer[change] // the last change applied; nil before

	keyless atomic.Uint64 // keyless messages handed over

	// Close protocol: pulsar-client-go v0.21.0 may panic on a SendAsync
	// racing its producer's Close, so Close closes no writer while a call
	// uses it. Send and SendAsync hand a message to its writer holding the
	// partition's lock, and check there that the partition is open. Other
	// calls that touch the writers (Flush, Send's flush, a transaction's
	// sends) count themselves in handing, a transaction commit in active,
	// and then check closed. Close sets closed, cancels closing (which
	// wakes callers waiting for buffer space, for a down cluster or for a
	// Send's flush), waits for the counts to drain and closes every
	// partition under its lock before it touches the writers. Calls are
	// short once closing is cancelled, so Close always waits for them; it
	// stops waiting for transaction commits when its ctx ends.
	active    atomic.Int64  // transaction commits
	handing   atomic.Int64  // other calls that touch the writers
	idle      chan struct{} // capacity 1: active or handing may have reached 0
	closed    atomic.Bool
	closing   context.Context
	stopAll   context.CancelFunc // cancels closing
	done      <-chan struct{}    // closing.Done()
	closeOnce sync.Once
	closeErr  error

	// bg counts the goroutines the Producer starts besides the callback
	// goroutines and the monitor (health probes, transaction calls left
	// to finish); Close waits for them after closing the clients.
	bg tracker

	monStop, monDone chan struct{} // the health monitor goroutine

	detach func() // from the shared clients (WithClients); nil without

	// Set only by tests (before the call they watch), so that a test can
	// end ctx at a known point: retryPaused runs when a SendTxnBulk begin
	// that failed starts its pause before the retry; beginFailed when
	// beginAll has recorded a failed begin.
	retryPaused, beginFailed func()
}

// New validates the topology and options, connects to the clusters and
// opens a writer on every partition of the topic there, in parallel.
//
// New returns once every cluster's writers are open, or once StartTimeout
// (default DownAfter) has passed with at least one cluster's open: the
// clusters that have not answered by then start down (Health says so and
// why), their keys follow OnClusterDown, and each joins by itself when it
// answers, its partition count read then. A cluster that answers with an
// error (a missing topic, refused credentials) makes New fail, naming it;
// so does every cluster when none answers before ctx ends.
// RequireAllClusters makes New wait for all of them and fail unless all
// opened, as a *ClusterError per failed cluster (ErrConnect).
//
// ctx bounds New; when it ends first, New returns an error matching
// ctx.Err(). pulsar-client-go's own calls take no ctx: they are bounded by
// each cluster's operation timeout, and against a cluster that accepts
// connections but does not answer (a stopped broker), by its keep-alive
// (ClientOptions.KeepAliveInterval, 30s by default). An attempt still in
// one when New fails goes on in the background until then, and closes
// what it opened; Close waits for it.
func New(ctx context.Context, topo *topology.Topology, opts ...Opt) (*Producer, error) {
	c := defaultCfg()
	for _, o := range opts {
		o.apply(&c)
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	if err := topo.Validate(); err != nil { // a nil topo has no clusters
		return nil, fmt.Errorf("%w: %w", ErrBadTopology, err)
	}
	if c.clients != nil {
		if err := c.clients.Check(topo); err != nil {
			return nil, err
		}
	}
	r, err := newRouter(topo)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	p := &Producer{cfg: c, id: newProducerID(), idle: make(chan struct{}, 1), updating: make(chan struct{}, 1)}
	p.closing, p.stopAll = context.WithCancel(context.Background())
	p.done = p.closing.Done()
	p.joins = make([]*joinState, len(topo.Clusters))
	p.joinEvents = make(chan int, len(topo.Clusters))
	p.draining = map[*cluster]struct{}{}
	standIns := make([]*cluster, len(topo.Clusters))
	for i, cl := range topo.Clusters {
		maxMsgs, maxBytes := c.share(topo, cl.Weight)
		js := p.newJoinState(cl, maxMsgs, maxBytes)
		js.idx = i
		p.joins[i] = js
		standIns[i] = p.standIn(js)
	}
	p.snap.Store(&snapshot{router: r, clusters: standIns})
	p.monStop, p.monDone = make(chan struct{}), make(chan struct{})
	go p.monitor(p.monStop, p.monDone)
	for _, js := range p.joins {
		p.startAttempt(js)
	}
	if c.discoverEvery > 0 {
		p.goBG(p.discover)
	}
	if err := p.awaitStart(ctx); err != nil {
		p.log().Error("keyroute: connect failed", "error", err)
		_ = p.Close(ctx)
		return nil, err
	}
	if c.clients != nil {
		detach, err := c.clients.AttachUser(keyroute.User{Name: userName(c.name, c.topic),
			Close: p.Close, Update: p.Update})
		if err != nil {
			_ = p.Close(ctx)
			return nil, err
		}
		p.detach = detach
	}
	return p, nil
}

// Clusters returns the cluster names in topology order (of the topology
// last applied, see Update).
func (p *Producer) Clusters() []string {
	if p == nil {
		return nil
	}
	cls := p.all()
	names := make([]string, len(cls))
	for i, c := range cls {
		names[i] = c.name
	}
	return names
}

// newRouter returns the router of topo, which it validates.
func newRouter(topo *topology.Topology) (*router.Router, error) {
	if err := topo.Validate(); err != nil { // a nil topo has no clusters
		return nil, fmt.Errorf("%w: %w", ErrBadTopology, err)
	}
	members := make([]router.Member, len(topo.Clusters))
	for i, cl := range topo.Clusters {
		members[i] = router.Member{Name: cl.Name, Weight: cl.Weight}
	}
	r, err := router.New(members)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadTopology, err)
	}
	return r, nil
}

// share returns the buffer limits of a cluster of weight w in topo: its
// share of MaxPendingMessages and MemoryLimit.
func (c *cfg) share(topo *topology.Topology, w float64) (maxMsgs, maxBytes int64) {
	var sum float64
	for _, cl := range topo.Clusters {
		sum += cl.Weight
	}
	share := w / sum
	return int64(max(1, math.Round(float64(c.maxPending)*share))), int64(max(1, math.Round(float64(c.memoryLimit)*share)))
}

// newJoinState returns the connection state of cluster cl, down, with
// the buffer limits given.
func (p *Producer) newJoinState(cl topology.Cluster, maxMsgs, maxBytes int64) *joinState {
	c := &p.cfg
	wc := writerConfig{
		topic:            c.topic,
		batching:         c.batching,
		batchMaxMessages: c.batchMaxMessages,
		batchMaxBytes:    c.batchMaxBytes,
		linger:           int64(c.linger),
		codec:            c.codec,
		maxPending:       int(maxMsgs),
		memoryLimit:      maxBytes,
		sendTimeout:      int64(c.sendTimeout),
		logger:           c.logger,
		transactions:     c.transactions,
		configure:        c.configureClient,
		clients:          c.clients,
		cluster:          cl.Name,
		name:             c.name,
		level:            c.level,
		keyBatching:      c.keyBatching,
		chunkMax:         c.chunkMax,
		encryption:       c.encryption,
		schema:           c.schema,
		configureWriter:  c.configureWriter,
	}
	overrideFor(&wc, cl.Producer)
	return &joinState{idx: -1, cl: cl, wc: wc, budget: newBudget(maxMsgs, maxBytes),
		health: newDownHealth(time.Now()), err: errNoAnswer, firstEnd: make(chan struct{})}
}

// newProducerID draws a producer id from a cryptographic source
// (HANDOVER.md section 1).
func newProducerID() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
	return binary.BigEndian.Uint64(b[:])
}

// ProducerID returns the Producer's id: a random 64-bit number drawn at
// New, which the hand-over's properties carry (HANDOVER.md, keyroute-pid).
func (p *Producer) ProducerID() uint64 { return p.id }

// Placement returns the cluster and partition that messages with key go to.
// It is meaningless for the empty key (keyless messages are spread). A nil
// Producer returns "" and -1; the partition is -1 while the cluster has
// not connected (its partition count is read when it does).
func (p *Producer) Placement(key string) (cluster string, partition int) {
	if p == nil {
		return "", -1
	}
	h := router.Hash(key)
	s := p.snap.Load()
	c := s.clusters[s.router.Cluster(h)]
	return c.name, c.parts[router.Partition(h, len(c.parts))].idx
}

// Partitions returns the partition count of the topic on each cluster, in
// topology order: 0 for a cluster that has not connected.
func (p *Producer) Partitions() []int {
	if p == nil {
		return nil
	}
	cls := p.all()
	n := make([]int, len(cls))
	for i, c := range cls {
		if c.join.joined.Load() {
			n[i] = len(c.parts)
		}
	}
	return n
}

// enter counts a hand-over (a call that touches the writers); it reports
// false (and counts nothing) once the Producer is closing.
func (p *Producer) enter() bool {
	p.handing.Add(1)
	if p.closed.Load() {
		// Close may be waiting for this count to drop: tell it.
		if p.handing.Add(-1) == 0 {
			p.signalIdle()
		}
		return false
	}
	return true
}

func (p *Producer) leave() {
	if p.handing.Add(-1) == 0 && p.closed.Load() {
		p.signalIdle()
	}
}

// enterLong counts a transaction commit, which Close waits for only until
// its ctx ends; it reports false once the Producer is closing.
func (p *Producer) enterLong() bool {
	p.active.Add(1)
	if p.closed.Load() {
		p.leaveLong()
		return false
	}
	return true
}

func (p *Producer) leaveLong() {
	if p.active.Add(-1) == 0 && p.closed.Load() {
		p.signalIdle()
	}
}

func (p *Producer) signalIdle() {
	select {
	case p.idle <- struct{}{}:
	default:
	}
}

// Close stops accepting messages, flushes what was accepted (bounded by
// ctx), closes the writers and connections, and reports an outcome for
// every message: those not acknowledged by then fail with ErrClosed, and
// their outcome is unknown (pulsar-client-go may have sent them). It waits
// for calls already handing a message over (they end at once with
// ErrClosed), for transaction commits in progress until ctx ends, and for
// every callback to return. No goroutine of the Producer's outlives Close,
// except that pulsar-client-go v0.21.0 may go on with a transaction call to
// an unreachable cluster (it retries those without end and takes no ctx):
// Close then returns, when ctx ends, an error saying so.
//
// Close returns an error naming the clusters whose flush ctx ended (their
// messages then failed with ErrClosed), if any; later calls return the
// same. As with Flush, a message's own failure is its outcome, not Close's
// error. A Send in progress returns with its message's outcome. Called
// from a Callback, Close returns ErrInCallback and does nothing.
func (p *Producer) Close(ctx context.Context) error {
	if p == nil {
		return ErrNilProducer
	}
	if p.onCallbackGoroutine() {
		return ErrInCallback
	}
	p.closeOnce.Do(func() { p.closeErr = p.close(ctx) })
	return p.closeErr
}

func (p *Producer) close(ctx context.Context) error {
	p.closed.Store(true)
	// Messages held by a topology change's hand-over go on when it ends,
	// as far as ctx allows; those still held then fail with ErrClosed.
	_ = p.awaitHandover(ctx)
	cls := p.stopJoins()
	p.stopAll()
	for p.active.Load() != 0 && ctx.Err() == nil {
		select {
		case <-p.idle:
		case <-ctx.Done():
		}
	}
	// Hand-overs end quickly once closing is cancelled; wait for them
	// whatever ctx says (see the Close protocol).
	for p.handing.Load() != 0 {
		<-p.idle
	}
	for _, c := range cls {
		for _, pt := range c.parts {
			pt.close()
		}
	}
	flushErr := flushWriters(ctx, cls)
	var wg sync.WaitGroup
	for _, c := range cls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.shut(ctx, c)
		}()
	}
	wg.Wait()
	close(p.monStop)
	<-p.monDone
	err := flushErr
	if !p.bg.wait(ctx) {
		err = errors.Join(err, fmt.Errorf("%w: calls to pulsar-client-go still running (transactions, connecting): %w", ErrClosed, ctx.Err()))
	}
	if err != nil {
		p.log().Warn("keyroute: close could not flush everything", "error", err)
	}
	if p.detach != nil {
		p.detach()
	}
	return err
}

// shut closes c's writers, gives every message still pending ErrClosed,
// reports what is left and stops c's callback goroutine. c's partitions
// are closed and flushed already.
func (p *Producer) shut(ctx context.Context, c *cluster) {
	if !c.retired { // a retired cluster's writers are its successor's
		closeWriters(c.link.writers)
	}
	c.closeBulk()
	p.drainPool(ctx, c)
	if n := c.sweep(ErrClosed); n > 0 {
		p.log().Warn("keyroute: messages failed at close", "cluster", c.name, "messages", n)
	}
	c.disp.close()
	if !c.retired {
		c.link.close()
	}
}

// writing returns the clusters that have writers to flush: those of the
// topology, and those a change is draining.
func (p *Producer) writing() []*cluster {
	p.joinMu.Lock()
	defer p.joinMu.Unlock()
	cls := slices.Clone(p.all())
	for c := range p.draining {
		cls = append(cls, c)
	}
	return cls
}

// waitGroup waits for wg until ctx ends; it reports whether wg finished.
func waitGroup(ctx context.Context, wg *sync.WaitGroup) bool {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

// goBG runs fn on a goroutine that Close waits for.
func (p *Producer) goBG(fn func()) {
	p.bg.add()
	go func() {
		defer p.bg.done()
		fn()
	}()
}

// tracker counts goroutines. Unlike a sync.WaitGroup, it may be added to
// while it is waited for (a transaction can start a call while Close
// waits).
type tracker struct {
	mu   sync.Mutex // guards n and zero
	n    int
	zero chan struct{} // closed when n drops to 0; nil while nobody waits
}

func (t *tracker) add() {
	t.mu.Lock()
	t.n++
	t.mu.Unlock()
}

func (t *tracker) done() {
	t.mu.Lock()
	t.n--
	if t.n == 0 && t.zero != nil {
		close(t.zero)
		t.zero = nil
	}
	t.mu.Unlock()
}

// wait waits until the count is zero or ctx ends; it reports which.
func (t *tracker) wait(ctx context.Context) bool {
	t.mu.Lock()
	if t.n == 0 {
		t.mu.Unlock()
		return true
	}
	if t.zero == nil {
		t.zero = make(chan struct{})
	}
	zero := t.zero
	t.mu.Unlock()
	select {
	case <-zero:
		return true
	case <-ctx.Done():
		return false
	}
}

// log returns the configured logger, or one that discards.
func (p *Producer) log() *slog.Logger {
	if p.cfg.logger != nil {
		return p.cfg.logger
	}
	return discard
}

var discard = slog.New(slog.DiscardHandler)

// closeWriters closes writers in parallel: each close is a broker round trip.
func closeWriters(ws []writer) {
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.Close()
		}()
	}
	wg.Wait()
}

// userName names a producer in keyroute.Clients' errors.
func userName(name, topic string) string {
	if name == "" {
		return fmt.Sprintf("producer of %q", topic)
	}
	return fmt.Sprintf("producer %q of %q", name, topic)
}
