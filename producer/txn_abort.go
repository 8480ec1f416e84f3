package producer

import (
	"context"
	"errors"
	"sync"
	"time"
)

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
