//go:build e2e

package faults

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/producer"
)

// load sends a steady rate of keyed messages ("key|seq" payloads) from one
// goroutine and records every outcome per cluster and per time window, and
// how long each hand-over (the SendAsync call) took.
type load struct {
	p      *producer.Producer
	rate   int // messages per second
	keys   int
	window time.Duration
	// handOver bounds each hand-over (the ctx of each SendAsync). A
	// hand-over waits only for buffer space, and the messages that hold it
	// end by their send timeout (sendTimeoutSweep: twice it, as
	// pulsar-client-go sweeps), so the specs pass that: a message that
	// still fails by this ctx waited longer than any message can hold the
	// space, on any cluster.
	handOver time.Duration

	mu       sync.Mutex
	start    time.Time
	acked    map[string][]int          // per window index: acks per cluster
	offered  map[string][]int          // per window index: sends per own cluster
	ackedIDs map[string]int            // "key|seq" -> 1
	failed   map[string]error          // "key|seq" -> error
	refused  map[string][]time.Time    // per own cluster: each ErrClusterDown's callback, in order
	errKinds map[string]map[string]int // per own cluster: error class counts
	handed   map[string][]handOverTime // per own cluster, in send order
	sent     int
	lastAck  map[string]time.Time  // per cluster: the latest ack's callback
	stalls   map[string][]ackStall // per cluster: gaps between acks of stallGap or more
}

// ackStall is a gap between two acks of a cluster, as their callbacks saw
// it.
type ackStall struct{ from, to time.Time }

// stallGap is the least gap between a cluster's acks that checkErrors
// takes for a stall of its broker: half of DownAfter, as a late callback
// can make the gap the load sees shorter than the one the producer saw.
const stallGap = downAfter / 2

// handOverTime is one SendAsync call: when it began (since start) and how
// long it took.
type handOverTime struct{ at, took time.Duration }

func newLoad(p *producer.Producer, rate, keys int, bound time.Duration) *load {
	return &load{p: p, rate: rate, keys: keys, window: 250 * time.Millisecond, handOver: bound,
		acked: map[string][]int{}, offered: map[string][]int{}, ackedIDs: map[string]int{}, failed: map[string]error{},
		refused: map[string][]time.Time{}, errKinds: map[string]map[string]int{}, handed: map[string][]handOverTime{},
		lastAck: map[string]time.Time{}, stalls: map[string][]ackStall{}}
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
			// Bound the hand-over by its own ctx, not by ctx: ctx ends while
			// a tick's sends are going out, and a message handed over with
			// an ended ctx rightly fails, even on a healthy cluster. How
			// long hand-overs take is recorded and checked against the
			// healthy phase instead (see handOverQuantile).
			sctx, cancel := context.WithTimeout(context.Background(), l.handOver)
			began := time.Now()
			l.p.SendAsync(sctx, &producer.Message{Key: key, Value: []byte(id)}, func(pid producer.ID, _ *producer.Message, err error) {
				l.record(own, id, pid, err)
			})
			took := time.Since(began)
			cancel()
			l.mu.Lock()
			l.sent++
			l.handed[own] = append(l.handed[own], handOverTime{at: began.Sub(l.start), took: took})
			l.offered[own] = count(l.offered[own], int(began.Sub(l.start)/l.window))
			l.mu.Unlock()
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
			l.refused[own] = append(l.refused[own], time.Now())
		}
		return
	}
	now := time.Now()
	if last, ok := l.lastAck[pid.Cluster]; ok && now.Sub(last) >= stallGap {
		l.stalls[pid.Cluster] = append(l.stalls[pid.Cluster], ackStall{last, now})
	}
	l.lastAck[pid.Cluster] = now
	l.acked[pid.Cluster] = count(l.acked[pid.Cluster], int(now.Sub(l.start)/l.window))
	l.ackedIDs[id]++
}

// count adds one to window w of per.
func count(per []int, w int) []int {
	for len(per) <= w {
		per = append(per, 0)
	}
	per[w]++
	return per
}

