package producer_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/producer"
)

// trail records outcomes in the order they were reported.
type trail struct {
	mu  sync.Mutex
	got []string
}

func (tr *trail) add(s string) {
	tr.mu.Lock()
	tr.got = append(tr.got, s)
	tr.mu.Unlock()
}

func (tr *trail) list() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]string(nil), tr.got...)
}

func (tr *trail) cb(name string, done *sync.WaitGroup) producer.Callback {
	done.Add(1)
	return func(producer.ID, *producer.Message, error) {
		tr.add(name)
		done.Done()
	}
}

// Issue 12, finding 2: a failure before acceptance was called back inline,
// ahead of the key's earlier messages still in flight.
func TestFailuresBeforeAcceptanceKeepCallOrder(t *testing.T) {
	fake := newFake(1)
	fake.Cluster("c1").Hold()
	p := newProducer(t, fake, 1)
	dead, cancel := context.WithCancel(context.Background())
	cancel()

	var tr trail
	var wg sync.WaitGroup
	p.SendAsync(context.Background(), &producer.Message{Key: "k", Value: []byte("m0")}, tr.cb("m0", &wg))
	p.SendAsync(dead, &producer.Message{Key: "k", Value: []byte("m1")}, tr.cb("m1", &wg))
	p.SendAsync(context.Background(), &producer.Message{Key: "k", Value: []byte("m2")}, tr.cb("m2", &wg))
	sent := make(chan error, 1)
	go func() {
		_, err := p.Send(dead, &producer.Message{Key: "k", Value: []byte("m3")})
		tr.add("m3")
		sent <- err
	}()
	require.Never(t, func() bool { return len(tr.list()) > 0 }, 50*time.Millisecond, time.Millisecond,
		"nothing is reported before m0's outcome")
	fake.Cluster("c1").Partition(0).Ack()
	wg.Wait()
	err := <-sent
	assert.Equal(t, []string{"m0", "m1", "m2", "m3"}, tr.list())
	assert.ErrorIs(t, err, context.Canceled)
	assert.True(t, producer.NotWritten(err))
	assert.Equal(t, producer.ReasonCanceled, producer.Reason(err))
}

