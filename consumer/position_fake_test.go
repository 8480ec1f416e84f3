package consumer_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/consumer"
	"github.com/keyroute/keyroute/consumer/consumertest"
)

// Positions over the fake of package consumertest, which moves its own
// cursors in place of the admin API (hook.Position).

// fakeFill publishes counts[cluster][partition] messages on each
// partition.
func fakeFill(t *testing.T, fake *consumertest.Clusters, counts map[string][]int) {
	t.Helper()
	for cl, byPart := range counts {
		for p, n := range byPart {
			for range n {
				require.NoError(t, fake.Cluster(cl).Publish(p, consumertest.Message{Key: "k", Value: []byte("?")}))
			}
		}
	}
}

// at is a message's position as fakeReadExactly reports it.
func at(m *consumer.Message) string {
	return fmt.Sprintf("%s/%d:%d", m.ID.Cluster, m.ID.Partition, m.ID.Pulsar.EntryID())
}

// fakeReadExactly receives and acknowledges len(want) messages, which
// must be want's positions (in any order across partitions, in order on
// each), then shows that nothing else was due: a marker published on
// every partition of every cluster named in parts comes next on each.
func fakeReadExactly(t *testing.T, c *consumer.Consumer, fake *consumertest.Clusters, parts map[string]int, want []string) {
	t.Helper()
	ctx := context.Background()
	var got []string
	last := map[string]int64{}
	for range want {
		m := receive(t, c)
		key := fmt.Sprintf("%s/%d", m.ID.Cluster, m.ID.Partition)
		if e, ok := last[key]; ok {
			require.Greater(t, m.ID.Pulsar.EntryID(), e, "in order on %s", key)
		}
		last[key] = m.ID.Pulsar.EntryID()
		got = append(got, at(m))
		require.NoError(t, c.Ack(ctx, m))
	}
	sort.Strings(got)
	want = slices.Sorted(slices.Values(want))
	require.Equal(t, want, got)
	marker := fmt.Sprint("marker-", len(fake.Events())) // not one published before
	n := 0
	for cl, np := range parts {
		for p := range np {
			require.NoError(t, fake.Cluster(cl).Publish(p, consumertest.Message{Key: marker}))
			n++
		}
	}
	for range n {
		m := receive(t, c)
		require.Equal(t, marker, m.Key, "%s came after the rest", at(m))
		require.NoError(t, c.Ack(ctx, m))
	}
}

// ids parses positions as a reader saved them.
func ids(t *testing.T, texts ...string) []consumer.ID {
	t.Helper()
	var out []consumer.ID
	for _, s := range texts {
		id, err := consumer.ParseID(s)
		require.NoError(t, err, s)
		out = append(out, id)
	}
	return out
}

// clusterEvents returns the Events of cluster from index from on, as text.
func clusterEvents(fake *consumertest.Clusters, cluster string, from int) []string {
	var out []string
	for _, e := range fake.Events()[from:] {
		if e.Cluster == cluster {
			out = append(out, e.String())
		}
	}
	return out
}

// StartAfter over the fake: each partition named is read from just after
// its ID, each other one from the subscription's cursor, or from the
// initial position for a new subscription, and nothing else comes.
func TestStartAfterOverTheFakeReadsExactlyTheRest(t *testing.T) {
	counts := map[string][]int{"east": {5, 3, 0}, "west": {4, 1, 2}}
	parts := map[string]int{"east": 3, "west": 3}
	from := []string{"east/0/1:2:-1", "east/1/1:0:-1", "west/0/1:3:-1", "west/2/1:0:-1"}
	rest := []string{"east/0:3", "east/0:4", "east/1:1", "east/1:2", "west/2:1"}
	for _, tc := range []struct {
		name     string
		existing bool // the subscription exists, every message acknowledged
		initial  consumer.Position
		want     []string
	}{
		{"new subscription, Earliest", false, consumer.Earliest, append([]string{"west/1:0"}, rest...)},
		{"new subscription, Latest", false, consumer.Latest, rest},
		{"existing subscription", true, consumer.Earliest, rest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			fake := consumertest.New(consumertest.Partitions(3))
			fakeFill(t, fake, counts)
			opts := []consumer.Opt{consumer.Topic("t"), consumer.Subscription("s"), consumer.InitialPosition(tc.initial), fake.Opt()}
			if tc.existing {
				c, err := consumer.New(ctx, consumertest.Topology("east", "west"), opts...)
				require.NoError(t, err)
				for range 15 {
					require.NoError(t, c.Ack(ctx, receive(t, c)))
				}
				require.NoError(t, c.Close(ctx))
			}
			start := len(fake.Events())
			c, err := consumer.New(ctx, consumertest.Topology("east", "west"), append(opts, consumer.StartAfter(ids(t, from...)...))...)
			require.NoError(t, err)
			t.Cleanup(func() { _ = c.Close(context.Background()) })
			assert.Equal(t, []string{"reset east/0:2 s", "reset east/1:0 s", "subscribe east s"}, clusterEvents(fake, "east", start), "positioned before subscribing")
			assert.Equal(t, []string{"reset west/0:3 s", "reset west/2:0 s", "subscribe west s"}, clusterEvents(fake, "west", start))
			fakeReadExactly(t, c, fake, parts, tc.want)
		})
	}
}

