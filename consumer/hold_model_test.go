package consumer_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/consumer"
	"github.com/keyroute/keyroute/router"
)

// A producer's hand-overs simulated as HANDOVER.md section 5 writes them
// (markers on the old owners, moved messages tagged with their open
// origins until a tagged one is acknowledged, carried over across
// changes), keys moving at random between partitions of three clusters,
// each cluster's partitions interleaved at random, read one by one or in
// batches: every key's
// messages come in the order they were sent, no hold is forced, and
// every marker is acknowledged.
func TestHoldKeepsEveryKeysOrderAcrossRandomChanges(t *testing.T) {
	for seed := range int64(40) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { randomHandovers(t, seed, false, false) })
	}
}

// A reader that finds the same hand-overs as a backlog, each partition
// read by a stream of its own (as pulsar-client-go's consumer of a
// partition topic reads it), with a small MaxHeld: back-pressure leaves
// the partitions that hold unread while the origins are read, so every
// key's messages come in order with no hold forced, nothing is left
// waiting, and the messages held stay within MaxHeld and one message per
// partition.
func TestHoldBackPressureKeepsOrderOfABacklog(t *testing.T) {
	for seed := range int64(40) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { randomHandovers(t, seed, false, true) })
	}
}

// Goroutines taking at the same time (Receive, ReceiveInto and Chan) get
// every message exactly once through the holds, and no hold is left
// behind; a partition's messages have no order between such goroutines,
// hold or not.
func TestHoldConcurrentTakers(t *testing.T) {
	for seed := range int64(20) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { randomHandovers(t, seed, true, false) })
	}
}

// modelRec is a message of the model: a marker has no value.
type modelRec struct {
	key, value string
	props      map[string]string
}

func randomHandovers(t *testing.T, seed int64, concurrent, pressed bool) {
	rng := rand.New(rand.NewPCG(uint64(seed), 7))
	const clusters, keys, sends = 3, 8, 300
	parts := 2
	if concurrent || pressed { // partitions beyond the first frontier table's 8
		parts += int(seed % 12)
	}
	type place struct{ c, p int }
	type rec = modelRec
	logs := map[place][]rec{}
	owner := make([]place, keys)
	open := make([][]router.Origin, keys) // origins owed by the key's next messages
	unacked := make([]int, keys)          // tagged sends left before one is acknowledged
	slots := map[int]bool{}
	names := make([]string, keys)
	for i := range keys {
		owner[i] = place{rng.IntN(clusters), rng.IntN(parts)}
		for j := 0; ; j++ { // keys of distinct slots: each its own queue
			n := fmt.Sprintf("key%d-%d", i, j)
			if s := router.Slot(router.Hash(n)); !slots[s] {
				slots[s], names[i] = true, n
				break
			}
		}
	}
	seq := make([]int, keys)
	epoch := uint64(0)
	markers := 0
	for range sends {
		if rng.IntN(25) == 0 { // a change moves some keys
			epoch++
			marked := map[place]router.Position{}
			for i := range keys {
				if rng.IntN(3) != 0 {
					continue
				}
				to := place{rng.IntN(clusters), rng.IntN(parts)}
				if to == owner[i] {
					continue
				}
				from := owner[i]
				pos, ok := marked[from]
				if !ok {
					pos = router.Position{Ledger: 1, Entry: int64(len(logs[from])), Batch: -1}
					logs[from] = append(logs[from], rec{props: router.Marker{Producer: pid, Epoch: epoch, Moved: 1}.Properties()})
					marked[from] = pos
					markers++
				}
				open[i] = append(open[i], router.Origin{Cluster: fmt.Sprint("c", from.c+1), Partition: int32(from.p), Pos: pos})
				unacked[i] = 1 + rng.IntN(4)
				owner[i] = to
			}
		}
		i := rng.IntN(keys)
		r := rec{key: names[i], value: fmt.Sprintf("%s/%d", names[i], seq[i])}
		seq[i]++
		if len(open[i]) > 0 {
			r.props = map[string]string{}
			router.Tag{Producer: pid, Epoch: epoch, From: slices.Clone(open[i])}.AddTo(r.props)
			if unacked[i]--; unacked[i] == 0 {
				open[i] = nil
			}
		}
		logs[owner[i]] = append(logs[owner[i]], r)
	}

	total := 0
	for _, l := range logs {
		for _, r := range l {
			if r.value != "" {
				total++
			}
		}
	}
	if pressed {
		pressedBacklog(t, rng, clusters, parts, total, markers, func(c, p int) []rec { return logs[place{c, p}] })
		return
	}
	bed := newFakeBed(sends + 64)
	c := newConsumer(t, bed, clusters)
	for ci := range clusters {
		s := bed.stream(fmt.Sprint("c", ci+1))
		next := make([]int, parts)
		for {
			var left []int
			for p := range parts {
				if next[p] < len(logs[place{ci, p}]) {
					left = append(left, p)
				}
			}
			if len(left) == 0 {
				break
			}
			p := left[rng.IntN(len(left))]
			r := logs[place{ci, p}][next[p]]
			next[p]++
			s.pushProps(int32(p), r.key, r.value, r.props)
		}
	}
	var got []string
	if concurrent {
		got = takeConcurrently(t, c, total)
		slices.Sort(got)
		assert.Len(t, slices.Compact(slices.Clone(got)), total, "each once")
		got = nil
		none(t, c) // takes the markers left behind the last message
		// Chan's goroutine may be acknowledging a marker it took.
		require.NoError(t, c.Close(context.Background()))
	} else if seed%2 == 0 {
		got = recv(t, c, total)
	} else { // batches
		buf := make([]consumer.Message, 1+rng.IntN(16))
		for len(got) < total {
			n, err := c.ReceiveInto(context.Background(), buf)
			require.NoError(t, err)
			for _, m := range buf[:n] {
				got = append(got, string(m.Value))
			}
		}
	}
	if !concurrent {
		none(t, c)
	}
	inOrder(t, got)
	settled(t, c, clusters, markers, func(c string) int { return len(bed.stream(c).log()) })
}

