package producer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
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
// imports. It routes every message first, then, for each cluster in
// parallel, cuts that cluster's messages (in their order in msgs) into
// transactions of perTxn messages (fewer when TxnMaxBytes would be passed)
// and commits them one after another, each as a Txn's Commit does. Every
// transaction of a bulk send therefore holds messages of one cluster only
// and is atomic; the bulk as a whole is not. Messages of one key keep their
// order. Keyless messages are spread over clusters as plain sends are.
//
// At the first failure SendTxnBulk starts no further transaction on any
// cluster (those already committing finish) and returns the failures
// joined: *TxnAbortError or *PartialCommitError values as from Commit, each
// naming its cluster. BulkResult says which messages were not committed;
// see TxnAbortError and PartialCommitError for the ones that may still be
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
	}
	if !p.enterLong() {
		return BulkResult{}, ErrClosed
	}
	defer p.leaveLong()

	// Route, and split by cluster keeping the order of msgs.
	type routed struct {
		idx []int
		sm  []stagedMsg
	}
	per := make(map[*cluster]*routed, len(p.clusters))
	for i, m := range msgs {
		c, pt := p.route(m.Key) // the key's own cluster: see (*Txn).route
		r := per[c]
		if r == nil {
			r = &routed{}
			per[c] = r
		}
		r.idx = append(r.idx, i)
		r.sm = append(r.sm, stagedMsg{msg: m, c: c, pt: pt, n: cost(m), props: m.Properties})
	}

	var (
		stop      atomic.Bool
		mu        sync.Mutex // guards the fields below
		res       BulkResult
		committed = make([]bool, len(msgs))
		errs      []error
		wg        sync.WaitGroup
	)
	for _, c := range p.clusters {
		r := per[c]
		if r == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for start := 0; start < len(r.sm); {
				if stop.Load() {
					return
				}
				if err := ctx.Err(); err != nil {
					mu.Lock()
					errs = append(errs, &ClusterError{Cluster: c.name, Op: "bulk transaction", Err: err})
					mu.Unlock()
					stop.Store(true)
					return
				}
				end := chunkEnd(r.sm, start, perTxn, cfg.maxBytes)
				_, err := p.commitTxn(ctx, &cfg, r.sm[start:end])
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
					mu.Unlock()
					stop.Store(true)
					return
				}
				res.Txns++
				res.Committed += end - start
				for _, i := range r.idx[start:end] {
					committed[i] = true
				}
				mu.Unlock()
				start = end
			}
		}()
	}
	wg.Wait()
	for i, ok := range committed {
		if !ok {
			res.NotCommitted = append(res.NotCommitted, i)
		}
	}
	return res, errors.Join(errs...)
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
