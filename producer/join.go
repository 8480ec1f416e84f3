package producer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/keyroute/keyroute"
	"github.com/keyroute/keyroute/topology"
)

// A cluster joins the Producer when its writers are open. New starts an
// attempt for every cluster and returns once all have joined, or once
// StartTimeout has passed with at least one joined; the others start down
// and the health monitor starts a new attempt for each, every
// DownProbeInterval after its last one ended, until it joins.
//
// Until it joins, a cluster is a stand-in: a *cluster with the cluster's
// budget and health (down), one partition numbered -1 whose writer
// refuses everything, and a callback goroutine of its own, so that the
// refusals of its keys (ErrClusterDown under FailFast, the end of a
// WaitUp) are reported in order on a callback goroutine like any other.
// Joining builds the real *cluster (its partition count read then, with
// the same budget and health), swaps it into the Producer's snapshot
// (live) in place of the stand-in, marking the cluster up as it does (see
// retire), and stops the stand-in's callback goroutine. A key's refusals
// on the stand-in are reported before any of its later messages on the
// real cluster.

// errNoAnswer is a cluster's state before its first attempt ended.
var errNoAnswer = errors.New("no answer yet")

// errStandIn is the outcome of anything written through a stand-in's
// writer or begun on its transactions: the cluster has not joined.
var errStandIn = fmt.Errorf("%w: not connected yet", ErrClusterDown)

// joinState is one cluster's connection state, kept from New (or the
// topology change that adds the cluster) to Close (or its removal).
type joinState struct {
	idx    int // in New's topology, for awaitStart; -1 for a cluster added later
	cl     topology.Cluster
	wc     writerConfig
	budget *budget
	health *health

	joined atomic.Bool // its real cluster is in the snapshot
	trying atomic.Bool // an attempt is running

	mu      sync.Mutex // guards the fields below
	err     error      // the last attempt's error; errNoAnswer before
	lastEnd time.Time  // when the last attempt ended

	// Guarded by the Producer's joinMu: a cluster added by a change
	// (Update) is adding until the change puts it in the snapshot; an
	// attempt that opens its writers meanwhile leaves them in ready. A
	// cluster removed by a change, or whose change was refused, is gone:
	// an attempt closes what it opened.
	adding bool
	gone   bool
	ready  *link

	// replaces is, for a reconnection (see reconnect.go), the cluster
	// whose connection it replaces; nil otherwise. Set before the
	// attempt starts, and by apply under joinMu.
	replaces *cluster

	firstEnd chan struct{} // closed when the first attempt ends
	endOnce  sync.Once

	partErr atomic.Pointer[error] // the last partition discovery's error; nil: none
}

// setPartErr records the last partition discovery's error (nil: none).
func (js *joinState) setPartErr(err error) {
	if err == nil {
		js.partErr.Store(nil)
		return
	}
	js.partErr.Store(&err)
}

// lastErr returns the last attempt's error, nil once joined.
func (js *joinState) lastErr() error {
	js.mu.Lock()
	defer js.mu.Unlock()
	return js.err
}

// all returns the clusters in topology order: the snapshot that joins
// replace. Callers read it once per operation.
func (p *Producer) all() []*cluster { return p.snap.Load().clusters }

// newDownHealth returns the health of a cluster that has not joined yet.
func newDownHealth(now time.Time) *health {
	h := newHealth(now)
	h.down.Store(true)
	h.upCh = make(chan struct{})
	return h
}

// standIn returns the stand-in for the cluster of js (see above).
func (p *Producer) standIn(js *joinState) *cluster {
	c := &cluster{name: js.cl.Name, url: js.cl.ServiceURL, obs: p.cfg.observer,
		budget: js.budget, health: js.health, join: js}
	c.link = &link{writers: []writer{standInWriter{}}, close: func() {}}
	if p.cfg.transactions {
		c.link.newTxn = func(time.Duration) (pulsar.Transaction, error) { return nil, errStandIn }
	}
	c.parts = []*partition{newPartition(-1, c, c.link.writers[0], minFree)}
	c.disp = newDispatcher(c)
	return c
}

