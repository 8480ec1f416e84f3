package producer

import (
	"context"
	"fmt"
	"sync"

	"github.com/keyroute/keyroute/router"
)

// Txn is a staged transaction: Send holds messages in memory and nothing
// reaches a broker until Commit. Make one with BeginTxn, or let RunInTxn
// manage it. A Txn is safe for concurrent use, but messages staged
// concurrently have no order between them.
//
// # What a transaction guarantees
//
// A transaction is atomic within a cluster, not across clusters. Pulsar
// transactions live inside one cluster (its transaction coordinator), so a
// transaction whose keys route to several clusters becomes one Pulsar
// transaction per touched cluster. Commit runs in three phases:
//
//  1. Begin a Pulsar transaction on every touched cluster, or take one
//     begun ahead (TxnPrebegin).
//  2. Send every staged message in its cluster's transaction and wait for
//     every acknowledgement, on every cluster.
//  3. Commit the Pulsar transactions, all clusters in parallel.
//
// No commit is sent before every send of every cluster has been
// acknowledged. A failure before the first commit (phases 1 and 2, or the
// BeforeCommit hook) commits nothing anywhere and returns a *TxnAbortError.
// A failure in phase 3 returns a *PartialCommitError that lists exactly
// which clusters confirmed their commit and which did not: the confirmed
// clusters' messages are visible; for the others it says whether the commit
// was refused or got no answer (a cluster that went away), in which case it
// may still complete later. Use TxnSingleCluster when the whole transaction
// must be atomic.
//
// Staged messages are not sent before Commit. Abort before Commit sends
// nothing, begins no Pulsar transaction and so leaves no aborted transaction
// on any broker (aborted transactions make the brokers' transaction-buffer
// snapshots grow).
//
// pulsar-client-go v0.21.0 has an open bug (apache/pulsar-client-go#1498):
// after a Pulsar-level abort, messages already written in that transaction
// are still delivered. Staging is what makes Abort-before-Commit safe. But
// when phase 2 fails after some messages were written, or the BeforeCommit
// hook fails, the SDK has to abort Pulsar transactions that hold written
// messages, and those messages MAY become visible: the *TxnAbortError lists
// those clusters in MaybeVisible. The e2e suite pins this upstream
// behaviour so that the guarantee can be tightened when the bug is fixed.
//
// # Order
//
// Within a transaction, messages of one key are written in the order they
// were staged, after the messages of that key that the committing goroutine
// handed to the Producer before calling Commit. Keyless messages go to the
// cluster of the transaction's first message, spread over its partitions.
//
// Transactional messages are sent one by one, never in a batch: the writers
// batch, and pulsar-client-go puts the transaction of a batch's first
// message on the whole batch, so a batch shared with plain messages or with
// another transaction would move them into or out of the transaction.
// SendTxnBulk batches, through writers reserved for it.
type Txn struct {
	p   *Producer
	cfg txnCfg

	mu    sync.Mutex // guards the fields below
	state txnState
	msgs  []stagedMsg // in Send order
	acks  []txnAck    // in Ack order
	bytes int64       // cost of msgs
	home  *cluster    // cluster of the first message; nil while empty
}

type txnState uint8

const (
	txnOpen txnState = iota
	txnCommitting
	txnEnded // Commit returned
	txnAborted
)

// TxnResult is the outcome of a commit.
type TxnResult struct {
	// Clusters are the clusters whose Pulsar transaction committed, in
	// topology order. On a *PartialCommitError it holds those that did.
	Clusters []string
	// IDs holds the ID of each message, in the order they were staged.
	// It is nil when the commit failed before the commit phase.
	IDs []ID
}

// BeginTxn starts a staged transaction. It does no I/O and begins no Pulsar
// transaction (see Txn). It returns ErrTxnDisabled when the Producer was
// made without Transactions(true), ErrBadOption for a bad TxnOpt and
// ErrClosed when the Producer is closed.
func (p *Producer) BeginTxn(opts ...TxnOpt) (*Txn, error) {
	if p == nil {
		return nil, ErrNilProducer
	}
	cfg, err := p.txnCfg(opts)
	if err != nil {
		return nil, err
	}
	if p.closed.Load() {
		return nil, ErrClosed
	}
	return &Txn{p: p, cfg: cfg}, nil
}

func (p *Producer) txnCfg(opts []TxnOpt) (txnCfg, error) {
	for _, c := range p.all() {
		if c.link.newTxn == nil {
			return txnCfg{}, ErrTxnDisabled
		}
	}
	return newTxnCfg(opts)
}

// RunInTxn runs fn with a new staged transaction (BeginTxn with opts) and
// then ends it: if fn returns an error, the transaction is aborted (nothing
// was sent) and RunInTxn returns fn's error; otherwise it commits and
// returns Commit's error. fn runs exactly once; it should stage messages with
// tx.Send and must not use tx after it returns. Retries of failed commits
// are Commit's (see TxnRetries). ctx is passed to fn and bounds the commit
// as it bounds Commit.
func (p *Producer) RunInTxn(ctx context.Context, fn func(ctx context.Context, tx *Txn) error, opts ...TxnOpt) error {
	if p == nil {
		return ErrNilProducer
	}
	tx, err := p.BeginTxn(opts...)
	if err != nil {
		return err
	}
	if err := fn(ctx, tx); err != nil {
		_ = tx.Abort()
		return err
	}
	_, err = tx.Commit(ctx)
	return err
}

