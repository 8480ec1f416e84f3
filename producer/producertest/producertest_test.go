package producertest_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/keyroute/keyroute/producer"
	"github.com/keyroute/keyroute/producer/producertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// open opens a Producer on fake's clusters, closed at the end of the test.
func open(t *testing.T, fake *producertest.Clusters, clusters []string, opts ...producer.Opt) *producer.Producer {
	t.Helper()
	opts = append([]producer.Opt{producer.Topic("t"), fake.Opt()}, opts...)
	p, err := producer.New(context.Background(), producertest.Topology(clusters...), opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	return p
}

// outcome is one callback's arguments.
type outcome struct {
	id  producer.ID
	err error
}

// sendAll hands one message per key to SendAsync and returns the channel
// their outcomes come on.
func sendAll(p *producer.Producer, keys ...string) <-chan outcome {
	out := make(chan outcome, len(keys))
	for _, k := range keys {
		p.SendAsync(context.Background(), &producer.Message{Key: k, Value: []byte("v-" + k)},
			func(id producer.ID, _ *producer.Message, err error) { out <- outcome{id, err} })
	}
	return out
}

func TestHeldMessagesAreWrittenThenAcknowledgedAsOneBatch(t *testing.T) {
	fake := producertest.New()
	c1 := fake.Cluster("c1")
	c1.Hold()
	p := open(t, fake, []string{"c1"})
	got := sendAll(p, "a", "b", "c")

	part := c1.Partition(0)
	assert.Equal(t, 3, part.Held())
	msgs := part.Messages()
	require.Len(t, msgs, 3, "held messages are written")
	assert.Equal(t, []string{"a", "b", "c"}, part.Keys())
	assert.Equal(t, []byte("v-b"), msgs[1].Value)
	assert.Nil(t, msgs[1].ID, "not acknowledged yet")
	assert.Empty(t, got)

	part.Ack()
	assert.Zero(t, part.Held())
	for i := range 3 {
		o := <-got
		require.NoError(t, o.err)
		id := o.id.MessageID
		assert.Equal(t, []int64{0, int64(i), 3}, []int64{id.EntryID(), int64(id.BatchIdx()), int64(id.BatchSize())})
	}
	assert.Equal(t, "1:0:0:2", part.Messages()[2].ID.String())

	c1.Release()
	id, err := p.Send(context.Background(), &producer.Message{Key: "d"})
	require.NoError(t, err)
	assert.Equal(t, "c1/0/1:1:0", id.String(), "acknowledged at once again, as a batch of one")
	assert.EqualValues(t, 1, id.MessageID.BatchSize())
}

func TestRefusedMessagesAreNotWritten(t *testing.T) {
	fake := producertest.New()
	boom := errors.New("boom")
	fake.Cluster("c1").FailSendAt(1, boom)
	p := open(t, fake, []string{"c1"})
	got := sendAll(p, "a", "b", "c")
	var errs []error
	for range 3 {
		errs = append(errs, (<-got).err)
	}
	assert.NoError(t, errs[0])
	assert.ErrorIs(t, errs[1], boom)
	assert.NoError(t, errs[2])
	assert.Equal(t, []string{"a", "c"}, fake.Cluster("c1").Partition(0).Keys())

	fake.Cluster("c1").FailSends(boom)
	_, err := p.Send(context.Background(), &producer.Message{Key: "d"})
	assert.ErrorIs(t, err, boom)
	fake.Cluster("c1").FailSends(nil)
	_, err = p.Send(context.Background(), &producer.Message{Key: "e"})
	require.NoError(t, err)

	var ops []string
	for _, e := range fake.Events() {
		ops = append(ops, fmt.Sprintf("%s %s", e.Op, e.Key))
	}
	assert.Equal(t, []string{"send a", "ack a", "sendfail b", "send c", "ack c", "sendfail d", "send e", "ack e"}, ops)
}

func TestOnlyCommittedTransactionsAreVisible(t *testing.T) {
	fake := producertest.New()
	p := open(t, fake, []string{"c1"}, producer.Transactions(true), producer.TxnPrebegin(0))
	send := func(key string) func(context.Context, *producer.Txn) error {
		return func(_ context.Context, tx *producer.Txn) error { return tx.Send(&producer.Message{Key: key}) }
	}
	require.NoError(t, p.RunInTxn(context.Background(), send("committed")))
	veto := errors.New("veto")
	err := p.RunInTxn(context.Background(), send("aborted"),
		producer.BeforeCommit(func(context.Context, []string) error { return veto }))
	require.ErrorIs(t, err, veto)
	_, err = p.Send(context.Background(), &producer.Message{Key: "plain"})
	require.NoError(t, err)

	msgs := fake.Cluster("c1").Messages()
	require.Len(t, msgs, 2)
	assert.Equal(t, "committed", msgs[0].Key)
	assert.EqualValues(t, 1, msgs[0].Txn)
	assert.Equal(t, "plain", msgs[1].Key)
	assert.Zero(t, msgs[1].Txn)

	var evs []string
	for _, e := range fake.Events() {
		evs = append(evs, e.String())
	}
	assert.Equal(t, []string{
		`begin c1 txn 1`, `send c1/0 "committed" txn 1`, `ack c1/0 "committed" txn 1`, `commit c1 txn 1 (1 messages)`,
		`begin c1 txn 2`, `send c1/0 "aborted" txn 2`, `ack c1/0 "aborted" txn 2`, `abort c1 txn 2 (1 messages)`,
		`send c1/0 "plain"`, `ack c1/0 "plain"`,
	}, evs)
}

func TestTransactionsOffOnACluster(t *testing.T) {
	fake := producertest.New()
	fake.Cluster("c2").Transactions(false)
	p := open(t, fake, []string{"c1", "c2"}, producer.Transactions(true), producer.TxnPrebegin(0))
	_, err := p.BeginTxn()
	assert.ErrorIs(t, err, producer.ErrTxnDisabled)
}

func TestAsyncAcksComeInFullBatchesOrAtAFlush(t *testing.T) {
	fake := producertest.New(producertest.AsyncAcks(3))
	p := open(t, fake, []string{"c1"})
	got := sendAll(p, "a", "b", "c", "d")
	for range 3 {
		o := <-got
		require.NoError(t, o.err)
		assert.EqualValues(t, 3, o.id.MessageID.BatchSize())
	}
	part := fake.Cluster("c1").Partition(0)
	assert.Equal(t, 1, part.Held(), "a batch that is not full waits for a flush")
	require.NoError(t, p.Flush(context.Background()))
	o := <-got
	require.NoError(t, o.err)
	assert.Equal(t, "c1/0/1:1:0", o.id.String())
	require.NoError(t, p.Close(context.Background())) // goleak: the ack goroutines end
	assert.Zero(t, fake.Cluster("c1").Writers())
}

func TestPartitionsPerCluster(t *testing.T) {
	fake := producertest.New(producertest.Partitions(3), producertest.Partitions(2, "c2"), producertest.Partitions(0, "c3"))
	_, err := producer.New(context.Background(), producertest.Topology("c1", "c2", "c3"), producer.Topic("t"), fake.Opt())
	require.ErrorIs(t, err, producer.ErrConnect)
	var ce *producer.ClusterError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "c3", ce.Cluster, "a topic without partitions cannot be opened")

	p := open(t, fake, []string{"c1", "c2"})
	assert.Equal(t, []int{3, 2}, p.Partitions())
	assert.Equal(t, 5, fake.Cluster("c1").Writers()+fake.Cluster("c2").Writers())
}

