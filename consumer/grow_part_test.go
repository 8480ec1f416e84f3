package consumer_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/consumer"
)

// partBed is a set of fake clusters whose partitions are each read by a
// stream of its own, as pulsar-client-go's consumer of a partition topic
// reads it: its message IDs number the partition 0.
type partBed struct {
	mu    sync.Mutex
	parts map[string]int           // the topic's partition count, by cluster
	subs  map[string][]*fakeStream // by cluster and partition: the last stream subscribed
	log   map[string][]string      // by cluster: "p<i> earliest=<b>" for each subscribe
	gate  map[string]chan struct{} // when set, a subscribe of a partition past the first count waits on it
	first map[string]int           // the count at the first subscribe
	queue int                      // each stream's channel size
}

func newPartBed() *partBed {
	return &partBed{parts: map[string]int{}, subs: map[string][]*fakeStream{}, log: map[string][]string{},
		gate: map[string]chan struct{}{}, first: map[string]int{}, queue: 16}
}

func (b *partBed) connect(ctx context.Context, cluster string, p int, earliest bool, share int) (consumer.Stream, error) {
	b.mu.Lock()
	if _, ok := b.first[cluster]; !ok {
		b.first[cluster] = b.parts[cluster]
	}
	gate := b.gate[cluster]
	late := p >= b.first[cluster]
	b.mu.Unlock()
	if gate != nil && late {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s := newFakeStream(cluster, b.queue)
	for len(b.subs[cluster]) <= p {
		b.subs[cluster] = append(b.subs[cluster], nil)
	}
	b.subs[cluster][p] = s
	b.log[cluster] = append(b.log[cluster], fmt.Sprintf("p%d earliest=%v", p, earliest))
	return s, nil
}

func (b *partBed) partitions(cluster string) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return max(1, b.parts[cluster]), nil
}

func (b *partBed) set(cluster string, n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.parts[cluster] = n
}

func (b *partBed) stream(cluster string, p int) *fakeStream {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.subs[cluster][p]
}

func (b *partBed) subscribes(cluster string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.log[cluster]...)
}

// A growth subscribes the new partitions alone, at their first message;
// the old partitions keep their streams (not closed, not subscribed
// again), their messages go on flowing while the new ones are subscribed
// (Health says Growing, with no error), and nothing comes twice. A
// message of a new partition names that partition, and its
// acknowledgement goes to that partition's stream.
func TestGrowthAddsOnlyTheNewPartitions(t *testing.T) {
	bed := newPartBed()
	bed.set("c1", 2)
	bed.set("c2", 2)
	c, err := consumer.New(context.Background(), topo(2), consumer.Topic("t"), consumer.Subscription("s"),
		consumer.Type(consumer.Failover),
		consumer.WithPartitionConnector(bed.connect, bed.partitions),
		consumer.PartitionsAutoDiscoveryInterval(time.Millisecond), consumer.ProbeInterval(time.Millisecond))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	assert.Equal(t, []string{"p0 earliest=false", "p1 earliest=false"}, bed.subscribes("c1"), "at InitialPosition")

	old0, old1 := bed.stream("c1", 0), bed.stream("c1", 1)
	old0.push(0, "a", "a1")
	old1.push(0, "b", "b1")
	for _, m := range []*consumer.Message{receive(t, c), receive(t, c)} {
		require.NoError(t, c.Ack(context.Background(), m))
	}

	gate := make(chan struct{})
	bed.mu.Lock()
	bed.gate["c1"] = gate
	bed.mu.Unlock()
	bed.set("c1", 4)
	waitFor(t, func() bool { return health(c, "c1").Growing })
	h := health(c, "c1")
	assert.NoError(t, h.Err, "a growth is a state")
	assert.NoError(t, h.PartitionsErr)
	assert.True(t, h.Connected)
	assert.Equal(t, 2, h.Partitions)
	old0.push(0, "a", "a2") // the old partitions are read meanwhile
	m := receive(t, c)
	assert.Equal(t, "a2", string(m.Value))
	require.NoError(t, c.Ack(context.Background(), m))

	close(gate)
	waitFor(t, func() bool { h := health(c, "c1"); return h.Partitions == 4 && !h.Growing })
	assert.Equal(t, []string{"p0 earliest=false", "p1 earliest=false", "p2 earliest=true", "p3 earliest=true"}, bed.subscribes("c1"))
	assert.Equal(t, []string{"p0 earliest=false", "p1 earliest=false"}, bed.subscribes("c2"), "the other cluster is not touched")
	assert.Same(t, old0, bed.stream("c1", 0))
	assert.Same(t, old1, bed.stream("c1", 1))
	old0.mu.Lock()
	closed := old0.closed || old1.closed
	old0.mu.Unlock()
	assert.False(t, closed, "the old partitions' consumers are not closed")

	bed.stream("c1", 3).push(0, "c", "c1")
	old1.push(0, "b", "b2")
	got := map[string]int{}
	for range 2 {
		m := receive(t, c)
		got[string(m.Value)] = m.ID.Partition
		require.NoError(t, c.Ack(context.Background(), m))
	}
	assert.Equal(t, map[string]int{"c1": 3, "b2": 1}, got, "each message names its partition")
	none(t, c)
	assert.Equal(t, []string{"ack 0:0"}, bed.stream("c1", 3).log(), "acknowledged on its partition's stream")
	assert.Equal(t, []string{"ack 0:0", "ack 0:1"}, old0.log(), "each old message acknowledged once")
	assert.Equal(t, []string{"ack 0:0", "ack 0:1"}, old1.log())
	assert.Equal(t, uint64(5), health(c, "c1").Delivered)

	// An ID read back from its text numbers its Pulsar ID's partition as
	// the topic does: acknowledged on that partition's stream all the same.
	bed.stream("c1", 2).push(0, "d", "d1")
	m = receive(t, c)
	id, err := consumer.ParseID(m.ID.String())
	require.NoError(t, err)
	require.EqualValues(t, 2, id.Pulsar.PartitionIdx())
	require.NoError(t, c.AckID(context.Background(), id))
	assert.Equal(t, []string{"ack 0:0"}, bed.stream("c1", 2).log())
}
