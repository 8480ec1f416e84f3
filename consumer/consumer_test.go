package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/keyroute/keyroute"
	"github.com/keyroute/keyroute/consumer"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newConsumer(t *testing.T, bed *fakeBed, clusters int, opts ...consumer.Opt) *consumer.Consumer {
	t.Helper()
	opts = append([]consumer.Opt{consumer.Topic("t"), consumer.Subscription("s"), consumer.WithConnector(bed.connect)}, opts...)
	c, err := consumer.New(context.Background(), topo(clusters), opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// receive takes the next message; a message that never comes ends the
// test at its timeout.
func receive(t *testing.T, c *consumer.Consumer) *consumer.Message {
	t.Helper()
	m, err := c.Receive(context.Background())
	require.NoError(t, err)
	return m
}

// Every message of every cluster comes once, each partition's in order.
func TestMergeKeepsPartitionOrder(t *testing.T) {
	bed := newFakeBed(16)
	c := newConsumer(t, bed, 3)
	const perPart = 500
	var wg sync.WaitGroup
	for _, name := range []string{"c1", "c2", "c3"} {
		s := bed.stream(name)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perPart {
				for p := range int32(2) {
					s.push(p, fmt.Sprintf("%s-%d", name, p), fmt.Sprint(i))
				}
			}
		}()
	}
	next := map[string]int64{}
	for range 3 * 2 * perPart {
		m := receive(t, c)
		k := fmt.Sprintf("%s/%d", m.ID.Cluster, m.ID.Partition)
		require.Equal(t, next[k], m.ID.Pulsar.EntryID(), "partition %s out of order", k)
		require.Equal(t, fmt.Sprint(next[k]), string(m.Value))
		next[k]++
	}
	wg.Wait()
	assert.Len(t, next, 6)
	var received uint64
	for _, h := range c.Health(context.Background()) {
		received += h.Delivered
		assert.Equal(t, int64(-1), h.Backlog, "no admin URL: backlog unknown")
	}
	assert.Equal(t, uint64(3*2*perPart), received)
}

// A cluster that always has messages does not starve one that has few.
func TestBusyClusterDoesNotStarveOthers(t *testing.T) {
	bed := newFakeBed(64)
	c := newConsumer(t, bed, 2)
	busy, quiet := bed.stream("c1"), bed.stream("c2")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // c1 is never empty
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case busy.ch <- busy.msg(0, "busy"):
			}
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	for len(busy.ch) < cap(busy.ch) {
		time.Sleep(time.Millisecond)
	}
	for range 10 {
		quiet.push(0, "quiet", "")
	}
	// Served in turns, c2's ten come among the first few dozen; served one
	// cluster after the other, they would wait behind c1's endless queue.
	got := 0
	for i := 0; i < 200 && got < 10; i++ {
		if receive(t, c).ID.Cluster == "c2" {
			got++
		}
	}
	assert.Equal(t, 10, got, "c2's messages starved behind c1's")
}

func TestAckRoutesToTheMessagesCluster(t *testing.T) {
	ctx := context.Background()
	bed := newFakeBed(4)
	c := newConsumer(t, bed, 3, consumer.Type(consumer.Failover))
	bed.stream("c2").push(1, "k", "v")
	m := receive(t, c)
	require.Equal(t, "c2", m.ID.Cluster)
	require.Equal(t, 1, m.ID.Partition)
	require.NoError(t, c.Ack(ctx, m))
	require.NoError(t, c.AckID(ctx, m.ID))
	require.NoError(t, c.AckCumulative(ctx, m))
	require.NoError(t, c.Nack(m))
	require.NoError(t, c.NackID(m.ID))
	assert.Equal(t, []string{"ack 1:0", "ack 1:0", "cumul 1:0", "nack 1:0", "nack 1:0"}, bed.stream("c2").log())
	assert.Empty(t, bed.stream("c1").log())
	assert.Empty(t, bed.stream("c3").log())

	// An ID built from its fields (stored elsewhere, say) is the same ID.
	id := consumer.ID{Cluster: "c2", Partition: 1, Pulsar: m.ID.Pulsar}
	assert.Equal(t, m.ID, id)
	require.NoError(t, c.AckID(ctx, id))

	h := c.Health(context.Background())[1]
	assert.Equal(t, uint64(1), h.Delivered)
	assert.Equal(t, uint64(4), h.Acked)
	assert.Equal(t, uint64(2), h.Nacked)
	assert.Greater(t, h.Lag, time.Duration(0))
}

