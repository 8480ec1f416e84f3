package producer_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/producer"
	"github.com/keyroute/keyroute/producer/producertest"
)

// startDegraded opens a Producer on c1..c3 of fake with c2 black-holed:
// New returns after StartTimeout with c2 down and not connected. opts
// come after the test's own.
func startDegraded(t *testing.T, fake *producertest.Clusters, opts ...producer.Opt) *producer.Producer {
	t.Helper()
	fake.Cluster("c2").BlackHole(true)
	opts = append([]producer.Opt{producer.StartTimeout(20 * time.Millisecond), producer.DownProbeInterval(10 * time.Millisecond)}, opts...)
	p := newProducer(t, fake, 3, opts...)
	// At least one of c1 and c3 had joined when New returned; under load
	// the other may join just after.
	joined(t, p, 0)
	joined(t, p, 2)
	h := p.Health()
	require.Nil(t, h[0].Err)
	require.False(t, h[1].Up, "c2 did not answer: it starts down")
	require.False(t, h[1].Connected)
	require.ErrorIs(t, h[1].Err, producer.ErrConnect, "Health says why")
	var ce *producer.ClusterError
	require.ErrorAs(t, h[1].Err, &ce)
	assert.Equal(t, "c2", ce.Cluster)
	n := fake.Cluster("c1").Partitions()
	assert.Equal(t, []int{n, 0, n}, p.Partitions(), "c2's partition count is read when it joins")
	return p
}

// joined waits until the named cluster (at index i) has joined.
func joined(t *testing.T, p *producer.Producer, i int) {
	t.Helper()
	require.Eventually(t, func() bool { h := p.Health()[i]; return h.Connected && h.Up },
		10*time.Second, time.Millisecond, "the cluster joins once it answers")
}

func TestStartDegradedFailFastThenJoins(t *testing.T) {
	fake := newFake(4)
	p := startDegraded(t, fake)
	down := keysWhere(p, "c2", true, 20)
	for _, k := range keysWhere(p, "c2", false, 50) {
		id, err := p.Send(context.Background(), &producer.Message{Key: k})
		require.NoError(t, err, "the clusters that answered carry their keys")
		assert.NotEqual(t, "c2", id.Cluster)
	}
	for _, k := range down {
		c, part := p.Placement(k)
		assert.Equal(t, "c2", c)
		assert.Equal(t, -1, part, "no partition before the count is known")
		_, err := p.Send(context.Background(), &producer.Message{Key: k})
		require.ErrorIs(t, err, producer.ErrClusterDown)
		assert.True(t, producer.NotWritten(err))
		var se *producer.SendError
		require.ErrorAs(t, err, &se)
		assert.Equal(t, "c2", se.Cluster)
	}
	assert.Zero(t, fake.Cluster("c2").Connects())

	fake.Cluster("c2").BlackHole(false)
	joined(t, p, 1)
	assert.Equal(t, []int{4, 4, 4}, p.Partitions())
	assert.Nil(t, p.Health()[1].Err)
	for _, k := range down {
		id, err := p.Send(context.Background(), &producer.Message{Key: k})
		require.NoError(t, err)
		_, part := p.Placement(k)
		assert.Equal(t, producer.ID{Cluster: "c2", Partition: part, MessageID: id.MessageID}, id)
	}
	assert.Len(t, fake.Cluster("c2").Messages(), len(down))
	assert.Equal(t, 1, fake.Cluster("c2").Connects(), "one connection, made when it answered")
}

