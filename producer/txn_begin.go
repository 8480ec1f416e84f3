package producer

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// beginAll begins a Pulsar transaction on every cluster of plan, or takes
// one the cluster's pool began ahead (then tc.begun is set). On failure
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
		if t, begun, ok := p.takeTxn(tc.c, cfg); ok {
			tc.txn, tc.begun = t, begun
			continue
		}
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
			if err != nil && p.beginFailed != nil {
				p.beginFailed()
			}
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
	failed := errs
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
		// The begins not answered yet are ctx's doing; those that failed
		// before it ended are not.
		return errors.Join(append([]error{err}, failed...)...)
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
