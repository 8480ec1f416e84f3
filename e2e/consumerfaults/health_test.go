//go:build e2e

package consumerfaults

import (
	"context"
	"sync"
	"time"

	"github.com/keyroute/keyroute/consumer"
)

// sample is one look at the consumer's Health.
type sample struct {
	at        time.Time
	connected map[string]bool
}

// healthLog reads the consumer's Health every poll, in both measuring
// windows alike, and keeps what it saw.
type healthLog struct {
	mu      sync.Mutex
	samples []sample
	done    chan struct{}
}

func watchHealth(ctx context.Context, c *consumer.Consumer, poll, bound time.Duration) *healthLog {
	h := &healthLog{done: make(chan struct{})}
	go func() {
		defer close(h.done)
		t := time.NewTicker(poll)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			// Health reads Connected first, then asks the admin APIs for
			// the backlog (bounded here).
			s := sample{at: time.Now(), connected: map[string]bool{}}
			hctx, cancel := context.WithTimeout(ctx, bound)
			for _, ch := range c.Health(hctx) {
				s.connected[ch.Cluster] = ch.Connected
			}
			cancel()
			h.mu.Lock()
			h.samples = append(h.samples, s)
			h.mu.Unlock()
		}
	}()
	return h
}

// first returns the time of the first sample after t in which cluster's
// Connected is want.
func (h *healthLog) first(cluster string, want bool, t time.Time) (time.Time, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.samples {
		if s.at.After(t) && s.connected[cluster] == want {
			return s.at, true
		}
	}
	return time.Time{}, false
}

// count returns how many samples in [from, to) saw cluster's Connected
// as want, and how many samples there were.
func (h *healthLog) count(cluster string, want bool, from, to time.Time) (n, of int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.samples {
		if !s.at.Before(from) && s.at.Before(to) {
			of++
			if s.connected[cluster] == want {
				n++
			}
		}
	}
	return n, of
}
