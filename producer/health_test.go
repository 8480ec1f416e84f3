package producer_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/producer"
)

// keysWhere returns n keys whose own cluster is (or is not) the named one.
func keysWhere(p *producer.Producer, cluster string, on bool, n int) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		k := fmt.Sprint("key-", i)
		if c, _ := p.Placement(k); (c == cluster) == on {
			out = append(out, k)
		}
	}
	return out
}

// stall makes c2 hold a message without an ack until it counts as down.
func stall(t *testing.T, p *producer.Producer) {
	t.Helper()
	p.SendAsync(context.Background(), &producer.Message{Key: keysWhere(p, "c2", true, 1)[0]}, nil)
	require.Eventually(t, func() bool { return !p.Health()[1].Up }, 30*time.Second, 5*time.Millisecond)
}

func sendErr(p *producer.Producer, key string) (producer.ID, error) {
	var id producer.ID
	var got error
	var wg sync.WaitGroup
	wg.Add(1)
	p.SendAsync(context.Background(), &producer.Message{Key: key}, func(i producer.ID, _ *producer.Message, err error) {
		id, got = i, err
		wg.Done()
	})
	wg.Wait()
	return id, got
}

func TestFailFastAfterNoAckForDownAfterThenUpAgain(t *testing.T) {
	fake := newFake(1)
	fake.Cluster("c2").Hold()
	p := newProducer(t, fake, 3, producer.DownAfter(50*time.Millisecond))
	start := time.Now()
	stall(t, p)
	assert.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond)
	h := p.Health()
	assert.True(t, h[0].Up)
	assert.False(t, h[1].Up)
	assert.EqualValues(t, 1, h[1].PendingMessages)

	down := keysWhere(p, "c2", true, 5)
	for _, k := range down {
		_, err := p.Send(context.Background(), &producer.Message{Key: k})
		require.ErrorIs(t, err, producer.ErrClusterDown)
		var se *producer.SendError
		require.ErrorAs(t, err, &se)
		assert.Equal(t, "c2", se.Cluster)
		_, err = sendErr(p, k)
		require.ErrorIs(t, err, producer.ErrClusterDown)
	}
	// Healthy clusters are untouched.
	for _, k := range keysWhere(p, "c2", false, 20) {
		_, err := sendErr(p, k)
		require.NoError(t, err)
	}
	// Keyless messages go around the down cluster.
	for i := 0; i < 64*20; i++ {
		id, err := sendErr(p, "")
		require.NoError(t, err)
		require.NotEqual(t, "c2", id.Cluster)
	}
	// The probes succeed, but c2 still holds a message: it stays down
	// until the first ack brings it back.
	time.Sleep(3 * producer.DefaultDownProbeInterval / 2)
	assert.False(t, p.Health()[1].Up, "a cluster that holds unacknowledged messages is not up on a probe")
	fake.Cluster("c2").Release()
	require.Eventually(t, func() bool { return p.Health()[1].Up }, 5*time.Second, 5*time.Millisecond)
	id, err := p.Send(context.Background(), &producer.Message{Key: down[1]})
	require.NoError(t, err)
	assert.Equal(t, "c2", id.Cluster)
}

func TestSpillSendsToTheKeysNextCluster(t *testing.T) {
	fake := newFake(1)
	fake.Cluster("c2").Hold()
	p := newProducer(t, fake, 3, producer.DownAfter(50*time.Millisecond), producer.OnClusterDown(producer.Spill))
	stall(t, p)
	for _, k := range keysWhere(p, "c2", true, 50) {
		id, err := sendErr(p, k)
		require.NoError(t, err)
		assert.NotEqual(t, "c2", id.Cluster)
	}
	fake.Cluster("c2").Partition(0).Ack()
}

func TestWaitUpWaitsForRecoveryOrItsBound(t *testing.T) {
	fake := newFake(1)
	fake.Cluster("c2").Hold()
	p := newProducer(t, fake, 3, producer.DownAfter(50*time.Millisecond),
		producer.OnClusterDown(producer.WaitUp), producer.DownWait(100*time.Millisecond))
	stall(t, p)
	key := keysWhere(p, "c2", true, 2)[1]
	start := time.Now()
	_, err := p.Send(context.Background(), &producer.Message{Key: key})
	require.ErrorIs(t, err, producer.ErrClusterDown)
	assert.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err = p.Send(ctx, &producer.Message{Key: key})
	require.ErrorIs(t, err, context.DeadlineExceeded)

	// A wait long enough that no stall of a busy machine ends it: the
	// send resumes when c2 recovers.
	long := newProducer(t, fake, 3, producer.DownAfter(50*time.Millisecond),
		producer.OnClusterDown(producer.WaitUp), producer.DownWait(time.Hour))
	stall(t, long)
	got := make(chan error, 1)
	go func() {
		_, err := long.Send(context.Background(), &producer.Message{Key: key})
		got <- err
	}()
	time.Sleep(20 * time.Millisecond) // most likely waiting by now; either way it must succeed
	fake.Cluster("c2").Release()      // c2 recovers within the wait
	select {
	case err := <-got:
		require.NoError(t, err)
	case <-time.After(time.Minute):
		t.Fatal("send did not resume after recovery")
	}
}

func TestBadDownOptions(t *testing.T) {
	fake := newFake(1)
	for _, o := range []producer.Opt{producer.DownAfter(0), producer.DownWait(-1), producer.OnClusterDown(producer.DownPolicy(9))} {
		_, err := producer.New(context.Background(), topo(1), producer.Topic("t"), fake.Opt(), o)
		assert.ErrorIs(t, err, producer.ErrBadOption)
	}
}

func TestSlowCallbackIsNotADownCluster(t *testing.T) {
	p := newProducer(t, newFake(1), 2, producer.DownAfter(30*time.Millisecond))
	release := make(chan struct{})
	p.SendAsync(context.Background(), &producer.Message{Key: keysWhere(p, "c1", true, 1)[0]},
		func(producer.ID, *producer.Message, error) { <-release })
	deadline := time.Now().Add(200 * time.Millisecond)
	for time.Now().Before(deadline) {
		require.True(t, p.Health()[0].Up, "a callback that takes long is not the cluster's fault")
		time.Sleep(5 * time.Millisecond)
	}
	assert.EqualValues(t, 1, p.Health()[0].PendingMessages, "its message still holds the buffer")
	close(release)
}