// The refusals of a down cluster's keys and the messages sent after it
// joined are reported in call order, on callback goroutines.
func TestStartDegradedCallbacksInCallOrder(t *testing.T) {
	fake := newFake(2)
	p := startDegraded(t, fake)
	key := keysWhere(p, "c2", true, 1)[0]
	var (
		mu   sync.Mutex
		got  []int
		errs []error
		wg   sync.WaitGroup
	)
	send := func(i int) {
		wg.Add(1)
		p.SendAsync(context.Background(), &producer.Message{Key: key}, func(_ producer.ID, _ *producer.Message, err error) {
			mu.Lock()
			got, errs = append(got, i), append(errs, err)
			mu.Unlock()
			wg.Done()
		})
	}
	for i := range 50 {
		send(i)
	}
	fake.Cluster("c2").BlackHole(false)
	for i := 50; i < 2000; i++ { // across the join
		send(i)
	}
	joined(t, p, 1)
	for i := 2000; i < 2050; i++ {
		send(i)
	}
	wg.Wait()
	for i := range got {
		require.Equal(t, i, got[i], "callbacks in call order")
	}
	for i := range 50 {
		require.ErrorIs(t, errs[i], producer.ErrClusterDown)
	}
	for i := 2000; i < 2050; i++ {
		require.NoError(t, errs[i])
	}
}

func TestStartDegradedWaitUpResumesWhenItJoins(t *testing.T) {
	fake := newFake(3)
	p := startDegraded(t, fake, producer.OnClusterDown(producer.WaitUp), producer.DownWait(time.Hour))
	key := keysWhere(p, "c2", true, 1)[0]
	got := make(chan error, 1)
	go func() {
		_, err := p.Send(context.Background(), &producer.Message{Key: key})
		got <- err
	}()
	fake.Cluster("c2").BlackHole(false)
	require.NoError(t, <-got, "the message waited for c2 and went there")
	require.Len(t, fake.Cluster("c2").Messages(), 1)
	assert.Equal(t, key, fake.Cluster("c2").Messages()[0].Key)
}

func TestStartDegradedSpillsToTheNextCluster(t *testing.T) {
	fake := newFake(1)
	p := startDegraded(t, fake, producer.OnClusterDown(producer.Spill))
	for _, k := range keysWhere(p, "c2", true, 30) {
		id, err := p.Send(context.Background(), &producer.Message{Key: k})
		require.NoError(t, err)
		assert.NotEqual(t, "c2", id.Cluster)
	}
	for range 64 * 10 {
		id, err := p.Send(context.Background(), &producer.Message{})
		require.NoError(t, err)
		assert.NotEqual(t, "c2", id.Cluster, "keyless messages go around it")
	}
}

func TestStartDegradedFlushAndTransactions(t *testing.T) {
	fake := newFake(1)
	p := startDegraded(t, fake, producer.Transactions(true), producer.TxnPrebegin(0))
	require.NoError(t, p.Flush(context.Background()), "a cluster that has not joined holds nothing")
	up, down := keysWhere(p, "c2", false, 1)[0], keysWhere(p, "c2", true, 1)[0]
	err := p.RunInTxn(context.Background(), func(_ context.Context, tx *producer.Txn) error {
		return tx.Send(&producer.Message{Key: up})
	})
	require.NoError(t, err, "transactions run on the clusters that joined")
	err = p.RunInTxn(context.Background(), func(_ context.Context, tx *producer.Txn) error {
		return tx.Send(&producer.Message{Key: down})
	})
	require.ErrorIs(t, err, producer.ErrClusterDown, "a commit that touches c2 fails there")
	fake.Cluster("c2").BlackHole(false)
	joined(t, p, 1)
	err = p.RunInTxn(context.Background(), func(_ context.Context, tx *producer.Txn) error {
		return tx.Send(&producer.Message{Key: down})
	})
	require.NoError(t, err)
}

// A cluster that answers with an error is wrong, not down: New fails and
// names it, even while another cluster gives no answer.
func TestStartFailsOnAClusterThatAnswersWithAnError(t *testing.T) {
	fake := newFake(1)
	missing := errors.New("topic not found")
	fake.Cluster("c3").FailConnect(missing)
	fake.Cluster("c2").BlackHole(true)
	_, err := producer.New(context.Background(), topo(3), producer.Topic("t"), fake.Opt(),
		producer.StartTimeout(20*time.Millisecond))
	require.ErrorIs(t, err, producer.ErrConnect)
	require.ErrorIs(t, err, missing)
	var ce *producer.ClusterError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "c3", ce.Cluster)
	assert.NotContains(t, err.Error(), `"c2"`, "c2 is not named: it may still answer")
	assert.Zero(t, fake.Cluster("c1").Writers(), "New closed what it opened")
}

