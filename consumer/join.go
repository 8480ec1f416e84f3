package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/keyroute/keyroute"
	"github.com/keyroute/keyroute/topology"
)

// A cluster joins the Consumer when its subscription is open. New starts
// an attempt for every cluster and returns once all have joined, or once
// StartTimeout has passed with at least one joined; the others start down
// and the monitor starts a new attempt for each, every ProbeInterval after
// its last one ended, until it joins. Update adds clusters the same way.
//
// Joining publishes a new clusterSet with the cluster's subscription in
// the read set, so that takes read it from their next look (a take
// waiting on the old set is woken by its changed channel).
//
// The position: the first attempt, started by New, subscribes at
// InitialPosition, as long as New has not returned (its ctx ends then,
// and the attempt stops before it subscribes: see subscribe). Every later
// attempt (the monitor's, an Update's) subscribes at Earliest, which keeps the cursor
// of a subscription that exists and starts a new one at the first message
// still stored: producers may have written to a cluster that was out
// while the Consumer started, and a subscription made at Latest then
// would skip it (router/HANDOVER.md, section 9). The one window left: a
// first attempt whose subscribe request had already gone out when New
// returned, and that the broker answers only later, makes its
// subscription at InitialPosition.

// atLatestThenEarliest makes the subscription o asks for at Latest exist
// on every partition the topic has now, then sets o to Earliest; o at
// Earliest already is left alone; for the one consumer over every
// partition of a Retry subscription (the others subscribe each partition
// they looked up by its name). pulsar-client-go subscribes every
// partition it finds with the SubscriptionInitialPosition the consumer
// was made with, and it looks the partitions up again inside Subscribe:
// a partition added since the Consumer's lookup, which producers may
// already write, would get its subscription at Latest and lose what they
// wrote. Made at Earliest, the consumer starts a new partition's
// subscription at its first message; the Latest that InitialPosition asks
// for holds for the partitions there before, through a short-lived
// consumer that makes the subscription there and is closed before the
// real one subscribes (it takes at most one message per partition, which
// comes again). Partitions added later are found by the Consumer's own
// discovery (grow.go), which subscribes again at Earliest.
func atLatestThenEarliest(client pulsar.Client, o *pulsar.ConsumerOptions) error {
	if o.SubscriptionInitialPosition != pulsar.SubscriptionPositionLatest {
		return nil
	}
	pre := *o
	pre.ReceiverQueueSize = 1
	pre.MessageChannel = make(chan pulsar.ConsumerMessage, 1)
	pre.AutoDiscoveryPeriod = time.Hour // it lives for one call
	if o.Decryption != nil {
		d := *o.Decryption
		pre.Decryption = &d
	}
	pc, err := client.Subscribe(pre)
	if err != nil {
		return err
	}
	pc.Close()
	o.SubscriptionInitialPosition = pulsar.SubscriptionPositionEarliest
	return nil
}

// operationTimeout is m's pulsar-client-go operation timeout, which also
// bounds its admin API calls.
func operationTimeout(m *member) time.Duration {
	m.jmu.Lock()
	defer m.jmu.Unlock()
	if d := m.cl.Client.OperationTimeout; d > 0 {
		return d
	}
	return defaultOperationTimeout
}

// errNoAnswer is a cluster's state before its first attempt ended.
var errNoAnswer = errors.New("no answer yet")

// errStale is a join attempt's end when an Update changed the cluster's
// settings while it subscribed: it subscribes again with the new ones.
var errStale = errors.New("settings changed while subscribing")

// startAttempt starts an attempt to join m unless one is running or Close
// has begun. ctx ends the attempt's waits (a cancelled first attempt is
// tried again later by the monitor).
func (c *Consumer) startAttempt(ctx context.Context, m *member) {
	c.goOnce(&m.trying, func() { c.joinAttempt(ctx, m) })
}

// goOnce runs fn on a goroutine of its own, which Close waits for, unless
// busy says one runs already or Close has begun; busy is true while fn
// runs.
func (c *Consumer) goOnce(busy *atomic.Bool, fn func()) {
	if !busy.CompareAndSwap(false, true) {
		return
	}
	c.mu.Lock()
	if c.closed.Load() {
		c.mu.Unlock()
		busy.Store(false)
		return
	}
	c.attempts.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.attempts.Done()
		defer busy.Store(false)
		fn()
	}()
}

