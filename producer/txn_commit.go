package producer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// stagedMsg is a message held by a Txn, routed at Send.
type stagedMsg struct {
	msg *Message
	c   *cluster
	pt  *partition
	n   int64 // cost

	// Set by observeTxn when the producer is observed.
	ev    *Event
	props map[string]string // the properties to send
}

// txnCluster is one touched cluster in one commit attempt.
type txnCluster struct {
	c     *cluster
	parts []*txnPart // touched partitions, in first-touch order
	acks  []txnAck   // consumed messages to acknowledge in txn
	txn   pulsar.Transaction
	begun time.Time // when txn was begun, if it came from the pool; else zero

	handed       atomic.Bool // a message was handed to a writer
	maybeWritten atomic.Bool // a message may have been written (acked, or failed in an unknown state)

	// handMu serialises the hand-overs of the transaction's messages to
	// the writers (see "A transaction's hand-overs" in internals.go).
	handMu sync.Mutex
}

// txnPart is one touched partition: its messages, as indexes into the
// attempt's messages, in staging order.
type txnPart struct {
	pt   *partition
	msgs []int
}

// plan groups msgs by cluster (in topology order) and partition, and acks
// by cluster.
func (p *Producer) plan(msgs []stagedMsg, acks []txnAck) []*txnCluster {
	byCluster := make(map[*cluster]*txnCluster, 1)
	byPart := make(map[*partition]*txnPart, 4)
	for i := range msgs {
		m := &msgs[i]
		tc := byCluster[m.c]
		if tc == nil {
			tc = &txnCluster{c: m.c}
			byCluster[m.c] = tc
		}
		tp := byPart[m.pt]
		if tp == nil {
			tp = &txnPart{pt: m.pt}
			byPart[m.pt] = tp
			tc.parts = append(tc.parts, tp)
		}
		tp.msgs = append(tp.msgs, i)
	}
	for _, a := range acks {
		tc := byCluster[a.c]
		if tc == nil {
			tc = &txnCluster{c: a.c}
			byCluster[a.c] = tc
		}
		tc.acks = append(tc.acks, a)
	}
	plan := make([]*txnCluster, 0, len(byCluster))
	for _, c := range p.all() {
		if tc := byCluster[c]; tc != nil {
			plan = append(plan, tc)
		}
	}
	return plan
}

func clusterNames(plan []*txnCluster) []string {
	names := make([]string, len(plan))
	for i, tc := range plan {
		names[i] = tc.c.name
	}
	return names
}

// commitTxn commits msgs as one transaction per touched cluster, retrying
// attempts that failed before anything could have been written.
func (p *Producer) commitTxn(ctx context.Context, cfg *txnCfg, msgs []stagedMsg, acks []txnAck) (TxnResult, error) {
	if len(msgs) == 0 && len(acks) == 0 {
		return TxnResult{}, nil
	}
	if !p.enterLong() {
		return TxnResult{}, &TxnAbortError{Err: ErrClosed}
	}
	defer p.leaveLong()
	defer p.refill(msgs)
	p.observeTxn(ctx, msgs)
	for try := 0; ; try++ {
		res, retry, err := p.attempt(ctx, cfg, msgs, acks)
		if err == nil || !retry || try >= cfg.retries || p.closed.Load() {
			p.txnDone(msgs, res, err)
			return res, err
		}
		t := time.NewTimer(retryBackoff(try))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			err = abandonRetry(err, ctx.Err())
			p.txnDone(msgs, res, err)
			return res, err
		}
	}
}

// abandonRetry adds to a retryable commit error that its retry was
// abandoned because ctx ended, keeping the *TxnAbortError on top (so that
// NotWritten still sees that nothing was written).
func abandonRetry(err, cause error) error {
	if tae, ok := err.(*TxnAbortError); ok {
		return &TxnAbortError{MaybeVisible: tae.MaybeVisible,
			Err: errors.Join(tae.Err, fmt.Errorf("retry abandoned: %w", cause))}
	}
	return fmt.Errorf("%w (retry abandoned: %w)", err, cause)
}

// retryBackoff is the pause before retry try+1: 50ms, 100ms, 200ms, ... up
// to 1s.
func retryBackoff(try int) time.Duration {
	return min(50*time.Millisecond<<min(try, 5), time.Second)
}