// Send stages msg in the transaction: it routes msg by key now (so that
// errors come back at once) and holds it until Commit. It does no I/O and
// never blocks. The caller must not modify msg until Commit or Abort
// returns.
//
// It returns a *SendError matching ErrTxnTooLarge when msg would take the
// transaction past TxnMaxMessages or TxnMaxBytes, a *CrossClusterError
// under TxnSingleCluster when msg's key routes to another cluster than the
// transaction's, and ErrTxnDone after Commit or Abort. A rejected message is
// not staged (NotWritten is true for it) and the transaction stays usable.
func (t *Txn) Send(msg *Message) error {
	if msg == nil {
		return &SendError{Err: ErrNilMessage, notWritten: true}
	}
	if err := check(msg); err != nil {
		return &SendError{Key: msg.Key, Err: ErrBadMessage, Cause: err, notWritten: true}
	}
	n := cost(msg)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.state != txnOpen {
		return ErrTxnDone
	}
	if len(t.msgs) >= t.cfg.maxMessages {
		return &SendError{Key: msg.Key, Err: ErrTxnTooLarge, notWritten: true,
			Cause: fmt.Errorf("%d messages staged, TxnMaxMessages(%d)", len(t.msgs), t.cfg.maxMessages)}
	}
	if t.bytes+n > t.cfg.maxBytes {
		return &SendError{Key: msg.Key, Err: ErrTxnTooLarge, notWritten: true,
			Cause: fmt.Errorf("%d bytes staged + %d, TxnMaxBytes(%d)", t.bytes, n, t.cfg.maxBytes)}
	}
	c, pt := t.route(msg.Key)
	if t.cfg.singleCluster && t.home != nil && c != t.home {
		return &CrossClusterError{Key: msg.Key, Cluster: c.name, TxnCluster: t.home.name}
	}
	if t.home == nil {
		t.home = c
	}
	t.msgs = append(t.msgs, stagedMsg{msg: msg, c: c, pt: pt, n: n, props: msg.Properties})
	t.bytes += n
	return nil
}

// route places key. A keyed message goes to its key's own cluster and
// partition: the down policy (OnClusterDown) does not apply to
// transactions, since spilling would break their placement and per-key
// order; a commit that touches a down cluster fails there. Keyless messages
// go to the transaction's cluster.
func (t *Txn) route(key string) (*cluster, *partition) {
	if key != "" || t.home == nil {
		return t.p.route(key)
	}
	h := router.KeylessHash(t.p.keyless.Add(1) / keylessRun)
	return t.home, t.home.parts[router.Partition(h, len(t.home.parts))]
}

// Len reports the messages and bytes staged.
func (t *Txn) Len() (msgs int, bytes int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.msgs), t.bytes
}

// Abort drops the staged messages. Nothing was sent and no Pulsar
// transaction was begun, so nothing is left on any broker. Abort after
// Abort returns nil; Abort once Commit has begun returns ErrTxnDone.
func (t *Txn) Abort() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch t.state {
	case txnOpen:
		t.state = txnAborted
		t.msgs, t.acks, t.home = nil, nil, nil
		return nil
	case txnAborted:
		return nil
	}
	return ErrTxnDone
}

// Commit sends the staged messages and commits them, as described on Txn:
// one Pulsar transaction per touched cluster, every send acknowledged on
// every cluster before the first commit, then the commits in parallel. A
// transaction with no messages commits at once without any I/O.
//
// A failure before the first commit returns a *TxnAbortError (ErrTxnAborted);
// an attempt that failed before any message could have been written is
// retried first (TxnRetries). A failure in the commit phase returns a
// *PartialCommitError naming the clusters that committed and those that did
// not. ErrTxnDone: Commit or Abort was already called.
//
// ctx bounds the whole call. When it ends in the begin or send phase,
// Commit returns a *TxnAbortError matching ctx.Err() (and the begins
// that had failed by then) without waiting for outstanding sends or
// begins, and the Pulsar transactions are aborted in the
// background (Close waits for that). When it ends in the commit phase,
// clusters whose commit has not answered yet are listed as Failed with
// ErrTxnOutcomeUnknown. The commit phase is also bounded by TxnTimeout,
// counted from the begin: pulsar-client-go retries a commit to an
// unreachable cluster without end.
func (t *Txn) Commit(ctx context.Context) (TxnResult, error) {
	t.mu.Lock()
	if t.state != txnOpen {
		t.mu.Unlock()
		return TxnResult{}, ErrTxnDone
	}
	t.state = txnCommitting
	msgs, acks := t.msgs, t.acks
	t.msgs, t.acks, t.home = nil, nil, nil
	t.mu.Unlock()

	res, err := t.p.commitTxn(ctx, &t.cfg, msgs, acks)

	t.mu.Lock()
	t.state = txnEnded
	t.mu.Unlock()
	return res, err
}
