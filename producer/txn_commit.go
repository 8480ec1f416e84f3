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

// errTxnStopped cancels the hand-over of a send phase that already failed.
var errTxnStopped = errors.New("producer: transaction send phase stopped")

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
	txn   pulsar.Transaction

	handed       atomic.Bool // a message was handed to a writer
	maybeWritten atomic.Bool // a message may have been written (acked, or failed in an unknown state)
}

// txnPart is one touched partition: its messages, as indexes into the
// attempt's messages, in staging order.
type txnPart struct {
	pt   *partition
	msgs []int
}

// plan groups msgs by cluster (in topology order) and partition.
func (p *Producer) plan(msgs []stagedMsg) []*txnCluster {
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
	plan := make([]*txnCluster, 0, len(byCluster))
	for _, c := range p.clusters {
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
func (p *Producer) commitTxn(ctx context.Context, cfg *txnCfg, msgs []stagedMsg) (TxnResult, error) {
	if len(msgs) == 0 {
		return TxnResult{}, nil
	}
	if !p.enterLong() {
		return TxnResult{}, &TxnAbortError{Err: ErrClosed}
	}
	defer p.leaveLong()
	p.observeTxn(ctx, msgs)
	for try := 0; ; try++ {
		res, retry, err := p.attempt(ctx, cfg, msgs)
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
func (p *Producer) attempt(ctx context.Context, cfg *txnCfg, msgs []stagedMsg) (res TxnResult, retry bool, err error) {
	plan := p.plan(msgs)
	// The Pulsar transactions time out at about this instant; no wait for a
	// commit or abort answer goes past it.
	deadline := time.Now().Add(cfg.timeout)

	// Phase 1: a Pulsar transaction per touched cluster.
	if err := p.beginAll(ctx, cfg, plan, deadline); err != nil {
		return TxnResult{}, ctx.Err() == nil && !errors.Is(err, ErrClosed), &TxnAbortError{Err: err}
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
		return err
	case <-ctx.Done():
		select {
		case err := <-ch:
			return err
		default:
		}
		return fmt.Errorf("%w: %w", ErrTxnOutcomeUnknown, ctx.Err())
	case <-t.C:
		return fmt.Errorf("%w: no answer within the transaction timeout", ErrTxnOutcomeUnknown)
	}
}

// beginAll begins a Pulsar transaction on every cluster of plan. On failure
// it ends those that began (with an empty commit: nothing was written, and
// an empty commit leaves no aborted transaction behind).
//
// newTxn has no ctx and, while a cluster is unreachable, pulsar-client-go
// retries it without end; so each runs on its own goroutine, which is left
// behind when ctx ends (it ends the transaction if one begins late).
func (p *Producer) beginAll(ctx context.Context, cfg *txnCfg, plan []*txnCluster, deadline time.Time) error {
	var (
		mu        sync.Mutex // guards abandoned, errs, answered and every tc.txn
		abandoned bool
		errs      []error
		answered  = make(map[*txnCluster]bool, len(plan))
		wg        sync.WaitGroup
	)
	for _, tc := range plan {
		wg.Add(1)
		p.goBG(func() {
			defer wg.Done()
			t, err := tc.c.link.newTxn(cfg.timeout)
			mu.Lock()
			if abandoned {
				mu.Unlock()
				if err == nil {
					p.endEmpty(context.Background(), deadline, tc.c, t)
				}
				return
			}
			answered[tc] = true
			if err != nil {
				errs = append(errs, &ClusterError{Cluster: tc.c.name, Op: "begin transaction", Err: err})
			} else {
				tc.txn = t
			}
			mu.Unlock()
		})
	}
	if p.wait(ctx, deadline, &wg) {
		if err := errors.Join(errs...); err != nil {
			p.endAllEmpty(ctx, deadline, plan)
			return err
		}
		return nil
	}
	mu.Lock()
	abandoned = true
	late := errs
	for _, tc := range plan {
		if !answered[tc] {
			late = append(late, &ClusterError{Cluster: tc.c.name, Op: "begin transaction",
				Err: errors.New("no answer within the transaction timeout")})
		}
	}
	mu.Unlock()
	p.endAllEmpty(ctx, deadline, plan)
	if err := ctx.Err(); err != nil {
		return err
	}
	return errors.Join(late...)
}

// wait waits for wg, ctx or the deadline (none when zero); it reports
// whether wg finished. When it gives up, the helper goroutine exits when wg
// does.
func (p *Producer) wait(ctx context.Context, deadline time.Time, wg *sync.WaitGroup) bool {
	if ctx.Done() == nil && deadline.IsZero() {
		wg.Wait()
		return true
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	var timeout <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-done:
		return true
	case <-ctx.Done():
	case <-timeout:
	}
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// endAllEmpty ends, with an empty commit, the transactions of plan that
// began. Callers make sure nothing was written in them.
func (p *Producer) endAllEmpty(ctx context.Context, deadline time.Time, plan []*txnCluster) {
	var wg sync.WaitGroup
	for _, tc := range plan {
		if tc.txn == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.endEmpty(ctx, deadline, tc.c, tc.txn)
		}()
	}
	wg.Wait()
}

// endEmpty commits a transaction in which nothing was written: unlike an
// abort, this leaves no aborted transaction on the broker. A failure only
// costs a transaction that the broker ends at its timeout. It waits for the
// answer until ctx ends or deadline passes.
func (p *Producer) endEmpty(ctx context.Context, deadline time.Time, c *cluster, t pulsar.Transaction) {
	cctx := context.WithoutCancel(ctx)
	if err := p.bounded(ctx, deadline, func() error { return t.Commit(cctx) }); err != nil && p.cfg.logger != nil {
		p.cfg.logger.Warn("ending an empty transaction failed; the broker ends it at its timeout",
			"cluster", c.name, "err", err)
	}
}

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
	c, pt := tc.c, tp.pt
	// Messages of this partition handed over before Commit are written
	// first, so that a key's order holds across plain and transactional
	// messages (transactional ones are not batched and would overtake).
	if !p.enter() {
		fail(c.sendError(ctx, tp.key(msgs), pt.idx, ErrClosed, true))
		return
	}
	err := pt.w.FlushWithCtx(sctx)
	p.leave()
	if err != nil {
		if sctx.Err() == nil {
			fail(&ClusterError{Cluster: c.name, Op: "flush before transaction", Err: err})
		}
		return
	}
	for _, i := range tp.msgs {
		if sctx.Err() != nil {
			return
		}
		m := &msgs[i]
		if err := c.budget.acquire(sctx, m.n, p.done, true, p.onCallbackGoroutine); err != nil {
			if sctx.Err() == nil || ctx.Err() != nil {
				fail(c.sendError(ctx, m.msg.Key, pt.idx, err, true))
			}
			return
		}
		if !p.enter() {
			c.budget.release(1, m.n)
			fail(c.sendError(ctx, m.msg.Key, pt.idx, ErrClosed, true))
			return
		}
		pm := &pulsar.ProducerMessage{Transaction: tc.txn, DeliverAt: sendAlone}
		toPulsar(pm, m.msg, m.props)
		tc.handed.Store(true)
		wg.Add(1)
		pt.w.SendAsync(sctx, pm, func(id pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
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
				ids[i] = ID{Cluster: c.name, Partition: pt.idx, MessageID: id}
			}
			wg.Done()
		})
		p.leave()
	}
}

// key returns the key of the partition's first message, for errors that
// concern the partition as a whole.
func (tp *txnPart) key(msgs []stagedMsg) string { return msgs[tp.msgs[0]].msg.Key }

// abortAll ends every begun transaction of plan after a failure before the
// first commit: an abort where a message may have been written, an empty
// commit elsewhere. It returns the *TxnAbortError for cause. It waits for
// the answers until ctx ends or deadline passes (see bounded); the calls
// themselves go on regardless of ctx, since an abort cut short would leave
// the transaction open, and the touched partitions' consumers waiting,
// until the transaction timeout. When ctx has already ended, it does not
// wait at all (a wait bounded by an ended ctx would report every abort as
// unanswered before it was even sent): the calls run in the background,
// Close waits for them, and a failure is logged.
func (p *Producer) abortAll(ctx context.Context, plan []*txnCluster, deadline time.Time, cause error) *TxnAbortError {
	res := &TxnAbortError{MaybeVisible: maybeVisible(plan), Err: cause}
	if ctx.Err() != nil {
		bg := context.WithoutCancel(ctx)
		p.goBG(func() { p.endAll(bg, plan, deadline) })
		return res
	}
	if errs := p.endAll(ctx, plan, deadline); len(errs) > 0 {
		res.Err = errors.Join(append([]error{cause}, errs...)...)
	}
	return res
}

// endAll ends plan's begun transactions (see abortAll) and returns the
// errors of the aborts that failed, logging them.
func (p *Producer) endAll(ctx context.Context, plan []*txnCluster, deadline time.Time) []error {
	actx := context.WithoutCancel(ctx)
	errs := make([]error, len(plan))
	var wg sync.WaitGroup
	for i, tc := range plan {
		if tc.txn == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !tc.maybeWritten.Load() {
				p.endEmpty(ctx, deadline, tc.c, tc.txn)
				return
			}
			if err := p.bounded(ctx, deadline, func() error { return tc.txn.Abort(actx) }); err != nil {
				errs[i] = &ClusterError{Cluster: tc.c.name, Op: "abort transaction", Err: err}
				if p.cfg.logger != nil {
					p.cfg.logger.Warn("aborting a transaction failed; the broker aborts it at its timeout",
						"cluster", tc.c.name, "err", err)
				}
			}
		}()
	}
	wg.Wait()
	var failed []error
	for _, err := range errs {
		if err != nil {
			failed = append(failed, err)
		}
	}
	return failed
}

func maybeVisible(plan []*txnCluster) []string {
	var names []string
	for _, tc := range plan {
		if tc.maybeWritten.Load() {
			names = append(names, tc.c.name)
		}
	}
	return names
}

func handedNames(plan []*txnCluster) []string {
	var names []string
	for _, tc := range plan {
		if tc.handed.Load() {
			names = append(names, tc.c.name)
		}
	}
	return names
}
