package producer_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/producer"
	"github.com/keyroute/keyroute/producer/producertest"
)

// bulkMsgs returns n messages over keys distinct keys, values "0", "1", ...
func bulkMsgs(n, keys int) []*producer.Message {
	msgs := make([]*producer.Message, n)
	for i := range msgs {
		msgs[i] = &producer.Message{Key: fmt.Sprintf("key-%d", i%keys), Value: fmt.Appendf(nil, "%d", i)}
	}
	return msgs
}

// txnParts returns, per transaction, the partitions its messages were
// written to.
func txnParts(fake *producertest.Clusters) map[uint64]map[string]bool {
	out := map[uint64]map[string]bool{}
	for _, e := range fake.Events() {
		if e.Op == producertest.OpSend && e.Txn != 0 {
			if out[e.Txn] == nil {
				out[e.Txn] = map[string]bool{}
			}
			out[e.Txn][fmt.Sprintf("%s/%d", e.Cluster, e.Partition)] = true
		}
	}
	return out
}

// writtenCommits counts the commits of transactions that had messages
// sent (the bulk ends a transaction begun ahead and never written with an
// empty commit).
func writtenCommits(fake *producertest.Clusters) int {
	written := txnParts(fake)
	n := 0
	for _, e := range fake.Events() {
		if e.Op == producertest.OpCommit && written[e.Txn] != nil {
			n++
		}
	}
	return n
}

func TestSendTxnBulk(t *testing.T) {
	// AsyncAcks holds messages until 7 are written or a flush: the bulk
	// writers batch, and producertest panics if a batch could hold two
	// transactions' messages.
	fake := producertest.New(producertest.Partitions(4), producertest.AsyncAcks(7))
	p := newTxnProducer(t, fake, 3)
	msgs := bulkMsgs(1000, 37)
	res, err := p.SendTxnBulk(context.Background(), msgs, 100)
	require.NoError(t, err)
	assert.Equal(t, 1000, res.Committed)
	assert.Nil(t, res.NotCommitted)

	// One partition per transaction, each cut into transactions of 100.
	perPart := map[string]int{}
	for _, m := range msgs {
		c, pt := p.Placement(m.Key)
		perPart[fmt.Sprintf("%s/%d", c, pt)]++
	}
	txns := 0
	for _, n := range perPart {
		txns += (n + 99) / 100
	}
	assert.Equal(t, txns, res.Txns)
	assert.Equal(t, txns, count(fake, producertest.OpCommit, ""))
	for txn, parts := range txnParts(fake) {
		assert.Len(t, parts, 1, "transaction %d", txn)
	}
	for _, e := range fake.Events() {
		if e.Op == producertest.OpCommit {
			assert.LessOrEqual(t, e.Messages, 100)
		}
	}
	// Every message visible once, in the order of msgs per key.
	next := map[string]int{}
	for _, c := range p.Clusters() {
		for _, m := range fake.Cluster(c).Messages() {
			var i int
			_, err := fmt.Sscan(string(m.Value), &i)
			require.NoError(t, err)
			require.Equal(t, msgs[i].Key, m.Key)
			require.GreaterOrEqual(t, i, next[m.Key], "key %s out of order", m.Key)
			next[m.Key] = i + 1
		}
	}
	total := 0
	for _, parts := range visible(fake, p) {
		for _, ks := range parts {
			total += len(ks)
		}
	}
	assert.Equal(t, 1000, total)
}

func TestSendTxnBulkConcurrentCallsNeverShareABatch(t *testing.T) {
	fake := producertest.New(producertest.Partitions(2), producertest.AsyncAcks(5))
	p := newTxnProducer(t, fake, 1)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := p.SendTxnBulk(context.Background(), bulkMsgs(300, 11), 13)
			assert.NoError(t, err)
			assert.Equal(t, 300, res.Committed)
		}()
	}
	wg.Wait() // producertest panics on a batch that could mix transactions
	vis := visible(fake, p)["c1"]
	assert.Equal(t, 1200, len(vis[0])+len(vis[1]))
}

// bulkOut is what a SendTxnBulk returned.
type bulkOut struct {
	res producer.BulkResult
	err error
}

