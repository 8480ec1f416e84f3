package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/consumer"
	"github.com/keyroute/keyroute/consumer/consumertest"
	"github.com/keyroute/keyroute/topology"
)

func clusterNames(c *consumer.Consumer) []string {
	var out []string
	for _, h := range c.Health(context.Background()) {
		out = append(out, h.Cluster)
	}
	return out
}

// eventsOf returns the fake's events of one op on one cluster.
func eventsOf(fake *consumertest.Clusters, op consumertest.Op, cluster string) int {
	n := 0
	for _, e := range fake.Events() {
		if e.Op == op && e.Cluster == cluster {
			n++
		}
	}
	return n
}

// A cluster added by Update is subscribed at Earliest: what producers
// wrote there before the Consumer knew of it is read.
func TestUpdateAddsACluster(t *testing.T) {
	ctx := context.Background()
	fake := consumertest.New()
	c, err := consumer.New(ctx, consumertest.Topology("c1", "c2"), patient(fake)...)
	require.NoError(t, err)
	defer c.Close(ctx)
	require.NoError(t, fake.Cluster("c3").Publish(0, msgs("k", 2)...))

	require.NoError(t, c.Update(ctx, consumertest.Topology("c1", "c2", "c3")))
	assert.Equal(t, []string{"c1", "c2", "c3"}, clusterNames(c))
	assert.Equal(t, map[string]bool{"c3/0": true, "c3/1": true}, values(t, c, 2))
	assert.True(t, healthOf(t, c, "c3").Connected)
}

// A cluster removed by Update is read until its backlog is 0, then
// closed and gone from Health; acknowledging its messages is what drains
// it.
func TestUpdateDrainsARemovedCluster(t *testing.T) {
	ctx := context.Background()
	fake := consumertest.New()
	c, err := consumer.New(ctx, consumertest.Topology("c1", "c2", "c3"), patient(fake)...)
	require.NoError(t, err)
	defer c.Close(ctx)
	require.NoError(t, fake.Cluster("c3").Publish(0, msgs("k", 3)...))

	require.NoError(t, c.Update(ctx, consumertest.Topology("c1", "c2")))
	h := healthOf(t, c, "c3")
	assert.True(t, h.Draining, "read until drained")
	assert.Equal(t, []string{"c1", "c2", "c3"}, clusterNames(c))
	assert.Zero(t, eventsOf(fake, consumertest.OpClose, "c3"))
	assert.Equal(t, map[string]bool{"c3/0": true, "c3/1": true, "c3/2": true}, values(t, c, 3))
	waitFor(t, func() bool { return eventsOf(fake, consumertest.OpClose, "c3") == 1 })
	assert.Equal(t, []string{"c1", "c2"}, clusterNames(c))
	assert.Zero(t, fake.Cluster("c3").Backlog("s"))

	// Its IDs are no longer the Consumer's.
	require.NoError(t, fake.Cluster("c1").Publish(0, msgs("k", 1)...))
	m := receive(t, c)
	assert.Equal(t, "c1", m.ID.Cluster)
	id := m.ID
	id.Cluster = "c3"
	assert.ErrorIs(t, c.AckID(ctx, id), consumer.ErrUnknownCluster)
}

// A drain that does not end within DrainTimeout is cut: the cluster is
// closed with its backlog left on the subscription.
func TestUpdateBoundsADrain(t *testing.T) {
	ctx := context.Background()
	fake := consumertest.New()
	c, err := consumer.New(ctx, consumertest.Topology("c1", "c2"), patient(fake, consumer.DrainTimeout(time.Millisecond))...)
	require.NoError(t, err)
	defer c.Close(ctx)
	require.NoError(t, fake.Cluster("c2").Publish(0, msgs("k", 2)...))
	require.NoError(t, c.Update(ctx, consumertest.Topology("c1")))
	waitFor(t, func() bool { return eventsOf(fake, consumertest.OpClose, "c2") == 1 })
	assert.Equal(t, []string{"c1"}, clusterNames(c))
	assert.Equal(t, 2, fake.Cluster("c2").Backlog("s"), "left on the subscription, not lost")
}

// A new service URL reconnects the cluster on the same subscription: a
// message delivered and not acknowledged comes again, and acknowledging
// the first delivery by ID reaches the new subscription.
func TestUpdateReconnectsAChangedCluster(t *testing.T) {
	ctx := context.Background()
	fake := consumertest.New()
	topo := consumertest.Topology("c1", "c2")
	c, err := consumer.New(ctx, topo, patient(fake)...)
	require.NoError(t, err)
	defer c.Close(ctx)
	require.NoError(t, fake.Cluster("c2").Publish(0, msgs("k", 2)...))
	first := receive(t, c)
	require.Equal(t, "0", string(first.Value))
	id := first.ID

	moved := consumertest.Topology("c1", "c2")
	moved.Clusters[1].ServiceURL = "pulsar://elsewhere.consumertest.invalid:6650"
	require.NoError(t, c.Update(ctx, moved))
	assert.Equal(t, 1, eventsOf(fake, consumertest.OpClose, "c2"))
	assert.Equal(t, 2, eventsOf(fake, consumertest.OpSubscribe, "c2"))
	again := map[string]bool{}
	for range 2 {
		m := receive(t, c)
		again[string(m.Value)] = true
	}
	assert.Equal(t, map[string]bool{"0": true, "1": true}, again, "from the cursor: nothing skipped")
	require.NoError(t, c.AckID(ctx, id))
	require.NoError(t, c.Ack(ctx, first), "a Message of the closed subscription acknowledges by ID")
	assert.Equal(t, 1, fake.Cluster("c2").Backlog("s"))
	assert.Equal(t, uint64(3), healthOf(t, c, "c2").Delivered, "the counts go on across the reconnect")
}

