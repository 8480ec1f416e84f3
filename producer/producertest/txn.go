package producertest

import (
	"context"
	"fmt"
	"sync"

	"github.com/apache/pulsar-client-go/pulsar"
)

// Transactions turns transactions on the cluster on (the default) or off
// from its next connect; off, a Producer made with
// producer.Transactions(true) refuses to begin any (producer.ErrTxnDisabled).
func (c *Cluster) Transactions(on bool) { c.cs.locked(func() { c.noTxn = !on }) }

// FailBegins makes the cluster's next transaction begins fail, one error
// each, in order; a nil error lets that begin succeed.
func (c *Cluster) FailBegins(errs ...error) {
	c.cs.locked(func() { c.beginErrs = append([]error(nil), errs...) })
}

// FailCommits makes the cluster's commits fail with err (nil: succeed). A
// transaction whose commit failed stays open. As with pulsar-client-go, a
// *pulsar.Error (pulsar.ErrMaxConcurrentOpsReached, say) is a refusal, and
// the Producer takes any other error for a connection that failed with
// the commit out: the outcome is unknown (producer.ErrTxnOutcomeUnknown).
func (c *Cluster) FailCommits(err error) { c.cs.locked(func() { c.commitErr = err }) }

// FailAborts makes the cluster's aborts fail with err (nil: succeed), as
// FailCommits does commits: the transaction stays open.
func (c *Cluster) FailAborts(err error) { c.cs.locked(func() { c.abortErr = err }) }

// StallBegins makes the cluster's transaction begins wait until release
// is called (once or more: later calls do nothing), as against a
// transaction coordinator that does not answer. As pulsar-client-go's, a
// stalled call does not end with its ctx; it ends with ErrClientClosed
// when its client closes, unless OutliveClose.
func (c *Cluster) StallBegins() (release func()) { return c.stallOn(&c.begins) }

// StallCommits is StallBegins for the cluster's commits.
func (c *Cluster) StallCommits() (release func()) { return c.stallOn(&c.commits) }

// OutliveClose makes calls stalled on the cluster go on after their
// client closes, until released, as pulsar-client-go v0.21.0's do when
// their request was not yet written to the connection (it queues them
// again and reconnects without end).
func (c *Cluster) OutliveClose() { c.cs.locked(func() { c.outlive = true }) }

// Stalled returns how many transaction calls are waiting on the
// cluster's stalls now.
func (c *Cluster) Stalled() (n int) {
	c.cs.locked(func() { n = c.stalled })
	return n
}

// stall holds calls until released.
type stall struct {
	released chan struct{}
	once     sync.Once
}

func (c *Cluster) stallOn(slot **stall) func() {
	s := &stall{released: make(chan struct{})}
	c.cs.locked(func() { *slot = s })
	return func() {
		s.once.Do(func() {
			c.cs.locked(func() {
				if *slot == s {
					*slot = nil
				}
			})
			close(s.released)
		})
	}
}

// pass waits while the stall in slot holds calls of cl's: until it is
// released or, unless OutliveClose, cl closes.
func (cl *client) pass(slot **stall) error {
	c := cl.c
	c.cs.mu.Lock()
	s := *slot
	if s == nil {
		c.cs.mu.Unlock()
		return nil
	}
	gone := cl.gone
	if c.outlive {
		gone = nil
	}
	c.stalled++
	c.cs.mu.Unlock()
	var err error
	select {
	case <-s.released:
	case <-gone:
		err = ErrClientClosed
	}
	c.cs.locked(func() { c.stalled-- })
	return err
}

// txn is a fake Pulsar transaction on one cluster. The fake ignores the
// transaction timeout: a transaction stays open until it is ended.
type txn struct {
	cl *client
	id uint64

	// Guarded by cs.mu.
	state pulsar.TxnState
	acked int // messages acknowledged in it
}