// joinAttempt subscribes on m's cluster and, when it is subscribed, joins
// it; then it tells New and Update (ended) that it ended.
func (c *Consumer) joinAttempt(ctx context.Context, m *member) {
	err := errStale
	for err == errStale { // an Update changed the settings meanwhile: again with the new ones
		m.jmu.Lock()
		sc := subConfig{cfg: c.cfg, cluster: m.name, share: m.share, admin: m.admin()}
		cl := m.cl
		if m.late {
			sc.position = Earliest
		}
		m.jmu.Unlock()
		var l *link
		if l, err = c.cfg.connect.connect(ctx, cl, sc); err == nil {
			err = c.join(m, cl, l)
		}
	}
	m.jmu.Lock()
	m.err, m.lastEnd = err, time.Now()
	m.late = true // from now on, whatever this one did
	m.jmu.Unlock()
	if err != nil && !errors.Is(err, ErrClosed) {
		c.log().Debug("keyroute: subscribe failed", "cluster", m.name, "error", err)
	}
	c.mu.Lock()
	close(c.ended)
	c.ended = make(chan struct{})
	c.mu.Unlock()
}

// join makes l m's open subscription and publishes it to the takes. It
// closes l instead, and returns ErrClosed, once Close has begun, when an
// Update removed m, or when an Update changed m's cluster since the
// attempt began (the next attempt subscribes with the new settings).
func (c *Consumer) join(m *member, cl topology.Cluster, l *link) error {
	k := &cluster{member: m, owner: c, link: l}
	ps := k.newParts(l.streams, 0)
	k.parts.Store(&ps)
	c.setMu.Lock()
	m.jmu.Lock()
	stale := !sameConnection(m.cl, cl)
	m.jmu.Unlock()
	if c.joinsStopped || m.removed.Load() || stale || m.cur.Load() != nil {
		err := ErrClosed
		if stale && !c.joinsStopped && !m.removed.Load() {
			err = errStale
		}
		c.setMu.Unlock()
		k.close()
		return err
	}
	m.probeOK.Store(true)
	m.probeStart.Store(0)
	m.cur.Store(k)
	c.publish(c.set.Load().members)
	c.setMu.Unlock()
	c.log().Info("keyroute: cluster subscribed", "cluster", m.name, "topic", c.cfg.topic, "subscription", c.cfg.subscription)
	return nil
}

// joined reports whether m's subscription is open and published to the
// takes: only then does a take read it, and find it as an origin's
// cluster (hold.go).
func (c *Consumer) joined(m *member) bool {
	k := m.cur.Load()
	return k != nil && c.set.Load().byName[m.name] == k
}

// publish stores the set of members (in order), whose read set is the
// open subscription of each, and wakes the takes waiting on the old one.
// setMu is held.
func (c *Consumer) publish(members []*member) {
	next := &clusterSet{members: members, byName: make(map[string]*cluster, len(members))}
	for _, m := range members {
		if k := m.cur.Load(); k != nil {
			next.read = append(next.read, k)
			next.byName[m.name] = k
		}
	}
	c.readMu.Lock()
	c.store(next)
	c.readMu.Unlock()
}

// store fills next's parts, those of its clusters that are not stopped,
// stores it and wakes the takes waiting on the set it replaces. readMu
// is held.
func (c *Consumer) store(next *clusterSet) {
	next.parts, next.changed = nil, make(chan struct{})
	for _, k := range next.read {
		for _, p := range *k.parts.Load() {
			if !p.stopped {
				p.at.Store(uint32(len(next.parts)))
				next.parts = append(next.parts, p)
			}
		}
	}
	close(c.set.Swap(next).changed)
}

// setStopped stops (on) or resumes reading the parts ps, and stores a read set
// without the stopped ones when that changed any.
func (c *Consumer) setStopped(ps []*part, on bool) {
	c.readMu.Lock()
	defer c.readMu.Unlock()
	changed := false
	for _, p := range ps {
		if p.stopped != on {
			p.stopped, changed = on, true
		}
	}
	if changed {
		cur := *c.set.Load()
		c.store(&cur)
	}
}

