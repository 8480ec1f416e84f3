package producer

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// admit decides where a message routed to c goes while c is down: c itself
// (after waiting), another cluster (spill, keyless), or nowhere (an
// error). The caller checked that c is down.
func (p *Producer) admit(ctx context.Context, s *snapshot, c *cluster, h uint64, keyless bool) (*cluster, error) {
	if keyless || p.cfg.downPolicy == Spill {
		if alt := s.router.ClusterExcept(h, s.isDown); alt >= 0 {
			return s.clusters[alt], nil
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

func (s *snapshot) isDown(i int) bool { return s.clusters[i].health.down.Load() }

// budget bounds one cluster's accepted-but-unreported messages and bytes.
// It is safe for concurrent use. One message may take the budget over its
// byte limit when nothing else holds bytes, so that a message larger than
// the limit can still be sent (alone).
//
// Both counts live in one word (messages above bit 40, bytes below), so
// that taking a message is one compare-and-swap; mu and wake are only for
// senders that wait.
type budget struct {
	// The limits: the cluster's share of the Producer's, set again when
	// a topology change gives the cluster another share (setLimits).
	maxMsgs  atomic.Uint64
	maxBytes atomic.Uint64

	state   atomic.Uint64 // msgs<<budgetShift | bytes
	waiting atomic.Int64  // goroutines parked in acquire

	mu   sync.Mutex    // guards wake
	wake chan struct{} // closed and replaced by release when waiting > 0
}

// budgetShift places the message count above the byte count in
// budget.state; MaxBudgetMessages and the byte limits keep both in range.
const (
	budgetShift = 40
	bytesMask   = 1<<budgetShift - 1
)

func newBudget(maxMsgs, maxBytes int64) *budget {
	b := &budget{wake: make(chan struct{})}
	b.maxMsgs.Store(uint64(maxMsgs))
	b.maxBytes.Store(uint64(maxBytes))
	return b
}

// setLimits gives the budget new limits; senders that wait for space look
// again.
func (b *budget) setLimits(maxMsgs, maxBytes int64) {
	b.maxMsgs.Store(uint64(maxMsgs))
	b.maxBytes.Store(uint64(maxBytes))
	b.release(0, 0)
}

// take takes one message of n bytes if both limits allow it.
func (b *budget) take(n int64) bool {
	add := 1<<budgetShift | uint64(n)
	for {
		v := b.state.Load()
		msgs, bytes := v>>budgetShift, v&bytesMask
		if msgs >= b.maxMsgs.Load() || (bytes+uint64(n) > b.maxBytes.Load() && bytes > 0) {
			return false
		}
		if b.state.CompareAndSwap(v, v+add) {
			return true
		}
	}
}

// acquire takes one message of n bytes, waiting for space until ctx ends or
// stop is closed. It returns ctx.Err() or ErrClosed when it gives up, and
// ErrBufferFull at once when there is no space and wait is false. Before
// it waits it asks inCallback: space is given back after callbacks return,
// so a callback that waited here could wait for itself (ErrInCallback).
func (b *budget) acquire(ctx context.Context, n int64, stop <-chan struct{}, wait bool, inCallback func() bool) error {
	if b.take(n) {
		return nil
	}
	if !wait {
		return ErrBufferFull
	}
	if inCallback() {
		return ErrInCallback
	}
	// Counted as waiting before the next look, so that a release after
	// that look sees the waiter and wakes it.
	b.waiting.Add(1)
	defer b.waiting.Add(-1)
	for {
		b.mu.Lock()
		wake := b.wake
		b.mu.Unlock()
		if b.take(n) {
			return nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		case <-stop:
			return ErrClosed
		}
	}
}

// release returns k messages totalling n bytes.
func (b *budget) release(k, n int64) {
	b.state.Add(-(uint64(k)<<budgetShift | uint64(n)))
	if b.waiting.Load() > 0 {
		b.mu.Lock()
		close(b.wake)
		b.wake = make(chan struct{})
		b.mu.Unlock()
	}
}

// held reports the messages and bytes currently held.
func (b *budget) held() (msgs, bytes int64) {
	v := b.state.Load()
	return int64(v >> budgetShift), int64(v & bytesMask)
}
