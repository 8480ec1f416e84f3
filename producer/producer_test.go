package producer_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

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