// retryJoins starts an attempt for every member that has not joined, has
// none running and whose last one ended a ProbeInterval ago; the monitor
// calls it.
func (c *Consumer) retryJoins(now time.Time) {
	for _, m := range c.set.Load().members {
		if m.cur.Load() != nil || m.trying.Load() || m.removed.Load() {
			continue
		}
		m.jmu.Lock()
		due := now.Sub(m.lastEnd) >= c.cfg.probeEvery
		m.jmu.Unlock()
		if due {
			c.startAttempt(c.joinCtx, m)
		}
	}
}

// startBound is how long New and Update wait for the clusters
// (StartTimeout).
func (c *cfg) startBound() time.Duration {
	if c.startSet {
		return c.startTimeout
	}
	return 3 * c.probeEvery
}

// awaitJoins waits, for New and Update, until the attempts of ms decide:
// it returns nil when every one joined, or (unless all) when StartTimeout
// has passed with at least one of the Consumer's clusters joined; an
// error naming each cluster that answered with an error, once
// StartTimeout has passed or every one of ms has joined or answered (at
// once with all); or, when ctx ends first, an error naming each that
// answered with an error and each that has neither joined nor answered,
// matching ctx.Err(). A cluster whose shared client is not open yet
// (keyroute.ErrNotOpen), or that an attempt stopped for ctx, has not
// answered.
func (c *Consumer) awaitJoins(ctx context.Context, ms []*member, all bool) error {
	timer := time.NewTimer(c.cfg.startBound())
	defer timer.Stop()
	late := false
	for {
		c.mu.Lock()
		ended := c.ended
		c.mu.Unlock()
		var failed, waiting []error
		joined := 0
		for _, m := range ms {
			switch err := m.lastErr(); {
			case c.joined(m):
				joined++
			case unanswered(err):
				waiting = append(waiting, c.connectError(m, err))
			default:
				failed = append(failed, err)
			}
		}
		switch {
		case len(failed) > 0 && (late || len(waiting) == 0 || all):
			return errors.Join(failed...)
		case joined == len(ms):
			return nil
		case late && !all && len(c.set.Load().read) > 0:
			var names []string
			for _, m := range ms {
				if m.cur.Load() == nil {
					names = append(names, m.name)
				}
			}
			c.log().Warn("keyroute: started without clusters that did not answer; they join when they do",
				"clusters", names, "waited", c.cfg.startBound().String())
			return nil
		}
		select {
		case <-ended:
		case <-timer.C:
			late = true
		case <-ctx.Done():
			for _, m := range ms {
				if !c.joined(m) && unanswered(m.lastErr()) {
					failed = append(failed, c.connectError(m, ctx.Err()))
				}
			}
			return errors.Join(failed...)
		}
	}
}

// unanswered reports whether an attempt's error means the cluster has not
// answered (yet), as opposed to answering with an error: none ended yet,
// the shared client not open, an attempt stopped for its ctx, or the
// admin API not reached.
func unanswered(err error) bool {
	return err == errNoAnswer || errors.Is(err, keyroute.ErrNotOpen) || errors.Is(err, context.Canceled) ||
		errors.Is(err, context.DeadlineExceeded) || errors.As(err, new(*adminUnreachable))
}

// lastErr returns the last join attempt's error.
func (m *member) lastErr() error {
	m.jmu.Lock()
	defer m.jmu.Unlock()
	return m.err
}

// connectError is the error of a cluster that has not joined, for Health
// and New: it matches ErrConnect and err.
func (c *Consumer) connectError(m *member, err error) error {
	return &ClusterError{Cluster: m.name, Op: "connect", Err: fmt.Errorf("%w: %w", ErrConnect, err)}
}

// log returns the Consumer's logger, one that drops everything without
// Logger.
func (c *Consumer) log() *slog.Logger {
	if c.cfg.logger != nil {
		return c.cfg.logger
	}
	return discard
}

var discard = slog.New(slog.DiscardHandler)

// sameConnection reports whether a consumer reads a and b alike: through
// one client (topology.SameClient, the rule keyroute.Clients follows, so
// a client it replaces is never one a subscription still reads through)
// and one admin URL.
func sameConnection(a, b topology.Cluster) bool {
	return topology.SameClient(a, b) && a.AdminURL == b.AdminURL
}

// errNotConnected is the cause of an operation on a cluster that has not
// joined yet.
var errNotConnected = fmt.Errorf("%w: not subscribed yet", ErrConnect)
