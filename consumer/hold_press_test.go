package consumer_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/consumer"
	"github.com/keyroute/keyroute/router"
)

// newPartConsumer reads two clusters of two partitions each, a stream per
// partition.
func newPartConsumer(t *testing.T, opts ...consumer.Opt) (*consumer.Consumer, *partBed) {
	bed := newPartBed()
	bed.set("c1", 2)
	bed.set("c2", 2)
	opts = append([]consumer.Opt{consumer.Topic("t"), consumer.Subscription("s"),
		consumer.WithPartitionConnector(bed.connect, bed.partitions)}, opts...)
	c, err := consumer.New(context.Background(), topo(2), opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c, bed
}

// At MaxHeld a partition that holds is left unread: its later messages,
// of keys that did not move too, stay in its stream, while the other
// partitions are read, the origin's among them; once the origin passes,
// the holds come in order, then the partition is read again. Nothing is
// forced.
func TestBackPressureLeavesAHoldingPartitionUnread(t *testing.T) {
	obs := &events{}
	c, bed := newPartConsumer(t, consumer.MaxHeld(2), consumer.Observe(obs))
	old, moved, other := bed.stream("c1", 1), bed.stream("c2", 0), bed.stream("c2", 1)
	o := origin("c1", 1, old.at(0, 2))
	moved.pushMoved(0, "k", "k3", pid, 1, o)
	moved.push(0, "k", "k4")
	none(t, c)
	assert.Equal(t, int64(2), health(c, "c2").Held)

	moved.push(0, otherSlot("k"), "x1") // behind the holds: not read
	other.push(0, "y", "y1")
	assert.Equal(t, []string{"y1"}, recv(t, c, 1))
	none(t, c)
	assert.Len(t, moved.ch, 1, "x1 left in its partition's stream")

	old.push(0, "k", "k0")
	old.push(0, "z", "z1")
	old.push(0, "k", "k2") // the origin
	assert.Equal(t, []string{"k0", "z1", "k2", "k3", "k4", "x1"}, recv(t, c, 6))
	none(t, c)
	assert.Empty(t, obs.all(), "nothing forced")
	assert.Zero(t, health(c, "c2").ForcedReleases)
}

// A hold is released before its origin passes only when the origin's
// partition makes no progress for HoldTimeout: while that partition is
// read (its frontier moves), the hold waits however long it takes.
func TestHoldTimeoutCountsFromTheOriginsLastProgress(t *testing.T) {
	obs := &events{}
	c, bed := newPartConsumer(t, consumer.HoldTimeout(time.Minute), consumer.Observe(obs))
	var now atomic.Int64
	consumer.SetHoldClock(c, func() time.Time { return time.Unix(0, now.Load()) })
	old, moved := bed.stream("c1", 1), bed.stream("c2", 0)
	o := origin("c1", 1, router.Position{Ledger: 1, Entry: 100, Batch: -1})
	moved.pushMoved(0, "k", "k1", pid, 1, o)
	none(t, c)
	for range 3 { // two minutes of a read origin, taken from at 40s, 80s, 120s
		now.Add(int64(40 * time.Second))
		old.push(0, "z", "z")
		assert.Equal(t, []string{"z"}, recv(t, c, 1))
		consumer.HoldTick(c)
	}
	assert.Equal(t, int64(1), health(c, "c2").Held, "the origin is being read")
	assert.Empty(t, obs.all())

	now.Add(int64(40 * time.Second))
	consumer.HoldTick(c)
	assert.Equal(t, int64(1), health(c, "c2").Held, "40s without progress")
	now.Add(int64(20 * time.Second))
	consumer.HoldTick(c)
	assert.Equal(t, []string{"k1"}, recv(t, c, 1), "a minute without progress")
	evs := obs.all()
	require.Len(t, evs, 1)
	assert.Equal(t, consumer.HandoverTimeout, evs[0].Kind)
	assert.Equal(t, o, evs[0].Origin)
}

// A forced release gives up one origin, the one its head waits for: a
// message behind it that waits for another origin stays held until that
// one passes (HANDOVER.md, section 6.3).
func TestForcedReleaseGivesUpOneOrigin(t *testing.T) {
	obs := &events{}
	c, bed := newPartConsumer(t, consumer.HoldTimeout(time.Minute), consumer.Observe(obs))
	var now atomic.Int64
	consumer.SetHoldClock(c, func() time.Time { return time.Unix(0, now.Load()) })
	later, moved := bed.stream("c1", 1), bed.stream("c2", 0)
	a := origin("c1", 0, // nothing comes on c1/0
		router.Position{Ledger: 1, Entry: 100, Batch: -1})
	b := origin("c1", 1, later.at(0, 0))
	moved.pushMoved(0, "k", "k1", pid, 1, a)
	moved.pushMoved(0, "k", "k2", pid, 2, b)
	none(t, c)
	now.Add(int64(time.Minute))
	consumer.HoldTick(c)
	assert.Equal(t, []string{"k1"}, recv(t, c, 1))
	none(t, c)
	assert.Equal(t, int64(1), health(c, "c2").Held, "k2 waits for its own origin")
	later.push(0, "k", "k0")
	assert.Equal(t, []string{"k0", "k2"}, recv(t, c, 2))
	evs := obs.all()
	require.Len(t, evs, 1)
	assert.Equal(t, consumer.HandoverTimeout, evs[0].Kind)
	assert.Equal(t, a, evs[0].Origin)
	assert.Equal(t, 1, evs[0].Messages)
	assert.Equal(t, uint64(1), health(c, "c2").ForcedReleases)

	moved.pushMoved(0, "j", "j1", pid, 1, a) // at or before what was given up
	assert.Equal(t, []string{"j1"}, recv(t, c, 1))
}

// A moved message whose origin is on a partition past those subscribed
// (the count the Consumer knows is stale) makes the Consumer look the
// count up at once, not at its next periodic lookup, and the origin is
// not given up while it does (HANDOVER.md, section 6.4).
func TestOriginPastTheKnownPartitionsLooksTheCountUp(t *testing.T) {
	obs := &events{}
	bed := newPartBed()
	bed.set("c1", 2)
	bed.set("c2", 2)
	var lookups atomic.Int32
	counted := func(cluster string) (int, error) {
		if cluster == "c1" {
			lookups.Add(1)
		}
		return bed.partitions(cluster)
	}
	c, err := consumer.New(context.Background(), topo(2), consumer.Topic("t"), consumer.Subscription("s"),
		consumer.WithPartitionConnector(bed.connect, counted), consumer.Observe(obs),
		consumer.PartitionsAutoDiscoveryInterval(time.Hour), consumer.ProbeInterval(time.Millisecond))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	first := lookups.Load()
	waitFor(t, func() bool { return lookups.Load() > first }) // the monitor's first periodic lookup
	bed.set("c1", 3)
	o := origin("c1", 2, router.Position{Ledger: 1, Entry: 0, Batch: -1})
	bed.stream("c2", 0).pushMoved(0, "k", "k1", pid, 1, o)
	none(t, c)
	waitFor(t, func() bool { return health(c, "c1").Partitions == 3 })
	bed.stream("c1", 2).push(0, "k", "k0")
	assert.Equal(t, []string{"k0", "k1"}, recv(t, c, 2))
	assert.Empty(t, obs.all())
}

// BenchmarkReadOriginWithManyHolds: a message taken from a partition that
// holds wait on (a reader catching up on the old owner while the moved
// keys' messages are held): 1,000 queues wait on it, at a position far
// ahead.
func BenchmarkReadOriginWithManyHolds(b *testing.B) {
	bed := newPartBed()
	bed.queue = 2048
	bed.set("c1", 1)
	bed.set("c2", 1)
	c, err := consumer.New(context.Background(), topo(2), consumer.Topic("t"), consumer.Subscription("s"),
		consumer.WithPartitionConnector(bed.connect, bed.partitions), consumer.MaxHeld(1<<20))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close(context.Background())
	old, moved := bed.stream("c1", 0), bed.stream("c2", 0)
	o := origin("c1", 0, router.Position{Ledger: 1, Entry: 1 << 40, Batch: -1})
	for i := range 1000 {
		moved.pushMoved(0, fmt.Sprint("moved", i), "m", pid, 1, o)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for range 1000 {
		if _, err := c.Receive(ctx); err == nil {
			b.Fatal("a moved message was delivered")
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if i%1024 == 0 {
			b.StopTimer()
			for range min(1024, b.N-i) {
				old.push(0, "z", "z")
			}
			b.StartTimer()
		}
		if _, err := c.Receive(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

// The time without progress counts from the later of the origin
// partition's last move and the receipt of the head that waits: a hold
// that comes to wait on a partition stalled for a while waits a whole
// HoldTimeout of its own.
func TestHoldTimeoutCountsFromTheHeadsReceiptToo(t *testing.T) {
	obs := &events{}
	c, bed := newPartConsumer(t, consumer.HoldTimeout(time.Minute), consumer.Observe(obs))
	var now atomic.Int64
	consumer.SetHoldClock(c, func() time.Time { return time.Unix(0, now.Load()) })
	moved := bed.stream("c2", 0)
	o := origin("c1", 1, router.Position{Ledger: 1, Entry: 100, Batch: -1})
	moved.pushMoved(0, "k", "k1", pid, 1, o)
	none(t, c)
	now.Add(int64(50 * time.Second))
	moved.pushMoved(0, otherSlot("k"), "j1", pid, 1, origin("c1", 1, router.Position{Ledger: 1, Entry: 200, Batch: -1}))
	none(t, c)
	now.Add(int64(10 * time.Second))
	consumer.HoldTick(c)
	assert.Equal(t, []string{"k1"}, recv(t, c, 1))
	none(t, c)
	now.Add(int64(50 * time.Second))
	consumer.HoldTick(c)
	assert.Equal(t, []string{"j1"}, recv(t, c, 1))
	assert.Len(t, obs.all(), 2)
}

// A partition that holds counts as progressing: a hold that waits on it
// is judged by the origin its holds wait on. Here c2/0's message waits
// on c1/1, whose only message is held for c1/0, read slowly: nothing is
// forced, and the key comes in order.
func TestAHoldingPartitionCountsAsProgress(t *testing.T) {
	obs := &events{}
	c, bed := newPartConsumer(t, consumer.HoldTimeout(time.Minute), consumer.Observe(obs))
	var now atomic.Int64
	consumer.SetHoldClock(c, func() time.Time { return time.Unix(0, now.Load()) })
	a, b, cc := bed.stream("c1", 0), bed.stream("c1", 1), bed.stream("c2", 0)
	b0 := b.pushMoved(0, "k", "kb", pid, 1, origin("c1", 0, a.at(0, 3)))
	cc.pushMoved(0, "k", "kc", pid, 2, origin("c1", 1, b0))
	none(t, c)
	for range 3 {
		now.Add(int64(40 * time.Second))
		a.push(0, "z", "z")
		assert.Equal(t, []string{"z"}, recv(t, c, 1))
		consumer.HoldTick(c)
	}
	now.Add(int64(40 * time.Second))
	consumer.HoldTick(c)
	assert.Empty(t, obs.all(), "c1/1 holds: progress")
	a.push(0, "k", "ka")
	assert.Equal(t, []string{"ka", "kb", "kc"}, recv(t, c, 3))
	assert.Empty(t, obs.all())
}
