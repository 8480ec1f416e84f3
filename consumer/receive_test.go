package consumer_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/consumer"
)

// ReceiveBatch takes what the clusters hold, up to max, the clusters
// taking turns, each partition in order; it waits only while there is
// nothing.
func TestReceiveBatch(t *testing.T) {
	ctx := context.Background()
	bed := newFakeBed(16)
	c := newConsumer(t, bed, 3, consumer.Type(consumer.Failover))
	for i := range 4 {
		bed.stream("c1").push(0, "a", fmt.Sprint(i))
		bed.stream("c1").push(1, "b", fmt.Sprint(i))
	}
	bed.stream("c3").push(2, "c", "0")

	_, err := c.ReceiveBatch(ctx, 0)
	require.ErrorIs(t, err, consumer.ErrBadMax)

	ms, err := c.ReceiveBatch(ctx, 5)
	require.NoError(t, err)
	require.Len(t, ms, 5)
	var fromC3 int
	for _, m := range ms {
		if m.ID.Cluster == "c3" {
			fromC3++
		}
	}
	assert.Equal(t, 1, fromC3, "c3's one message is in the first batch, not behind c1's eight")
	rest, err := c.ReceiveBatch(ctx, 100)
	require.NoError(t, err)
	assert.Len(t, rest, 4, "all that was left, no wait for more")

	next := map[string]int{}
	for _, m := range append(ms, rest...) {
		k := fmt.Sprintf("%s/%d", m.ID.Cluster, m.ID.Partition)
		assert.Equal(t, fmt.Sprint(next[k]), string(m.Value), "partition %s in order", k)
		next[k]++
	}
	require.NoError(t, c.Ack(ctx, &rest[0]))
	require.NoError(t, c.AckCumulative(ctx, &rest[len(rest)-1]))
	require.NoError(t, c.Nack(&ms[0]))
	var delivered uint64
	for _, h := range c.Health(ctx) {
		delivered += h.Delivered
	}
	assert.Equal(t, uint64(9), delivered)

	waiting := make(chan []consumer.Message, 1)
	go func() {
		ms, err := c.ReceiveBatch(ctx, 10)
		assert.NoError(t, err)
		waiting <- ms
	}()
	bed.stream("c2").push(0, "late", "x")
	got := <-waiting
	require.NotEmpty(t, got)
	assert.Equal(t, "late", got[0].Key)
}

// Receive, ReceiveBatch and Chan share one stream: each message goes to
// one of them, read at the same time from three goroutines.
func TestReceiveBatchAndChanShareTheStream(t *testing.T) {
	ctx := context.Background()
	bed := newFakeBed(64)
	c := newConsumer(t, bed, 2)
	const n = 600
	go func() {
		for i := range n {
			bed.stream(fmt.Sprintf("c%d", i%2+1)).push(0, "k", fmt.Sprint(i))
		}
	}()
	var mu sync.Mutex
	seen := map[string]int{}
	all := make(chan struct{})
	see := func(m *consumer.Message) {
		mu.Lock()
		defer mu.Unlock()
		seen[m.ID.String()]++
		if len(seen) == n {
			close(all)
		}
	}
	var wg sync.WaitGroup
	wg.Add(3)
	go func() {
		defer wg.Done()
		for {
			m, err := c.Receive(ctx)
			if err != nil {
				assert.ErrorIs(t, err, consumer.ErrClosed)
				return
			}
			see(m)
		}
	}()
	go func() {
		defer wg.Done()
		for {
			ms, err := c.ReceiveBatch(ctx, 7)
			if err != nil {
				assert.ErrorIs(t, err, consumer.ErrClosed)
				return
			}
			for i := range ms {
				see(&ms[i])
			}
		}
	}()
	go func() {
		defer wg.Done()
		for m := range c.Chan() {
			see(m)
		}
	}()
	<-all
	require.NoError(t, c.Close(context.Background()))
	wg.Wait()
	for id, times := range seen {
		assert.Equal(t, 1, times, id)
	}
	assert.Len(t, seen, n)
}

