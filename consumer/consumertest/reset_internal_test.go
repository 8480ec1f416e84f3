package consumertest

import (
	"context"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/consumer/internal/hook"
)

// The fake's Position on its own: package consumer refuses a partition
// the cluster lacks before it calls ResetAfter, so only here does the
// fake's own refusal show.
func TestPositionsOnTheirOwn(t *testing.T) {
	ctx := context.Background()
	cs := New(Partitions(2), Partitions(3, "west"))
	var pos hook.Position = positions{cs}
	n, err := pos.Partitions(ctx, "east", "any")
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	n, err = pos.Partitions(ctx, "west", "any")
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	require.NoError(t, cs.Cluster("east").Publish(1, Message{Key: "a"}, Message{Key: "b"}))

	for name, tc := range map[string]struct {
		id   pulsar.MessageID
		text string
	}{
		"no such partition":  {newID(2, 0), `cluster "east" has no partition 2 (it has 2)`},
		"no partition -1":    {newID(-1, 0), "no partition -1"},
		"empty partition":    {newID(0, 0), "no message 1:0 on partition 0 (it has none)"},
		"entry past the log": {newID(1, 2), "no message 1:2 on partition 1 (it has 1:0 to 1:1)"},
		"another ledger":     {pulsar.NewMessageID(7, 0, -1, 1), "no message 7:0"},
		"no ID":              {nil, "no message ID"},
	} {
		err := pos.ResetAfter(ctx, "east", "t", "s", tc.id)
		require.ErrorIs(t, err, ErrNoPosition, name)
		assert.ErrorContains(t, err, tc.text, name)
	}
	assert.Empty(t, cs.Events(), "nothing recorded")
	assert.Empty(t, cs.Cluster("east").subs, "no subscription made")

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	require.ErrorIs(t, pos.ResetAfter(cancelled, "east", "t", "s", newID(1, 0)), context.Canceled)
	_, err = pos.Partitions(cancelled, "east", "t")
	require.ErrorIs(t, err, context.Canceled)

	conn, err := cs.connect(ctx, hook.Sub{Cluster: "east", Topic: "t", Subscription: "s", Earliest: true})
	require.NoError(t, err)
	require.ErrorIs(t, pos.ResetAfter(ctx, "east", "t", "s", newID(1, 0)), ErrBusy)
	conn.Stream.Close()
	require.NoError(t, pos.ResetAfter(ctx, "east", "t", "s", newID(1, 0)))
	assert.Equal(t, 1, cs.Cluster("east").Backlog("s"))
	assert.Equal(t, "reset east/1:0 s", cs.Events()[len(cs.Events())-1].String())
	// A position inside a batch is its entry's.
	require.NoError(t, pos.ResetAfter(ctx, "east", "t", "s", pulsar.NewMessageID(1, 1, 4, 1)))
	assert.Equal(t, 0, cs.Cluster("east").Backlog("s"))
}
