package producer

import (
	"context"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// txnPool keeps Pulsar transactions begun ahead of the commits that take
// them, on one cluster, so that a commit does not wait for a begin's round
// trip (TxnPrebegin). It starts filling when a commit first touches the
// cluster, so a Producer that never commits begins nothing. Its
// transactions are begun with DefaultTxnTimeout; a commit with another
// TxnTimeout begins its own.
//
// A transaction is taken only while at least half its timeout is left, so
// a commit that takes one has at least DefaultTxnTimeout/2 to finish. The
// health monitor ends older ones with an empty commit (which leaves no
// aborted transaction behind) and begins others; Close ends those left.
type txnPool struct {
	size int

	mu      sync.Mutex // guards the fields below
	ready   []pooledTxn
	begins  int           // begins under way
	started bool          // a commit touched the cluster
	closed  bool          // Close is draining the pool: begin no more
	drained bool          // Close has ended the pool's transactions
	idle    chan struct{} // closed when begins drops to 0 while closed; nil while nobody waits
}

type pooledTxn struct {
	t     pulsar.Transaction
	begun time.Time // when its begin was asked for: the broker's clock starts after
}

// poolTimeout is the timeout of pooled transactions.
const poolTimeout = DefaultTxnTimeout

// fresh reports whether pt may still be taken at now.
func (pt pooledTxn) fresh(now time.Time) bool { return now.Sub(pt.begun) < poolTimeout/2 }

// takeTxn returns a pre-begun transaction of c's pool for a commit with
// cfg, and when it was begun; ok is false when there is none to take. It
// starts the pool; the commit tops it up when it ends (refill), since a
// begin's write to the coordinator's log would delay the commit's own
// writes there.
func (p *Producer) takeTxn(c *cluster, cfg *txnCfg) (t pulsar.Transaction, begun time.Time, ok bool) {
	pool := c.pool
	if pool == nil || pool.size == 0 || cfg.timeout != poolTimeout {
		return nil, time.Time{}, false
	}
	now := time.Now()
	pool.mu.Lock()
	pool.started = true
	stale := pool.dropStaleLocked(now)
	if len(pool.ready) > 0 {
		pt := pool.ready[0]
		pool.ready = pool.ready[1:]
		t, begun, ok = pt.t, pt.begun, true
	}
	pool.mu.Unlock()
	p.endStale(c, stale)
	return t, begun, ok
}

// refill tops up the pools of the clusters msgs touched, after their
// commit.
func (p *Producer) refill(msgs []stagedMsg) {
	var last *cluster
	for i := range msgs {
		if c := msgs[i].c; c != last {
			p.fillPool(c)
			last = c
		}
	}
}

// dropStaleLocked removes the transactions that may no longer be taken.
func (pool *txnPool) dropStaleLocked(now time.Time) []pooledTxn {
	n := 0
	for n < len(pool.ready) && !pool.ready[n].fresh(now) {
		n++
	}
	stale := pool.ready[:n:n]
	pool.ready = pool.ready[n:]
	return stale
}

// fillPool begins transactions until c's pool holds or awaits its size.
// Each begin runs on its own goroutine: pulsar-client-go retries it for as
// long as the coordinator is unreachable. A failed begin is not retried
// here; the next take or refresh tries again.
func (p *Producer) fillPool(c *cluster) {
	pool := c.pool
	if pool == nil {
		return
	}
	pool.mu.Lock()
	n := 0
	if pool.started && !pool.closed {
		n = pool.size - len(pool.ready) - pool.begins
		pool.begins += max(n, 0)
	}
	pool.mu.Unlock()
	for range n {
		p.goBG(func() {
			begun := time.Now()
			t, err := c.link.newTxn(poolTimeout)
			pool.mu.Lock()
			pool.begins--
			late := err == nil && pool.drained
			if err == nil && !late {
				pool.ready = append(pool.ready, pooledTxn{t: t, begun: begun})
			}
			if pool.begins == 0 && pool.idle != nil {
				close(pool.idle)
				pool.idle = nil
			}
			pool.mu.Unlock()
			switch {
			case err != nil:
				p.log().Debug("keyroute: beginning a transaction ahead failed", "cluster", c.name, "error", err)
			case late:
				// Close stopped waiting for this begin: end it here; if the
				// client is closed by now, the broker aborts it at its
				// timeout.
				_ = t.Commit(context.Background())
			}
		})
	}
}

// refreshPools ends the pooled transactions that may no longer be taken
// and begins others; the health monitor calls it.
func (p *Producer) refreshPools(now time.Time) {
	for _, c := range p.all() {
		pool := c.pool
		if pool == nil {
			continue
		}
		pool.mu.Lock()
		started := pool.started
		stale := pool.dropStaleLocked(now)
		pool.mu.Unlock()
		if started {
			p.endStale(c, stale)
			p.fillPool(c)
		}
	}
}

// endStale ends transactions that were never used, with an empty commit.
func (p *Producer) endStale(c *cluster, stale []pooledTxn) {
	for _, pt := range stale {
		p.goBG(func() { p.endEmpty(context.Background(), pt.begun.Add(poolTimeout), c, pt.t) })
	}
}

// drainPool ends the transactions c's pool holds and stops it filling. Close
// calls it before it closes the cluster's client: it waits for the begins
// under way (a begin that the client's close cut short would leave a
// transaction for the broker to abort at its timeout), then ends every
// transaction with an empty commit and waits for the answers. Each wait
// ends with ctx, or after DownAfter (a coordinator that does not answer).
func (p *Producer) drainPool(ctx context.Context, c *cluster) {
	pool := c.pool
	if pool == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, p.cfg.downAfter)
	defer cancel()
	pool.mu.Lock()
	pool.closed = true
	var idle chan struct{}
	if pool.begins > 0 {
		pool.idle = make(chan struct{})
		idle = pool.idle
	}
	pool.mu.Unlock()
	if idle != nil {
		select {
		case <-idle:
		case <-ctx.Done():
		}
	}
	pool.mu.Lock()
	pool.drained = true
	ready := pool.ready
	pool.ready = nil
	pool.mu.Unlock()
	var wg sync.WaitGroup
	for _, pt := range ready {
		wg.Add(1)
		p.goBG(func() {
			defer wg.Done()
			_ = pt.t.Commit(context.WithoutCancel(ctx))
		})
	}
	waitGroup(ctx, &wg)
}