// Beyond four clusters the wait on all of them is a reflect.Select: a
// message on the last cluster still ends it, and so does Close.
func TestReceiveWaitsOnManyClusters(t *testing.T) {
	bed := newFakeBed(4)
	c := newConsumer(t, bed, 6)
	got := make(chan *consumer.Message, 1)
	go func() { got <- receive(t, c) }()
	bed.stream("c6").push(3, "six", "v")
	m := <-got
	assert.Equal(t, "c6", m.ID.Cluster)
	assert.Equal(t, 3, m.ID.Partition)

	errc := make(chan error, 1)
	go func() {
		_, err := c.Receive(context.Background())
		errc <- err
	}()
	require.NoError(t, c.Close(context.Background()))
	assert.ErrorIs(t, <-errc, consumer.ErrClosed)
}

// The Consumer reads nothing ahead of its caller: what the brokers sent
// stays in pulsar-client-go's queues, whose sizes MaxBuffered sets
// (split over the clusters).
func TestNothingIsReadAhead(t *testing.T) {
	bed := newFakeBed(16)
	c := newConsumer(t, bed, 2, consumer.MaxBuffered(30))
	for range 10 {
		bed.stream("c1").push(0, "k", "v")
	}
	receive(t, c)
	assert.Len(t, bed.stream("c1").ch, 9, "one taken, nine left where they were")
	bed.mu.Lock()
	assert.Equal(t, map[string]int{"c1": 15, "c2": 15}, bed.shares)
	bed.mu.Unlock()
}

// Receive and Ack allocate nothing per message: Messages are carved from
// slabs, and an acknowledgement needs no closure.
func TestReceiveAndAckAllocateNothingPerMessage(t *testing.T) {
	ctx := context.Background()
	bed := newFakeBed(2048)
	c := newConsumer(t, bed, 3)
	for _, name := range []string{"c1", "c2", "c3"} {
		s := bed.stream(name)
		s.quiet = true
		for range 600 {
			s.push(0, "k", "v")
		}
	}
	allocs := testing.AllocsPerRun(1000, func() {
		m, err := c.Receive(ctx)
		if err != nil {
			panic(err)
		}
		if err := c.Ack(ctx, m); err != nil {
			panic(err)
		}
	})
	assert.Zero(t, allocs)
}

// Within a batch the clusters take turns message by message.
func TestReceiveBatchInterleavesClusters(t *testing.T) {
	ctx := context.Background()
	bed := newFakeBed(16)
	c := newConsumer(t, bed, 2)
	for i := range 4 {
		bed.stream("c1").push(0, "a", fmt.Sprint(i))
		bed.stream("c2").push(0, "b", fmt.Sprint(i))
	}
	ms, err := c.ReceiveBatch(ctx, 8)
	require.NoError(t, err)
	require.Len(t, ms, 8)
	for i := 1; i < len(ms); i++ {
		assert.NotEqual(t, ms[i-1].ID.Cluster, ms[i].ID.Cluster, "message %d: the clusters alternate", i)
	}
}

// ReceiveInto fills the caller's buffer, allocating nothing, and the
// messages in it acknowledge as any other.
func TestReceiveIntoAllocatesNothing(t *testing.T) {
	ctx := context.Background()
	bed := newFakeBed(4096)
	c := newConsumer(t, bed, 3)
	for _, name := range []string{"c1", "c2", "c3"} {
		s := bed.stream(name)
		s.quiet = true
		for range 1200 {
			s.push(0, "k", "v")
		}
	}
	_, err := c.ReceiveInto(ctx, nil)
	require.ErrorIs(t, err, consumer.ErrBadMax)
	buf := make([]consumer.Message, 16)
	total := 0
	allocs := testing.AllocsPerRun(100, func() {
		n, err := c.ReceiveInto(ctx, buf)
		if err != nil || n < 1 || n > len(buf) {
			panic(fmt.Sprint(n, err))
		}
		for i := range buf[:n] {
			if err := c.Ack(ctx, &buf[i]); err != nil {
				panic(err)
			}
		}
		total += n
	})
	assert.Zero(t, allocs)
	assert.Greater(t, total, 101, "batches of more than one")
}