// Issue 12, findings 6 and 7: a Send whose ctx ends after hand-over said
// "may be written" with the same error as "not written", and gave its
// budget back while pulsar-client-go still held the message.
func TestSendCtxEndingAfterHandOverIsUnknownAndKeepsBudget(t *testing.T) {
	fake := newFake(1)
	fake.Cluster("c1").Hold()
	p := newProducer(t, fake, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := p.Send(ctx, &producer.Message{Key: "k", Value: []byte("v")})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.False(t, producer.NotWritten(err), "the writer has the message: its outcome is unknown")
	assert.Equal(t, producer.ReasonDeadlineExceeded, producer.Reason(err))
	assert.Contains(t, err.Error(), "outcome unknown")
	msgs, bytes := p.Held()
	assert.EqualValues(t, 1, msgs[0], "the message holds its budget until the writer reports it")
	assert.EqualValues(t, 2, bytes[0])
	assert.Equal(t, []string{"k"}, fake.Cluster("c1").Partition(0).Keys())

	fake.Cluster("c1").Partition(0).Ack()
	require.Eventually(t, func() bool { m, _ := p.Held(); return m[0] == 0 }, 5*time.Second, time.Millisecond)
}

// Issue 12, finding 3: Close, Flush or a blocking SendAsync called from a
// callback deadlocked.
func TestCallsThatWouldWaitInACallbackFail(t *testing.T) {
	fake := newFake(1)
	fake.Cluster("c1").Hold()
	p := newProducer(t, fake, 1, producer.MaxPendingMessages(1))
	type result struct{ send, flush, close, async error }
	got := make(chan result, 1)
	p.SendAsync(context.Background(), &producer.Message{Key: "k"}, func(producer.ID, *producer.Message, error) {
		var r result
		_, r.send = p.Send(context.Background(), &producer.Message{Key: "k"})
		r.flush = p.Flush(context.Background())
		r.close = p.Close(context.Background())
		// The buffer (1 message) is held by the message whose callback
		// this is: waiting for space here would wait for itself.
		async := make(chan error, 1)
		p.SendAsync(context.Background(), &producer.Message{Key: "k2"}, func(_ producer.ID, _ *producer.Message, err error) { async <- err })
		go func() {
			r.async = <-async
			got <- r
		}()
	})
	fake.Cluster("c1").Partition(0).Ack()
	var r result
	select {
	case r = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("a call made from a callback deadlocked")
	}
	for name, err := range map[string]error{"Send": r.send, "Flush": r.flush, "Close": r.close, "SendAsync": r.async} {
		assert.ErrorIs(t, err, producer.ErrInCallback, name)
		assert.Equal(t, producer.ReasonInCallback, producer.Reason(err), name)
	}
	assert.True(t, producer.NotWritten(r.send))
	// Close from the callback did nothing: the producer still works.
	fake.Cluster("c1").Release()
	_, err := p.Send(context.Background(), &producer.Message{Key: "k"})
	require.NoError(t, err)
	require.NoError(t, p.Close(context.Background()))
}

// Issue 12, finding 9: methods of a nil *Producer panicked.
func TestNilProducer(t *testing.T) {
	var p *producer.Producer
	ctx := context.Background()
	_, err := p.Send(ctx, &producer.Message{Key: "k"})
	assert.ErrorIs(t, err, producer.ErrNilProducer)
	assert.True(t, producer.NotWritten(err))
	got := make(chan error, 1)
	p.SendAsync(ctx, &producer.Message{Key: "k"}, func(_ producer.ID, _ *producer.Message, err error) { got <- err })
	assert.ErrorIs(t, <-got, producer.ErrNilProducer)
	p.SendAsync(ctx, &producer.Message{Key: "k"}, nil)
	assert.ErrorIs(t, p.Flush(ctx), producer.ErrNilProducer)
	assert.ErrorIs(t, p.Close(ctx), producer.ErrNilProducer)
	_, err = p.BeginTxn()
	assert.ErrorIs(t, err, producer.ErrNilProducer)
	assert.ErrorIs(t, p.RunInTxn(ctx, func(context.Context, *producer.Txn) error { return nil }), producer.ErrNilProducer)
	_, err = p.SendTxnBulk(ctx, nil, 1)
	assert.ErrorIs(t, err, producer.ErrNilProducer)
	assert.Nil(t, p.Health())
	assert.Nil(t, p.Clusters())
	assert.Nil(t, p.Partitions())
	c, part := p.Placement("k")
	assert.Equal(t, "", c)
	assert.Equal(t, -1, part)
}

// Issue 12, finding 8: a nil Value was written as a null value.
func TestNilValueIsEmptyNullValueIsNull(t *testing.T) {
	fake := newFake(1)
	p := newProducer(t, fake, 1)
	ctx := context.Background()
	for _, m := range []*producer.Message{
		{Key: "nil"},
		{Key: "empty", Value: []byte{}},
		{Key: "null", NullValue: true},
	} {
		_, err := p.Send(ctx, m)
		require.NoError(t, err)
	}
	var values [][]byte
	for _, m := range fake.Cluster("c1").Partition(0).Messages() {
		values = append(values, m.Value)
	}
	require.Len(t, values, 3)
	assert.NotNil(t, values[0], "nil Value: an empty payload, not a null value")
	assert.Empty(t, values[0])
	assert.NotNil(t, values[1])
	assert.Nil(t, values[2], "NullValue: pulsar-client-go sends a nil payload as a null value")

	_, err := p.Send(ctx, &producer.Message{Key: "bad", NullValue: true, Value: []byte("x")})
	assert.ErrorIs(t, err, producer.ErrBadMessage)
	assert.True(t, producer.NotWritten(err))
	assert.Contains(t, err.Error(), "NullValue")
	assert.Len(t, fake.Cluster("c1").Partition(0).Keys(), 3, "the bad message never reached the writer")
}

// Issue 12, finding 1: a cluster marked down came back only when an ack
// moved; under Spill, or with keyless traffic only, nothing went to it
// once its pending messages had timed out, so it stayed down for ever.
func TestDownClusterComesBackByProbe(t *testing.T) {
	for _, tc := range []struct {
		name    string
		policy  producer.DownPolicy
		keyless bool
	}{
		{"spill, keyed traffic", producer.Spill, false},
		{"fail fast, keyless traffic", producer.FailFast, true},
		{"wait up, keyless traffic", producer.WaitUp, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := newFake(1)
			c2 := fake.Cluster("c2")
			c2.Hold()
			const every = 10 * time.Millisecond
			p := newProducer(t, fake, 3, producer.DownAfter(50*time.Millisecond),
				producer.OnClusterDown(tc.policy), producer.DownProbeInterval(every))
			c2.FailProbes(errors.New("no answer"))
			stall(t, p)
			// The pending message times out: c2 holds nothing, and nothing
			// new goes to it.
			c2.Partition(0).Fail(pulsar.ErrSendTimeout)
			traffic := func() {
				key := ""
				if !tc.keyless {
					key = keysWhere(p, "c2", true, 1)[0]
				}
				_, err := sendErr(p, key)
				require.NoError(t, err)
			}
			for range 20 {
				traffic()
			}
			require.Eventually(t, func() bool { return c2.Probes() >= 3 },
				5*time.Second, time.Millisecond, "a down cluster is probed")
			assert.False(t, p.Health()[1].Up, "failed probes keep it down")

			c2.FailProbes(nil)
			c2.Release()
			require.Eventually(t, func() bool { traffic(); return p.Health()[1].Up }, 5*time.Second, time.Millisecond)
			key := keysWhere(p, "c2", true, 1)[0]
			id, err := p.Send(context.Background(), &producer.Message{Key: key})
			require.NoError(t, err)
			assert.Equal(t, "c2", id.Cluster, "its keys go home")
		})
	}
}

