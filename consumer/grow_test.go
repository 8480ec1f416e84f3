package consumer_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/consumer"
)

// A cluster whose topic grew is subscribed again over all its partitions,
// on the same subscription: the new partition's messages are read, and a
// moved message there whose origin passed before the growth (its marker
// was taken from the old subscription) is delivered without a hold,
// because the partitions' frontiers carry over. The other cluster is not
// touched.
func TestGrowthSubscribesAgainAndKeepsFrontiers(t *testing.T) {
	bed := newFakeBed(16)
	bed.carry = true
	bed.setParts("c1", 2)
	bed.setParts("c2", 2)
	ev := &events{}
	// A hold would outlast the test: a moved message held for want of its
	// frontier never comes.
	c := newConsumer(t, bed, 2, consumer.PartitionsAutoDiscoveryInterval(time.Millisecond),
		consumer.ProbeInterval(time.Millisecond), consumer.HoldTimeout(time.Hour), consumer.Observe(ev))
	s1 := bed.stream("c1")
	s1.push(0, "k", "old")
	mpos := s1.pushMarker(0, pid, 1)
	s1.push(0, "x", "after the marker")
	assert.Equal(t, []string{"old", "after the marker"}, recv(t, c, 2))
	assert.Equal(t, 2, health(c, "c1").Partitions)

	bed.setParts("c1", 3)
	waitFor(t, func() bool { return health(c, "c1").Partitions == 3 })
	assert.Equal(t, 2, bed.joined("c1"))
	assert.Equal(t, 1, bed.joined("c2"))

	s1 = bed.stream("c1")
	s1.pushMoved(2, "k", "moved", pid, 1, origin("c1", 0, mpos))
	s1.push(2, "y", "new partition")
	assert.Equal(t, []string{"moved", "new partition"}, recv(t, c, 2))
	h := health(c, "c1")
	assert.Zero(t, h.ForcedReleases)
	assert.Zero(t, h.Held)
	assert.Empty(t, ev.all(), "nothing reported")
	assert.NoError(t, h.PartitionsErr)
}

// Without the frontiers (a subscription that took nothing from the
// origin's partition), the moved message waits for the origin's partition
// as it comes again on the new subscription.
func TestGrowthHoldsUntilTheOriginComesAgain(t *testing.T) {
	bed := newFakeBed(16)
	bed.carry = true
	bed.setParts("c1", 1)
	c := newConsumer(t, bed, 1, consumer.PartitionsAutoDiscoveryInterval(time.Millisecond),
		consumer.ProbeInterval(time.Millisecond), consumer.HoldTimeout(time.Hour))
	bed.setParts("c1", 2)
	waitFor(t, func() bool { return health(c, "c1").Partitions == 2 })
	s1 := bed.stream("c1")
	mpos := s1.at(0, 1)
	s1.pushMoved(1, "k", "moved", pid, 1, origin("c1", 0, mpos))
	none(t, c)
	s1.push(0, "k", "old")
	s1.pushMarker(0, pid, 1)
	assert.Equal(t, []string{"old", "moved"}, recv(t, c, 2))
}

// A count below the one subscribed is reported, and the partitions
// subscribed are still read; a count back at it clears the report.
func TestShrinkIsReported(t *testing.T) {
	bed := newFakeBed(16)
	bed.setParts("c1", 3)
	c := newConsumer(t, bed, 1, consumer.PartitionsAutoDiscoveryInterval(time.Millisecond), consumer.ProbeInterval(time.Millisecond))
	bed.setParts("c1", 2)
	waitFor(t, func() bool { return health(c, "c1").PartitionsErr != nil })
	h := health(c, "c1")
	var ce *consumer.ClusterError
	require.ErrorAs(t, h.PartitionsErr, &ce)
	assert.Equal(t, "c1", ce.Cluster)
	assert.Contains(t, h.PartitionsErr.Error(), "shrank")
	assert.Equal(t, 3, h.Partitions)
	assert.Equal(t, 1, bed.joined("c1"), "not subscribed again")
	bed.stream("c1").push(2, "k", "v")
	assert.Equal(t, []string{"v"}, recv(t, c, 1))

	bed.setParts("c1", 3)
	waitFor(t, func() bool { return health(c, "c1").PartitionsErr == nil })
}

// After a growth, a message that comes again at or before what was taken
// from its partition, when every message delivered was acknowledged, is
// one whose acknowledgement the broker did not record: it is acknowledged
// again and not delivered twice. A message not acknowledged when the
// cluster was subscribed again comes again, as at-least-once says.
func TestGrowthDropsAcknowledgedRedeliveries(t *testing.T) {
	for _, acked := range []bool{true, false} {
		t.Run(fmt.Sprintf("acked=%v", acked), func(t *testing.T) {
			bed := newFakeBed(16)
			bed.carry = true
			bed.setParts("c1", 1)
			c := newConsumer(t, bed, 1, consumer.PartitionsAutoDiscoveryInterval(time.Millisecond),
				consumer.ProbeInterval(time.Millisecond))
			s1 := bed.stream("c1")
			pa := s1.at(0, 0)
			s1.push(0, "k", "a")
			pb := s1.at(0, 0)
			s1.push(0, "k", "b")
			a, b := receive(t, c), receive(t, c)
			require.NoError(t, c.Ack(context.Background(), a))
			if acked {
				require.NoError(t, c.Ack(context.Background(), b))
			}
			bed.setParts("c1", 2)
			waitFor(t, func() bool { return health(c, "c1").Partitions == 2 })
			s1 = bed.stream("c1")
			// The broker gives again what it holds unacknowledged: b, and
			// a too as if its acknowledgement had been lost.
			s1.pushAt(0, pa, "k", "a", nil)
			s1.pushAt(0, pb, "k", "b", nil)
			s1.push(0, "k", "c")
			if acked {
				assert.Equal(t, []string{"c"}, recv(t, c, 1))
				assert.Equal(t, []string{fmt.Sprintf("ack 0:%d", pa.Entry), fmt.Sprintf("ack 0:%d", pb.Entry)}, s1.log(), "acknowledged again")
			} else {
				assert.Equal(t, []string{"a", "b", "c"}, recv(t, c, 3))
				assert.Empty(t, s1.log())
			}
			none(t, c)
		})
	}
}

// While a cluster read as one stream over every partition is subscribed
// again for a growth, Health says Growing, with no error: a planned step.
func TestGrowthOfOneStreamIsAState(t *testing.T) {
	bed := newFakeBed(16)
	bed.setParts("c1", 1)
	c := newConsumer(t, bed, 1, consumer.PartitionsAutoDiscoveryInterval(time.Millisecond), consumer.ProbeInterval(time.Millisecond))
	gate := make(chan struct{})
	bed.mu.Lock()
	bed.gate = gate
	bed.mu.Unlock()
	bed.setParts("c1", 2)
	waitFor(t, func() bool { return health(c, "c1").Growing })
	h := health(c, "c1")
	assert.NoError(t, h.Err)
	assert.NoError(t, h.PartitionsErr)
	assert.False(t, h.Connected, "not read meanwhile")
	close(gate)
	waitFor(t, func() bool { h := health(c, "c1"); return h.Partitions == 2 && !h.Growing })
	assert.NoError(t, health(c, "c1").Err)
}