// bulkPastAStalledCommit starts a SendTxnBulk of 30 messages in 3
// transactions on p's one partition with the commits stalled, and returns
// once the second transaction was written while the first one's commit
// waits: release lets the commits go, done gets the call's result.
func bulkPastAStalledCommit(t *testing.T, fake *producertest.Clusters, p *producer.Producer) (release func(), done <-chan bulkOut) {
	t.Helper()
	release = fake.Cluster("c1").StallCommits()
	t.Cleanup(release)
	ch := make(chan bulkOut, 1)
	go func() {
		res, err := p.SendTxnBulk(context.Background(), bulkMsgs(30, 3), 10)
		ch <- bulkOut{res, err}
	}()
	require.Eventually(t, func() bool { return len(txnParts(fake)) == 2 && fake.Cluster("c1").Stalled() == 1 },
		10*time.Second, time.Millisecond)
	return release, ch
}

func TestSendTxnBulkWritesTheNextTransactionWhileOneCommits(t *testing.T) {
	fake := newFake(1)
	p := newTxnProducer(t, fake, 1)
	// The second transaction is written while the first one's commit
	// waits, and is not committed before it.
	release, done := bulkPastAStalledCommit(t, fake, p)
	assert.Equal(t, 1, fake.Cluster("c1").Stalled(), "one commit at a time per partition")
	release()
	o := <-done
	require.NoError(t, o.err)
	assert.Equal(t, 30, o.res.Committed)
	assert.Equal(t, 3, o.res.Txns)
	// Commits in the order of the messages: each transaction's first
	// message comes after the one before's.
	first := map[uint64]int{}
	var commits []int
	for _, e := range fake.Events() {
		switch {
		case e.Op == producertest.OpSend && e.Txn != 0:
			if _, ok := first[e.Txn]; !ok {
				first[e.Txn] = len(first)
			}
		case e.Op == producertest.OpCommit && e.Messages > 0:
			commits = append(commits, first[e.Txn])
		}
	}
	assert.Equal(t, []int{0, 1, 2}, commits)
}

func TestSendTxnBulkStopsAtFirstFailure(t *testing.T) {
	fake := newFake(2)
	p := newTxnProducer(t, fake, 2)
	c := p.Clusters()
	fake.Cluster(c[1]).FailCommits(errBoom)
	msgs := bulkMsgs(400, 20)
	res, err := p.SendTxnBulk(context.Background(), msgs, 10)
	var pce *producer.PartialCommitError
	require.ErrorAs(t, err, &pce)
	assert.Equal(t, []string{c[1]}, pce.Failed)
	// At most one failed commit per partition of c[1]: no transaction is
	// committed after one failed; one written meanwhile is aborted, and
	// may be visible (apache/pulsar-client-go#1498).
	failed := 0
	for _, e := range fake.Events() {
		if e.Op == producertest.OpCommitFail && e.Cluster == c[1] && e.Messages > 0 {
			failed++
		}
	}
	assert.LessOrEqual(t, failed, 2)
	var tae *producer.TxnAbortError
	if count(fake, producertest.OpAbort, c[1]) > 0 {
		require.ErrorAs(t, err, &tae)
		assert.Equal(t, []string{c[1]}, tae.MaybeVisible)
	}
	// Every message of c[1] is reported not committed; the counts add up.
	notCommitted := map[int]bool{}
	for _, i := range res.NotCommitted {
		notCommitted[i] = true
	}
	for i, m := range msgs {
		if cl, _ := p.Placement(m.Key); cl == c[1] {
			assert.True(t, notCommitted[i], "message %d", i)
		}
	}
	assert.Equal(t, 400, res.Committed+len(res.NotCommitted))
	assert.True(t, slices.IsSorted(res.NotCommitted))
}

func TestSendTxnBulkAbortsTheWrittenTransactionWhenTheOneBeforeFails(t *testing.T) {
	fake := newFake(1)
	p := newTxnProducer(t, fake, 1)
	release, done := bulkPastAStalledCommit(t, fake, p)
	fake.Cluster("c1").FailCommits(errBoom)
	release()
	o := <-done
	var pce *producer.PartialCommitError
	require.ErrorAs(t, o.err, &pce)
	var tae *producer.TxnAbortError
	require.ErrorAs(t, o.err, &tae)
	assert.Equal(t, []string{"c1"}, tae.MaybeVisible, "the second transaction was written")
	assert.Zero(t, o.res.Committed)
	assert.Len(t, o.res.NotCommitted, 30)
	assert.Equal(t, 1, count(fake, producertest.OpAbort, "c1"))
	assert.Len(t, txnParts(fake), 2, "no third transaction")
}

