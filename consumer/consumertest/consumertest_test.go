package consumertest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/keyroute/keyroute/consumer"
	"github.com/keyroute/keyroute/consumer/consumertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func open(t *testing.T, fake *consumertest.Clusters, sub string, opts ...consumer.Opt) *consumer.Consumer {
	t.Helper()
	opts = append([]consumer.Opt{consumer.Topic("t"), consumer.Subscription(sub), fake.Opt()}, opts...)
	c, err := consumer.New(context.Background(), consumertest.Topology("east", "west"), opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

func msgs(key string, n int) []consumertest.Message {
	var ms []consumertest.Message
	for i := range n {
		ms = append(ms, consumertest.Message{Key: key, Value: fmt.Append(nil, i)})
	}
	return ms
}

// What a subscription acknowledged stays acknowledged: a Consumer that
// subscribes again gets the rest, in order.
func TestResubscribeGetsTheRest(t *testing.T) {
	ctx := context.Background()
	fake := consumertest.New(consumertest.Partitions(2))
	c := open(t, fake, "s")
	require.NoError(t, fake.Cluster("east").Publish(1, msgs("k", 4)...))
	for range 2 {
		m, err := c.Receive(ctx)
		require.NoError(t, err)
		require.NoError(t, c.Ack(ctx, m))
	}
	require.NoError(t, c.Close(context.Background()))
	assert.Equal(t, 2, fake.Cluster("east").Backlog("s"))

	c = open(t, fake, "s")
	for _, want := range []string{"2", "3"} {
		m, err := c.Receive(ctx)
		require.NoError(t, err)
		assert.Equal(t, want, string(m.Value))
		assert.Equal(t, 1, m.ID.Partition)
	}
}

// A new subscription starts after the last message (Latest) or at the
// first (Earliest); a second Consumer on one subscription is refused.
func TestInitialPositionAndBusy(t *testing.T) {
	ctx := context.Background()
	fake := consumertest.New()
	require.NoError(t, fake.Cluster("west").Publish(0, msgs("old", 1)...))
	latest := open(t, fake, "latest")
	earliest := open(t, fake, "earliest", consumer.InitialPosition(consumer.Earliest))
	require.NoError(t, fake.Cluster("west").Publish(0, msgs("new", 1)...))
	m, err := latest.Receive(ctx)
	require.NoError(t, err)
	assert.Equal(t, "new", m.Key)
	m, err = earliest.Receive(ctx)
	require.NoError(t, err)
	assert.Equal(t, "old", m.Key)

	_, err = consumer.New(ctx, consumertest.Topology("east", "west"), consumer.Topic("t"), consumer.Subscription("latest"), fake.Opt())
	assert.ErrorIs(t, err, consumertest.ErrBusy)
	var ce *consumer.ClusterError
	require.ErrorAs(t, err, &ce)

	assert.Error(t, fake.Cluster("west").Publish(3, msgs("x", 1)...), "no partition 3")
}

// A stalled cluster delivers nothing and is reported down; the other
// cluster's messages keep coming; after Resume the stalled one's come.
func TestStalledClusterHoldsNobodyUp(t *testing.T) {
	ctx := context.Background()
	fake := consumertest.New()
	c := open(t, fake, "s", consumer.ProbeInterval(time.Millisecond))
	fake.Cluster("east").Stall()
	require.NoError(t, fake.Cluster("east").Publish(0, msgs("stalled", 3)...))
	require.NoError(t, fake.Cluster("west").Publish(0, msgs("live", 3)...))
	for range 3 {
		m, err := c.Receive(ctx)
		require.NoError(t, err)
		assert.Equal(t, "west", m.ID.Cluster)
	}
	for c.Health(ctx)[0].Connected {
		time.Sleep(time.Millisecond)
	}
	fake.Cluster("east").Resume()
	for range 3 {
		m, err := c.Receive(ctx)
		require.NoError(t, err)
		assert.Equal(t, "stalled", m.Key)
	}
}

// Faults: subscribing, probes and acknowledgements can fail, each named
// by cluster.
func TestFaults(t *testing.T) {
	ctx := context.Background()
	fake := consumertest.New()
	refused := errors.New("connection refused")
	fake.Cluster("west").FailConnect(refused)
	_, err := consumer.New(ctx, consumertest.Topology("east", "west"), consumer.Topic("t"), consumer.Subscription("s"), fake.Opt())
	require.ErrorIs(t, err, refused)
	var ce *consumer.ClusterError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "west", ce.Cluster)
	fake.Cluster("west").FailConnect(nil)

	c := open(t, fake, "s", consumer.ProbeInterval(time.Millisecond))
	fake.Cluster("west").FailProbes(refused)
	for c.Health(ctx)[1].Connected {
		time.Sleep(time.Millisecond)
	}
	require.NoError(t, fake.Cluster("east").Publish(0, msgs("k", 1)...))
	m, err := c.Receive(ctx)
	require.NoError(t, err)
	denied := errors.New("not allowed")
	fake.Cluster("east").FailAcks(denied)
	require.ErrorIs(t, c.Ack(ctx, m), denied)
	fake.Cluster("east").FailAcks(nil)
	require.NoError(t, c.Ack(ctx, m))
	var acks []string
	for _, e := range fake.Events() {
		if e.Op == consumertest.OpAck {
			acks = append(acks, e.String())
		}
	}
	assert.Equal(t, []string{"ack east/0:0 s"}, acks, "only the acknowledgement that succeeded")
}