// joinedCluster returns the real cluster of js over l's writers.
func (p *Producer) joinedCluster(js *joinState, l *link) *cluster {
	c := &cluster{name: js.cl.Name, url: js.cl.ServiceURL, obs: p.cfg.observer,
		budget: js.budget, health: js.health, link: l, join: js}
	if old := js.replaces; old != nil && old.parts[0].idx >= 0 {
		c.prev = old // a reconnection: they share the health's counts
	}
	c.parts = make([]*partition, len(l.writers))
	maxFree := max(minFree, int(c.budget.maxMsgs.Load())/len(c.parts))
	for j, w := range l.writers {
		c.parts[j] = newPartition(j, c, w, maxFree)
	}
	c.disp = newDispatcher(c)
	if p.cfg.transactions {
		c.pool = &txnPool{size: p.cfg.txnPrebegin}
	}
	return c
}

// startAttempt starts an attempt to join the cluster of js unless one is
// running.
func (p *Producer) startAttempt(js *joinState) {
	if !js.trying.CompareAndSwap(false, true) {
		return
	}
	p.goBG(func() { p.joinAttempt(js) })
}

// joinAttempt opens cluster i's writers and, when they open, joins it. It
// tells New (joinEvents) that it ended. ctx is the Producer's closing:
// pulsar-client-go's calls take none, so an attempt may outlive Close's
// ctx by up to the cluster's operation timeout, or its keep-alive against
// a broker that accepts connections but does not answer (Close waits for
// it, see tracker); it joins nothing once Close has begun.
func (p *Producer) joinAttempt(js *joinState) {
	l, err := p.cfg.connect.connect(p.closing, js.cl, js.wc)
	if err == nil && len(l.writers) == 0 {
		l.close()
		err = errNoWriters
	}
	if err == nil {
		err = p.join(js, l)
	}
	js.mu.Lock()
	js.err, js.lastEnd = err, time.Now()
	js.mu.Unlock()
	js.trying.Store(false)
	if err != nil && !errors.Is(err, ErrClosed) {
		p.log().Debug("keyroute: connect failed", "cluster", js.cl.Name, "error", err)
	}
	js.endOnce.Do(func() { close(js.firstEnd) })
	if js.idx < 0 {
		return
	}
	select {
	case p.joinEvents <- js.idx:
	default: // New is not waiting
	}
}

// join makes the cluster of js over l's writers part of the Producer, in
// place of its stand-in, and marks it up; a cluster that a change is
// adding keeps l for the change (joinState.ready). Once Close has begun,
// or once the cluster is gone from the topology, it closes l instead and
// returns ErrClosed.
func (p *Producer) join(js *joinState, l *link) error {
	p.joinMu.Lock()
	if js.adding && !js.gone && !p.joinsStopped {
		js.ready = l
		p.joinMu.Unlock()
		return nil
	}
	if p.joinsStopped || js.gone {
		p.joinMu.Unlock()
		closeWriters(l.writers)
		l.close()
		return ErrClosed
	}
	c := p.joinedCluster(js, l)
	p.retire(js, c)
	js.joined.Store(true)
	p.joinMu.Unlock()
	p.log().Info("keyroute: cluster connected", "cluster", c.name, "topic", p.cfg.topic, "partitions", len(c.parts))
	return nil
}

// retire swaps c into the snapshot in place of js's stand-in, at a
// moment when the stand-in has reported every refusal placed on it, and
// from which later refusals on it (by senders that read the snapshot
// before) are reported at once on their sender: so none is reported after
// a message handed to c later. It holds the stand-in's partition lock only
// while nothing is reported, never while waiting for its callback
// goroutine, whose callbacks may send.
func (p *Producer) retire(js *joinState, c *cluster) {
	cur := p.snap.Load()
	i := slices.IndexFunc(cur.clusters, func(c *cluster) bool { return c.join == js })
	old := cur.clusters[i]
	pt := old.parts[0]
	for {
		<-old.disp.barrier()
		pt.mu.Lock()
		if pt.reported.Load() == pt.placed.Load() {
			break
		}
		pt.mu.Unlock() // placed meanwhile: report those first
	}
	// Up first, then swapped in: a sender never finds the joined cluster
	// down in the snapshot, and one that finds the stand-in up waits for
	// the swap (placeJoined), which comes next with nothing between.
	h, now := c.health, time.Now()
	h.mu.Lock()
	if h.down.Load() { // always: only a join marks a stand-in's cluster up
		h.down.Store(false)
		close(h.upCh)
		h.since = now
	}
	h.lastMoved = now
	h.mu.Unlock()
	next := *cur
	next.clusters = slices.Clone(cur.clusters)
	next.clusters[i] = c
	p.snap.Store(&next)
	pt.stopped = true
	pt.mu.Unlock()
	old.disp.close()
}

