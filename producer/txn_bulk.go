package producer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// BulkResult is the outcome of SendTxnBulk.
type BulkResult struct {
	// Committed is the number of messages in committed transactions.
	Committed int
	// Txns is the number of Pulsar transactions committed.
	Txns int
	// NotCommitted holds the indexes (into the msgs given) of the messages
	// that were not committed, ascending; nil when every message was.
	NotCommitted []int
}

// SendTxnBulk sends msgs in transactions of up to perTxn messages, for
// imports. It routes every message first, then, for each touched partition
// of each cluster in parallel, cuts that partition's messages (in their
// order in msgs) into transactions of perTxn messages (fewer when
// TxnMaxBytes would be passed). Every transaction of a bulk send therefore
// holds messages of one partition only and is atomic; the bulk as a whole
// is not. Messages of one key keep their order. Keyless messages are spread
// over clusters and partitions as plain sends are.
//
// A partition's transactions are pipelined: while one commits, the next is
// written; a transaction is committed only after the one before it on its
// partition committed. They are written through writers reserved for bulk
// transactions (one more pulsar-client-go producer per partition, opened at
// the first SendTxnBulk; named "<Name>-<cluster>-<partition>-bulk" under
// Name), which batch: no batch can mix transactions, because a reserved
// writer takes the next transaction's messages only once every message of
// the one before has been acknowledged. When ConfigureWriter sets a
// ProducerAccessMode other than Shared, a partition takes no second
// producer: the messages then go through the partitions' own writers one
// by one, as a Txn's.
//
// A nil message, or one that Send would refuse (ErrBadMessage: reserved
// properties, NullValue with a Value, a negative DeliverAfter, ...), fails
// the call before any transaction begins, naming the message's index.
//
// At the first failure SendTxnBulk starts no further transaction anywhere
// (those already committing finish; a transaction written while the one
// before it failed to commit is aborted) and returns the failures joined:
// *TxnAbortError or *PartialCommitError values as from Commit, each naming
// its cluster. BulkResult says which messages were not committed; see
// TxnAbortError and PartialCommitError for the ones that may still be
// delivered (apache/pulsar-client-go#1498). ctx bounds the whole call as it
// bounds each Commit. TxnMaxMessages and TxnSingleCluster do not apply;
// BeforeCommit runs once per transaction, possibly concurrently.
func (p *Producer) SendTxnBulk(ctx context.Context, msgs []*Message, perTxn int, opts ...TxnOpt) (BulkResult, error) {
	if p == nil {
		return BulkResult{}, ErrNilProducer
	}
	cfg, err := p.txnCfg(opts)
	if err != nil {
		return BulkResult{}, err
	}
	if perTxn < 1 {
		return BulkResult{}, fmt.Errorf("%w: SendTxnBulk perTxn %d: must be >= 1", ErrBadOption, perTxn)
	}
	for i, m := range msgs {
		if m == nil {
			return BulkResult{}, fmt.Errorf("message %d: %w", i, &SendError{Err: ErrNilMessage})
		}
		if err := check(m); err != nil {
			return BulkResult{}, fmt.Errorf("message %d: %w", i, &SendError{Key: m.Key, Err: ErrBadMessage, Cause: err, notWritten: true})
		}
	}
	if !p.enterLong() {
		return BulkResult{}, ErrClosed
	}
	defer p.leaveLong()

	// Route, and split by partition keeping the order of msgs.
	var (
		per   = make(map[*partition]*bulkPart, 8)
		parts []*bulkPart // in first-touch order
	)
	for i, m := range msgs {
		c, pt := p.route(m.Key) // the key's own cluster: see (*Txn).route
		bp := per[pt]
		if bp == nil {
			bp = &bulkPart{pt: pt}
			per[pt] = bp
			parts = append(parts, bp)
		}
		bp.idx = append(bp.idx, i)
		bp.sm = append(bp.sm, stagedMsg{msg: m, c: c, pt: pt, n: cost(m), props: m.Properties})
	}

	b := &bulk{p: p, ctx: ctx, cfg: &cfg, perTxn: perTxn, committed: make([]bool, len(msgs))}
	var wg sync.WaitGroup
	for _, bp := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b.run(bp)
		}()
	}
	wg.Wait()
	for _, bp := range parts {
		p.fillPool(bp.pt.c) // after the commits, as Commit does
	}
	for i, ok := range b.committed {
		if !ok {
			b.res.NotCommitted = append(b.res.NotCommitted, i)
		}
	}
	return b.res, errors.Join(b.errs...)
}

