package producer

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// DownPolicy is what happens to messages routed to a cluster that is down.
type DownPolicy uint8

// Down policies.
const (
	// FailFast fails new messages for a down cluster at once with
	// ErrClusterDown. The default.
	FailFast DownPolicy = iota
	// WaitUp makes new messages for a down cluster wait until it is up
	// again, at most DownWait (and their ctx), then fail with ErrClusterDown.
	WaitUp
	// Spill sends new messages for a down cluster to the cluster their key
	// would go to without it (rendezvous' next choice), so they are written
	// somewhere. THIS BREAKS PER-KEY ORDER AND PLACEMENT for those keys: a
	// key's messages then live on two clusters, and a consumer sees them in
	// no defined order across the two. Use it only for data where
	// availability beats order.
	Spill
)

func (d DownPolicy) String() string {
	switch d {
	case FailFast:
		return "fail-fast"
	case WaitUp:
		return "wait"
	case Spill:
		return "spill"
	}
	return "DownPolicy(?)"
}

// Defaults for cluster health.
const (
	DefaultDownAfter = 3 * time.Second
	DefaultDownWait  = 10 * time.Second
	// DefaultDownProbeInterval is how often a down cluster is probed.
	DefaultDownProbeInterval = time.Second
)

// OnClusterDown sets the policy for messages routed to a down cluster
// (default FailFast). Keyless messages never wait or fail for a down
// cluster: they go to an up one, whatever the policy.
func OnClusterDown(p DownPolicy) Opt { return optFunc(func(c *cfg) { c.downPolicy = p }) }

// DownAfter is how long a cluster may hold messages without a single
// acknowledgement before it counts as down (default 3s). It is up again at
// its next acknowledgement, or, when it holds no message, at its first
// successful probe (see DownProbeInterval).
func DownAfter(d time.Duration) Opt { return optFunc(func(c *cfg) { c.downAfter = d }) }

// DownProbeInterval is how often a down cluster is probed (default 1s):
// a topic metadata lookup on the cluster's own client, a broker round trip
// that writes nothing. A cluster that holds no message is up again at its
// first successful probe, so recovery is seen whatever the traffic: under
// every OnClusterDown policy, with keyless messages only, or with none. A
// probe that gets no answer is bounded by the client's operation timeout;
// one runs at a time per cluster.
func DownProbeInterval(d time.Duration) Opt { return optFunc(func(c *cfg) { c.probeEvery = d }) }

// DownWait bounds how long a message waits for a down cluster under WaitUp
// (default 10s).
func DownWait(d time.Duration) Opt { return optFunc(func(c *cfg) { c.downWait = d }) }

// health is one cluster's up/down state. The completion path bumps acks;
// the monitor goroutine reads it and flips the state; senders read down.
//
// Senders write handed and read down on every message, and the goroutine
// pulsar-client-go reports on writes completed and acks on every outcome:
// the two groups sit on separate cache lines so that the two sides do not
// take the line from each other at every message.
type health struct {
	down    atomic.Bool
	handed  atomic.Uint64 // messages handed to the cluster's writers, ever
	probing atomic.Bool   // a probe is running
	probeOK atomic.Int64  // unix nanos at which the last successful probe started
	_       [64]byte

	acks      atomic.Uint64 // successful acknowledgements, ever
	completed atomic.Uint64 // of those handed, the ones with an outcome
	_         [64]byte

	mu        sync.Mutex    // guards the fields below
	upCh      chan struct{} // closed while up; replaced when the cluster goes down
	since     time.Time     // of the current state
	lastAcks  uint64        // acks at the monitor's last look
	lastMoved time.Time     // when the monitor last saw acks move or nothing held
	lastProbe time.Time     // when the monitor last started a probe
}

func newHealth(now time.Time) *health {
	h := &health{upCh: make(chan struct{}), since: now, lastMoved: now}
	close(h.upCh)
	return h
}

