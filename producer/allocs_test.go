package producer_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/producer"
	"github.com/keyroute/keyroute/producer/producertest"
)

// sendAsyncAllocs pins the allocations of one SendAsync, from hand-over to
// callback, over a fake that acks at once, the fake's own included (it
// allocates each message's ID): a regression fails here, not in a
// benchmark nobody reads. Today that is 1, the fake's ID: the inflight that
// carries the message to its callback is reused. The raw path, the same
// message handed straight to a writer of the same fake, allocates 2 (its
// ProducerMessage and the ID), and the SDK must stay below it.
const sendAsyncAllocs = 1

func TestSendAsyncAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own; make unit runs this test without it")
	}
	for _, tc := range []struct {
		clusters int
		observed bool
	}{{1, false}, {5, false}, {1, true}} {
		clusters := tc.clusters
		fake := newFake(2)
		var opts []producer.Opt
		if tc.observed {
			// The Event comes with the reused inflight.
			opts = append(opts, producer.Observe(nopObserver{}))
		}
		p := newProducer(t, fake, clusters, opts...)
		msg := &producer.Message{Key: "user-42", Value: []byte("payload")}
		done := make(chan struct{}, 1)
		cb := func(producer.ID, *producer.Message, error) { done <- struct{}{} }
		ctx := context.Background()
		got := testing.AllocsPerRun(2000, func() {
			p.SendAsync(ctx, msg, cb)
			<-done
		})
		w := rawWriter(t, fake)
		rawCb := func(pulsar.MessageID, *pulsar.ProducerMessage, error) { done <- struct{}{} }
		raw := testing.AllocsPerRun(2000, func() {
			w.SendAsync(ctx, &pulsar.ProducerMessage{Key: msg.Key, Payload: msg.Value}, rawCb)
			<-done
		})
		if got > sendAsyncAllocs || got >= raw {
			t.Errorf("%d clusters (observed %v): SendAsync allocates %.0f times per message, want at most %d and fewer than the raw path's %.0f",
				clusters, tc.observed, got, sendAsyncAllocs, raw)
		}
		t.Logf("%d clusters (observed %v): %.0f allocations per message (raw path %.0f)", clusters, tc.observed, got, raw)
	}
}

// TestAllocsAfterBurst: a partition that holds more messages at once
// than the least free-list bound (1,024), here 3,000 acknowledged in one
// batch, allocates their inflights (and, observed, their Events) a slab at
// a time (each with its onAck), and reuses them for its next 3,000 sends, also after GCs have
// emptied every sync.Pool. Before, its free list kept 1,024 of them and
// the rest went to a sync.Pool, so each such turn allocated about 2,000
// inflights anew once a GC had run; and each inflight and Event was
// allocated alone.
func TestAllocsAfterBurst(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own; make unit runs this test without it")
	}
	for _, observed := range []bool{false, true} {
		t.Run(fmt.Sprint("observed=", observed), func(t *testing.T) {
			var opts []producer.Opt
			if observed {
				opts = append(opts, producer.Observe(nopObserver{}))
			}
			allocsAfterBurst(t, opts...)
		})
	}
}

func allocsAfterBurst(t *testing.T, opts ...producer.Opt) {
	const burst = 3000
	fake := producertest.New(producertest.Partitions(1), producertest.AsyncAcks(burst), producertest.KeepMessages(false))
	p := newProducer(t, fake, 1, opts...)
	msgs := make([]*producer.Message, burst)
	for i := range msgs {
		msgs[i] = &producer.Message{Key: "k", Value: []byte("v")}
	}
	var wg sync.WaitGroup
	cb := func(producer.ID, *producer.Message, error) { wg.Done() }
	// turn sends the burst, waits for its callbacks and returns the
	// allocations per message meanwhile. The messages are made before, and
	// the fake (KeepMessages(false)) allocates nothing per message: a few
	// allocations of slices that grow remain.
	turn := func(name string) float64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		wg.Add(burst)
		for _, m := range msgs {
			p.SendAsync(context.Background(), m, cb)
		}
		wg.Wait()
		runtime.ReadMemStats(&after)
		perMsg := float64(after.Mallocs-before.Mallocs) / burst
		t.Logf("%.2f allocations per message in the %s turn", perMsg, name)
		return perMsg
	}
	// The first turn allocates the inflights, in slabs of many, and each
	// inflight's onAck once: one allocation per message, where inflights
	// (and Events) allocated one by one would make it two or three.
	require.Less(t, turn("first"), 1.1, "inflights or Events allocated one by one")
	// The next send takes the reported inflights back (to the free list,
	// and what it has no room for to the pool); then two GCs empty every
	// sync.Pool (a pooled object outlives one, as a victim).
	p.SendAsync(context.Background(), msgs[0], nil)
	require.NoError(t, p.Flush(context.Background()))
	runtime.GC()
	runtime.GC()
	require.Less(t, turn("second"), 0.1, "inflights allocated again for a burst the partition held before")
}
