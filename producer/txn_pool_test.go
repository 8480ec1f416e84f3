package producer_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/producer"
	"github.com/keyroute/keyroute/producer/producertest"
)

// runOne commits one message with key in its own transaction.
func runOne(t *testing.T, p *producer.Producer, key string, opts ...producer.TxnOpt) {
	t.Helper()
	require.NoError(t, p.RunInTxn(context.Background(), func(_ context.Context, tx *producer.Txn) error {
		return tx.Send(&producer.Message{Key: key, Value: []byte("v")})
	}, opts...))
}

// txnOfSends returns the transaction of each send event on cluster, in order.
func txnOfSends(fake *producertest.Clusters, cluster string) (txns []uint64) {
	for _, e := range fake.Events() {
		if e.Op == producertest.OpSend && e.Cluster == cluster && e.Txn != 0 {
			txns = append(txns, e.Txn)
		}
	}
	return txns
}

// beginsBy returns the transactions begun on cluster, in order.
func beginsBy(fake *producertest.Clusters, cluster string) (txns []uint64) {
	for _, e := range fake.Events() {
		if e.Op == producertest.OpBegin && e.Cluster == cluster {
			txns = append(txns, e.Txn)
		}
	}
	return txns
}

// startPool commits one message on p's first cluster, which starts its
// pool, and waits until the pool holds n transactions.
func startPool(t *testing.T, p *producer.Producer, n int) {
	t.Helper()
	runOne(t, p, "a")
	require.Eventually(t, func() bool { return p.Pooled()[0] == n }, 10*time.Second, time.Millisecond)
}

func TestTxnPrebeginCommitTakesATransactionBegunBefore(t *testing.T) {
	fake := newFake(2)
	p := newTxnProducer(t, fake, 1, producer.TxnPrebegin(1))
	startPool(t, p, 1)

	begun := beginsBy(fake, "c1")
	runOne(t, p, "b")
	sends := txnOfSends(fake, "c1")
	assert.Contains(t, begun, sends[len(sends)-1], "the second commit's message is in a transaction begun before the commit")
	assert.Zero(t, count(fake, producertest.OpAbort, ""))
}

func TestTxnPrebeginRefreshEndsStaleTransactionsEmpty(t *testing.T) {
	fake := newFake(2)
	p := newTxnProducer(t, fake, 1, producer.TxnPrebegin(2))
	startPool(t, p, 2)
	stale := beginsBy(fake, "c1")

	p.AgePool(producer.DefaultTxnTimeout / 2)
	require.Eventually(t, func() bool {
		ended := 0
		for _, e := range fake.Events() {
			if e.Op == producertest.OpCommit && e.Messages == 0 {
				ended++
			}
		}
		return ended == 2 && p.Pooled()[0] == 2
	}, 10*time.Second, time.Millisecond, "both stale ones ended with an empty commit, two new ones begun")

	runOne(t, p, "b")
	sends := txnOfSends(fake, "c1")
	assert.NotContains(t, stale, sends[len(sends)-1], "a stale transaction is never taken")
	assert.Zero(t, count(fake, producertest.OpAbort, ""))
}

func TestTxnPrebeginOtherTimeoutBeginsItsOwn(t *testing.T) {
	fake := newFake(2)
	p := newTxnProducer(t, fake, 1, producer.TxnPrebegin(1))
	startPool(t, p, 1)
	begun := beginsBy(fake, "c1")
	runOne(t, p, "b", producer.TxnTimeout(time.Hour))
	sends := txnOfSends(fake, "c1")
	assert.NotContains(t, begun, sends[len(sends)-1], "the pooled transaction has the default timeout: the commit began its own")
	assert.Equal(t, []int{1}, p.Pooled(), "and left the pooled one for others")
}

func TestTxnPrebeginCloseEndsPooledTransactions(t *testing.T) {
	fake := newFake(2)
	p := newTxnProducer(t, fake, 2, producer.TxnPrebegin(3))
	keys := txnKeysOn(p, "c2", 1)
	runOne(t, p, keys[0])
	require.Eventually(t, func() bool { return p.Pooled()[1] == 3 }, 10*time.Second, time.Millisecond)
	require.NoError(t, p.Close(context.Background()))

	// Every transaction begun was ended; only c2, which a commit touched,
	// began any.
	open := map[uint64]bool{}
	for _, e := range fake.Events() {
		switch e.Op {
		case producertest.OpBegin:
			open[e.Txn] = true
			assert.Equal(t, "c2", e.Cluster)
		case producertest.OpCommit, producertest.OpAbort:
			delete(open, e.Txn)
		}
	}
	assert.Empty(t, open, "transactions left open after Close")
	assert.Equal(t, 4, count(fake, producertest.OpBegin, "c2"))
}

func TestTxnPrebeginBadCount(t *testing.T) {
	for _, n := range []int{-1, producer.MaxTxnPrebegin + 1} {
		_, err := producer.New(context.Background(), producertest.Topology("c1"),
			producer.Topic("t"), producer.Transactions(true), producer.TxnPrebegin(n), newFake(1).Opt())
		assert.ErrorIs(t, err, producer.ErrBadOption, "%d", n)
		assert.ErrorContains(t, err, "TxnPrebegin", "%d", n)
	}
}

func TestTxnPrebeginCloseWaitsForABeginUnderWay(t *testing.T) {
	fake := newFake(1)
	// DownAfter bounds Close's wait for a begin; far longer than this test.
	p := newTxnProducer(t, fake, 1, producer.TxnPrebegin(1), producer.DownAfter(time.Hour))
	startPool(t, p, 1)
	release := fake.Cluster("c1").StallBegins()
	defer release()
	runOne(t, p, "b") // takes the pooled one; the refill stalls
	require.Eventually(t, func() bool { return fake.Cluster("c1").Stalled() == 1 }, 10*time.Second, time.Millisecond)
	closed := make(chan error, 1)
	go func() { closed <- p.Close(context.Background()) }()
	require.Never(t, func() bool { return len(closed) > 0 }, 50*time.Millisecond, time.Millisecond,
		"Close waits for the begin under way")
	release()
	require.NoError(t, <-closed)
	// Its transaction was ended before the client closed: no transaction
	// is left open (a commit on a closed client fails).
	open := map[uint64]bool{}
	for _, e := range fake.Events() {
		switch e.Op {
		case producertest.OpBegin:
			open[e.Txn] = true
		case producertest.OpCommit:
			delete(open, e.Txn)
		}
	}
	assert.Empty(t, open)
}

func TestTxnPrebeginCloseStopsWaitingForABeginAfterDownAfter(t *testing.T) {
	fake := newFake(1)
	p := newTxnProducer(t, fake, 1, producer.TxnPrebegin(1), producer.DownAfter(20*time.Millisecond))
	startPool(t, p, 1)
	release := fake.Cluster("c1").StallBegins()
	defer release()
	runOne(t, p, "b") // takes the pooled one; the refill stalls
	require.Eventually(t, func() bool { return fake.Cluster("c1").Stalled() == 1 }, 10*time.Second, time.Millisecond)
	// The stalled begin ends with ErrClientClosed when the client closes,
	// which Close does once it stopped waiting.
	require.NoError(t, p.Close(context.Background()))
}