// Issue 12, finding 6: Close spun on calls in progress, ignoring its ctx.
func TestCloseHonoursCtxWhileACommitHangs(t *testing.T) {
	fake := newFake(1)
	c1 := fake.Cluster("c1")
	// The stalled begin goes on after its client closes, as
	// pulsar-client-go v0.21.0's does when its request was not yet written
	// (it re-queues it and reconnects without end).
	c1.OutliveClose()
	p, err := producer.New(context.Background(), topo(1), producer.Topic("t"),
		fake.Opt(), producer.Transactions(true))
	require.NoError(t, err)
	release := c1.StallBegins()
	committed := make(chan error, 1)
	go func() {
		committed <- p.RunInTxn(context.Background(), func(_ context.Context, tx *producer.Txn) error {
			return tx.Send(&producer.Message{Key: "k"})
		}, producer.TxnTimeout(time.Hour))
	}()
	require.Eventually(t, func() bool { return c1.Stalled() == 1 }, 5*time.Second, time.Millisecond,
		"the commit reaches its begin")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	closed := make(chan error, 1)
	go func() { closed <- p.Close(ctx) }()
	select {
	case err = <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close ignored its ctx")
	}
	assert.ErrorIs(t, err, context.DeadlineExceeded, "the begin still runs in pulsar-client-go: Close says so")
	release() // the begin answers; its goroutine ends (goleak checks)
	require.ErrorIs(t, <-committed, producer.ErrTxnAborted)
}

// Close waits for calls in the middle of a hand-over; a Flush waiting on
// a writer that never answers must not hold it (it would wait for ever
// with a Background ctx).
func TestCloseEndsAFlushWaitingOnAWriter(t *testing.T) {
	fake := newFake(1)
	fake.Cluster("c1").Hold()
	p := newProducer(t, fake, 1)
	o := newOutcomes(t)
	o.expect(1)
	p.SendAsync(context.Background(), &producer.Message{Key: "k"}, o.cb)
	flushed := make(chan error, 1)
	go func() { flushed <- p.Flush(context.Background()) }()
	require.Never(t, func() bool { return len(flushed) > 0 }, 20*time.Millisecond, time.Millisecond)
	// Close's own flush waits (for its ctx) on the writer that never
	// answers; the Flush in progress must not hold it beyond that.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	closed := make(chan error, 1)
	go func() { closed <- p.Close(ctx) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close waited on a Flush that waits on a writer")
	}
	require.NoError(t, <-flushed, "Flush returns once Close has reported every outcome")
	o.wait(t)
	assert.ErrorIs(t, o.errs[firstKey(o)], producer.ErrClosed)
}

func firstKey(o *outcomes) *producer.Message {
	o.mu.Lock()
	defer o.mu.Unlock()
	for m := range o.errs {
		return m
	}
	return nil
}

// CI of stop 28 (e2e faults, a cluster killed and restarted): a
// pulsar-client-go producer's flush returns the error of its last pending
// message, and Flush passed it on, so a Flush over a message that had
// timed out failed as if it had not finished. That error is the message's
// outcome, reported through its own callback. Flush and Close return nil
// once every outcome is in, whatever the outcomes.
func TestFlushAndCloseDoNotReturnAMessagesFailure(t *testing.T) {
	for _, call := range []string{"Flush", "Close"} {
		t.Run(call, func(t *testing.T) {
			ctx := context.Background()
			fake := newFake(1)
			part := fake.Cluster("c1").Partition(0)
			fake.Cluster("c1").Hold()
			p := newProducer(t, fake, 1)
			o := newOutcomes(t)
			o.expect(2)
			for _, v := range []string{"a", "b"} {
				p.SendAsync(ctx, &producer.Message{Key: "k", Value: []byte(v)}, o.cb)
			}
			done := make(chan error, 1)
			go func() {
				if call == "Flush" {
					done <- p.Flush(ctx)
				} else {
					done <- p.Close(ctx)
				}
			}()
			require.Eventually(t, func() bool { return part.Flushing() == 1 }, 10*time.Second, time.Millisecond)
			part.Fail(pulsar.ErrSendTimeout)
			require.NoError(t, <-done, "every message has its outcome")
			o.wait(t)
			assert.Equal(t, []string{"a", "b"}, o.order["k"])
			for m, err := range o.errs {
				assert.ErrorIs(t, err, pulsar.ErrSendTimeout, string(m.Value))
			}
		})
	}
}