// bulk is one SendTxnBulk call.
type bulk struct {
	p      *Producer
	ctx    context.Context
	cfg    *txnCfg
	perTxn int
	stop   atomic.Bool // a transaction failed: start no other

	mu        sync.Mutex // guards the fields below
	res       BulkResult
	committed []bool
	errs      []error
}

// bulkPart is one touched partition of a bulk: its messages, as indexes
// into the msgs given and as staged, in order.
type bulkPart struct {
	pt  *partition
	idx []int
	sm  []stagedMsg
}

// fail records err and stops the bulk.
func (b *bulk) fail(err error) {
	b.mu.Lock()
	b.errs = append(b.errs, err)
	b.mu.Unlock()
	b.stop.Store(true)
}

// run writes and commits bp's transactions one after another, the write of
// each overlapping the commit of the one before.
func (b *bulk) run(bp *bulkPart) {
	p, c, pt := b.p, bp.pt.c, bp.pt
	w, err := c.bulkWriter(b.ctx, pt.idx)
	if err != nil {
		b.fail(&TxnAbortError{Err: &ClusterError{Cluster: c.name, Op: "open bulk writer", Err: err}})
		return
	}
	if err := p.flushBefore(b.ctx, b.ctx, pt, bp.sm[0].msg.Key); err != nil {
		b.fail(&TxnAbortError{Err: err})
		return
	}

	var committing chan error // the commit of the transaction before; nil: none
	// The begin of a transaction overlaps the write of the one before.
	begin := b.begin(c)
	for start := 0; start < len(bp.sm); {
		if b.stop.Load() {
			break
		}
		if err := b.ctx.Err(); err != nil {
			b.fail(&TxnAbortError{Err: b.endBegin(begin, &ClusterError{Cluster: c.name, Op: "bulk transaction", Err: err})})
			begin = nil
			break
		}
		end := chunkEnd(bp.sm, start, b.perTxn, b.cfg.maxBytes)
		cur := begin
		begin = nil
		if end < len(bp.sm) {
			begin = b.begin(c)
		}
		next, ok := b.write(w, bp, start, end, committing, cur)
		if !ok {
			committing = nil
			break
		}
		committing = next
		start = end
	}
	if committing != nil {
		<-committing
	}
	// Begun for a transaction that will not be written (its error is the
	// bulk's no more: the bulk stopped for another reason).
	_ = b.endBegin(begin, nil)
}

// endBegin waits for begin, a begin whose transaction will not be written,
// and returns err with the begin's failure joined; a transaction that
// began is ended empty. begin may be nil. When ctx ended, the begin ends
// with it (beginAll and the pause before a retry both wait on ctx), and
// the error names why no transaction began whichever goroutine saw ctx
// end first.
func (b *bulk) endBegin(begin <-chan begun, err error) error {
	if begin == nil {
		return err
	}
	bg := <-begin
	if bg.err != nil {
		return errors.Join(err, bg.err)
	}
	b.p.endAllEmpty(context.WithoutCancel(b.ctx), bg.deadline, []*txnCluster{bg.tc})
	return err
}

// begun is a Pulsar transaction begun for a bulk transaction, or why not.
type begun struct {
	tc       *txnCluster
	deadline time.Time // when its timeout ends
	err      error
}

// begin begins a Pulsar transaction on c (from the pool when it can),
// retrying a failed begin as Commit does, on a goroutine of its own.
func (b *bulk) begin(c *cluster) <-chan begun {
	p := b.p
	ch := make(chan begun, 1)
	p.goBG(func() {
		tc := &txnCluster{c: c}
		deadline := time.Now().Add(b.cfg.timeout)
		for try := 0; ; try++ {
			err := p.beginAll(b.ctx, b.cfg, []*txnCluster{tc}, deadline)
			if err == nil {
				break
			}
			if b.ctx.Err() != nil || errors.Is(err, ErrClosed) || try >= b.cfg.retries || p.closed.Load() {
				// beginAll ended what began.
				ch <- begun{err: err}
				return
			}
			tc.txn = nil
			t := time.NewTimer(retryBackoff(try))
			if p.retryPaused != nil {
				p.retryPaused()
			}
			select {
			case <-t.C:
			case <-b.ctx.Done():
				t.Stop()
				ch <- begun{err: abandonRetry(err, b.ctx.Err())}
				return
			}
		}
		if !tc.begun.IsZero() {
			deadline = minTime(deadline, tc.begun.Add(b.cfg.timeout))
		}
		ch <- begun{tc: tc, deadline: deadline}
	})
	return ch
}

