package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/consumer"
	"github.com/keyroute/keyroute/router"
	"github.com/keyroute/keyroute/topology"
)

// reconsumeCall is one ReconsumeLater a retryStream took.
type reconsumeCall struct {
	id          string // "partition:entry"
	key         string
	props       map[string]string
	delay       time.Duration
	afterClosed bool // the stream was closed already: the call would have hung
}

// retryStream is a fakeStream with pulsar-client-go's ReconsumeLater.
type retryStream struct {
	*fakeStream
	bed   *retryBed
	calls []reconsumeCall // guarded by fakeStream.mu
}

func (s *retryStream) ReconsumeLaterWithCustomProperties(m pulsar.Message, props map[string]string, delay time.Duration) {
	if s.bed.started != nil {
		s.bed.started <- struct{}{}
	}
	if s.bed.block != nil {
		<-s.bed.block
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, reconsumeCall{id: fmt.Sprintf("%d:%d", m.ID().PartitionIdx(), m.ID().EntryID()), key: m.Key(),
		props: maps.Clone(props), delay: delay, afterClosed: s.closed})
}

func (s *fakeStream) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// blockedIn reports whether a goroutine's stack shows fn calling call
// (for a wait on a lock: a goroutine's state, read without a clock).
func blockedIn(fn, call string) bool {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, fn) && strings.Contains(g, call) {
			return true
		}
	}
	return false
}

func (s *retryStream) reconsumed() []reconsumeCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]reconsumeCall(nil), s.calls...)
}

// retryBed is a fakeBed whose streams reconsume.
type retryBed struct {
	*fakeBed
	started chan struct{} // when set, gets a value as each call begins
	block   chan struct{} // when set, calls wait until it is closed

	mu      sync.Mutex
	streams map[string]*retryStream // the latest of each cluster
}

func newRetryBed() *retryBed {
	return &retryBed{fakeBed: newFakeBed(16), streams: map[string]*retryStream{}}
}

func (b *retryBed) connect(ctx context.Context, cl topology.Cluster, share int) (consumer.Stream, func() error, error) {
	s, probe, err := b.fakeBed.connect(ctx, cl, share)
	if err != nil {
		return nil, nil, err
	}
	rs := &retryStream{fakeStream: s.(*fakeStream), bed: b}
	b.mu.Lock()
	b.streams[cl.Name] = rs
	b.mu.Unlock()
	return rs, probe, nil
}

func (b *retryBed) stream(cluster string) *retryStream {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.streams[cluster]
}

var retryPolicy = consumer.Retry(consumer.RetryPolicy{MaxReconsumes: 3})

func newRetryConsumer(t *testing.T, b *retryBed, clusters int, opts ...consumer.Opt) *consumer.Consumer {
	t.Helper()
	return newConsumer(t, b.fakeBed, clusters, append([]consumer.Opt{consumer.WithConnector(b.connect), retryPolicy}, opts...)...)
}

