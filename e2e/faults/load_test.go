//go:build e2e

package faults

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/producer"
)

// load sends a steady rate of keyed messages ("key|seq" payloads) from one
// goroutine and records every outcome per cluster and per time window.
type load struct {
	p      *producer.Producer
	rate   int // messages per second
	keys   int
	window time.Duration

	mu       sync.Mutex
	start    time.Time
	acked    map[string][]int          // per window index: acks per cluster
	ackedIDs map[string]int            // "key|seq" -> 1
	failed   map[string]error          // "key|seq" -> error
	firstErr map[string]time.Time      // per own cluster: first ErrClusterDown
	errKinds map[string]map[string]int // per own cluster: error class counts
	sent     int
}

func newLoad(p *producer.Producer, rate, keys int) *load {
	return &load{p: p, rate: rate, keys: keys, window: 250 * time.Millisecond,
		acked: map[string][]int{}, ackedIDs: map[string]int{}, failed: map[string]error{},
		firstErr: map[string]time.Time{}, errKinds: map[string]map[string]int{}}
}

// run sends until ctx ends, then flushes.
func (l *load) run(ctx context.Context) {
	l.start = time.Now()
	next := make([]int, l.keys)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	perTick := l.rate / 100
	i := 0
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_ = l.p.Flush(fctx)
			return
		case <-tick.C:
		}
		for j := 0; j < perTick; j++ {
			k := i % l.keys
			i++
			key := fmt.Sprintf("k-%05d", k)
			id := fmt.Sprintf("%s|%d", key, next[k])
			next[k]++
			own, _ := l.p.Placement(key)
			l.mu.Lock()
			l.sent++
			l.mu.Unlock()
			// Bound the hand-over, never stalling the loop for long, but not
			// by ctx: ctx ends while a tick's sends are going out, and a
			// message handed over with an ended ctx rightly fails, even on
			// a healthy cluster.
			sctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			l.p.SendAsync(sctx, &producer.Message{Key: key, Value: []byte(id)}, func(pid producer.ID, _ *producer.Message, err error) {
				l.record(own, id, pid, err)
			})
			cancel()
		}
	}
}

func (l *load) record(own, id string, pid producer.ID, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.failed[id] = err
		kinds := l.errKinds[own]
		if kinds == nil {
			kinds = map[string]int{}
			l.errKinds[own] = kinds
		}
		kinds[errClass(err)]++
		if errors.Is(err, producer.ErrClusterDown) {
			if _, ok := l.firstErr[own]; !ok {
				l.firstErr[own] = time.Now()
			}
		}
		return
	}
	w := int(time.Since(l.start) / l.window)
	per := l.acked[pid.Cluster]
	for len(per) <= w {
		per = append(per, 0)
	}
	per[w]++
	l.acked[pid.Cluster] = per
	l.ackedIDs[id]++
}

func errClass(err error) string {
	for _, s := range []error{producer.ErrClusterDown, producer.ErrSendTimeout, producer.ErrClosed, context.DeadlineExceeded} {
		if errors.Is(err, s) {
			return s.Error()
		}
	}
	return "other: " + err.Error()
}

// rate returns the acks per second of cluster in [from, to) since start.
func (l *load) rateOf(cluster string, from, to time.Duration) float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	per := l.acked[cluster]
	n := 0
	for w := int(from / l.window); w < int(to/l.window) && w < len(per); w++ {
		n += per[w]
	}
	return float64(n) / (to - from).Seconds()
}

// checkErrors asserts that every failure is a *SendError for the broken
// cluster, of an expected class.
func (l *load) checkErrors(broken string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for id, err := range l.failed {
		var se *producer.SendError
		Expect(errors.As(err, &se)).To(BeTrue(), "%s: %v", id, err)
		Expect(se.Cluster).To(Equal(broken), "%s failed on a healthy cluster: %v", id, err)
	}
	for own := range l.errKinds {
		Expect(own).To(Equal(broken))
	}
}