// write runs one transaction of bp, the messages bp.sm[start:end], in the
// Pulsar transaction begin delivers, up to its commit, which it starts and
// returns (a channel that gets the commit's error). It first waits for
// committing, the commit of the transaction before; ok is false when this
// transaction failed, or was aborted because that commit failed.
func (b *bulk) write(w *bulkWriter, bp *bulkPart, start, end int, committing chan error, begin <-chan begun) (next chan error, ok bool) {
	p, c := b.p, bp.pt.c
	chunk := bp.sm[start:end]
	p.observeTxn(b.ctx, chunk)
	bg := <-begin
	if bg.err != nil {
		if committing != nil {
			<-committing
		}
		b.end(chunk, nil, TxnResult{}, &TxnAbortError{Err: bg.err})
		return nil, false
	}
	tc, deadline := bg.tc, bg.deadline
	tc.parts = []*txnPart{{pt: bp.pt}}
	plan := []*txnCluster{tc}
	// abort ends the transaction after cause.
	abort := func(cause error) {
		b.end(chunk, nil, TxnResult{}, p.abortAll(b.ctx, plan, deadline, cause))
	}

	ids := make([]ID, len(chunk))
	if abandoned, err := p.writeBulk(b.ctx, w, tc, chunk, ids); err != nil {
		if committing != nil {
			<-committing
		}
		if abandoned != nil {
			// ctx ended with sends in flight: abort once they end, in the
			// background (Close waits), as Commit does.
			p.goBG(func() {
				abandoned()
				p.abortAll(context.WithoutCancel(b.ctx), plan, deadline, nil)
			})
			b.end(chunk, nil, TxnResult{}, &TxnAbortError{MaybeVisible: []string{c.name}, Err: err})
			return nil, false
		}
		abort(err)
		return nil, false
	}
	if committing != nil {
		if err := <-committing; err != nil {
			abort(&ClusterError{Cluster: c.name, Op: "bulk transaction",
				Err: fmt.Errorf("the transaction before it on partition %d did not commit: %w", bp.pt.idx, errTxnStopped)})
			return nil, false
		}
	}
	if b.cfg.beforeCommit != nil {
		if err := b.cfg.beforeCommit(b.ctx, []string{c.name}); err != nil {
			abort(err)
			return nil, false
		}
	}
	next = make(chan error, 1)
	go func() {
		cctx := context.WithoutCancel(b.ctx)
		err := p.bounded(b.ctx, deadline, func() error { return tc.txn.Commit(cctx) })
		if err != nil {
			cerr := &ClusterError{Cluster: c.name, Op: "commit transaction", Err: err}
			b.end(chunk, nil, TxnResult{}, &PartialCommitError{Failed: []string{c.name}, Errs: map[string]error{c.name: cerr}})
		} else {
			b.end(chunk, bp.idx[start:end], TxnResult{Clusters: []string{c.name}, IDs: ids}, nil)
		}
		next <- err
	}()
	return next, true
}

// end records the outcome of one transaction of the bulk: committed holds
// the indexes of its messages when it committed, err its failure otherwise.
func (b *bulk) end(chunk []stagedMsg, committed []int, res TxnResult, err error) {
	b.p.txnDone(chunk, res, err)
	if err != nil {
		b.fail(err)
		return
	}
	b.mu.Lock()
	b.res.Txns++
	b.res.Committed += len(committed)
	for _, i := range committed {
		b.committed[i] = true
	}
	b.mu.Unlock()
}

// chunkEnd returns the end of the transaction that starts at sm[start]:
// up to perTxn messages and maxBytes bytes, at least one message.
func chunkEnd(sm []stagedMsg, start, perTxn int, maxBytes int64) int {
	end := min(start+perTxn, len(sm))
	var bytes int64
	for i := start; i < end; i++ {
		bytes += sm[i].n
		if bytes > maxBytes && i > start {
			return i
		}
	}
	return end
}