func TestAckErrorsNameTheCluster(t *testing.T) {
	ctx := context.Background()
	bed := newFakeBed(4)
	c := newConsumer(t, bed, 2, consumer.Type(consumer.Shared))
	bed.stream("c1").push(0, "k", "v")
	m := receive(t, c)

	var ce *consumer.ClusterError
	err := c.AckID(ctx, consumer.ID{Cluster: "west", Pulsar: m.ID.Pulsar})
	require.ErrorIs(t, err, consumer.ErrUnknownCluster)
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "west", ce.Cluster)
	assert.ErrorIs(t, c.AckID(ctx, consumer.ID{}), consumer.ErrUnknownCluster)
	assert.ErrorIs(t, c.Ack(ctx, nil), consumer.ErrNilMessage)
	assert.ErrorIs(t, c.AckCumulative(ctx, m), consumer.ErrCumulativeAck, "Shared has no cumulative ack")

	bed.stream("c1").ackErr = errors.New("broker said no")
	err = c.Ack(ctx, m)
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "c1", ce.Cluster)
	assert.Equal(t, uint64(0), c.Health(context.Background())[0].Acked, "a failed ack is not counted")

	require.NoError(t, c.Close(context.Background()))
	err = c.Ack(ctx, m)
	assert.ErrorIs(t, err, consumer.ErrClosed)
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "c1", ce.Cluster)
}

// A message read before SeekByTime and not yet taken is never delivered
// after it: neither one in pulsar-client-go's channel (it drops them) nor
// one that Chan's goroutine holds.
func TestSeekDropsMessagesReadBeforeIt(t *testing.T) {
	for _, viaChan := range []bool{false, true} {
		t.Run(fmt.Sprint("chan=", viaChan), func(t *testing.T) {
			bed := newFakeBed(8)
			c := newConsumer(t, bed, 1)
			s := bed.stream("c1")
			for i := range 5 {
				s.push(0, "old", fmt.Sprint(i))
			}
			next := func() *consumer.Message { return receive(t, c) }
			if viaChan {
				next = func() *consumer.Message { return <-c.Chan() }
			}
			require.Equal(t, "0", string(next().Value))
			if viaChan {
				waitFor(t, func() bool { return len(s.ch) == 3 }) // Chan's goroutine holds "1"
			}
			s.onSeek = func() { s.push(1, "new", "after") }
			require.NoError(t, c.SeekByTime(context.Background(), time.Unix(0, 0)))
			m := next()
			assert.Equal(t, "new", m.Key, "got %q=%s, read before the seek", m.Key, m.Value)
			assert.Len(t, s.seeks, 1)
			assert.Equal(t, uint64(2), c.Health(context.Background())[0].Delivered, "the dropped ones are not counted")
		})
	}
}

// A Receive waiting on empty clusters when a seek begins waits on after
// it and takes the first message of the new position.
func TestSeekWhileReceiveWaits(t *testing.T) {
	bed := newFakeBed(8)
	c := newConsumer(t, bed, 2)
	got := make(chan *consumer.Message, 1)
	go func() { got <- receive(t, c) }()
	s := bed.stream("c2")
	s.onSeek = func() { s.push(0, "new", "after") }
	require.NoError(t, c.SeekByTime(context.Background(), time.Unix(0, 0)))
	assert.Equal(t, "new", (<-got).Key)
	assert.Len(t, bed.stream("c1").seeks, 1)
}

func TestCloseEndsReceiveAndChan(t *testing.T) {
	bed := newFakeBed(4)
	c, err := consumer.New(context.Background(), topo(2), consumer.Topic("t"), consumer.Subscription("s"), consumer.WithConnector(bed.connect))
	require.NoError(t, err)
	errc := make(chan error, 1)
	go func() {
		_, err := c.Receive(context.Background())
		errc <- err
	}()
	require.NoError(t, c.Close(context.Background()))
	assert.ErrorIs(t, <-errc, consumer.ErrClosed)
	_, ok := <-c.Chan()
	assert.False(t, ok, "Chan is closed after Close")
	require.NoError(t, c.Close(context.Background()), "Close twice")
	assert.True(t, bed.stream("c1").closed && bed.stream("c2").closed)
	assert.ErrorIs(t, c.SeekByTime(context.Background(), time.Now()), consumer.ErrClosed)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c2 := newConsumer(t, bed, 1)
	_, err = c2.Receive(ctx)
	assert.ErrorIs(t, err, context.Canceled)
}