func TestProducersShareTheFakeAndWhatItWrote(t *testing.T) {
	fake := producertest.New()
	p1 := open(t, fake, []string{"c1"})
	p2 := open(t, fake, []string{"c1"})
	for _, p := range []*producer.Producer{p1, p2, p1} {
		_, err := p.Send(context.Background(), &producer.Message{Key: "k"})
		require.NoError(t, err)
	}
	assert.Equal(t, 2, fake.Cluster("c1").Connects())
	assert.Equal(t, 2, fake.Cluster("c1").Writers())
	require.NoError(t, p1.Close(context.Background()))
	require.NoError(t, p2.Close(context.Background()))
	assert.Zero(t, fake.Cluster("c1").Writers())
	assert.Len(t, fake.Cluster("c1").Messages(), 3, "what was written stays")
}

func TestKeepMessagesFalseKeepsNoMessage(t *testing.T) {
	fake := producertest.New(producertest.KeepMessages(false))
	p := open(t, fake, []string{"c1"}, producer.Transactions(true), producer.TxnPrebegin(0))
	id, err := p.Send(context.Background(), &producer.Message{Key: "k"})
	require.NoError(t, err)
	assert.NotNil(t, id.MessageID)
	require.NoError(t, p.RunInTxn(context.Background(), func(_ context.Context, tx *producer.Txn) error {
		return tx.Send(&producer.Message{Key: "t"})
	}))
	assert.Empty(t, fake.Cluster("c1").Messages())
	var ops []producertest.Op
	for _, e := range fake.Events() {
		ops = append(ops, e.Op)
	}
	assert.Equal(t, []producertest.Op{producertest.OpBegin, producertest.OpCommit}, ops, "transaction events only")
}

func TestValuesAreCopied(t *testing.T) {
	fake := producertest.New()
	p := open(t, fake, []string{"c1"})
	buf := []byte("first")
	_, err := p.Send(context.Background(), &producer.Message{Key: "k", Value: buf})
	require.NoError(t, err)
	copy(buf, "reuse")
	_, err = p.Send(context.Background(), &producer.Message{Key: "k", NullValue: true})
	require.NoError(t, err)
	msgs := fake.Cluster("c1").Messages()
	assert.Equal(t, []byte("first"), msgs[0].Value)
	assert.Nil(t, msgs[1].Value, "a null value")
}

// readingObserver reads the fake from OnDone, which may run inside the
// fake's own calls.
type readingObserver struct{ fake *producertest.Clusters }

func (o readingObserver) OnStart(context.Context, *producer.Event) map[string]string { return nil }
func (o readingObserver) OnDone(ev *producer.Event)                                  { _ = o.fake.Events() }

func TestAnObserverMayReadTheFake(t *testing.T) {
	fake := producertest.New(producertest.AsyncAcks(2))
	p := open(t, fake, []string{"c1"}, producer.Observe(readingObserver{fake}))
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 100 {
				p.SendAsync(context.Background(), &producer.Message{Key: fmt.Sprint(g, "-", i)}, nil)
			}
		})
	}
	wg.Wait()
	require.NoError(t, p.Flush(context.Background()))
	assert.Len(t, fake.Cluster("c1").Messages(), 400)
}