func errClass(err error) string {
	for _, s := range []error{producer.ErrClusterDown, producer.ErrSendTimeout, producer.ErrClosed, context.DeadlineExceeded} {
		if errors.Is(err, s) {
			return s.Error()
		}
	}
	return "other: " + err.Error()
}

// rateOf returns the acks per second of cluster in [from, to) since start.
func (l *load) rateOf(cluster string, from, to time.Duration) float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return perSecond(l.acked[cluster], l.window, from, to)
}

// keptUp returns the acks of cluster in [from, to) since start over the
// sends offered to it then: a ratio of the SDK's keeping up that a sender
// starved of CPU (by a JVM restarting on the same two cores) does not
// move, where the ack rate alone falls with the sends.
func (l *load) keptUp(cluster string, from, to time.Duration) float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return perSecond(l.acked[cluster], l.window, from, to) / perSecond(l.offered[cluster], l.window, from, to)
}

func perSecond(per []int, window, from, to time.Duration) float64 {
	n := 0
	for w := int(from / window); w < int(to/window) && w < len(per); w++ {
		n += per[w]
	}
	return float64(n) / (to - from).Seconds()
}

// handOverQuantile returns the q-quantile of how long the hand-overs took
// of the messages whose own cluster is victim (ofVictim) or another one
// (!ofVictim), among those that began in [from, to) since start; and how
// many there were.
func (l *load) handOverQuantile(victim string, ofVictim bool, from, to time.Duration, q float64) (time.Duration, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var took []time.Duration
	for c, hs := range l.handed {
		if (c == victim) != ofVictim {
			continue
		}
		for _, h := range hs {
			if h.at >= from && h.at < to {
				took = append(took, h.took)
			}
		}
	}
	return quantile(took, q), len(took)
}

// quantile returns the q-quantile (0 <= q <= 1) of ds, nearest rank; 0 for
// none. It sorts ds.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := int(q*float64(len(ds))+0.5) - 1
	return ds[min(max(i, 0), len(ds)-1)]
}

// checkErrors asserts that every failure is a *SendError for the broken
// cluster, of an expected class. A healthy cluster may fail messages only
// with ErrClusterDown (a refusal: not written), and only while its acks had
// stopped for the producer to mark it down rightly: a JVM restarting on
// these two cores can stall another for a second (seen once in CI during
// a graceful restart). So each of its refusals must come within a stall of
// its acks (stallGap or more), or within a DownAfter after one (the
// producer sees it up again at the first ack, a tick later). A cluster
// acking at its rate (hundreds a second) never gaps by more than a
// batch's linger, so one marked down while its acks flowed still fails
// the spec.
func (l *load) checkErrors(broken string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for id, err := range l.failed {
		var se *producer.SendError
		Expect(errors.As(err, &se)).To(BeTrue(), "%s: %v", id, err)
		if se.Cluster == broken {
			continue
		}
		Expect(err).To(MatchError(producer.ErrClusterDown), "%s failed on a healthy cluster", id)
	}
	for own, kinds := range l.errKinds {
		if own != broken {
			refused, stalls := l.refused[own], l.stalls[own]
			GinkgoWriter.Printf("  healthy %s failed %v; its acks stopped %d times for %s or more\n", own, kinds, len(stalls), stallGap)
			Expect(kinds).To(HaveKey(producer.ErrClusterDown.Error()))
			Expect(kinds).To(HaveLen(1), "a healthy cluster's keys fail only as cluster down: %v", kinds)
			for _, at := range refused {
				Expect(slices.ContainsFunc(stalls, func(s ackStall) bool {
					return !at.Before(s.from) && !at.After(s.to.Add(downAfter))
				})).To(BeTrue(), "healthy %s refused a key at %s while its acks flowed (stalls: %v)", own, at.Sub(l.start).Round(time.Millisecond), stalls)
			}
		}
	}
}
