package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/consumer"
	"github.com/keyroute/keyroute/topology"
)

// topicBed is a fake of clusters that each serve several topics: one
// stream per topic and cluster.
type topicBed struct {
	mu      sync.Mutex
	streams map[string]*fakeStream // by "topic cluster"
	shares  map[string]int
}

func newTopicBed() *topicBed {
	return &topicBed{streams: map[string]*fakeStream{}, shares: map[string]int{}}
}

func (b *topicBed) connect(_ context.Context, cl topology.Cluster, topic string, share int) (consumer.Stream, func() error, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := newFakeStream(cl.Name, 64)
	b.streams[topic+" "+cl.Name] = s
	b.shares[topic+" "+cl.Name] = share
	return s, nil, nil
}

func (b *topicBed) stream(topic, cluster string) *fakeStream {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.streams[topic+" "+cluster]
}

func newTopicsConsumer(t *testing.T, bed *topicBed, topics []string, opts ...consumer.Opt) *consumer.Consumer {
	t.Helper()
	opts = append([]consumer.Opt{consumer.Topics(topics...), consumer.Subscription("s"), consumer.WithTopicConnector(bed.connect)}, opts...)
	c, err := consumer.New(context.Background(), topo(2), opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// Every message of every topic, cluster and partition comes once, each
// partition's in order and named by its topic; acknowledgements go to the
// stream it came from; Health has a row per topic and cluster.
func TestTopicsReadEveryTopicInOrder(t *testing.T) {
	bed := newTopicBed()
	topics := []string{"orders", "payments", "refunds"}
	c := newTopicsConsumer(t, bed, topics, consumer.MaxBuffered(3000))
	assert.Equal(t, topics, c.Topics())
	assert.Equal(t, "orders", c.Topic())
	const perPart = 200
	var wg sync.WaitGroup
	for _, tp := range topics {
		for _, cl := range []string{"c1", "c2"} {
			s := bed.stream(tp, cl)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range perPart {
					for p := range int32(2) {
						s.push(p, "k", fmt.Sprint(i))
					}
				}
			}()
		}
	}
	next := map[string]int64{}
	buf := make([]consumer.Message, 7)
	for got := 0; got < len(topics)*2*2*perPart; {
		var ms []consumer.Message
		switch got % 3 { // every way of taking
		case 0:
			ms = []consumer.Message{*receive(t, c)}
		case 1:
			b, err := c.ReceiveBatch(context.Background(), 5)
			require.NoError(t, err)
			ms = b
		default:
			n, err := c.ReceiveInto(context.Background(), buf)
			require.NoError(t, err)
			ms = buf[:n]
		}
		for i := range ms {
			m := &ms[i]
			k := fmt.Sprintf("%s %s/%d", m.ID.Topic, m.ID.Cluster, m.ID.Partition)
			require.Equal(t, next[k], m.ID.Pulsar.EntryID(), "%s out of order", k)
			next[k]++
			require.NoError(t, c.Ack(context.Background(), m))
		}
		got += len(ms)
	}
	wg.Wait()
	assert.Len(t, next, len(topics)*2*2)
	for _, tp := range topics {
		for _, cl := range []string{"c1", "c2"} {
			assert.Len(t, bed.stream(tp, cl).log(), 2*perPart, "acks on %s %s", tp, cl)
			assert.Equal(t, 500, bed.shares[tp+" "+cl], "MaxBuffered split between topics, then clusters")
		}
	}
	// Chan's goroutines count a message once it is handed over: after
	// Close the counts are final.
	require.NoError(t, c.Close(context.Background()))
	hs := c.Health(context.Background())
	require.Len(t, hs, len(topics)*2)
	for i, h := range hs {
		assert.Equal(t, topics[i/2], h.Topic)
		assert.Equal(t, fmt.Sprint("c", i%2+1), h.Cluster)
		assert.Equal(t, uint64(2*perPart), h.Delivered)
		assert.Equal(t, uint64(2*perPart), h.Acked)
	}
}

// IDs find their topic; one without it is refused, naming the problem.
func TestTopicsRouteIDsByTopic(t *testing.T) {
	bed := newTopicBed()
	c := newTopicsConsumer(t, bed, []string{"a", "b"})
	bed.stream("b", "c2").push(1, "k", "v")
	m := receive(t, c)
	require.Equal(t, consumer.ID{Topic: "b", Cluster: "c2", Partition: 1, Pulsar: m.ID.Pulsar}, m.ID)
	assert.Equal(t, "b c2/1/1:0:-1", m.ID.String())
	back, err := consumer.ParseID(m.ID.String())
	require.NoError(t, err)
	assert.Equal(t, "b", back.Topic)
	assert.Equal(t, m.ID.String(), back.String())

	require.NoError(t, c.AckID(context.Background(), m.ID))
	require.NoError(t, c.NackID(m.ID))
	assert.Equal(t, []string{"ack 1:0", "nack 1:0"}, bed.stream("b", "c2").log())
	assert.Empty(t, bed.stream("a", "c2").log())

	noTopic := m.ID
	noTopic.Topic = ""
	err = c.AckID(context.Background(), noTopic)
	require.ErrorIs(t, err, consumer.ErrUnknownTopic)
	var ce *consumer.ClusterError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "c2", ce.Cluster)
	err = c.SeekByID(context.Background(), noTopic)
	require.ErrorIs(t, err, consumer.ErrBadPosition)
	require.ErrorIs(t, err, consumer.ErrUnknownTopic)
}