// attempt runs the three phases once. retry reports whether the failure
// left nothing that could be delivered, so that trying again cannot
// duplicate.
func (p *Producer) attempt(ctx context.Context, cfg *txnCfg, msgs []stagedMsg, acks []txnAck) (res TxnResult, retry bool, err error) {
	plan := p.plan(msgs, acks)
	// The Pulsar transactions time out at about this instant; no wait for a
	// commit or abort answer goes past it.
	deadline := time.Now().Add(cfg.timeout)

	// Phase 1: a Pulsar transaction per touched cluster.
	if err := p.beginAll(ctx, cfg, plan, deadline); err != nil {
		return TxnResult{}, ctx.Err() == nil && !errors.Is(err, ErrClosed), &TxnAbortError{Err: err}
	}
	for _, tc := range plan {
		if !tc.begun.IsZero() {
			deadline = minTime(deadline, tc.begun.Add(cfg.timeout))
		}
	}

	// Phase 2: every send, acknowledged.
	ids := make([]ID, len(msgs))
	if abandoned, err := p.sendAll(ctx, plan, msgs, ids); err != nil {
		if abandoned != nil {
			// ctx ended with sends in flight: the aborts wait for them
			// (pulsar-client-go's Abort waits for the transaction's
			// outstanding sends), so they run in the background, and
			// which clusters hold written messages is not known yet.
			// Close waits for them: the sends end at their ack, their
			// send timeout or Close, the aborts by the transaction
			// timeout or Close.
			p.goBG(func() {
				abandoned()
				p.abortAll(context.WithoutCancel(ctx), plan, deadline, nil)
			})
			return TxnResult{}, false, &TxnAbortError{MaybeVisible: handedNames(plan), Err: err}
		}
		retry = ctx.Err() == nil && !p.closed.Load() && len(maybeVisible(plan)) == 0
		return TxnResult{}, retry, p.abortAll(ctx, plan, deadline, err)
	}
	if err := p.ackAll(ctx, plan, deadline); err != nil {
		retry = ctx.Err() == nil && !p.closed.Load() && len(maybeVisible(plan)) == 0
		return TxnResult{}, retry, p.abortAll(ctx, plan, deadline, err)
	}

	// Last moment before the first commit.
	if cfg.beforeCommit != nil {
		if err := cfg.beforeCommit(ctx, clusterNames(plan)); err != nil {
			return TxnResult{}, false, p.abortAll(ctx, plan, deadline, err)
		}
	}
	if err := ctx.Err(); err != nil {
		return TxnResult{}, false, p.abortAll(ctx, plan, deadline, err)
	}

	// Phase 3: the commits, in parallel. pulsar-client-go's Commit does
	// not honour its ctx once the commit request is out (it retries until
	// the coordinator answers), so each waits on its own goroutine, until
	// ctx ends or the deadline passes.
	cctx := context.WithoutCancel(ctx)
	errs := make([]error, len(plan))
	var wg sync.WaitGroup
	for i, tc := range plan {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.bounded(ctx, deadline, func() error { return tc.txn.Commit(cctx) }); err != nil {
				errs[i] = &ClusterError{Cluster: tc.c.name, Op: "commit transaction", Err: err}
			}
		}()
	}
	wg.Wait()
	var pce *PartialCommitError
	var committed []string
	for i, tc := range plan {
		if errs[i] == nil {
			committed = append(committed, tc.c.name)
			continue
		}
		if pce == nil {
			pce = &PartialCommitError{Errs: map[string]error{}}
		}
		pce.Failed = append(pce.Failed, tc.c.name)
		pce.Errs[tc.c.name] = errs[i]
	}
	res = TxnResult{Clusters: committed, IDs: ids}
	if pce != nil {
		pce.Committed = committed
		return res, false, pce
	}
	return res, false, nil
}

// bounded runs fn (a pulsar-client-go transaction call) on its own
// goroutine and returns its error, or an error matching
// ErrTxnOutcomeUnknown (and ctx.Err()) when ctx ends or deadline passes
// first. pulsar-client-go retries a transaction call for as long as the
// coordinator's connection is down and ignores the ctx meanwhile, so this
// is the only way to bound it; fn is left to finish on its own, and Close
// waits for it (it ends when Close closes the clients). Once the Producer
// is closing, bounded starts no call and returns ErrClosed.
func (p *Producer) bounded(ctx context.Context, deadline time.Time, fn func() error) error {
	if p.closed.Load() {
		return ErrClosed
	}
	ch := make(chan error, 1)
	p.goBG(func() { ch <- fn() })
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case err := <-ch:
		return unanswered(err)
	case <-ctx.Done():
		select {
		case err := <-ch:
			return unanswered(err)
		default:
		}
		return fmt.Errorf("%w: %w", ErrTxnOutcomeUnknown, ctx.Err())
	case <-t.C:
		return fmt.Errorf("%w: no answer within the transaction timeout", ErrTxnOutcomeUnknown)
	}
}

// unanswered marks a transaction call's error that is not an answer as
// ErrTxnOutcomeUnknown. pulsar-client-go v0.21.0 returns a *pulsar.Error
// for every refusal (the coordinator's answer, or a call it did not send)
// and a plain error where the connection failed with the call out: an
// unexported "connection closed" when the broker dies before it answers
// (its retry looks for the exported one, so it is not retried), or
// "request timed out". A commit cut off that way may have been done.
func unanswered(err error) error {
	var pe *pulsar.Error
	if err == nil || errors.As(err, &pe) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrTxnOutcomeUnknown, err)
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
