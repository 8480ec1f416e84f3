package producer

import (
	"sync/atomic"
	"time"

	"github.com/keyroute/keyroute/producer/internal/hook"
	"github.com/keyroute/keyroute/router"
)

// FakeConnect returns the connect of the fake behind o, an Opt from
// producertest's Clusters.Opt, for the tests that drive the fake's
// writers without a Producer.
func FakeConnect(o Opt) hook.Connect { return o.(hookOpt).fn }

// Held reports the buffer held by each cluster, in topology order.
func (p *Producer) Held() (msgs, bytes []int64) {
	for _, c := range p.all() {
		m, b := c.budget.held()
		msgs = append(msgs, m)
		bytes = append(bytes, b)
	}
	return msgs, bytes
}

// AgePool makes the transactions every pool holds look d older, and runs
// the health monitor's refresh of the pools.
func (p *Producer) AgePool(d time.Duration) {
	for _, c := range p.all() {
		c.pool.mu.Lock()
		for i := range c.pool.ready {
			c.pool.ready[i].begun = c.pool.ready[i].begun.Add(-d)
		}
		c.pool.mu.Unlock()
	}
	p.refreshPools(time.Now())
}

// Pooled reports the transactions each cluster's pool holds ready.
func (p *Producer) Pooled() (n []int) {
	for _, c := range p.all() {
		c.pool.mu.Lock()
		n = append(n, len(c.pool.ready))
		c.pool.mu.Unlock()
	}
	return n
}

// OnRetryPause makes fn run when a SendTxnBulk begin that failed starts
// its pause before the retry. Set it before the call it watches.
func (p *Producer) OnRetryPause(fn func()) { p.retryPaused = fn }

// OnBeginFailed makes fn run once a transaction's begin that failed is
// recorded. Set it before the call it watches.
func (p *Producer) OnBeginFailed(fn func()) { p.beginFailed = fn }

// InCallback is onCallbackGoroutine.
func (p *Producer) InCallback() bool { return p.onCallbackGoroutine() }

// CountGoidReads makes every later read of a goroutine's id add one to n.
// Set it before the Producer starts.
func CountGoidReads(n *atomic.Int64) { goidHook = func() { n.Add(1) } }

// Discover runs one partition discovery now (see
// PartitionsAutoDiscoveryInterval).
func (p *Producer) Discover() { p.discoverOnce() }

// Owes reports whether a message of key would take the hand-over's path
// (held or tagged) rather than the plain one.
func (p *Producer) Owes(key string) bool {
	s := p.snap.Load()
	if s.moves == nil {
		return false
	}
	_, pt, h := p.place(s, key)
	sm := s.moves[router.Slot(h)]
	return sm != nil && sm.owes(pt)
}