// stopJoins keeps any attempt from joining, and any change from being
// applied, from now on, and returns the clusters as they stand, those a
// change is draining included; Close calls it first.
func (p *Producer) stopJoins() []*cluster {
	p.joinMu.Lock()
	defer p.joinMu.Unlock()
	p.joinsStopped = true
	cls := slices.Clone(p.all())
	for c := range p.draining {
		cls = append(cls, c)
	}
	return cls
}

// retryJoin starts a new attempt for the cluster of js when none is
// running and the last one ended DownProbeInterval ago; the health
// monitor calls it for every cluster that has not joined.
func (p *Producer) retryJoin(js *joinState, now time.Time) {
	if js.trying.Load() || p.closed.Load() {
		return
	}
	js.mu.Lock()
	due := now.Sub(js.lastEnd) >= p.cfg.probeEvery
	js.mu.Unlock()
	if due {
		p.startAttempt(js)
	}
}

// startBound is how long New waits for the clusters (StartTimeout).
func (c *cfg) startBound() time.Duration {
	if c.startSet {
		return c.startTimeout
	}
	return c.downAfter
}

// awaitStart waits, for New, until the clusters' attempts decide whether
// the Producer starts: it returns nil when every cluster joined, or
// (unless RequireAllClusters) when StartTimeout has passed with at least
// one joined; an error naming each cluster that answered with an error,
// once StartTimeout has passed or every cluster has joined or answered
// (at once with RequireAllClusters); or, when ctx ends first, an error
// naming each cluster that answered with an error, and each that has
// neither joined nor answered, matching ctx.Err(). A cluster whose shared client is not made yet
// (keyroute.ErrNotOpen) has not answered: it is tried again.
func (p *Producer) awaitStart(ctx context.Context) error {
	const (
		waiting = iota
		joinedOK
		answered // with an error
	)
	timer := time.NewTimer(p.cfg.startBound())
	defer timer.Stop()
	state := make([]int, len(p.joins))
	late := false
	for {
		var failed []error
		joined, decided := 0, 0
		for i, st := range state {
			switch st {
			case joinedOK:
				joined++
				decided++
			case answered:
				decided++
				failed = append(failed, p.connectError(i, p.joins[i].lastErr()))
			}
		}
		switch {
		case len(failed) > 0 && (late || decided == len(state) || p.cfg.startAll):
			return errors.Join(failed...)
		case joined == len(state):
			return nil
		case late && joined > 0 && !p.cfg.startAll:
			var names []string
			for i, st := range state {
				if st != joinedOK {
					names = append(names, p.joins[i].cl.Name)
				}
			}
			p.log().Warn("keyroute: started without clusters that did not answer; they join when they do",
				"clusters", names, "waited", p.cfg.startBound().String())
			return nil
		}
		select {
		case i := <-p.joinEvents:
			switch err := p.joins[i].lastErr(); {
			case p.joins[i].joined.Load():
				state[i] = joinedOK
			case errors.Is(err, keyroute.ErrNotOpen):
			default:
				state[i] = answered
			}
		case <-timer.C:
			late = true
		case <-ctx.Done():
			for i, st := range state {
				if st == waiting {
					failed = append(failed, p.connectError(i, ctx.Err()))
				}
			}
			return errors.Join(failed...)
		}
	}
}

func (p *Producer) connectError(i int, err error) error {
	return connectError(p.joins[i], err)
}

func connectError(js *joinState, err error) error {
	return &ClusterError{Cluster: js.cl.Name, Op: "connect", Err: errors.Join(ErrConnect, err)}
}

// standInWriter is a stand-in's writer: it writes nothing. Nothing reaches
// it but a transaction's sends to a cluster that has not joined, which
// fail at their begin first.
type standInWriter struct{}

func (standInWriter) Send(context.Context, *pulsar.ProducerMessage) (pulsar.MessageID, error) {
	return nil, errStandIn
}

func (standInWriter) SendAsync(_ context.Context, m *pulsar.ProducerMessage, cb func(pulsar.MessageID, *pulsar.ProducerMessage, error)) {
	cb(nil, m, errStandIn)
}

func (standInWriter) FlushWithCtx(context.Context) error { return nil }
func (standInWriter) Close()                             {}
