package producer_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/keyroute/keyroute/producer"
	"github.com/keyroute/keyroute/producer/producertest"
)

func TestTxnCommitWithoutAnswerIsUnknownAndBounded(t *testing.T) {
	fake := newFake(2)
	p := newTxnProducer(t, fake, 2)
	c := p.Clusters()
	release := fake.Cluster(c[1]).StallCommits()
	defer release() // lets the abandoned call finish
	tx, err := p.BeginTxn(producer.TxnTimeout(200 * time.Millisecond))
	require.NoError(t, err)
	stage(t, tx, spread(p, 2), 2)
	// The stalled commit is released only when the test ends: a Commit
	// that waited for it would never return.
	_, err = tx.Commit(context.Background())
	var pce *producer.PartialCommitError
	require.ErrorAs(t, err, &pce)
	assert.Equal(t, []string{c[0]}, pce.Committed)
	assert.Equal(t, []string{c[1]}, pce.Failed)
	assert.ErrorIs(t, pce.Errs[c[1]], producer.ErrTxnOutcomeUnknown)

	// The same bounded by ctx.
	tx, err = p.BeginTxn()
	require.NoError(t, err)
	stage(t, tx, spread(p, 2), 2)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = tx.Commit(ctx)
	require.ErrorAs(t, err, &pce)
	assert.Equal(t, []string{c[1]}, pce.Failed)
	assert.ErrorIs(t, err, producer.ErrTxnOutcomeUnknown)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestTxnBeginWithoutAnswerIsBounded(t *testing.T) {
	fake := newFake(2)
	p := newTxnProducer(t, fake, 2)
	c := p.Clusters()
	release := fake.Cluster(c[1]).StallBegins()
	tx, err := p.BeginTxn(producer.TxnTimeout(200*time.Millisecond), producer.TxnRetries(0))
	require.NoError(t, err)
	stage(t, tx, spread(p, 2), 1)
	// The stalled begin is released only at the end: a Commit that waited
	// for it would never return.
	_, err = tx.Commit(context.Background())
	require.ErrorIs(t, err, producer.ErrTxnAborted)
	var ce *producer.ClusterError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, c[1], ce.Cluster)
	assert.Zero(t, count(fake, producertest.OpSend, ""))
	require.Eventually(t, func() bool { return count(fake, producertest.OpCommit, c[0]) == 1 }, 5*time.Second, time.Millisecond,
		"the begun one is ended empty")
	release()
	// The late begin is ended too, with an empty commit.
	require.Eventually(t, func() bool { return count(fake, producertest.OpCommit, c[1]) == 1 }, 5*time.Second, time.Millisecond)
	assert.Zero(t, count(fake, producertest.OpAbort, ""))
}

// A Commit whose ctx ends while one cluster's begin has failed and
// another's has not answered returns ctx's error and the failure already
// known: it used to return ctx's error alone.
func TestTxnCtxEndsAfterABeginFailedKeepsTheFailure(t *testing.T) {
	fake := newFake(2)
	p := newTxnProducer(t, fake, 2)
	c := p.Clusters()
	fake.Cluster(c[0]).FailBegins(errBoom)
	release := fake.Cluster(c[1]).StallBegins()
	defer release()
	tx, err := p.BeginTxn(producer.TxnRetries(0))
	require.NoError(t, err)
	stage(t, tx, spread(p, 2), 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Cancelled once the producer has recorded the failed begin (waiting
	// for the fake to log it would race with the recording).
	p.OnBeginFailed(cancel)
	_, err = tx.Commit(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, errBoom, "the begin that failed before ctx ended")
	var ce *producer.ClusterError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, c[0], ce.Cluster)
	assert.NotContains(t, err.Error(), c[1], "the begin left unanswered is ctx's doing")
}

func TestTxnCtxEndsDuringSends(t *testing.T) {
	fake := newFake(2)
	p := newTxnProducer(t, fake, 2)
	c := p.Clusters()
	fake.Cluster(c[0]).Hold()
	tx, err := p.BeginTxn()
	require.NoError(t, err)
	stage(t, tx, spread(p, 2), 2)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	// The acks are released only after Commit returns: a Commit that
	// waited for them, not for its ctx, would never return.
	_, err = tx.Commit(ctx)
	require.ErrorIs(t, err, ctx.Err())
	require.ErrorIs(t, err, producer.ErrTxnAborted)
	var ae *producer.TxnAbortError
	require.ErrorAs(t, err, &ae)
	assert.Contains(t, ae.MaybeVisible, c[0])
	assert.Zero(t, count(fake, producertest.OpCommit, c[0]))

	// The abort completes in the background once the sends finish.
	fake.Cluster(c[0]).Release()
	require.Eventually(t, func() bool { return count(fake, producertest.OpAbort, c[0]) == 1 }, 5*time.Second, time.Millisecond)
	assert.Zero(t, count(fake, producertest.OpCommit, c[0]))
}

func TestTxnCtxEndedBeforeCommit(t *testing.T) {
	fake := newFake(2)
	p := newTxnProducer(t, fake, 2)
	ctx, cancel := context.WithCancel(context.Background())
	err := p.RunInTxn(ctx, func(ctx context.Context, tx *producer.Txn) error {
		stage(t, tx, spread(p, 2), 1)
		cancel()
		return nil
	})
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, producer.ErrTxnAborted)
	assert.Zero(t, count(fake, producertest.OpSend, ""), "nothing sent")
	assert.Empty(t, visible(fake, p))
}

// Issue 12, finding 4: the goroutines left to finish a transaction call
// (begin, commit, abort) outlived Close.
func TestTxnCallsLeftRunningEndWithClose(t *testing.T) {
	before := goleak.IgnoreCurrent()
	fake := newFake(1)
	p, err := producer.New(context.Background(), topo(2), producer.Topic("t"),
		fake.Opt(), producer.Transactions(true))
	require.NoError(t, err)
	c := p.Clusters()
	release := fake.Cluster(c[1]).StallCommits()
	defer release()
	tx, err := p.BeginTxn()
	require.NoError(t, err)
	stage(t, tx, spread(p, 2), 1)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = tx.Commit(ctx)
	require.ErrorIs(t, err, producer.ErrTxnOutcomeUnknown, "c2's commit never answered")
	// The commit call still runs: Close closes the clients, which ends
	// it, and waits for it.
	require.NoError(t, p.Close(context.Background()))
	assert.NoError(t, goleak.Find(before), "no goroutine of the producer's outlives Close")
}

// Issue 12, finding 4: after the ctx ended, the aborts were waited for
// with that ended ctx, so every one was reported as unanswered
// (ErrTxnOutcomeUnknown) before it was even sent.
func TestTxnAbortAfterCtxEndedIsNotReportedUnanswered(t *testing.T) {
	fake := newFake(2)
	p := newTxnProducer(t, fake, 2)
	c := p.Clusters()
	ctx, cancel := context.WithCancel(context.Background())
	err := p.RunInTxn(ctx, func(_ context.Context, tx *producer.Txn) error {
		stage(t, tx, spread(p, 2), 1)
		return nil
	}, producer.BeforeCommit(func(context.Context, []string) error { cancel(); return nil }))
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, producer.ErrTxnAborted)
	assert.NotErrorIs(t, err, producer.ErrTxnOutcomeUnknown, "the aborts were not even tried when this returned")
	var ae *producer.TxnAbortError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, c, ae.MaybeVisible)
	require.Eventually(t, func() bool { return count(fake, producertest.OpAbort, "") == 2 }, 5*time.Second, time.Millisecond,
		"the aborts run to their end in the background")
}
