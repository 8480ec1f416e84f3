package producer_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/keyroute/keyroute/producer"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// outcomes counts callbacks per message and fails on a second one.
type outcomes struct {
	t     *testing.T
	mu    sync.Mutex
	seen  map[*producer.Message]int
	errs  map[*producer.Message]error
	ids   map[*producer.Message]producer.ID
	order map[string][]string // per key: values in callback order
	wg    sync.WaitGroup
}

func newOutcomes(t *testing.T) *outcomes {
	return &outcomes{t: t, seen: map[*producer.Message]int{}, errs: map[*producer.Message]error{},
		ids: map[*producer.Message]producer.ID{}, order: map[string][]string{}}
}

func (o *outcomes) expect(n int) { o.wg.Add(n) }

// asyncErr hands msg to SendAsync and waits for its callback's error.
func asyncErr(ctx context.Context, p *producer.Producer, msg *producer.Message) error {
	got := make(chan error, 1)
	p.SendAsync(ctx, msg, func(_ producer.ID, _ *producer.Message, err error) { got <- err })
	return <-got
}

func (o *outcomes) cb(id producer.ID, m *producer.Message, err error) {
	o.mu.Lock()
	o.seen[m]++
	if o.seen[m] > 1 {
		o.t.Errorf("message %q %q got %d outcomes", m.Key, m.Value, o.seen[m])
	}
	o.errs[m] = err
	o.ids[m] = id
	o.order[m.Key] = append(o.order[m.Key], string(m.Value))
	o.mu.Unlock()
	o.wg.Done()
}

func (o *outcomes) wait(t *testing.T) {
	t.Helper()
	done := make(chan struct{})
	go func() { o.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("outcomes missing after 10s")
	}
}

func TestRoutesEachKeyToItsPlacementInOrder(t *testing.T) {
	fake := newFake(4)
	p := newProducer(t, fake, 5)
	o := newOutcomes(t)
	const keys, perKey = 200, 20
	o.expect(keys * perKey)
	msgs := make([]*producer.Message, 0, keys*perKey)
	for i := 0; i < perKey; i++ {
		for k := 0; k < keys; k++ {
			m := &producer.Message{Key: fmt.Sprintf("key-%d", k), Value: []byte(fmt.Sprint(i))}
			msgs = append(msgs, m)
			if i%5 == 4 {
				o.wg.Done() // sync send: no callback
				id, err := p.Send(context.Background(), m)
				require.NoError(t, err)
				c, part := p.Placement(m.Key)
				assert.Equal(t, c, id.Cluster)
				assert.Equal(t, part, id.Partition)
				continue
			}
			p.SendAsync(context.Background(), m, o.cb)
		}
	}
	o.wait(t)
	require.NoError(t, p.Flush(context.Background()))
	// Every key's messages are in one writer, in hand-over order.
	for k := 0; k < keys; k++ {
		key := fmt.Sprintf("key-%d", k)
		c, part := p.Placement(key)
		var got []string
		for _, m := range fake.Cluster(c).Partition(part).Messages() {
			if m.Key == key {
				got = append(got, string(m.Value))
			}
		}
		want := make([]string, perKey)
		for i := range want {
			want[i] = fmt.Sprint(i)
		}
		require.Equal(t, want, got, "key %s", key)
	}
	for m, err := range o.errs {
		require.NoError(t, err)
		c, part := p.Placement(m.Key)
		assert.Equal(t, c, o.ids[m].Cluster)
		assert.Equal(t, part, o.ids[m].Partition)
	}
}

func TestCallbacksRunInHandOverOrderPerKey(t *testing.T) {
	p := newProducer(t, newFake(2), 3)
	o := newOutcomes(t)
	const n = 5000
	o.expect(n)
	for i := 0; i < n; i++ {
		p.SendAsync(context.Background(), &producer.Message{Key: fmt.Sprint("k", i%7), Value: []byte(fmt.Sprintf("%05d", i))}, o.cb)
	}
	o.wait(t)
	for key, vals := range o.order {
		for i := 1; i < len(vals); i++ {
			require.Less(t, vals[i-1], vals[i], "key %s", key)
		}
	}
}

