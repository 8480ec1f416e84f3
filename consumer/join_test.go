package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute"
	"github.com/keyroute/keyroute/consumer"
	"github.com/keyroute/keyroute/consumer/consumertest"
)

// notOpen is the error of a cluster that gives no answer: a shared client
// not made yet.
var notOpen = fmt.Errorf("%w: no answer yet", keyroute.ErrNotOpen)

// fast is a Consumer's options for the fakes: StartTimeout and
// ProbeInterval short, so that New and Update give up on a cluster that
// does not answer and try it again without a wait worth the name. No
// test asserts a duration.
func fast(fake *consumertest.Clusters, opts ...consumer.Opt) []consumer.Opt {
	return append([]consumer.Opt{consumer.Topic("t"), consumer.Subscription("s"), fake.Opt(),
		consumer.StartTimeout(time.Millisecond), consumer.ProbeInterval(time.Millisecond)}, opts...)
}

// patient is fast with a StartTimeout that no fake that answers reaches:
// New and Update return once every cluster is subscribed.
func patient(fake *consumertest.Clusters, opts ...consumer.Opt) []consumer.Opt {
	return fast(fake, append([]consumer.Opt{consumer.StartTimeout(time.Hour)}, opts...)...)
}

func healthOf(t *testing.T, c *consumer.Consumer, name string) consumer.ClusterHealth {
	t.Helper()
	for _, h := range c.Health(context.Background()) {
		if h.Cluster == name {
			return h
		}
	}
	t.Fatalf("no cluster %q in Health", name)
	return consumer.ClusterHealth{}
}

func values(t *testing.T, c *consumer.Consumer, n int) map[string]bool {
	t.Helper()
	got := map[string]bool{}
	for range n {
		m := receive(t, c)
		got[m.ID.Cluster+"/"+string(m.Value)] = true
		require.NoError(t, c.Ack(context.Background(), m))
	}
	return got
}

// A cluster that does not answer New starts down, says why, and joins by
// itself once it answers: at Earliest, so that what was written there
// meanwhile is read, by a Receive that was already waiting.
func TestNewStartsWithoutAClusterThatDoesNotAnswer(t *testing.T) {
	ctx := context.Background()
	fake := consumertest.New()
	fake.Cluster("c3").FailConnect(notOpen)
	c, err := consumer.New(ctx, consumertest.Topology("c1", "c2", "c3"), fast(fake)...)
	require.NoError(t, err, "New starts with two of three clusters")
	defer c.Close(ctx)

	// New returned with one of them subscribed at least; c3's first
	// attempt may not have ended yet ("no answer yet").
	waitFor(t, func() bool {
		return healthOf(t, c, "c1").Connected && healthOf(t, c, "c2").Connected &&
			errors.Is(healthOf(t, c, "c3").Err, keyroute.ErrNotOpen)
	})
	h := healthOf(t, c, "c3")
	assert.False(t, h.Connected)
	assert.ErrorIs(t, h.Err, consumer.ErrConnect)
	assert.ErrorIs(t, h.Err, keyroute.ErrNotOpen, "Health says why")
	var ce *consumer.ClusterError
	require.ErrorAs(t, h.Err, &ce)
	assert.Equal(t, "c3", ce.Cluster)
	assert.True(t, healthOf(t, c, "c1").Connected)
	assert.NoError(t, healthOf(t, c, "c1").Err)

	require.NoError(t, fake.Cluster("c1").Publish(0, consumertest.Message{Key: "k", Value: []byte("a")}))
	assert.Equal(t, map[string]bool{"c1/a": true}, values(t, c, 1))

	// Written on c3 while it is out, before any subscription exists there.
	require.NoError(t, fake.Cluster("c3").Publish(0, msgs("k", 3)...))
	got := make(chan map[string]bool)
	go func() {
		m := map[string]bool{}
		for range 3 {
			r, err := c.Receive(ctx)
			if err != nil {
				break
			}
			m[r.ID.Cluster+"/"+string(r.Value)] = true
		}
		got <- m
	}()
	fake.Cluster("c3").FailConnect(nil)
	assert.Equal(t, map[string]bool{"c3/0": true, "c3/1": true, "c3/2": true}, <-got)
	h = healthOf(t, c, "c3")
	assert.NoError(t, h.Err)
	assert.Equal(t, uint64(3), h.Delivered)
}

// A cluster that answers with an error is wrong, not down: New fails
// naming it, whether the others subscribed or not.
func TestNewFailsOnAClusterThatAnswersWrong(t *testing.T) {
	fake := consumertest.New()
	boom := errors.New("topic not found")
	fake.Cluster("c2").FailConnect(boom)
	_, err := consumer.New(context.Background(), consumertest.Topology("c1", "c2", "c3"), patient(fake)...)
	require.ErrorIs(t, err, boom)
	var ce *consumer.ClusterError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "c2", ce.Cluster)
	assert.NotContains(t, err.Error(), `"c1"`)
}

// RequireAllClusters keeps the all-or-nothing start: New waits for every
// cluster until its ctx ends, then fails naming the one that did not
// answer, with the ctx's error.
func TestRequireAllClustersWaitsForEveryCluster(t *testing.T) {
	fake := consumertest.New()
	fake.Cluster("c2").FailConnect(notOpen)
	// The ctx ends once c1 is subscribed, far beyond StartTimeout: New
	// is still waiting for c2.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for eventsOf(fake, consumertest.OpSubscribe, "c1") == 0 {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(10 * time.Millisecond)
		cancel()
	}()
	_, err := consumer.New(ctx, consumertest.Topology("c1", "c2"), fast(fake, consumer.RequireAllClusters(true))...)
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, consumer.ErrConnect)
	assert.Contains(t, err.Error(), `"c2"`)
	assert.NotContains(t, err.Error(), `"c1"`)
}

// With no cluster answering, New waits for its ctx and names them all.
func TestNewHonoursItsCtxWhenNoClusterAnswers(t *testing.T) {
	fake := consumertest.New()
	fake.Cluster("c1").FailConnect(notOpen)
	fake.Cluster("c2").FailConnect(notOpen)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := consumer.New(ctx, consumertest.Topology("c1", "c2"), fast(fake)...)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), `"c1"`)
	assert.Contains(t, err.Error(), `"c2"`)
}

// SeekByTime names a cluster that is not subscribed; the others move.
func TestSeekNamesAClusterNotSubscribed(t *testing.T) {
	ctx := context.Background()
	fake := consumertest.New()
	fake.Cluster("c2").FailConnect(notOpen)
	c, err := consumer.New(ctx, consumertest.Topology("c1", "c2"), fast(fake)...)
	require.NoError(t, err)
	defer c.Close(ctx)
	waitFor(t, func() bool { return healthOf(t, c, "c1").Connected })
	err = c.SeekByTime(ctx, time.Now())
	require.ErrorIs(t, err, consumer.ErrConnect)
	var ce *consumer.ClusterError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "c2", ce.Cluster)
}

func msgs(key string, n int) []consumertest.Message {
	var ms []consumertest.Message
	for i := range n {
		ms = append(ms, consumertest.Message{Key: key, Value: fmt.Append(nil, i)})
	}
	return ms
}