// retryConsumerWaiting returns a Consumer with Retry over one fake
// cluster whose operation timeout, which bounds a closing's wait for a
// ReconsumeLater in flight, is op.
func retryConsumerWaiting(t *testing.T, b *retryBed, op time.Duration) *consumer.Consumer {
	t.Helper()
	tp := topo(1)
	tp.Clusters[0].Client.OperationTimeout = op
	c, err := consumer.New(context.Background(), tp, consumer.Topic("t"), consumer.Subscription("s"), consumer.WithConnector(b.connect), retryPolicy)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// pushRetried queues a message as one read from the retry topic: its
// partition index and entry are the retry topic's, and it carries
// pulsar-client-go's reconsume properties besides props.
func (s *fakeStream) pushRetried(part int32, entry int64, key, value string, props map[string]string) {
	p := map[string]string{pulsar.SysPropertyReconsumeTimes: "1", pulsar.SysPropertyDelayTime: "1000"}
	maps.Copy(p, props)
	s.ch <- pulsar.ConsumerMessage{Message: &fakeMsg{id: fakeID{part: part, entry: entry}, key: key, value: []byte(value), props: p, publish: time.Now()}}
}

// retryReceived returns a Consumer with Retry over one fake cluster, and
// a message it received.
func retryReceived(t *testing.T) (*retryBed, *consumer.Consumer, *consumer.Message) {
	t.Helper()
	b := newRetryBed()
	c := newRetryConsumer(t, b, 1)
	b.stream("c1").push(0, "k", "v")
	return b, c, receive(t, c)
}

// ReconsumeLater goes to the pulsar-client-go consumer of the message's
// own cluster, with the message, the delay and the properties, whether
// its ctx can end (a goroutine waits for the hand-over) or not.
func TestReconsumeLaterGoesToItsCluster(t *testing.T) {
	b := newRetryBed()
	c := newRetryConsumer(t, b, 3)
	b.stream("c2").pushProps(1, "k", "v", map[string]string{"why": "x"})
	m := receive(t, c)
	require.Equal(t, "c2", m.ID.Cluster)
	require.NoError(t, c.ReconsumeLater(context.Background(), m, 5*time.Second, map[string]string{"attempt": "1"}))

	b.stream("c3").push(0, "k3", "v3")
	m3 := receive(t, c)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	require.NoError(t, c.ReconsumeLater(ctx, m3, 0, nil))

	assert.Equal(t, []reconsumeCall{{id: "1:0", key: "k", props: map[string]string{"attempt": "1"}, delay: 5 * time.Second}}, b.stream("c2").reconsumed())
	assert.Equal(t, []reconsumeCall{{id: "0:0", key: "k3", delay: 0}}, b.stream("c3").reconsumed())
	assert.Empty(t, b.stream("c1").reconsumed())
	assert.Empty(t, b.stream("c2").log(), "pulsar-client-go acknowledges it once written, not keyroute")
}

// Each refusal is a clear error, never a panic, and nothing reaches a
// cluster.
func TestReconsumeLaterErrors(t *testing.T) {
	ctx := context.Background()
	t.Run("without Retry", func(t *testing.T) {
		bed := newFakeBed(16)
		c := newConsumer(t, bed, 1)
		bed.stream("c1").push(0, "k", "v")
		m := receive(t, c)
		require.ErrorIs(t, c.ReconsumeLater(ctx, m, time.Second, nil), consumer.ErrNoRetry)
		require.NoError(t, c.Ack(ctx, m), "the message is still the caller's")
	})
	t.Run("not a received message", func(t *testing.T) {
		c := newRetryConsumer(t, newRetryBed(), 1)
		require.ErrorIs(t, c.ReconsumeLater(ctx, nil, 0, nil), consumer.ErrNilMessage)
		require.ErrorIs(t, c.ReconsumeLater(ctx, &consumer.Message{Key: "k"}, 0, nil), consumer.ErrNilMessage)
	})
	t.Run("reserved property", func(t *testing.T) {
		b, c, m := retryReceived(t)
		err := c.ReconsumeLater(ctx, m, 0, map[string]string{"ok": "1", router.PropEpoch: "2"})
		require.ErrorIs(t, err, consumer.ErrReservedProperty)
		assert.Contains(t, err.Error(), router.PropEpoch)
		assert.Empty(t, b.stream("c1").reconsumed())
	})
	t.Run("ctx ended", func(t *testing.T) {
		b, c, m := retryReceived(t)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		require.ErrorIs(t, c.ReconsumeLater(cctx, m, 0, nil), context.Canceled)
		assert.Empty(t, b.stream("c1").reconsumed())
	})
	t.Run("closed", func(t *testing.T) {
		b, c, m := retryReceived(t)
		require.NoError(t, c.Close(ctx))
		err := c.ReconsumeLater(ctx, m, 0, nil)
		require.ErrorIs(t, err, consumer.ErrClosed)
		var ce *consumer.ClusterError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, "c1", ce.Cluster)
		assert.Empty(t, b.stream("c1").reconsumed())
		var nilc *consumer.Consumer
		require.ErrorIs(t, nilc.ReconsumeLater(ctx, m, 0, nil), consumer.ErrClosed)
	})
	t.Run("a consumer that cannot reconsume", func(t *testing.T) {
		bed := newFakeBed(16)
		c := newConsumer(t, bed, 2, retryPolicy)
		bed.stream("c2").push(0, "k", "v")
		m := receive(t, c)
		err := c.ReconsumeLater(ctx, m, 0, nil)
		require.ErrorIs(t, err, errors.ErrUnsupported)
		var ce *consumer.ClusterError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, "c2", ce.Cluster)
	})
}