func TestSlowCallbackDoesNotStallOtherClusters(t *testing.T) {
	p := newProducer(t, newFake(1), 5)
	blocked := "k-blocked"
	slowCluster, _ := p.Placement(blocked)
	release := make(chan struct{})
	var slowDone sync.WaitGroup
	slowDone.Add(1)
	// The fake acks inline, on the sending goroutine, as pulsar-client-go's
	// reader goroutine would: a blocking callback there would block SendAsync.
	p.SendAsync(context.Background(), &producer.Message{Key: blocked}, func(producer.ID, *producer.Message, error) {
		<-release
		slowDone.Done()
	})
	var fast atomic.Int64
	var wg sync.WaitGroup
	sent := 0
	for i := 0; sent < 1000; i++ {
		key := fmt.Sprint("other-", i)
		if c, _ := p.Placement(key); c == slowCluster {
			continue
		}
		sent++
		wg.Add(1)
		p.SendAsync(context.Background(), &producer.Message{Key: key}, func(_ producer.ID, _ *producer.Message, err error) {
			assert.NoError(t, err)
			fast.Add(1)
			wg.Done()
		})
	}
	wg.Wait()
	assert.EqualValues(t, 1000, fast.Load())
	close(release)
	slowDone.Wait()
}

func TestDeadClusterDoesNotBlockHealthyOnes(t *testing.T) {
	fake := newFake(1)
	fake.Cluster("c3").Hold() // never acks unless told
	p := newProducer(t, fake, 5, producer.MaxPendingMessages(50))
	// Fill c3's share (10 messages) and more: the extra sends must wait and
	// then give up when their ctx ends.
	var deadKeys, liveKeys []string
	for i := 0; len(deadKeys) < 15 || len(liveKeys) < 500; i++ {
		key := fmt.Sprint("k", i)
		if c, _ := p.Placement(key); c == "c3" {
			deadKeys = append(deadKeys, key)
		} else {
			liveKeys = append(liveKeys, key)
		}
	}
	stuck := make(chan error, 15)
	handed := make(chan struct{})
	go func() {
		defer close(handed)
		for _, k := range deadKeys[:15] {
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			p.SendAsync(ctx, &producer.Message{Key: k}, func(_ producer.ID, _ *producer.Message, err error) {
				if err != nil {
					stuck <- err
				}
			})
			cancel()
		}
	}()
	var wg sync.WaitGroup
	for _, k := range liveKeys[:500] {
		wg.Add(1)
		p.SendAsync(context.Background(), &producer.Message{Key: k}, func(_ producer.ID, _ *producer.Message, err error) {
			assert.NoError(t, err)
			wg.Done()
		})
	}
	wg.Wait() // healthy clusters finished while c3 is stuck
	require.Eventually(t, func() bool { msgs, _ := p.Held(); return msgs[2] == 10 }, 5*time.Second, time.Millisecond,
		"c3 holds exactly its share")
	<-handed
	select {
	case err := <-stuck:
		t.Fatalf("a send that gave up was reported before the earlier messages of its partition: %v", err)
	default:
	}
	// The sends that gave up are reported after the earlier messages of
	// their key (of c3's only partition): once those are acknowledged.
	fake.Cluster("c3").Partition(0).Ack()
	for i := 0; i < 5; i++ {
		err := <-stuck
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.True(t, producer.NotWritten(err), "gave up before the writer had it: %v", err)
		var se *producer.SendError
		require.ErrorAs(t, err, &se)
		assert.Equal(t, "c3", se.Cluster)
	}
}