func TestSendTxnBulkWritersCloseWithTheProducer(t *testing.T) {
	fake := newFake(3)
	p := newTxnProducer(t, fake, 1)
	require.Equal(t, 3, fake.Cluster("c1").Writers())
	_, err := p.SendTxnBulk(context.Background(), bulkMsgs(60, 6), 10)
	require.NoError(t, err)
	assert.Equal(t, 6, fake.Cluster("c1").Writers(), "a writer per partition reserved for bulk transactions")
	require.NoError(t, p.Close(context.Background()))
	assert.Zero(t, fake.Cluster("c1").Writers())
	_, err = p.SendTxnBulk(context.Background(), bulkMsgs(6, 6), 10)
	assert.ErrorIs(t, err, producer.ErrClosed)
}

func TestSendTxnBulkCtxEndsDuringSends(t *testing.T) {
	fake := newFake(1)
	p := newTxnProducer(t, fake, 1)
	fake.Cluster("c1").Hold()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// Cancel once the first transaction's messages are written (and
		// their acks held).
		for count(fake, producertest.OpSend, "c1") < 10 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	// The acks are released only after SendTxnBulk returns: one that
	// waited for them, not for its ctx, would never return.
	res, err := p.SendTxnBulk(ctx, bulkMsgs(20, 2), 10)
	require.ErrorIs(t, err, context.Canceled)
	var ae *producer.TxnAbortError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, []string{"c1"}, ae.MaybeVisible)
	assert.Zero(t, res.Committed)
	assert.Len(t, res.NotCommitted, 20)
	assert.Zero(t, writtenCommits(fake))

	// The abort completes in the background once the sends finish.
	fake.Cluster("c1").Release()
	require.Eventually(t, func() bool { return count(fake, producertest.OpAbort, "c1") == 1 }, 5*time.Second, time.Millisecond)
	assert.Zero(t, writtenCommits(fake))
	require.NoError(t, p.Close(context.Background()))
}

// TestSendTxnBulkBeginRetryPauseEndsWithCtx: a ctx that ends in the pause
// before a failed begin's retry ends the pause: no begin is tried again,
// and the error names the failed begin. The ctx is ended from inside the
// pause (OnRetryPause): waiting for the fake to count the failed begin let
// the cancel land, under load, before the producer had the begin's answer.
func TestSendTxnBulkBeginRetryPauseEndsWithCtx(t *testing.T) {
	fake := newFake(1)
	p := newTxnProducer(t, fake, 1)
	fake.Cluster("c1").FailBegins(errBoom)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p.OnRetryPause(cancel)
	res, err := p.SendTxnBulk(ctx, bulkMsgs(10, 2), 10, producer.TxnRetries(5))
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, errBoom)
	assert.Len(t, res.NotCommitted, 10)
	// Close waits for the begin's goroutine: had the pause not ended with
	// ctx, it would have tried again by then.
	require.NoError(t, p.Close(context.Background()))
	assert.Equal(t, 1, count(fake, producertest.OpBeginFail, "c1"), "a begin tried again after ctx ended")
	assert.Zero(t, count(fake, producertest.OpBegin, "c1"), "no begin after ctx ended")
}

// SendTxnBulk refuses a message Send would refuse, naming it, before any
// transaction begins.
func TestSendTxnBulkValidatesAsSendDoes(t *testing.T) {
	for name, bad := range map[string]*producer.Message{
		"reserved property":     {Key: "k", Properties: map[string]string{"keyroute-epoch": "1"}},
		"null value with value": {Key: "k", Value: []byte("v"), NullValue: true},
		"negative DeliverAfter": {Key: "k", DeliverAfter: -time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			fake := producertest.New(producertest.Partitions(2))
			p := newTxnProducer(t, fake, 2)
			msgs := bulkMsgs(5, 3)
			msgs[3] = bad
			_, err := p.SendTxnBulk(context.Background(), msgs, 10)
			require.ErrorIs(t, err, producer.ErrBadMessage)
			assert.ErrorContains(t, err, "message 3")
			assert.Zero(t, count(fake, producertest.OpSend, ""), "nothing is written")
			assert.Zero(t, count(fake, producertest.OpBegin, ""), "no transaction begins")
		})
	}
}