// settled checks that nothing is held or was forced on any of the
// clusters and that acks (the acknowledgements a cluster's streams got)
// add up to the markers, each acknowledged once.
func settled(t *testing.T, c *consumer.Consumer, clusters, markers int, acks func(cluster string) int) {
	t.Helper()
	acked := 0
	for ci := range clusters {
		name := fmt.Sprint("c", ci+1)
		h := health(c, name)
		assert.Zero(t, h.ForcedReleases)
		assert.Zero(t, h.Held)
		acked += acks(name)
	}
	assert.Equal(t, markers, acked, "every marker acknowledged once")
}

// pressedBacklog reads the partitions' logs (recs of keys, values and
// properties) as a backlog, each partition a stream of its own, with a
// MaxHeld of 1 to 3, one by one; see
// TestHoldBackPressureKeepsOrderOfABacklog.
func pressedBacklog(t *testing.T, rng *rand.Rand, clusters, parts, total, markers int, log func(c, p int) []modelRec) {
	bed := newPartBed()
	bed.queue = 1024
	for ci := range clusters {
		bed.set(fmt.Sprint("c", ci+1), parts)
	}
	maxHeld := 1 + rng.IntN(3)
	c, err := consumer.New(context.Background(), topo(clusters), consumer.Topic("t"), consumer.Subscription("s"),
		consumer.WithPartitionConnector(bed.connect, bed.partitions), consumer.MaxHeld(maxHeld))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	for ci := range clusters {
		for p := range parts {
			s := bed.stream(fmt.Sprint("c", ci+1), p)
			for _, r := range log(ci, p) {
				s.pushProps(0, r.key, r.value, r.props)
			}
		}
	}
	var got []string
	peak := int64(0)
	for range total {
		got = append(got, recv(t, c, 1)...)
		held := int64(0)
		for ci := range clusters {
			held += health(c, fmt.Sprint("c", ci+1)).Held
		}
		peak = max(peak, held)
	}
	none(t, c)
	inOrder(t, got)
	settled(t, c, clusters, markers, func(c string) (n int) {
		for p := range parts {
			n += len(bed.stream(c, p).log())
		}
		return n
	})
	assert.LessOrEqual(t, peak, int64(maxHeld+clusters*parts), "held within MaxHeld and one a partition")
}

// inOrder checks that each key's values (key/n) come with n rising.
func inOrder(t *testing.T, got []string) {
	t.Helper()
	last := map[string]int{}
	for _, v := range got {
		var k string
		var n int
		_, err := fmt.Sscanf(strings.Replace(v, "/", " ", 1), "%s %d", &k, &n)
		require.NoError(t, err)
		if prev, ok := last[k]; ok {
			require.Greater(t, n, prev, "key %s: %q", k, got)
		}
		last[k] = n
	}
}

// takeConcurrently takes total messages with Receive, ReceiveInto and
// Chan at once and returns their values.
func takeConcurrently(t *testing.T, c *consumer.Consumer, total int) []string {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var got []string
	all := make(chan struct{})
	add := func(v string) {
		mu.Lock()
		defer mu.Unlock()
		if got = append(got, v); len(got) == total {
			close(all)
		}
	}
	var wg sync.WaitGroup
	wg.Add(3)
	go func() {
		defer wg.Done()
		for {
			m, err := c.Receive(ctx)
			if err != nil {
				return
			}
			add(string(m.Value))
		}
	}()
	go func() {
		defer wg.Done()
		buf := make([]consumer.Message, 5)
		for {
			n, err := c.ReceiveInto(ctx, buf)
			if err != nil {
				return
			}
			for _, m := range buf[:n] {
				add(string(m.Value))
			}
		}
	}()
	go func() {
		defer wg.Done()
		ch := c.Chan()
		for {
			select {
			case m := <-ch:
				add(string(m.Value))
			case <-ctx.Done():
				return
			}
		}
	}()
	select {
	case <-all:
	case <-time.After(time.Minute): // a guard against a hang, not a bound
		mu.Lock()
		t.Errorf("took %d of %d", len(got), total)
		mu.Unlock()
	}
	cancel()
	wg.Wait()
	return got
}
