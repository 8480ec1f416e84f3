package consumertest_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/consumer"
	"github.com/keyroute/keyroute/consumer/consumertest"
)

func position(t *testing.T, text string) consumer.ID {
	t.Helper()
	id, err := consumer.ParseID(text)
	require.NoError(t, err)
	return id
}

// resets returns the reset Events, as text.
func resets(fake *consumertest.Clusters) []string {
	var out []string
	for _, e := range fake.Events() {
		if e.Op == consumertest.OpReset {
			out = append(out, e.String())
		}
	}
	return out
}

// A reset (SeekByID) moves the cursor of one partition just after the
// ID: the messages at or before it there count as acknowledged, the
// later ones not, whether it moves back or ahead; the other partition
// keeps its cursor.
func TestResetMovesOnePartitionJustAfterTheID(t *testing.T) {
	ctx := context.Background()
	fake := consumertest.New(consumertest.Partitions(2))
	east := fake.Cluster("east")
	require.NoError(t, east.Publish(0, msgs("p0", 4)...))
	c := open(t, fake, "s", consumer.InitialPosition(consumer.Earliest))
	for range 4 {
		m, err := c.Receive(ctx)
		require.NoError(t, err)
		require.NoError(t, c.Ack(ctx, m))
	}
	require.NoError(t, east.Publish(1, msgs("p1", 3)...))
	backlog := east.Backlog("s") // p1's, not acknowledged
	require.Equal(t, 3, backlog)

	require.NoError(t, c.SeekByID(ctx, position(t, "east/0/1:1:-1")))
	assert.Equal(t, backlog+2, east.Backlog("s"), "back: p0's entries 2 and 3 are not acknowledged any more")
	assert.Equal(t, []string{"reset east/0:1 s"}, resets(fake))
	require.NoError(t, c.SeekByID(ctx, position(t, "east/0/1:3:-1")))
	assert.Equal(t, backlog, east.Backlog("s"), "ahead: every p0 message acknowledged")
	require.NoError(t, c.SeekByID(ctx, position(t, "east/1/1:1:-1")))
	assert.Equal(t, 1, east.Backlog("s"), "p1's entry 2 left")
	assert.Equal(t, []string{"reset east/0:1 s", "reset east/0:3 s", "reset east/1:1 s"}, resets(fake))
	m, err := c.Receive(ctx)
	require.NoError(t, err)
	assert.Equal(t, "east/1/1:2:-1", m.ID.String(), "the only one left")
}

// A reset at New (StartAfter) makes a subscription that does not exist;
// its partitions not named start at its first Consumer's initial
// position (Latest here: after the last message).
func TestResetMakesTheSubscription(t *testing.T) {
	ctx := context.Background()
	fake := consumertest.New(consumertest.Partitions(2))
	east := fake.Cluster("east")
	require.NoError(t, east.Publish(0, msgs("p0", 4)...))
	require.NoError(t, east.Publish(1, msgs("p1", 3)...))
	c := open(t, fake, "new", consumer.StartAfter(position(t, "east/0/1:1:-1")))
	assert.Equal(t, 2, east.Backlog("new"), "p0's entries 2 and 3; p1 after its last")
	var got []string
	for range 2 {
		m, err := c.Receive(ctx)
		require.NoError(t, err)
		got = append(got, m.ID.String())
	}
	assert.Equal(t, []string{"east/0/1:2:-1", "east/0/1:3:-1"}, got)
	var ops []string
	for _, e := range fake.Events() {
		if e.Cluster == "east" {
			ops = append(ops, e.String())
		}
	}
	assert.Equal(t, []string{"reset east/0:1 new", "subscribe east new"}, ops, "moved before the subscribe")
}

// A reset to a message the cluster does not have moves nothing and is
// named (ErrNoPosition); so is one under a Consumer of the subscription
// (ErrBusy).
func TestResetRefusesWhatItCannotDo(t *testing.T) {
	ctx := context.Background()
	fake := consumertest.New(consumertest.Partitions(2))
	east := fake.Cluster("east")
	require.NoError(t, east.Publish(0, msgs("p0", 2)...))
	c := open(t, fake, "s", consumer.InitialPosition(consumer.Earliest))
	for _, text := range []string{"east/0/1:2:-1", "east/1/1:0:-1", "east/0/2:0:-1"} {
		err := c.SeekByID(ctx, position(t, text))
		require.ErrorIs(t, err, consumertest.ErrNoPosition, text)
		var ce *consumer.ClusterError
		require.ErrorAs(t, err, &ce, text)
		assert.Equal(t, "east", ce.Cluster)
	}
	assert.Empty(t, resets(fake))
	assert.Equal(t, 2, east.Backlog("s"), "nothing moved")

	_, err := consumer.New(ctx, consumertest.Topology("east", "west"), consumer.Topic("t"), consumer.Subscription("s"),
		consumer.StartAfter(position(t, "east/0/1:0:-1")), fake.Opt())
	require.ErrorIs(t, err, consumertest.ErrBusy, "the subscription has a Consumer")
	assert.Empty(t, resets(fake))
	assert.Equal(t, 2, east.Backlog("s"), "nothing moved")
}
