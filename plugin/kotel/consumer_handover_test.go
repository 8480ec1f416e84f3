package kotel_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/keyroute/keyroute/consumer"
	"github.com/keyroute/keyroute/consumer/consumertest"
	"github.com/keyroute/keyroute/plugin/kotel"
	"github.com/keyroute/keyroute/router"
)

const (
	handoverEventsName = "keyroute.consumer.handover.events"
	handoverMsgsName   = "keyroute.consumer.handover.released.messages"
	handoverHeldName   = "keyroute.consumer.handover.hold.duration"
)

// handoverAttrs are the attributes of a hand-over event of kind on
// partition 3 of east-1, as the rig's observer records them.
func handoverAttrs(kind string) []attribute.KeyValue {
	a := append([]attribute.KeyValue{attribute.String("messaging.system", "pulsar")}, eastWhere()...)
	return append(a, kotel.HandoverKindKey.String(kind))
}

// holds returns every point of keyroute.consumer.handover.hold.duration,
// by attribute set.
func (r *consumerRig) holds(t *testing.T) map[attribute.Distinct]metricdata.HistogramDataPoint[float64] {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, r.reader.Collect(context.Background(), &rm))
	out := map[attribute.Distinct]metricdata.HistogramDataPoint[float64]{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != handoverHeldName {
				continue
			}
			assert.Equal(t, "s", m.Unit)
			hist, ok := m.Data.(metricdata.Histogram[float64])
			require.True(t, ok, "%T", m.Data)
			for _, dp := range hist.DataPoints {
				out[dp.Attributes.Equivalent()] = dp
			}
		}
	}
	return out
}

// handoverBounds are the hold histogram's bucket boundaries (seconds).
var handoverBounds = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}

// buckets returns the bucket counts of a point holding one duration in
// each bucket index given.
func buckets(idx ...int) []uint64 {
	out := make([]uint64, len(handoverBounds)+1)
	for _, i := range idx {
		out[i]++
	}
	return out
}

// Every kind of event is counted under its own keyroute.handover.kind,
// with the messages it released and how long they were held, where the
// event says its message was read.
func TestHandoverMetrics(t *testing.T) {
	r := newConsumerRig(t)
	ev := func(kind consumer.HandoverKind, n int, held time.Duration) consumer.HandoverEvent {
		return consumer.HandoverEvent{Kind: kind, Cluster: "east-1", Partition: 3, Slot: 17, Producer: 9, Epoch: 2,
			Origin: router.Origin{Cluster: "west-2", Partition: 1}, Messages: n, Held: held}
	}
	west := ev(consumer.HandoverLimit, 4, 40*time.Second)
	west.Cluster, west.Partition = "west-2", 1
	bad := ev(consumer.HandoverBad, 1, 0)
	bad.Origin, bad.Err = router.Origin{}, router.ErrBadHandover
	for _, e := range []consumer.HandoverEvent{
		ev(consumer.HandoverTimeout, 3, 2*time.Second),
		ev(consumer.HandoverTimeout, 1, 500*time.Millisecond),
		ev(consumer.HandoverLimit, 2, 250*time.Millisecond),
		ev(consumer.HandoverUnread, 1, 0),
		ev(consumer.HandoverUnordered, 1, 0),
		bad,
		ev(consumer.HandoverReleased, 5, 100*time.Millisecond),
		ev(consumer.HandoverKind(99), 1, 3*time.Millisecond),
		west,
	} {
		r.obs.OnHandover(e)
	}

	westAttrs := handoverAttrs("hold_limit")
	westAttrs[3] = attribute.String("messaging.destination.partition.id", "1")
	westAttrs[4] = attribute.String("server.address", "b1.west.example")
	westAttrs[5] = attribute.Int("server.port", 6650)
	westAttrs[6] = attribute.String("keyroute.cluster", "west-2")
	kind := func(k string) attribute.Distinct { return set(handoverAttrs(k)...) }
	assert.Equal(t, map[attribute.Distinct]int64{
		kind("hold_timeout"):  2,
		kind("hold_limit"):    1,
		kind("origin_unread"): 1,
		kind("unordered"):     1,
		kind("bad"):           1,
		kind("released"):      1,
		kind("_OTHER"):        1,
		set(westAttrs...):     1,
	}, r.counts(t, handoverEventsName))
	assert.Equal(t, map[attribute.Distinct]int64{
		kind("hold_timeout"):  4,
		kind("hold_limit"):    2,
		kind("origin_unread"): 1,
		kind("unordered"):     1,
		kind("bad"):           1,
		kind("released"):      5,
		kind("_OTHER"):        1,
		set(westAttrs...):     4,
	}, r.counts(t, handoverMsgsName))

	holds := r.holds(t)
	require.Len(t, holds, 8, "one point per attribute set")
	for k, want := range map[attribute.Distinct]struct {
		sum, min, max float64
		buckets       []uint64
	}{
		kind("hold_timeout"):  {2.5, 0.5, 2, buckets(7, 9)}, // (0.25, 0.5] and (1, 2.5]
		kind("hold_limit"):    {0.25, 0.25, 0.25, buckets(6)},
		kind("origin_unread"): {0, 0, 0, buckets(0)},
		kind("unordered"):     {0, 0, 0, buckets(0)},
		kind("bad"):           {0, 0, 0, buckets(0)},
		kind("released"):      {0.1, 0.1, 0.1, buckets(5)},
		kind("_OTHER"):        {0.003, 0.003, 0.003, buckets(1)},
		set(westAttrs...):     {40, 40, 40, buckets(13)}, // (30, 60]
	} {
		dp, ok := holds[k]
		require.True(t, ok, "no point for %v", k)
		assert.Equal(t, handoverBounds, dp.Bounds)
		assert.Equal(t, want.buckets, dp.BucketCounts, "%v", dp.Attributes.ToSlice())
		assert.Equal(t, bucketTotal(want.buckets), dp.Count)
		assert.InDelta(t, want.sum, dp.Sum, 1e-9)
		minV, _ := dp.Min.Value()
		maxV, _ := dp.Max.Value()
		assert.InDelta(t, want.min, minV, 1e-9)
		assert.InDelta(t, want.max, maxV, 1e-9)
	}
}

