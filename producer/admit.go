package producer

import (
	"context"
	"sync"
	"time"
)

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

// budget bounds one cluster's accepted-but-unreported messages and bytes.
// It is safe for concurrent use. One message may take the budget over its
// byte limit when nothing else holds bytes, so that a message larger than
// the limit can still be sent (alone).
type budget struct {
	maxMsgs  int64
	maxBytes int64

	mu      sync.Mutex // guards the fields below
	msgs    int64
	bytes   int64
	waiting int           // goroutines parked in acquire
	wake    chan struct{} // closed and replaced by release when waiting > 0
}

func newBudget(maxMsgs, maxBytes int64) *budget {
	return &budget{maxMsgs: maxMsgs, maxBytes: maxBytes, wake: make(chan struct{})}
}

// takeLocked takes one message of n bytes if both limits allow it.
func (b *budget) takeLocked(n int64) bool {
	if b.msgs >= b.maxMsgs || (b.bytes+n > b.maxBytes && b.bytes > 0) {
		return false
	}
	b.msgs++
	b.bytes += n
	return true
}

// acquire takes one message of n bytes, waiting for space until ctx ends or
// stop is closed. It returns ctx.Err() or ErrClosed when it gives up, and
// ErrBufferFull at once when there is no space and wait is false. Before
// it waits it asks inCallback: space is given back after callbacks return,
// so a callback that waited here could wait for itself (ErrInCallback).
func (b *budget) acquire(ctx context.Context, n int64, stop <-chan struct{}, wait bool, inCallback func() bool) error {
	b.mu.Lock()
	for {
		if b.takeLocked(n) {
			b.mu.Unlock()
			return nil
		}
		if !wait {
			b.mu.Unlock()
			return ErrBufferFull
		}
		if inCallback() {
			b.mu.Unlock()
			return ErrInCallback
		}
		wake := b.wake
		b.waiting++
		b.mu.Unlock()
		var err error
		select {
		case <-wake:
		case <-ctx.Done():
			err = ctx.Err()
		case <-stop:
			err = ErrClosed
		}
		b.mu.Lock()
		b.waiting--
		if err != nil {
			b.mu.Unlock()
			return err
		}
	}
}

// release returns k messages totalling n bytes.
func (b *budget) release(k, n int64) {
	b.mu.Lock()
	b.msgs -= k
	b.bytes -= n
	if b.waiting > 0 {
		close(b.wake)
		b.wake = make(chan struct{})
	}
	b.mu.Unlock()
}

// held reports the messages and bytes currently held.
func (b *budget) held() (msgs, bytes int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.msgs, b.bytes
}