// A message read from the retry topic passes the hand-over at once: it
// is not held for the origins its copied tag names, and its position,
// the retry topic's, does not move the frontier of the topic's partition
// with the same index (which would release a hold too early).
func TestRetriedMessagesPassTheHold(t *testing.T) {
	b := newRetryBed()
	c := newRetryConsumer(t, b, 2)
	s1, s2 := b.stream("c1").fakeStream, b.stream("c2").fakeStream

	// A retried copy of a moved message, whose origin has not passed.
	tagged := map[string]string{"app": "x"}
	router.Tag{Producer: pid, Epoch: 1, From: []router.Origin{origin("c1", 0, s1.at(0, 5))}}.AddTo(tagged)
	s2.pushRetried(0, 40, "k", "retried moved", tagged)
	assert.Equal(t, []string{"retried moved"}, recv(t, c, 1))
	assert.Zero(t, health(c, "c2").Held)

	// A retried message at entry 100 of the retry topic's partition 0,
	// then a moved message owing c1's partition 0 at entry 1.
	s1.pushRetried(0, 100, "r", "retried", nil)
	assert.Equal(t, []string{"retried"}, recv(t, c, 1))
	mpos := s1.at(0, 1)
	s2.pushMoved(0, "k", "new", pid, 1, origin("c1", 0, mpos))
	none(t, c)
	assert.Equal(t, int64(1), health(c, "c2").Held, "held: c1's partition 0 has not reached entry 1")
	s1.push(0, "k", "old")
	require.Equal(t, mpos, s1.pushMarker(0, pid, 1))
	assert.Equal(t, []string{"old", "new"}, recv(t, c, 2))
	none(t, c)
}

// Ack, Nack and AckCumulative of a retried message go to its cluster's
// pulsar-client-go consumer with its own ID, which routes them to the
// retry topic's partition consumer.
func TestRetriedMessagesAcknowledge(t *testing.T) {
	ctx := context.Background()
	b := newRetryBed()
	c := newRetryConsumer(t, b, 2)
	s2 := b.stream("c2")
	for i := range 3 {
		s2.pushRetried(0, int64(7+i), "k", fmt.Sprint(i), nil)
	}
	m0, m1, m2 := receive(t, c), receive(t, c), receive(t, c)
	assert.Equal(t, 1, m0.Reconsumes())
	require.NoError(t, c.Ack(ctx, m0))
	require.NoError(t, c.Nack(m1))
	require.NoError(t, c.AckCumulative(ctx, m2))
	assert.Equal(t, []string{"ack 0:7", "nack 0:8", "cumul 0:9"}, s2.log())
	assert.Empty(t, b.stream("c1").log())
}

// Reconsumes reads pulsar-client-go's count.
func TestReconsumes(t *testing.T) {
	assert.Equal(t, 0, (&consumer.Message{}).Reconsumes())
	assert.Equal(t, 2, (&consumer.Message{Properties: map[string]string{pulsar.SysPropertyReconsumeTimes: "2"}}).Reconsumes())
}