// SeekByTime reaches every topic's clusters, and a message Chan's
// goroutines hold from before it is dropped (it was read before the seek).
func TestTopicsSeekDropsWhatChanHolds(t *testing.T) {
	bed := newTopicBed()
	c := newTopicsConsumer(t, bed, []string{"a", "b"})
	ch := c.Chan()
	s := bed.stream("a", "c1")
	s.push(0, "k", "before")
	require.Eventually(t, func() bool { return len(s.ch) == 0 }, time.Minute, time.Millisecond, "taken by Chan's goroutines")
	at := time.Now()
	require.NoError(t, c.SeekByTime(context.Background(), at))
	for _, tp := range []string{"a", "b"} {
		for _, cl := range []string{"c1", "c2"} {
			st := bed.stream(tp, cl)
			st.mu.Lock()
			assert.Equal(t, []time.Time{at}, st.seeks, "%s %s", tp, cl)
			st.mu.Unlock()
		}
	}
	s.push(0, "k", "after")
	m := <-ch
	assert.Equal(t, "after", string(m.Value))
	require.NoError(t, c.Close(context.Background()))
	_, open := <-ch
	assert.False(t, open)
}

// Close ends a Receive that waits, and every goroutine (goleak checks).
func TestTopicsCloseEndsReceive(t *testing.T) {
	bed := newTopicBed()
	c := newTopicsConsumer(t, bed, []string{"a", "b"})
	done := make(chan error, 1)
	go func() {
		_, err := c.Receive(context.Background())
		done <- err
	}()
	require.NoError(t, c.Close(context.Background()))
	require.ErrorIs(t, <-done, consumer.ErrClosed)
	_, err := c.Receive(context.Background())
	require.ErrorIs(t, err, consumer.ErrClosed)
	require.ErrorIs(t, c.AckID(context.Background(), consumer.ID{Topic: "a", Cluster: "c1"}), consumer.ErrClosed)
}

// A subscription that one topic refuses fails New, naming the topic; the
// other topic's Consumer is closed (goleak checks).
func TestTopicsNewNamesTheTopicThatFailed(t *testing.T) {
	bed := newTopicBed()
	refused := errors.New("refused")
	connect := func(ctx context.Context, cl topology.Cluster, topic string, share int) (consumer.Stream, func() error, error) {
		if topic == "b" && cl.Name == "c2" {
			return nil, nil, refused
		}
		return bed.connect(ctx, cl, topic, share)
	}
	_, err := consumer.New(context.Background(), topo(2), consumer.Topics("a", "b"), consumer.Subscription("s"),
		consumer.WithTopicConnector(connect), consumer.RequireAllClusters(true))
	require.ErrorIs(t, err, refused)
	assert.Contains(t, err.Error(), `topic "b"`)
	assert.NotContains(t, err.Error(), `topic "a"`)
}