func TestNewNamesEveryFailedCluster(t *testing.T) {
	bed := newFakeBed(4)
	bed.failOn["c2"] = errors.New("subscription is of a different type")
	bed.failOn["c3"] = errors.New("connection refused")
	_, err := consumer.New(context.Background(), topo(3), consumer.Topic("t"), consumer.Subscription("s"), consumer.WithConnector(bed.connect))
	require.Error(t, err)
	var ce *consumer.ClusterError
	require.ErrorAs(t, err, &ce)
	assert.Contains(t, err.Error(), `"c2"`)
	assert.Contains(t, err.Error(), `"c3"`)
	assert.True(t, bed.stream("c1").closed, "the cluster that opened is closed again")
}

func TestNewRejectsBadInput(t *testing.T) {
	bed := newFakeBed(1)
	ctx := context.Background()
	with := func(opts ...consumer.Opt) error {
		_, err := consumer.New(ctx, topo(1), append([]consumer.Opt{consumer.WithConnector(bed.connect)}, opts...)...)
		return err
	}
	assert.ErrorIs(t, with(consumer.Subscription("s")), consumer.ErrNoTopic)
	assert.ErrorIs(t, with(consumer.Topic("t")), consumer.ErrNoSubscription)
	for _, o := range []consumer.Opt{
		consumer.MaxBuffered(0), consumer.Type(9), consumer.InitialPosition(-1),
		consumer.NackRedeliveryDelay(0), consumer.ProbeInterval(0), consumer.AckGrouping(-1, 0),
	} {
		err := with(consumer.Topic("t"), consumer.Subscription("s"), o)
		assert.ErrorIs(t, err, consumer.ErrBadOption)
	}
	_, err := consumer.New(ctx, nil, consumer.Topic("t"), consumer.Subscription("s"))
	assert.ErrorIs(t, err, consumer.ErrBadTopology)
}

func TestHealthFollowsProbes(t *testing.T) {
	bed := newFakeBed(1)
	const every = time.Millisecond
	c := newConsumer(t, bed, 2, consumer.ProbeInterval(every))
	bed.setProbe("c2", errors.New("connection refused"))
	waitFor(t, func() bool { return !c.Health(context.Background())[1].Connected })
	assert.True(t, c.Health(context.Background())[0].Connected)
	bed.setProbe("c2", nil)
	waitFor(t, func() bool { return c.Health(context.Background())[1].Connected })
}

// A probe that does not answer within ProbeInterval counts as down.
func TestHealthCountsAHangingProbeAsDown(t *testing.T) {
	bed := newFakeBed(1)
	hang := make(chan struct{})
	bed.hang = hang
	c := newConsumer(t, bed, 1, consumer.ProbeInterval(time.Millisecond))
	waitFor(t, func() bool { return !c.Health(context.Background())[0].Connected })
	close(hang)
	waitFor(t, func() bool { return c.Health(context.Background())[0].Connected })
}

// waitFor polls cond; the test's own deadline bounds it.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for !cond() {
		time.Sleep(time.Millisecond)
	}
}

func TestHealthAsksTheAdminAPIForTheBacklog(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/admin/v2/persistent/public/default/t/stats" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(`{"subscriptions":{"s":{"msgBacklog":17}}}`))
	}))
	defer srv.Close()
	bed := newFakeBed(1)
	tp := topo(2)
	tp.Clusters[0].AdminURL = srv.URL
	c, err := consumer.New(context.Background(), tp, consumer.Topic("t"), consumer.Subscription("s"), consumer.WithConnector(bed.connect))
	require.NoError(t, err)
	defer c.Close(context.Background())
	h := c.Health(context.Background())
	assert.Equal(t, int64(17), h[0].Backlog)
	assert.NoError(t, h[0].BacklogErr)
	assert.Equal(t, int64(-1), h[1].Backlog, "no admin URL")
}

func TestSharedClientsCloseTheConsumersMadeFromThem(t *testing.T) {
	tp := topo(2)
	cs, err := keyroute.NewClients(tp)
	require.NoError(t, err)
	bed := newFakeBed(1)
	opts := []consumer.Opt{consumer.Topic("t"), consumer.Subscription("s"), consumer.WithConnector(bed.connect), consumer.WithClients(cs)}
	c, err := consumer.New(context.Background(), tp, opts...)
	require.NoError(t, err)

	other := topo(2)
	other.Clusters[0].Weight = 2
	_, err = consumer.New(context.Background(), other, opts...)
	assert.ErrorIs(t, err, keyroute.ErrOtherTopology)
	_, err = consumer.New(context.Background(), tp, append(opts, consumer.ConfigureClient(func(string, *pulsar.ClientOptions) {}))...)
	assert.ErrorIs(t, err, consumer.ErrBadOption, "client settings belong to the shared clients")

	require.NoError(t, cs.Close(context.Background()))
	_, err = c.Receive(context.Background())
	assert.ErrorIs(t, err, consumer.ErrClosed, "closing the clients closed the consumer")
	_, err = consumer.New(context.Background(), tp, opts...)
	assert.ErrorIs(t, err, keyroute.ErrClosed)
}