func TestCloseGivesEveryPendingMessageOneOutcome(t *testing.T) {
	fake := newFake(2)
	fake.Cluster("c1").Hold()
	p, err := producer.New(context.Background(), topo(2), producer.Topic("t"), fake.Opt())
	require.NoError(t, err)
	o := newOutcomes(t)
	const n = 300
	o.expect(n)
	for i := 0; i < n; i++ {
		p.SendAsync(context.Background(), &producer.Message{Key: fmt.Sprint(i), Value: []byte("v")}, o.cb)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	closeErr := p.Close(ctx)
	assert.ErrorIs(t, closeErr, context.DeadlineExceeded, "c1 never flushes")
	var ce *producer.ClusterError
	require.ErrorAs(t, closeErr, &ce)
	assert.Equal(t, "c1", ce.Cluster)
	o.wait(t)
	var closed, ok int
	for m, err := range o.errs {
		if c, _ := p.Placement(m.Key); c == "c1" {
			require.ErrorIs(t, err, producer.ErrClosed)
			closed++
		} else {
			require.NoError(t, err)
			ok++
		}
	}
	assert.Equal(t, n, closed+ok)
	assert.Positive(t, closed)
	assert.Positive(t, ok)

	// After Close: every call fails with ErrClosed, callbacks still run once.
	_, err = p.Send(context.Background(), &producer.Message{Key: "x"})
	assert.ErrorIs(t, err, producer.ErrClosed)
	var got error
	p.SendAsync(context.Background(), &producer.Message{Key: "x"}, func(_ producer.ID, _ *producer.Message, err error) { got = err })
	assert.ErrorIs(t, got, producer.ErrClosed)
	assert.ErrorIs(t, p.Flush(context.Background()), producer.ErrClosed)
	assert.Equal(t, closeErr, p.Close(context.Background()), "Close is idempotent")
}

func TestBackPressureHonoursCtx(t *testing.T) {
	fake := newFake(1)
	fake.Cluster("c1").Hold()
	p := newProducer(t, fake, 1, producer.MaxPendingMessages(3))
	for i := 0; i < 3; i++ {
		p.SendAsync(context.Background(), &producer.Message{Key: "k"}, nil)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	gotc := make(chan error, 1)
	start := time.Now()
	p.SendAsync(ctx, &producer.Message{Key: "k"}, func(_ producer.ID, _ *producer.Message, err error) { gotc <- err })
	assert.GreaterOrEqual(t, time.Since(start), 40*time.Millisecond)
	got := <-gotc
	assert.ErrorIs(t, got, context.DeadlineExceeded)
	assert.ErrorIs(t, got, ctx.Err())
	assert.True(t, producer.NotWritten(got))
	_, err := p.Send(ctx, &producer.Message{Key: "k"})
	assert.ErrorIs(t, err, ctx.Err())
	assert.True(t, producer.NotWritten(err))
	// Acks free the space: the next send goes through.
	fake.Cluster("c1").Release()
	_, err = p.Send(context.Background(), &producer.Message{Key: "k"})
	assert.NoError(t, err)
}

func TestMemoryLimitBindsAndAllowsOneOversizeMessage(t *testing.T) {
	fake := newFake(1)
	fake.Cluster("c1").Hold()
	p := newProducer(t, fake, 1, producer.MemoryLimit(100))
	big := &producer.Message{Key: "k", Value: make([]byte, 500)}
	p.SendAsync(context.Background(), big, nil) // alone: allowed over the limit
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, asyncErr(ctx, p, &producer.Message{Key: "k", Value: []byte("x")}), context.DeadlineExceeded)
	_, bytes := p.Held()
	assert.EqualValues(t, 501, bytes[0])
	fake.Cluster("c1").Partition(0).Ack()
}

func TestErrorsAreClassifiedAndNamed(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cause error
		want  error
	}{
		{"too large", pulsar.ErrMessageTooLarge, producer.ErrMessageTooLarge},
		{"timeout", pulsar.ErrSendTimeout, producer.ErrSendTimeout},
		{"closed", pulsar.ErrProducerClosed, producer.ErrClosed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := newFake(3)
			p := newProducer(t, fake, 2)
			c, part := p.Placement("key-1")
			fake.Cluster(c).Partition(part).FailSends(tc.cause)
			_, err := p.Send(context.Background(), &producer.Message{Key: "key-1"})
			assertSendError(t, err, tc.want, tc.cause, c, part)
			var async error
			p.SendAsync(context.Background(), &producer.Message{Key: "key-1"}, func(_ producer.ID, _ *producer.Message, err error) { async = err })
			require.NoError(t, p.Flush(context.Background()))
			assertSendError(t, async, tc.want, tc.cause, c, part)
		})
	}
}

