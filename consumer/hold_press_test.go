package consumer_test

import (
	"context"
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