// With AckWithResponse, an Ack waiting for a broker that does not answer
// ends with its ctx; Close waits for the acknowledgement still in flight.
func TestAckWithResponseEndsWithItsCtx(t *testing.T) {
	bed := newFakeBed(4)
	c := newConsumer(t, bed, 1, consumer.AckWithResponse(true))
	s := bed.stream("c1")
	s.push(0, "k", "v")
	m := receive(t, c)
	s.mu.Lock()
	s.block, s.waits = make(chan struct{}), make(chan struct{}, 1)
	s.mu.Unlock()

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- c.Ack(ctx, m) }()
	<-s.waits // the ack is with the broker
	cancel()
	err := <-errc
	assert.ErrorIs(t, err, context.Canceled)
	var ce *consumer.ClusterError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "c1", ce.Cluster)
	assert.Equal(t, uint64(0), c.Health(context.Background())[0].Acked)

	closed := make(chan error, 1)
	go func() { closed <- c.Close(context.Background()) }()
	close(s.block) // the broker answers at last; Close can end
	require.NoError(t, <-closed)
	assert.Equal(t, []string{"ack 0:0"}, s.log(), "the acknowledgement was sent once")
}

// The admin API is asked through one client per cluster: connections are
// reused from one Health to the next and released by Close.
func TestAdminConnectionsAreReusedAndReleased(t *testing.T) {
	var mu sync.Mutex
	states := map[http.ConnState]int{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"subscriptions":{"s":{"msgBacklog":1}}}`))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		mu.Lock()
		defer mu.Unlock()
		states[s]++
	}
	srv.Start()
	defer srv.Close()
	before := goleak.IgnoreCurrent()
	tp := topo(1)
	tp.Clusters[0].AdminURL = srv.URL
	c, err := consumer.New(context.Background(), tp, consumer.Topic("t"), consumer.Subscription("s"), consumer.WithConnector(newFakeBed(1).connect))
	require.NoError(t, err)
	for range 5 {
		require.Equal(t, int64(1), c.Health(context.Background())[0].Backlog)
	}
	require.NoError(t, c.Close(context.Background()))
	// Close closed the connection: its goroutines, the client's and the
	// server's, are gone (they would idle for 90 s otherwise).
	goleak.VerifyNone(t, before)
	mu.Lock()
	assert.Equal(t, 1, states[http.StateNew], "one connection for five Health calls")
	mu.Unlock()
	assert.ErrorIs(t, c.Health(context.Background())[0].BacklogErr, consumer.ErrClosed, "no admin call after Close")
}

// Close's ctx bounds the wait for a cluster that is slow to close; the
// closing goes on, and a later Close waits for it.
func TestCloseEndsWithItsCtx(t *testing.T) {
	bed := newFakeBed(1)
	c, err := consumer.New(context.Background(), topo(2), consumer.Topic("t"), consumer.Subscription("s"), consumer.WithConnector(bed.connect))
	require.NoError(t, err)
	slow := make(chan struct{})
	s := bed.stream("c2")
	s.mu.Lock()
	s.slow = slow
	s.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, c.Close(ctx), context.Canceled)
	_, err = c.Receive(context.Background())
	assert.ErrorIs(t, err, consumer.ErrClosed, "the stream stopped all the same")
	close(slow)
	require.NoError(t, c.Close(context.Background()))
	assert.True(t, bed.stream("c2").closed)
}

// The consumer reports closed, bad-option and bad-topology conditions with
// keyroute's sentinels, as the producer and Clients do.
func TestSharedSentinelsAreKeyroutes(t *testing.T) {
	assert.Equal(t, keyroute.ErrClosed, consumer.ErrClosed)
	assert.Equal(t, keyroute.ErrBadOption, consumer.ErrBadOption)
	assert.Equal(t, keyroute.ErrBadTopology, consumer.ErrBadTopology)
	_, err := consumer.New(context.Background(), nil, consumer.Topic("t"), consumer.Subscription("s"))
	assert.ErrorIs(t, err, keyroute.ErrBadTopology)
}