func TestTopicsBadOptions(t *testing.T) {
	id := consumer.ID{Cluster: "c1", Partition: 0}
	for name, tc := range map[string]struct {
		opts []consumer.Opt
		want error
	}{
		"no name":        {[]consumer.Opt{consumer.Topics()}, consumer.ErrNoTopic},
		"empty name":     {[]consumer.Opt{consumer.Topics("a", "")}, consumer.ErrBadOption},
		"twice":          {[]consumer.Opt{consumer.Topics("a", "b", "a")}, consumer.ErrBadOption},
		"and Topic":      {[]consumer.Opt{consumer.Topic("a"), consumer.Topics("b")}, consumer.ErrBadOption},
		"one DLQ":        {[]consumer.Opt{consumer.Topics("a", "b"), consumer.DeadLetter(consumer.DeadLetterPolicy{MaxDeliveries: 3, Topic: "dlq"})}, consumer.ErrBadOption},
		"one retry":      {[]consumer.Opt{consumer.Topics("a", "b"), consumer.Retry(consumer.RetryPolicy{MaxReconsumes: 3, Topic: "r"})}, consumer.ErrBadOption},
		"ID no topic":    {[]consumer.Opt{consumer.Topics("a", "b"), consumer.StartAfter(id)}, consumer.ErrBadPosition},
		"ID other topic": {[]consumer.Opt{consumer.Topic("a"), consumer.StartAfter(consumer.ID{Topic: "b", Cluster: "c1"})}, consumer.ErrBadPosition},
	} {
		t.Run(name, func(t *testing.T) {
			opts := append([]consumer.Opt{consumer.Subscription("s"), consumer.WithTopicConnector(newTopicBed().connect)}, tc.opts...)
			_, err := consumer.New(context.Background(), topo(2), opts...)
			require.ErrorIs(t, err, tc.want)
		})
	}
}

// Topics with one name is Topic: IDs carry no Topic, the text is as
// before.
func TestTopicsOfOneIsTopic(t *testing.T) {
	bed := newTopicBed()
	c := newTopicsConsumer(t, bed, []string{"only"})
	assert.Equal(t, []string{"only"}, c.Topics())
	bed.stream("only", "c1").push(0, "k", "v")
	m := receive(t, c)
	assert.Equal(t, "", m.ID.Topic)
	assert.Equal(t, "c1/0/1:0:-1", m.ID.String())
	assert.Equal(t, "", c.Health(context.Background())[0].Topic)
}

// An Update that one topic's Consumer refuses is applied to no topic: the
// topics that took it are put back on the old topology (a cluster they
// added is removed again, one they reconnected goes back to its old
// settings), and the error names the topic and the cluster that failed.
func TestTopicsUpdateIsAllOrNothing(t *testing.T) {
	ctx := context.Background()
	refused := errors.New("refused")
	for name, tc := range map[string]struct {
		change  func(*topology.Topology)
		cluster string // the one that fails
	}{
		"add":       {func(tp *topology.Topology) { tp.Clusters = topo(3).Clusters }, "c3"},
		"reconnect": {func(tp *topology.Topology) { tp.Clusters[1].ServiceURL = "pulsar://127.0.0.1:7777" }, "c2"},
	} {
		t.Run(name, func(t *testing.T) {
			bed := newTopicBed()
			var mu sync.Mutex
			urls := map[string]string{} // the URL each topic's latest subscription on a cluster used
			connect := func(ctx context.Context, cl topology.Cluster, topic string, share int) (consumer.Stream, func() error, error) {
				mu.Lock()
				defer mu.Unlock()
				if topic == "b" && (cl.Name == "c3" || cl.ServiceURL == "pulsar://127.0.0.1:7777") {
					return nil, nil, refused
				}
				urls[topic+" "+cl.Name] = cl.ServiceURL
				return bed.connect(ctx, cl, topic, share)
			}
			c, err := consumer.New(ctx, topo(2), consumer.Topics("a", "b"), consumer.Subscription("s"), consumer.WithTopicConnector(connect))
			require.NoError(t, err)
			t.Cleanup(func() { _ = c.Close(ctx) })

			next := topo(2)
			tc.change(next)
			err = c.Update(ctx, next)
			require.ErrorIs(t, err, refused)
			var ce *consumer.ClusterError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tc.cluster, ce.Cluster)
			assert.Contains(t, err.Error(), `topic "b"`)
			assert.NotContains(t, err.Error(), `topic "a"`, "topic a was put back")

			var read []string
			for _, h := range c.Health(ctx) {
				if !h.Draining {
					read = append(read, h.Topic+" "+h.Cluster)
				}
			}
			assert.Equal(t, []string{"a c1", "a c2", "b c1", "b c2"}, read, "every topic on the old topology")
			mu.Lock()
			assert.Equal(t, topo(2).Clusters[1].ServiceURL, urls["a c2"], "topic a's c2 back on its old settings")
			mu.Unlock()
		})
	}
}