func assertSendError(t *testing.T, err, want, cause error, cluster string, part int) {
	t.Helper()
	require.ErrorIs(t, err, want)
	require.ErrorIs(t, err, cause)
	var se *producer.SendError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "key-1", se.Key)
	assert.Equal(t, cluster, se.Cluster)
	assert.Equal(t, part, se.Partition)
	assert.Contains(t, se.Error(), cluster)
}

func TestNilMessage(t *testing.T) {
	p := newProducer(t, newFake(1), 1)
	_, err := p.Send(context.Background(), nil)
	assert.ErrorIs(t, err, producer.ErrNilMessage)
	var got error
	p.SendAsync(context.Background(), nil, func(_ producer.ID, _ *producer.Message, err error) { got = err })
	assert.ErrorIs(t, got, producer.ErrNilMessage)
}

func TestKeylessMessagesSpreadOverClusters(t *testing.T) {
	p := newProducer(t, newFake(3), 5)
	perCluster := map[string]int{}
	var mu sync.Mutex
	for i := 0; i < 64*500; i++ {
		p.SendAsync(context.Background(), &producer.Message{Value: []byte("x")}, func(id producer.ID, _ *producer.Message, err error) {
			require.NoError(t, err)
			mu.Lock()
			perCluster[id.Cluster]++
			mu.Unlock()
		})
	}
	require.NoError(t, p.Flush(context.Background()))
	require.Len(t, perCluster, 5)
	for c, n := range perCluster {
		assert.InDelta(t, 64*100, n, 64*100*0.3, "cluster %s", c)
	}
}

func TestDuplicateWriterCallbackIsIgnored(t *testing.T) {
	fake := newFake(1)
	fake.Cluster("c1").Hold()
	p := newProducer(t, fake, 1)
	o := newOutcomes(t)
	o.expect(1)
	m := &producer.Message{Key: "k"}
	p.SendAsync(context.Background(), m, o.cb)
	fake.Cluster("c1").Partition(0).ReportTwice(errors.New("late second callback"))
	o.wait(t)
	require.NoError(t, p.Flush(context.Background()))
	assert.Equal(t, 1, o.seen[m])
	assert.NoError(t, o.errs[m])
}

// The callback goroutine is woken at the end of each batch; a batch whose
// end is never reported (a batch-mate timed out or failed first) must still
// get its callbacks.
func TestCallbacksOfABatchWithoutItsEnd(t *testing.T) {
	fake := newFake(1)
	fake.Cluster("c1").Hold()
	p := newProducer(t, fake, 1)
	o := newOutcomes(t)
	const n = 3
	o.expect(n)
	for i := range n {
		p.SendAsync(context.Background(), &producer.Message{Key: "k", Value: []byte(fmt.Sprint(i))}, o.cb)
	}
	fake.Cluster("c1").Partition(0).AckMissing(1)
	o.wait(t)
	assert.Equal(t, []string{"0", "1", "2"}, o.order["k"])
	for m, err := range o.errs {
		assert.NoError(t, err, "message %q", m.Value)
	}
}

