package producer

import (
	"sync"
	"sync/atomic"
	"time"
)

// health is one cluster's up/down state. The completion path counts
// outcomes; the monitor goroutine reads them and flips the state; senders
// read down.
//
// Senders read down on every message (and count the messages they hand
// over in their partition, partition.handed), and the goroutine
// pulsar-client-go reports on writes acked or failed at every outcome:
// the two groups sit on separate cache lines so that the two sides do not
// take the line from each other at every message.
type health struct {
	down    atomic.Bool
	probing atomic.Bool  // a probe is running
	probeOK atomic.Int64 // unix nanos at which the last successful probe started
	_       [64]byte

	// The goroutines that complete messages count each outcome with one
	// atomic add. acks counts a transaction's acknowledged messages,
	// which are not handed over.
	acked  atomic.Uint64 // of those handed, the acknowledged ones
	failed atomic.Uint64 // of those handed, the failed ones
	acks   atomic.Uint64 // acknowledged transactional messages, ever
	_      [64]byte

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
	// Connected is false until the cluster's writers have opened: it
	// started down because it did not answer New in time (StartTimeout),
	// and is tried again every DownProbeInterval.
	Connected bool
	// Err says why a cluster that has not connected is down: a
	// *ClusterError matching ErrConnect, with its last attempt's error, or
	// saying that no attempt has ended yet (one that gets no answer lasts
	// up to the cluster's operation timeout). nil once connected.
	Err error
	// PartitionsErr says why the last partition discovery
	// (PartitionsAutoDiscoveryInterval) did not apply the topic's partition
	// count there: a count below the one written (a shrink, never
	// applied), or new partitions that could not be opened. nil otherwise.
	PartitionsErr error
}

// Health returns every cluster's state, in topology order.
func (p *Producer) Health() []ClusterHealth {
	if p == nil {
		return nil
	}
	cls := p.all()
	out := make([]ClusterHealth, len(cls))
	for i, c := range cls {
		c.health.mu.Lock()
		since := c.health.since
		c.health.mu.Unlock()
		m, b := c.budget.held()
		out[i] = ClusterHealth{Name: c.name, Up: !c.health.down.Load(), Since: since, PendingMessages: m, PendingBytes: b}
		if e := c.join.partErr.Load(); e != nil {
			out[i].PartitionsErr = *e
		}
		if js := c.join; js.joined.Load() {
			out[i].Connected = true
		} else if err := js.lastErr(); err != nil {
			out[i].Err = connectError(js, err)
		}
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
			for _, c := range p.all() {
				if !c.join.joined.Load() {
					p.retryJoin(c.join, now)
					continue
				}
				p.check(c, now)
			}
			p.refreshPools(now)
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
	// Outcomes first, handed last: a message counted in an outcome was
	// counted in handed before, so held is never below zero.
	acked, failed := h.acked.Load(), h.failed.Load()
	acks := acked + h.acks.Load()
	held := int64(c.handed() - acked - failed)
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

// handed returns the messages handed to c's writers, ever, those of the
// clusters it succeeded included (they share its health's counts).
func (c *cluster) handed() uint64 {
	var n uint64
	for ; c != nil; c = c.prev {
		for _, pt := range c.parts {
			n += pt.handed.Load()
		}
	}
	return n
}