// SeekByID over the fake: back and ahead, the clusters named are closed,
// moved and subscribed again, the others not touched, and exactly the
// rest comes.
func TestSeekByIDOverTheFakeReadsExactlyTheRest(t *testing.T) {
	ctx := context.Background()
	fake := consumertest.New(consumertest.Partitions(2))
	fakeFill(t, fake, map[string][]int{"east": {4, 3}, "west": {2, 0}})
	parts := map[string]int{"east": 2, "west": 2}
	c, err := consumer.New(ctx, consumertest.Topology("east", "west"), consumer.Topic("t"), consumer.Subscription("s"),
		consumer.InitialPosition(consumer.Earliest), fake.Opt())
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	for range 9 {
		require.NoError(t, c.Ack(ctx, receive(t, c)))
	}
	fakeFill(t, fake, map[string][]int{"west": {0, 3}}) // not read before the seek

	start := len(fake.Events())
	require.NoError(t, c.SeekByID(ctx, ids(t, "east/0/1:0:-1", "west/1/1:1:-1")...))
	assert.Equal(t, []string{"close east s", "reset east/0:0 s", "subscribe east s"}, clusterEvents(fake, "east", start))
	assert.Equal(t, []string{"close west s", "reset west/1:1 s", "subscribe west s"}, clusterEvents(fake, "west", start))
	fakeReadExactly(t, c, fake, parts, []string{"east/0:1", "east/0:2", "east/0:3", "west/1:2"})

	start = len(fake.Events())
	require.NoError(t, c.SeekByID(ctx, ids(t, "west/0/1:0:-1")...))
	assert.Empty(t, clusterEvents(fake, "east", start), "east is not touched")
	assert.Equal(t, []string{"close west s", "reset west/0:0 s", "subscribe west s"}, clusterEvents(fake, "west", start))
	fakeReadExactly(t, c, fake, parts, []string{"west/0:1", "west/0:2"}) // west/0:2 is the marker published above
}

// A position on a partition the fake cluster lacks is an ErrBadPosition
// naming the cluster and partition, and nothing moves; one of a message
// it lacks names the partition not moved (consumertest.ErrNoPosition),
// and the cluster is subscribed again.
func TestPositionOfWhatTheFakeLacks(t *testing.T) {
	ctx := context.Background()
	fake := consumertest.New(consumertest.Partitions(2))
	fakeFill(t, fake, map[string][]int{"east": {2, 2}, "west": {2, 2}})
	opts := []consumer.Opt{consumer.Topic("t"), consumer.Subscription("s"), consumer.InitialPosition(consumer.Earliest), fake.Opt()}
	var ce *consumer.ClusterError

	_, err := consumer.New(ctx, consumertest.Topology("east", "west"), append(opts, consumer.StartAfter(ids(t, "east/0/1:0:-1", "west/5/1:0:-1")...))...)
	require.ErrorIs(t, err, consumer.ErrBadPosition)
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "west", ce.Cluster)
	assert.ErrorContains(t, err, "partition 5")
	assert.Empty(t, clusterEvents(fake, "west", 0), "nothing moved on west")

	// (east was positioned and subscribed before west failed: a new
	// subscription from here on.)
	opts[1] = consumer.Subscription("s2")
	c, err := consumer.New(ctx, consumertest.Topology("east", "west"), opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	start := len(fake.Events())
	err = c.SeekByID(ctx, ids(t, "east/1/1:0:-1", "west/2/1:0:-1")...)
	require.ErrorIs(t, err, consumer.ErrBadPosition)
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "west", ce.Cluster)
	assert.ErrorContains(t, err, "partition 2")
	assert.Empty(t, fake.Events()[start:], "nothing moved")

	err = c.SeekByID(ctx, ids(t, "east/1/1:9:-1")...)
	require.ErrorIs(t, err, consumertest.ErrNoPosition)
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "east", ce.Cluster)
	assert.ErrorContains(t, err, "partition 1 not moved")
	assert.Equal(t, []string{"close east s2", "subscribe east s2"}, clusterEvents(fake, "east", start), "subscribed again, not moved")
	want := []string{"east/0:0", "east/0:1", "east/1:0", "east/1:1", "west/0:0", "west/0:1", "west/1:0", "west/1:1"}
	fakeReadExactly(t, c, fake, map[string]int{"east": 2, "west": 2}, want)
}
