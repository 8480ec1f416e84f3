package producer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// errTxnStopped cancels the hand-over of a send phase that already failed.
var errTxnStopped = errors.New("producer: transaction send phase stopped")

// sendAll writes every message in its cluster's transaction, one goroutine
// per touched partition (so that partitions register with the coordinator
// in parallel and each partition's messages keep their order), and waits
// for every acknowledgement. It stops handing over messages at the first
// failure. When ctx ends before every outcome is known it returns at once
// with abandoned set: calling abandoned waits for the outstanding outcomes.
func (p *Producer) sendAll(ctx context.Context, plan []*txnCluster, msgs []stagedMsg, ids []ID) (abandoned func(), err error) {
	sctx, cancel := context.WithCancelCause(ctx)
	// Close stops the send phase: the writers are about to close.
	stopOnClose := context.AfterFunc(p.closing, func() { cancel(ErrClosed) })
	var (
		once  sync.Once
		first error
		wg    sync.WaitGroup // partition goroutines and messages in flight
	)
	fail := func(err error) {
		once.Do(func() {
			first = err
			cancel(errTxnStopped)
		})
	}
	for _, tc := range plan {
		for _, tp := range tc.parts {
			wg.Add(1)
			p.goBG(func() {
				defer wg.Done()
				p.sendPart(ctx, sctx, tc, tp, msgs, ids, &wg, fail)
			})
		}
	}
	if !p.wait(ctx, time.Time{}, &wg) {
		fail(ctx.Err())
		return func() {
			// Messages dropped by a writer that Close closed never
			// report: stop waiting for them then.
			waitGroup(p.closing, &wg)
			stopOnClose()
			cancel(nil)
		}, ctx.Err()
	}
	stopOnClose()
	cancel(nil)
	if first == nil {
		return nil, nil
	}
	if cerr := ctx.Err(); cerr != nil && !errors.Is(first, cerr) {
		first = fmt.Errorf("%w: %w", cerr, first)
	}
	return nil, first
}

// sendPart writes one partition's messages of the transaction.
func (p *Producer) sendPart(ctx, sctx context.Context, tc *txnCluster, tp *txnPart, msgs []stagedMsg, ids []ID,
	wg *sync.WaitGroup, fail func(error)) {
	if err := p.flushBefore(ctx, sctx, tp.pt, tp.key(msgs)); err != nil {
		if sctx.Err() == nil || errors.Is(err, ErrClosed) {
			fail(err)
		}
		return
	}
	for _, i := range tp.msgs {
		if sctx.Err() != nil {
			return
		}
		if !p.handTxn(ctx, sctx, tc, tp.pt.w, true, &msgs[i], &ids[i], wg, fail) {
			return
		}
	}
}

// flushBefore flushes pt's own writer before a transaction writes there:
// messages of the partition handed over before the commit are then written
// first, so that a key's order holds across plain and transactional
// messages (transactional ones are not batched and would overtake). key
// names the partition in the error (ErrClosed when the Producer is
// closing). sctx bounds the flush; ctx is the caller's. A plain message
// that failed is its own outcome (flushWriter), not the transaction's:
// pulsar-client-go does not send a message again once it has reported it,
// so it cannot be written after the transaction's.
func (p *Producer) flushBefore(ctx, sctx context.Context, pt *partition, key string) error {
	c := pt.c
	if !p.enter() {
		return c.sendError(ctx, key, pt.idx, ErrClosed, true)
	}
	err := flushWriter(sctx, pt.w)
	p.leave()
	if err != nil {
		return &ClusterError{Cluster: c.name, Op: "flush before transaction", Err: err}
	}
	return nil
}

// handTxn hands m, a message of tc's transaction, to w (alone: never
// batched, see sendAlone) and counts it in wg until its outcome, which
// stores its ID in id or calls fail. It reports whether m was handed over;
// when not, it called fail unless sctx (the send phase's ctx, derived from
// ctx) was cancelled by another failure. tc.handMu serialises the
// hand-overs of a transaction's messages (see internals.go).
func (p *Producer) handTxn(ctx, sctx context.Context, tc *txnCluster, w writer, alone bool, m *stagedMsg, id *ID, wg *sync.WaitGroup, fail func(error)) bool {
	c, pt := tc.c, m.pt
	if err := c.budget.acquire(sctx, m.n, p.done, true, p.onCallbackGoroutine); err != nil {
		if sctx.Err() == nil || ctx.Err() != nil {
			fail(c.sendError(ctx, m.msg.Key, pt.idx, err, true))
		}
		return false
	}
	if !p.enter() {
		c.budget.release(1, m.n)
		fail(c.sendError(ctx, m.msg.Key, pt.idx, ErrClosed, true))
		return false
	}
	pm := &pulsar.ProducerMessage{}
	toPulsar(pm, m.msg, m.props)
	pm.Transaction = tc.txn
	if alone && pm.DeliverAt.IsZero() {
		// A message's own DeliverAt (after 1970: see check) also sends
		// it alone.
		pm.DeliverAt = sendAlone
	}
	tc.handed.Store(true)
	wg.Add(1)
	tc.handMu.Lock()
	w.SendAsync(sctx, pm, func(mid pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
		c.budget.release(1, m.n)
		if err != nil {
			// pulsar.ErrTransaction comes from the checks before the
			// message is queued (transaction not open, partition not
			// registered): nothing was written.
			if !errors.Is(err, pulsar.ErrTransaction) {
				tc.maybeWritten.Store(true)
			}
			fail(c.sendError(ctx, m.msg.Key, pt.idx, err, false))
		} else {
			tc.maybeWritten.Store(true)
			c.health.acks.Add(1)
			*id = ID{Cluster: c.name, Partition: pt.idx, MessageID: mid}
		}
		wg.Done()
	})
	tc.handMu.Unlock()
	p.leave()
	return true
}

// key returns the key of the partition's first message, for errors that
// concern the partition as a whole.
func (tp *txnPart) key(msgs []stagedMsg) string { return msgs[tp.msgs[0]].msg.Key }