func TestStartWaitsForItsCtxWhileNoClusterAnswers(t *testing.T) {
	fake := newFake(1)
	for _, c := range []string{"c1", "c2"} {
		fake.Cluster(c).BlackHole(true)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for fake.Cluster("c1").Waiting()+fake.Cluster("c2").Waiting() < 2 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	_, err := producer.New(ctx, topo(2), producer.Topic("t"), fake.Opt(), producer.StartTimeout(time.Millisecond))
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, producer.ErrConnect)
	for _, c := range []string{"c1", "c2"} {
		assert.Contains(t, err.Error(), `"`+c+`"`)
	}
}

func TestRequireAllClustersKeepsAllOrNothing(t *testing.T) {
	fake := newFake(1)
	fake.Cluster("c2").BlackHole(true)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for fake.Cluster("c2").Waiting() == 0 {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(30 * time.Millisecond) // past StartTimeout: still waiting
		cancel()
	}()
	_, err := producer.New(ctx, topo(3), producer.Topic("t"), fake.Opt(),
		producer.StartTimeout(time.Millisecond), producer.RequireAllClusters(true))
	require.ErrorIs(t, err, context.Canceled)
	var ce *producer.ClusterError
	require.ErrorAs(t, err, &ce)
	assert.Contains(t, err.Error(), `"c2"`)
	closedBehind(t, fake, "c1", "c3")

	fake.Cluster("c2").BlackHole(false)
	p, err := producer.New(context.Background(), topo(3), producer.Topic("t"), fake.Opt(), producer.RequireAllClusters(true))
	require.NoError(t, err)
	require.NoError(t, p.Close(context.Background()))
}

// Close ends an attempt that is still waiting for its cluster, and leaves
// no goroutine behind (goleak, TestMain).
func TestCloseWhileAClusterHasNotAnswered(t *testing.T) {
	fake := newFake(1)
	p := startDegraded(t, fake)
	require.Eventually(t, func() bool { return fake.Cluster("c2").Waiting() > 0 }, 10*time.Second, time.Millisecond)
	require.NoError(t, p.Close(context.Background()))
	assert.Zero(t, fake.Cluster("c2").Waiting())
	fake.Cluster("c2").BlackHole(false)
	assert.Zero(t, fake.Cluster("c2").Connects(), "nothing joins after Close")
}

func TestBadStartTimeout(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Second} {
		_, err := producer.New(context.Background(), topo(1), producer.Topic("t"), newFake(1).Opt(), producer.StartTimeout(d))
		require.ErrorIs(t, err, producer.ErrBadOption)
		assert.Contains(t, err.Error(), "StartTimeout")
	}
}

// A ctx that ends before StartTimeout ends New, naming the cluster that
// had not answered, even when the others had opened their writers.
func TestStartCtxEndsBeforeStartTimeout(t *testing.T) {
	fake := newFake(1)
	fake.Cluster("c2").BlackHole(true)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for fake.Cluster("c1").Writers()+fake.Cluster("c3").Writers() < 2 || fake.Cluster("c2").Waiting() == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	_, err := producer.New(ctx, topo(3), producer.Topic("t"), fake.Opt(), producer.StartTimeout(time.Hour))
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, producer.ErrConnect)
	// c1 and c3 may be named too: their attempts may not have ended when
	// New saw ctx end.
	assert.Contains(t, err.Error(), `"c2"`)
	closedBehind(t, fake, "c1", "c3")
}

// closedBehind waits until the named clusters have no writer open: when
// New fails because its ctx ended, an attempt that had not ended closes
// what it opened when it does, in the background.
func closedBehind(t *testing.T, fake *producertest.Clusters, clusters ...string) {
	t.Helper()
	require.Eventually(t, func() bool {
		n := 0
		for _, c := range clusters {
			n += fake.Cluster(c).Writers()
		}
		return n == 0
	}, 10*time.Second, time.Millisecond, "what New opened is closed")
}