// ClusterHealth is a cluster's state as the Producer sees it.
type ClusterHealth struct {
	Name string
	Up   bool
	// Since is when the cluster entered its current state.
	Since time.Time
	// PendingMessages and PendingBytes are held against its buffer share.
	PendingMessages, PendingBytes int64
}

// Health returns every cluster's state, in topology order.
func (p *Producer) Health() []ClusterHealth {
	if p == nil {
		return nil
	}
	out := make([]ClusterHealth, len(p.clusters))
	for i, c := range p.clusters {
		c.health.mu.Lock()
		since := c.health.since
		c.health.mu.Unlock()
		m, b := c.budget.held()
		out[i] = ClusterHealth{Name: c.name, Up: !c.health.down.Load(), Since: since, PendingMessages: m, PendingBytes: b}
	}
	return out
}

// monitor checks every cluster's progress until stop is closed.
func (p *Producer) monitor(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	tick := time.NewTicker(max(p.cfg.downAfter/8, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-tick.C:
			for _, c := range p.clusters {
				p.check(c, now)
			}
		}
	}
}

// check flips c's state: down when its writers held messages and it saw no
// ack for downAfter; up at the first ack after that, or at a successful
// probe started while it was down and held nothing. Messages whose outcome
// is known but whose callback is still running do not count: a slow
// callback is not a slow cluster. While c is down, check starts a probe
// every probeEvery.
func (p *Producer) check(c *cluster, now time.Time) {
	h := c.health
	acks := h.acks.Load()
	done := h.completed.Load()
	held := int64(h.handed.Load() - done)
	h.mu.Lock()
	defer h.mu.Unlock()
	moved := acks != h.lastAcks
	h.lastAcks = acks
	if moved || held == 0 {
		h.lastMoved = now
	}
	switch down := h.down.Load(); {
	case !down && now.Sub(h.lastMoved) >= p.cfg.downAfter:
		h.down.Store(true)
		h.upCh = make(chan struct{})
		h.since = now
		p.log().Warn("keyroute: cluster down", "cluster", c.name, "policy", p.cfg.downPolicy.String(),
			"pending", held, "no_ack_for", now.Sub(h.lastMoved).String())
	case down && (moved || (held == 0 && h.probeOK.Load() >= h.since.UnixNano())):
		p.log().Info("keyroute: cluster up", "cluster", c.name, "down_for", now.Sub(h.since).String(), "probed", !moved)
		h.down.Store(false)
		close(h.upCh)
		h.since = now
	case down && c.link.probe != nil && now.Sub(h.lastProbe) >= p.cfg.probeEvery && h.probing.CompareAndSwap(false, true):
		h.lastProbe = now
		p.goBG(func() {
			defer h.probing.Store(false)
			start := time.Now()
			if err := c.link.probe(); err != nil {
				p.log().Debug("keyroute: probe failed", "cluster", c.name, "error", err)
				return
			}
			h.probeOK.Store(start.UnixNano())
		})
	}
}

// admit decides where a message routed to c goes while c is down: c itself
// (after waiting), another cluster (spill, keyless), or nowhere (an
// error). The caller checked that c is down.
func (p *Producer) admit(ctx context.Context, c *cluster, h uint64, keyless bool) (*cluster, error) {
	if keyless || p.cfg.downPolicy == Spill {
		if alt := p.router.ClusterExcept(h, p.isDown); alt >= 0 {
			return p.clusters[alt], nil
		}
		return nil, ErrClusterDown
	}
	if p.cfg.downPolicy == WaitUp {
		c.health.mu.Lock()
		up := c.health.upCh
		c.health.mu.Unlock()
		t := time.NewTimer(p.cfg.downWait)
		defer t.Stop()
		select {
		case <-up:
			return c, nil
		case <-t.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-p.done:
			return nil, ErrClosed
		}
	}
	return nil, ErrClusterDown
}

func (p *Producer) isDown(i int) bool { return p.clusters[i].health.down.Load() }
