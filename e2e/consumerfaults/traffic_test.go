//go:build e2e

package consumerfaults

import (
	"context"
	"fmt"
	"sync"
	"time"

	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/producer"
)

// sent is one produced message ("key|seq") and, once known, its outcome.
type sent struct {
	key     string
	seq     int
	cluster string    // where the key is placed
	at      time.Time // when its hand-over began
	done    bool
	doneAt  time.Time
	id      producer.ID
	err     error
}

// traffic produces a steady rate to every cluster through ONE keyroute
// producer, from one goroutine per cluster, each sending only the keys
// placed on its cluster. A goroutine whose cluster is dead is held up (or
// refused) alone: the rate the other clusters are offered does not depend
// on it, so what the consumer takes from them measures the consumer.
type traffic struct {
	p    *producer.Producer
	rate int // messages per second, per cluster

	mu   sync.Mutex
	msgs map[string]*sent // by payload
	all  []*sent          // in hand-over order per cluster

	stop chan struct{}
	wg   sync.WaitGroup
}

// keysOf returns perCluster keys placed on each of the producer's clusters.
func keysOf(p *producer.Producer, perCluster int) map[string][]string {
	out := map[string][]string{}
	for i, full := 0, 0; full < len(p.Clusters()); i++ {
		key := fmt.Sprintf("ck-%06d", i)
		c, _ := p.Placement(key)
		if len(out[c]) < perCluster {
			out[c] = append(out[c], key)
			if len(out[c]) == perCluster {
				full++
			}
		}
	}
	return out
}

func startTraffic(ctx context.Context, p *producer.Producer, rate int, keys map[string][]string) *traffic {
	t := &traffic{p: p, rate: rate, msgs: map[string]*sent{}, stop: make(chan struct{})}
	for cluster, ks := range keys {
		t.wg.Add(1)
		go t.run(ctx, cluster, ks)
	}
	return t
}

// run sends cluster's keys round-robin, keeping the count sent at rate
// times the time elapsed; a goroutine held up for more than a second does
// not make up the lost second afterwards.
func (t *traffic) run(ctx context.Context, cluster string, keys []string) {
	defer t.wg.Done()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	start, n := time.Now(), 0
	seq := make([]int, len(keys))
	for {
		select {
		case <-t.stop:
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		due := int(time.Since(start).Seconds() * float64(t.rate))
		n = max(n, due-t.rate)
		for ; n < due; n++ {
			k := n % len(keys)
			s := &sent{key: keys[k], seq: seq[k], cluster: cluster, at: time.Now()}
			seq[k]++
			payload := fmt.Sprintf("%s|%d", s.key, s.seq)
			t.mu.Lock()
			t.msgs[payload] = s
			t.all = append(t.all, s)
			t.mu.Unlock()
			t.p.SendAsync(ctx, &producer.Message{Key: s.key, Value: []byte(payload)}, func(id producer.ID, _ *producer.Message, err error) {
				t.mu.Lock()
				s.done, s.doneAt, s.id, s.err = true, time.Now(), id, err
				t.mu.Unlock()
			})
		}
	}
}

// end stops sending and waits for every outcome.
func (t *traffic) end(ctx context.Context) {
	close(t.stop)
	t.wg.Wait()
	Expect(t.p.Flush(ctx)).To(Succeed())
}

// ackedRate is how many of cluster's messages a second the producer saw
// acknowledged in [from, to).
func (t *traffic) ackedRate(cluster string, from, to time.Time) float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, s := range t.all {
		if s.cluster == cluster && s.done && s.err == nil && !s.doneAt.Before(from) && s.doneAt.Before(to) {
			n++
		}
	}
	return float64(n) / to.Sub(from).Seconds()
}

// slowestAck is the longest a message of cluster acknowledged in
// [from, to) took from hand-over to acknowledgement: a ledger write and a
// round trip to that broker, and the batching delay.
func (t *traffic) slowestAck(cluster string, from, to time.Time) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	var top time.Duration
	for _, s := range t.all {
		if s.cluster == cluster && s.done && s.err == nil && !s.doneAt.Before(from) && s.doneAt.Before(to) {
			top = max(top, s.doneAt.Sub(s.at))
		}
	}
	return top
}

// ackedOnAfter reports whether a message of cluster handed over after t
// has been acknowledged.
func (t *traffic) ackedOnAfter(cluster string, at time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range t.all {
		if s.cluster == cluster && s.at.After(at) && s.done && s.err == nil {
			return true
		}
	}
	return false
}

// ackedBy returns the payloads acknowledged by t.
func (t *traffic) ackedBy(at time.Time) map[string]bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[string]bool{}
	for _, s := range t.all {
		if s.done && s.err == nil && !s.doneAt.After(at) {
			out[fmt.Sprintf("%s|%d", s.key, s.seq)] = true
		}
	}
	return out
}

// snapshot returns a copy of every message sent, by payload.
func (t *traffic) snapshot() map[string]sent {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]sent, len(t.msgs))
	for k, s := range t.msgs {
		out[k] = *s
	}
	return out
}