// begin begins a transaction on cl's cluster.
func (cl *client) begin() (pulsar.Transaction, error) {
	c := cl.c
	err := cl.pass(&c.begins)
	c.cs.mu.Lock()
	defer c.cs.mu.Unlock()
	if err == nil && len(c.beginErrs) > 0 {
		err = c.beginErrs[0]
		c.beginErrs = c.beginErrs[1:]
	}
	if err != nil {
		c.logTxn(OpBeginFail, nil, err)
		return nil, err
	}
	c.cs.txns++
	t := &txn{cl: cl, id: c.cs.txns, state: pulsar.TxnOpen}
	c.logTxn(OpBegin, t, nil)
	return t, nil
}

// Commit commits the transaction: its messages become visible. As
// pulsar-client-go's, it fails once its client is closed, unless
// OutliveClose.
func (t *txn) Commit(context.Context) error {
	c := t.cl.c
	err := t.cl.pass(&c.commits)
	c.cs.mu.Lock()
	defer c.cs.mu.Unlock()
	switch {
	case err != nil:
	case t.cl.closed() && !c.outlive:
		err = ErrClientClosed
	case t.state != pulsar.TxnOpen:
		err = fmt.Errorf("%w: transaction %d", ErrTxnNotOpen, t.id)
	default:
		err = c.commitErr
	}
	if err != nil {
		c.logTxn(OpCommitFail, t, err)
		return err
	}
	t.state = pulsar.TxnCommitted
	c.logTxn(OpCommit, t, nil)
	return nil
}

// Abort aborts the transaction: its messages are never visible (the fake
// has no apache/pulsar-client-go#1498).
func (t *txn) Abort(context.Context) error {
	c := t.cl.c
	c.cs.mu.Lock()
	defer c.cs.mu.Unlock()
	err := c.abortErr
	if t.state != pulsar.TxnOpen {
		err = fmt.Errorf("%w: transaction %d", ErrTxnNotOpen, t.id)
	}
	if err != nil {
		c.logTxn(OpAbortFail, t, err)
		return err
	}
	t.state = pulsar.TxnAborted
	c.logTxn(OpAbort, t, nil)
	return nil
}

func (t *txn) GetState() (s pulsar.TxnState) {
	t.cl.c.cs.locked(func() { s = t.state })
	return s
}

func (t *txn) GetTxnID() pulsar.TxnID { return pulsar.TxnID{LeastSigBits: t.id} }

// logTxn records a transaction event. Called with cs.mu held.
func (c *Cluster) logTxn(op Op, t *txn, err error) {
	ev := Event{Op: op, Cluster: c.name, Partition: -1, Err: err}
	if t != nil {
		ev.Txn, ev.Messages = t.id, t.acked
	}
	c.cs.events = append(c.cs.events, ev)
}

// txnOf returns the fake transaction pm is sent in through w, or nil. It
// panics on what only a bug in package producer could send: a transaction
// of another cluster, a transactional message that pulsar-client-go
// v0.21.0 would batch with others (its batch container puts the
// transaction of a batch's first message on the whole batch) on a
// partition's writer, or, on a writer reserved for bulk transactions, a
// message whose transaction differs from that of messages the writer has
// not reported yet (they could share a batch). Called with cs.mu held.
func (c *Cluster) txnOf(w *writer, pm *pulsar.ProducerMessage) *txn {
	if w.bulk {
		t, _ := pm.Transaction.(*txn)
		if (len(w.held) > 0 || w.reporting > 0) && t != w.last {
			panic(fmt.Sprintf("producertest: message %q could share a batch with another transaction's on a bulk writer", pm.Key))
		}
		w.last = t
	}
	if pm.Transaction == nil {
		return nil
	}
	t, ok := pm.Transaction.(*txn)
	if !ok || t.cl.c != c {
		panic(fmt.Sprintf("producertest: a message sent to cluster %q in a transaction of another cluster", c.name))
	}
	if !w.bulk && pm.ReplicationClusters == nil && !pm.DisableReplication && pm.DeliverAfter <= 0 && pm.DeliverAt.UnixNano() < 0 {
		panic(fmt.Sprintf("producertest: transactional message %q sent to be batched (DeliverAt %v)", pm.Key, pm.DeliverAt))
	}
	return t
}