func bucketTotal(counts []uint64) (n uint64) {
	for _, c := range counts {
		n += c
	}
	return n
}

// A real Consumer (over consumertest's fake clusters) finds OnHandover on
// the ConsumerObserver given to Observe, and its events are recorded with
// the attributes of the messages' other points.
func TestHandoverThroughConsumer(t *testing.T) {
	topo := consumertest.Topology("east", "west")
	r := newConsumerRigWith(t, kotel.WithTopic("events"), kotel.WithSubscription("billing"), kotel.WithTopology(topo))
	fake := consumertest.New()
	start := time.Now()
	c, err := consumer.New(context.Background(), topo, consumer.Topic("events"), consumer.Subscription("billing"),
		fake.Opt(), consumer.MaxHeld(2), consumer.Observe(r.obs))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })

	const pid = 0x1b2c3d4e5f607182
	moved := func(key, value string, from router.Origin) consumertest.Message {
		props := map[string]string{}
		router.Tag{Producer: pid, Epoch: 2, From: []router.Origin{from}}.AddTo(props)
		return consumertest.Message{Key: key, Value: []byte(value), Properties: props}
	}
	unordered := map[string]string{}
	router.Tag{Producer: pid, Epoch: 2, Unordered: true}.AddTo(unordered)
	// Nothing of east's partition 0 is ever read, so an origin there never
	// passes.
	east := router.Origin{Cluster: "east", Partition: 0, Pos: router.Position{Ledger: 1, Entry: 0, Batch: -1}}
	other := otherSlot("k")
	require.NoError(t, fake.Cluster("west").Publish(0,
		moved("u", "unread", router.Origin{Cluster: "gone", Partition: 1, Pos: router.Position{Ledger: 3, Entry: 4, Batch: -1}}),
		consumertest.Message{Key: "s", Value: []byte("spilled"), Properties: unordered},
		consumertest.Message{Key: "b", Value: []byte("bad"), Properties: map[string]string{router.PropProducer: "XYZ", router.PropEpoch: "1"}},
		moved("k", "k1", east),
		consumertest.Message{Key: "k", Value: []byte("k2")},
		moved(other, "o1", east), // a third held message: MaxHeld gives up east/0 for k's queue, and o1 passes with it
	))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // against a hang, no bound
	defer cancel()
	var got []string
	for range 6 {
		m, err := c.Receive(ctx)
		require.NoError(t, err, "after %q", got)
		got = append(got, string(m.Value))
	}
	elapsed := time.Since(start)
	assert.Equal(t, []string{"unread", "spilled", "bad", "k1", "k2", "o1"}, got)

	attrs := func(kind string) []attribute.KeyValue {
		return []attribute.KeyValue{
			attribute.String("messaging.system", "pulsar"),
			attribute.String("messaging.destination.name", "events"),
			attribute.String("messaging.consumer.group.name", "billing"),
			attribute.String("messaging.destination.partition.id", "0"),
			attribute.String("server.address", "cluster-1.consumertest.invalid"),
			attribute.Int("server.port", 6650),
			attribute.String("keyroute.cluster", "west"),
			kotel.HandoverKindKey.String(kind),
		}
	}
	kind := func(k string) attribute.Distinct { return set(attrs(k)...) }
	assert.Equal(t, map[attribute.Distinct]int64{
		kind("origin_unread"): 1, kind("unordered"): 1, kind("bad"): 1, kind("hold_limit"): 1, kind("released"): 1,
	}, r.counts(t, handoverEventsName))
	assert.Equal(t, map[attribute.Distinct]int64{
		kind("origin_unread"): 1, kind("unordered"): 1, kind("bad"): 1, kind("hold_limit"): 2, kind("released"): 1,
	}, r.counts(t, handoverMsgsName))
	holds := r.holds(t)
	require.Len(t, holds, 5)
	for _, k := range []string{"origin_unread", "unordered", "bad"} {
		assert.Equal(t, 0.0, holds[kind(k)].Sum, k)
		assert.Equal(t, uint64(1), holds[kind(k)].Count, k)
	}
	limit := holds[kind("hold_limit")]
	assert.Equal(t, uint64(1), limit.Count)
	assert.GreaterOrEqual(t, limit.Sum, 0.0)
	assert.LessOrEqual(t, limit.Sum, elapsed.Seconds(), "k1 was held within the test")

	// The points name the partition as the receive counter does.
	consumed := attrs("")
	consumed = append(consumed[:len(consumed)-1],
		attribute.String("messaging.operation.name", "receive"), attribute.String("messaging.operation.type", "receive"))
	assert.Equal(t, map[attribute.Distinct]int64{set(consumed...): 6}, r.counts(t, consumedName))
}