// A weight change does nothing to a consumer.
func TestUpdateIgnoresWeights(t *testing.T) {
	ctx := context.Background()
	fake := consumertest.New()
	c, err := consumer.New(ctx, consumertest.Topology("c1", "c2"), patient(fake)...)
	require.NoError(t, err)
	defer c.Close(ctx)
	before := fake.Events()
	heavier := consumertest.Topology("c1", "c2")
	heavier.Clusters[0].Weight = 3
	require.NoError(t, c.Update(ctx, heavier))
	assert.Equal(t, before, fake.Events())
}

// A bad topology is refused naming what is wrong, and the old one keeps
// running: an invalid one, and one whose added cluster answers with an
// error.
func TestUpdateRefusesABadTopology(t *testing.T) {
	ctx := context.Background()
	fake := consumertest.New()
	c, err := consumer.New(ctx, consumertest.Topology("c1", "c2"), patient(fake)...)
	require.NoError(t, err)
	defer c.Close(ctx)

	assert.ErrorIs(t, c.Update(ctx, nil), consumer.ErrBadTopology)
	dup := consumertest.Topology("c1", "c1")
	err = c.Update(ctx, dup)
	require.ErrorIs(t, err, consumer.ErrBadTopology)
	assert.Contains(t, err.Error(), "c1")

	boom := errors.New("topic not found")
	fake.Cluster("c3").FailConnect(boom)
	err = c.Update(ctx, &topology.Topology{Clusters: append(consumertest.Topology("c1").Clusters, consumertest.Topology("x", "y", "c3").Clusters[2])})
	require.ErrorIs(t, err, boom)
	var ce *consumer.ClusterError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "c3", ce.Cluster)
	assert.Equal(t, []string{"c1", "c2"}, clusterNames(c), "c2 is not drained: the update was refused whole")
	assert.False(t, slices.ContainsFunc(c.Health(ctx), func(h consumer.ClusterHealth) bool { return h.Draining }))

	require.NoError(t, fake.Cluster("c2").Publish(0, msgs("k", 1)...))
	assert.Equal(t, map[string]bool{"c2/0": true}, values(t, c, 1))
}

// A cluster added by Update that does not answer within StartTimeout is
// down, and joins by itself.
func TestUpdateAddsAClusterThatAnswersLater(t *testing.T) {
	ctx := context.Background()
	fake := consumertest.New()
	c, err := consumer.New(ctx, consumertest.Topology("c1"), fast(fake)...)
	require.NoError(t, err)
	defer c.Close(ctx)
	fake.Cluster("c2").FailConnect(notOpen)
	require.NoError(t, c.Update(ctx, consumertest.Topology("c1", "c2")))
	assert.ErrorIs(t, healthOf(t, c, "c2").Err, consumer.ErrConnect)
	require.NoError(t, fake.Cluster("c2").Publish(0, msgs("k", 1)...))
	fake.Cluster("c2").FailConnect(nil)
	assert.Equal(t, map[string]bool{"c2/0": true}, values(t, c, 1))
}

// Update after Close returns ErrClosed.
func TestUpdateAfterClose(t *testing.T) {
	fake := consumertest.New()
	c, err := consumer.New(context.Background(), consumertest.Topology("c1"), patient(fake)...)
	require.NoError(t, err)
	require.NoError(t, c.Close(context.Background()))
	assert.ErrorIs(t, c.Update(context.Background(), consumertest.Topology("c1", "c2")), consumer.ErrClosed)
}

// Takes (ReceiveInto and Chan) run while Updates add and remove a
// cluster over and over, under -race: every message of the clusters that
// stay is delivered once.
func TestUpdateWhileReceiving(t *testing.T) {
	ctx := context.Background()
	fake := consumertest.New()
	c, err := consumer.New(ctx, consumertest.Topology("c1", "c2"), patient(fake)...)
	require.NoError(t, err)
	defer c.Close(ctx)
	const perCluster = 300
	got := make(chan string, 4*perCluster)
	stop := make(chan struct{}) // the test has counted: takers stop handing over
	put := func(v string) {
		select {
		case got <- v:
		case <-stop:
		}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // ReceiveInto
		defer wg.Done()
		buf := make([]consumer.Message, 8)
		for {
			n, err := c.ReceiveInto(ctx, buf)
			if err != nil {
				return
			}
			for i := range buf[:n] {
				put(buf[i].ID.Cluster + "/" + string(buf[i].Value))
				_ = c.Ack(ctx, &buf[i])
			}
		}
	}()
	go func() { // Chan
		defer wg.Done()
		for m := range c.Chan() {
			put(m.ID.Cluster + "/" + string(m.Value))
			_ = c.Ack(ctx, m)
		}
	}()
	go func() {
		defer close(done)
		for i := range perCluster {
			for _, name := range []string{"c1", "c2", "c3"} {
				_ = fake.Cluster(name).Publish(0, consumertest.Message{Key: "k", Value: fmt.Append(nil, i)})
			}
		}
	}()
	for i := range 20 {
		topo := consumertest.Topology("c1", "c2")
		if i%2 == 0 {
			topo = consumertest.Topology("c1", "c2", "c3")
		}
		require.NoError(t, c.Update(ctx, topo))
	}
	<-done
	seen := map[string]int{}
	for n := 0; n < 2*perCluster; {
		v := <-got
		seen[v]++
		if !strings.HasPrefix(v, "c3/") {
			n++
		}
	}
	close(stop)
	require.NoError(t, c.Close(ctx))
	wg.Wait()
	for _, name := range []string{"c1", "c2"} {
		for i := range perCluster {
			assert.Equal(t, 1, seen[fmt.Sprintf("%s/%d", name, i)], "%s/%d", name, i)
		}
	}
}
