package producer

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// bulkWriter is a writer reserved for bulk transactions on one partition.
// It batches, so a batch must never hold messages of two transactions
// (pulsar-client-go puts the transaction of a batch's first message on the
// whole batch, internal/batch_builder.go): a transaction holds mu from its
// first message's hand-over until every message of it was acknowledged,
// so the next one starts a batch of its own.
type bulkWriter struct {
	mu sync.Mutex
	w  writer
}

// bulkWriter returns the writer reserved for bulk transactions on c's
// partition idx, opening c's reserved writers at their first use. It
// returns nil without reserved writers (a connector that has none, or
// writers whose access mode takes no second producer): then the
// partition's own writer takes the messages one by one, as a Txn's.
func (c *cluster) bulkWriter(ctx context.Context, idx int) (*bulkWriter, error) {
	if c.link.openBulk == nil {
		return nil, nil
	}
	c.bulkMu.Lock()
	defer c.bulkMu.Unlock()
	switch {
	case c.bulkClosed:
		return nil, ErrClosed
	case c.bulkNone:
		return nil, nil
	}
	if c.bulk == nil {
		ws, err := c.link.openBulk(ctx)
		if errors.Is(err, errBulkNotShared) {
			c.bulkNone = true
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		if len(ws) != len(c.parts) {
			closeWriters(ws)
			return nil, fmt.Errorf("%d bulk writers for %d partitions", len(ws), len(c.parts))
		}
		c.bulk = make([]*bulkWriter, len(ws))
		for i, w := range ws {
			c.bulk[i] = &bulkWriter{w: w}
		}
	}
	return c.bulk[idx], nil
}

// closeBulk closes c's reserved writers, if any were opened, and keeps any
// from opening later. Close calls it once no call hands messages over.
func (c *cluster) closeBulk() {
	c.bulkMu.Lock()
	c.bulkClosed = true
	bulk := c.bulk
	c.bulkMu.Unlock()
	ws := make([]writer, 0, len(bulk))
	for _, bw := range bulk {
		ws = append(ws, bw.w)
	}
	closeWriters(ws)
}

// writeBulk writes chunk, the messages of one bulk transaction on one
// partition, in tc's transaction through bw (nil: the partition's own
// writer, one message at a time), and waits until every message has its
// outcome. It stores the IDs in ids and returns the first failure. When ctx
// ends first it returns at once with abandoned set: calling abandoned waits
// for the outstanding outcomes (and keeps bw until then).
func (p *Producer) writeBulk(ctx context.Context, bw *bulkWriter, tc *txnCluster, chunk []stagedMsg, ids []ID) (abandoned func(), err error) {
	c, pt := tc.c, chunk[0].pt
	w := pt.w
	unlock := func() {}
	if bw != nil {
		bw.mu.Lock()
		unlock = bw.mu.Unlock
		w = bw.w
	}
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	fail := func(err error) { once.Do(func() { first = err }) }
	for i := range chunk {
		if !p.handTxn(ctx, ctx, tc, w, bw == nil, &chunk[i], &ids[i], &wg, fail) {
			break
		}
	}
	// Send the last batch now rather than at the linger's end.
	if p.enter() {
		if err := flushWriter(ctx, w); err != nil { // a message that failed fails the transaction itself
			fail(&ClusterError{Cluster: c.name, Op: "flush transaction", Err: err})
		}
		p.leave()
	}
	// pulsar-client-go does not give up on a message once it is queued,
	// whatever its ctx, and messages in a batch that Close dropped never
	// report: wait for the outcomes, Close or ctx, whichever comes first.
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-p.done:
		select {
		case <-done:
		default:
			tc.maybeWritten.Store(true)
			fail(c.sendError(ctx, chunk[0].msg.Key, pt.idx, ErrClosed, false))
		}
	case <-ctx.Done():
		select {
		case <-done:
		default:
			return func() {
				select {
				case <-done:
				case <-p.done:
				}
				unlock()
			}, ctx.Err()
		}
	}
	unlock()
	return nil, first
}