func TestNewRejectsBadInput(t *testing.T) {
	fake := newFake(1)
	ctx := context.Background()
	_, err := producer.New(ctx, topo(2), fake.Opt())
	assert.ErrorIs(t, err, producer.ErrNoTopic)
	for _, o := range []producer.Opt{
		producer.BatchMaxMessages(0), producer.BatchMaxBytes(-1), producer.Linger(0),
		producer.MaxPendingMessages(0), producer.MemoryLimit(0), producer.SendTimeout(-time.Second),
		producer.MaxPendingMessages(producer.MaxPendingLimit + 1), producer.MemoryLimit(producer.MemoryLimitMax + 1),
		producer.Compression(producer.Codec(42)),
	} {
		_, err := producer.New(ctx, topo(2), producer.Topic("t"), fake.Opt(), o)
		assert.ErrorIs(t, err, producer.ErrBadOption)
	}
	_, err = producer.New(ctx, nil, producer.Topic("t"))
	assert.ErrorIs(t, err, producer.ErrBadTopology)
	bad := topo(2)
	bad.Clusters[1].Name = bad.Clusters[0].Name
	_, err = producer.New(ctx, bad, producer.Topic("t"), fake.Opt())
	assert.ErrorIs(t, err, producer.ErrBadTopology)
}

func TestNewNamesEveryClusterThatFailedToConnect(t *testing.T) {
	fake := newFake(1)
	boom := errors.New("connection refused")
	fake.Cluster("c2").FailConnect(boom)
	fake.Cluster("c4").FailConnect(boom)
	_, err := producer.New(context.Background(), topo(5), producer.Topic("t"), fake.Opt())
	require.ErrorIs(t, err, producer.ErrConnect)
	require.ErrorIs(t, err, boom)
	assert.Contains(t, err.Error(), `"c2"`)
	assert.Contains(t, err.Error(), `"c4"`)
	assert.NotContains(t, err.Error(), `"c1"`)
	var ce *producer.ClusterError
	require.ErrorAs(t, err, &ce)
	// The clusters that did connect were closed again.
	for _, name := range []string{"c1", "c3", "c5"} {
		assert.Equal(t, 1, fake.Cluster(name).Connects(), name)
		assert.Zero(t, fake.Cluster(name).Writers(), name)
	}
}

func TestParseCodec(t *testing.T) {
	for _, c := range []producer.Codec{producer.LZ4, producer.NoCompression, producer.ZLib, producer.ZSTD} {
		got, err := producer.ParseCodec(c.String())
		require.NoError(t, err)
		assert.Equal(t, c, got)
	}
	_, err := producer.ParseCodec("snappy")
	assert.ErrorIs(t, err, producer.ErrBadOption)
}

func TestLoggerGetsConnectAndCloseLines(t *testing.T) {
	var buf syncBuffer
	fake := newFake(2)
	fake.Cluster("c2").Hold()
	p, err := producer.New(context.Background(), topo(2), producer.Topic("t"), fake.Opt(),
		producer.Logger(slog.New(slog.NewTextHandler(&buf, nil))))
	require.NoError(t, err)
	for i := 0; i < 50; i++ {
		p.SendAsync(context.Background(), &producer.Message{Key: fmt.Sprint(i)}, nil)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_ = p.Close(ctx)
	out := buf.String()
	assert.Contains(t, out, `cluster connected" cluster=c1 topic=t partitions=2`)
	assert.Contains(t, out, `messages failed at close" cluster=c2`)
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestFailWhenFullInsteadOfBlocking(t *testing.T) {
	fake := newFake(1)
	fake.Cluster("c1").Hold()
	p := newProducer(t, fake, 1, producer.MaxPendingMessages(2), producer.BlockWhenFull(false))
	for i := 0; i < 2; i++ {
		p.SendAsync(context.Background(), &producer.Message{Key: "k"}, nil)
	}
	// The held messages are acknowledged only at the end: a Send or
	// SendAsync that waited for space would never return.
	_, err := p.Send(context.Background(), &producer.Message{Key: "k"})
	require.ErrorIs(t, err, producer.ErrBufferFull)
	var se *producer.SendError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "c1", se.Cluster)
	require.ErrorIs(t, asyncErr(context.Background(), p, &producer.Message{Key: "k"}), producer.ErrBufferFull)
	fake.Cluster("c1").Partition(0).Ack()
}