// otherSlot returns a key whose routing slot differs from key's.
func otherSlot(key string) string {
	for i := 0; ; i++ {
		o := "o" + strconv.Itoa(i)
		if router.Slot(router.Hash(o)) != router.Slot(router.Hash(key)) {
			return o
		}
	}
}

// TestHandoverConcurrent records events from many goroutines (run with
// -race) and checks that none is lost.
func TestHandoverConcurrent(t *testing.T) {
	r := newConsumerRig(t, kotel.WithTracing(false))
	const goroutines, perG, parts = 8, 300, 5
	kinds := []consumer.HandoverKind{consumer.HandoverTimeout, consumer.HandoverLimit, consumer.HandoverUnread,
		consumer.HandoverUnordered, consumer.HandoverBad}
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range perG {
				r.obs.OnHandover(consumer.HandoverEvent{Kind: kinds[(g+i)%len(kinds)], Cluster: "east-1",
					Partition: i % parts, Messages: 2, Held: time.Millisecond})
			}
		})
	}
	wg.Wait()
	events, msgs := r.counts(t, handoverEventsName), r.counts(t, handoverMsgsName)
	assert.Len(t, events, parts*len(kinds))
	assert.Equal(t, int64(goroutines*perG), total(events))
	assert.Equal(t, int64(2*goroutines*perG), total(msgs))
	var n uint64
	for _, dp := range r.holds(t) {
		n += dp.Count
	}
	assert.Equal(t, uint64(goroutines*perG), n)
}