// A ReconsumeLater handing a message over holds off the closing of its
// subscription (pulsar-client-go's retry goroutine stops with it, and a
// later hand-over would wait for ever); Close waits for it, and one whose
// ctx ended still ends before Close returns.
func TestCloseWaitsForReconsumeLater(t *testing.T) {
	for _, cancellable := range []bool{false, true} {
		t.Run(fmt.Sprint("cancellable=", cancellable), func(t *testing.T) {
			b := newRetryBed()
			b.started, b.block = make(chan struct{}, 1), make(chan struct{})
			c := retryConsumerWaiting(t, b, time.Hour) // longer than the test: close waits for the hand-over
			s := b.stream("c1")
			s.push(0, "k", "v")
			m := receive(t, c)
			rctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if !cancellable {
				rctx = context.Background()
			}
			errc := make(chan error, 1)
			go func() { errc <- c.ReconsumeLater(rctx, m, time.Second, nil) }()
			<-b.started
			if cancellable {
				cancel()
				err := <-errc
				require.ErrorIs(t, err, context.Canceled)
				var ce *consumer.ClusterError
				require.ErrorAs(t, err, &ce)
				assert.Equal(t, "c1", ce.Cluster)
			}
			ended, stop := context.WithCancel(context.Background())
			stop()
			require.ErrorIs(t, c.Close(ended), context.Canceled, "the hand-over is still in flight")
			// The closing goes on in the background: wait until it has
			// closed the subscription, or waits for the hand-over.
			for !s.isClosed() && !blockedIn("consumer.(*cluster).shutRetries", "[select") {
				time.Sleep(time.Millisecond)
			}
			assert.False(t, s.isClosed(), "the subscription stays open while a hand-over is in flight")
			close(b.block)
			if !cancellable {
				require.NoError(t, <-errc)
			}
			require.NoError(t, c.Close(context.Background()))
			calls := s.reconsumed()
			require.Len(t, calls, 1)
			assert.False(t, calls[0].afterClosed)
			require.ErrorIs(t, c.ReconsumeLater(context.Background(), m, 0, nil), consumer.ErrClosed)
		})
	}
}

// A message of a subscription that was replaced since (a reconnect)
// goes through the cluster's current subscription, as its Ack does.
func TestReconsumeLaterAfterAReconnect(t *testing.T) {
	ctx := context.Background()
	b := newRetryBed()
	c := newRetryConsumer(t, b, 2)
	old := b.stream("c2")
	old.push(0, "k", "v")
	m := receive(t, c)
	moved := topo(2)
	moved.Clusters[1].ServiceURL = "pulsar://127.0.0.1:7777"
	require.NoError(t, c.Update(ctx, moved))
	now := b.stream("c2")
	require.NotSame(t, old, now)
	require.NoError(t, c.ReconsumeLater(ctx, m, time.Second, nil))
	assert.Empty(t, old.reconsumed())
	calls := now.reconsumed()
	require.Len(t, calls, 1)
	assert.Equal(t, "0:0", calls[0].id)
	assert.False(t, calls[0].afterClosed)
}

// A hand-over that pulsar-client-go's retry router never takes (v0.21.0
// retries opening its retry producer for ever: a retry topic that cannot
// be created) holds up neither an Update that reconnects its cluster nor
// Close: each waits for it at most the cluster's operation timeout, then
// closes the subscription, whether the ReconsumeLater gave up at its ctx
// or still waits (a ctx that cannot end: the caller's goroutine).
func TestStuckReconsumeLaterHoldsUpNeitherUpdateNorClose(t *testing.T) {
	for _, cancellable := range []bool{false, true} {
		t.Run(fmt.Sprint("cancellable=", cancellable), func(t *testing.T) {
			ctx := context.Background()
			b := newRetryBed()
			b.started, b.block = make(chan struct{}, 1), make(chan struct{})
			c := retryConsumerWaiting(t, b, time.Millisecond)
			s := b.stream("c1")
			s.push(0, "k", "v")
			m := receive(t, c)
			rctx, cancel := context.WithCancel(ctx)
			defer cancel()
			if !cancellable {
				rctx = ctx
			}
			errc := make(chan error, 1)
			go func() { errc <- c.ReconsumeLater(rctx, m, time.Second, nil) }()
			<-b.started
			if cancellable {
				cancel()
				require.ErrorIs(t, <-errc, context.Canceled)
			}

			moved := topo(1)
			moved.Clusters[0].ServiceURL = "pulsar://127.0.0.1:7777"
			moved.Clusters[0].Client.OperationTimeout = time.Millisecond
			require.NoError(t, c.Update(ctx, moved))
			assert.True(t, s.isClosed(), "the reconnect closed the old subscription")
			require.NoError(t, c.Close(ctx))

			close(b.block) // the router gets its producer at last
			if !cancellable {
				require.NoError(t, <-errc)
			}
			for len(s.reconsumed()) == 0 { // the goroutine left behind hands it over
				time.Sleep(time.Millisecond)
			}
			calls := s.reconsumed()
			require.Len(t, calls, 1)
			assert.True(t, calls[0].afterClosed, "handed over after its subscription closed: pulsar-client-go's router may have stopped (its goroutine would stay)")
		})
	}
}
