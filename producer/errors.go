package producer

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/keyroute/keyroute"
)

var (
	// ErrClosed (keyroute.ErrClosed) is returned when a message is handed
	// to a closed (or closing) Producer, and for messages still pending
	// when Close could not deliver them. A refused message was not
	// written: send it through another Producer; a pending one's outcome
	// is unknown (NotWritten is false), so a resend may duplicate it.
	ErrClosed = keyroute.ErrClosed

	// ErrNoTopic is returned by New when no Topic option was given: pass
	// Topic.
	ErrNoTopic = errors.New("producer: no topic")

	// ErrBadOption (keyroute.ErrBadOption) is returned by New when an
	// option has a value it cannot use; the error names the option. Fix
	// the configuration: a retry fails the same way.
	ErrBadOption = keyroute.ErrBadOption

	// ErrBadTopology (keyroute.ErrBadTopology) is returned by New when the
	// topology does not validate; the error names the cluster and field.
	// Fix the topology file.
	ErrBadTopology = keyroute.ErrBadTopology

	// ErrConnect is returned by New when a cluster could not be reached or
	// its producers could not be created; the *ClusterError names the
	// cluster. Check that cluster's URL, credentials and topic, or retry
	// New once it answers.
	ErrConnect = errors.New("producer: cannot connect")

	// ErrSendTimeout is returned when the broker did not acknowledge a
	// message within the send timeout. The outcome is unknown: the message
	// may have been written, so a resend may duplicate it (a dedup Name
	// lets the broker drop the duplicate).
	ErrSendTimeout = errors.New("producer: send timeout")

	// ErrMessageTooLarge is returned when a message is larger than the
	// broker's maximum message size. It was not written; a resend fails the
	// same way: make it smaller, or turn on Chunking.
	ErrMessageTooLarge = errors.New("producer: message too large")
	// ErrEncryption is a SendError's Err for a message that could not be
	// encrypted (see the Encryption option): it was not written. Check the
	// key reader; a resend fails the same way until it can read the key.
	ErrEncryption = errors.New("producer: message could not be encrypted")

	// ErrClusterDown is returned for a message routed to a cluster that is
	// down (see OnClusterDown), when the policy fails it. It was not
	// written: retry after a pause (Health says when the cluster is up),
	// or choose WaitUp or Spill.
	ErrClusterDown = errors.New("producer: cluster down")

	// ErrBufferFull is returned when a message's cluster has used up its
	// share of MaxPendingMessages or MemoryLimit and BlockWhenFull is off.
	// It was not written: slow down and retry, or let sends wait
	// (BlockWhenFull, the default).
	ErrBufferFull = errors.New("producer: buffer full")

	// ErrNilMessage is returned when a nil *Message is handed over: a bug
	// in the caller.
	ErrNilMessage = errors.New("producer: nil message")

	// ErrNilProducer is returned by every method called on a nil
	// *Producer (SendAsync calls its callback with it): a bug in the
	// caller, which must use the Producer New returned.
	ErrNilProducer = errors.New("producer: nil *Producer")

	// ErrBadMessage is returned for a message whose fields contradict each
	// other (NullValue with a non-empty Value), or whose Properties use a
	// name reserved for keyroute's hand-over (beginning with "keyroute-");
	// the error says which. Fix
	// the message: a resend fails the same way.
	ErrBadMessage = errors.New("producer: bad message")

	// ErrInCallback is returned by Send, Flush and Close, and by a
	// SendAsync or transaction send that would wait for buffer space, when
	// called from a Callback or an Observer's OnDone: they wait for
	// callbacks to run, and the callback goroutine is busy running the
	// caller, so they would wait for ever. Move the call out of the
	// callback (hand the work to another goroutine).
	ErrInCallback = errors.New("producer: called from a callback, where waiting would deadlock")

	// ErrTxnDisabled is returned by BeginTxn, RunInTxn and SendTxnBulk when
	// the Producer was made without Transactions(true): pass it to New.
	ErrTxnDisabled = errors.New("producer: transactions not enabled (use Transactions(true))")

	// ErrTxnTooLarge is returned by (*Txn).Send when the message would take
	// the transaction past TxnMaxMessages or TxnMaxBytes. The message is not
	// staged; the transaction stays usable: commit it and send the rest in
	// the next, or use SendTxnBulk.
	ErrTxnTooLarge = errors.New("producer: transaction too large")

	// ErrTxnCrossCluster is returned (inside a *CrossClusterError) by
	// (*Txn).Send when a transaction confined by TxnSingleCluster gets a key
	// that routes to another cluster. Send that key in a transaction of its
	// own cluster.
	ErrTxnCrossCluster = errors.New("producer: key routes outside the transaction's cluster")

	// ErrTxnAborted is returned (inside a *TxnAbortError) when a commit
	// failed before any cluster committed: no cluster committed, and every
	// Pulsar transaction it began was ended. Nothing was written: run the
	// transaction again.
	ErrTxnAborted = errors.New("producer: transaction aborted")

	// ErrTxnOutcomeUnknown is returned (in PartialCommitError.Errs, or for
	// an abort inside a *TxnAbortError) for a cluster whose commit or abort
	// got no answer: ctx ended or the transaction timeout passed first, or
	// the connection failed with the call out (the error it failed with is
	// joined).
	// pulsar-client-go retries such calls for as long as the cluster is
	// unreachable, so the outcome is decided later: a commit may still
	// happen (the coordinator completes a commit it logged), otherwise the
	// broker aborts the transaction at its timeout. Do not rerun blindly:
	// read back, or wait for the transaction timeout and check.
	ErrTxnOutcomeUnknown = errors.New("producer: transaction outcome unknown")

	// ErrTxnDone is returned when a transaction is used after Commit or
	// Abort: Send after either, Commit twice, Abort after Commit began. A
	// bug in the caller: begin a new transaction.
	ErrTxnDone = errors.New("producer: transaction already committed or aborted")
)

// SendError is the outcome of one message that failed. It names where the
// message was routed. Unwrap yields the matching sentinel (if any) and the
// cause, so errors.Is works for both. NotWritten tells whether the message
// was definitely not written (safe to send again) or its outcome is
// unknown; Reason gives a stable code for why it failed.
type SendError struct {
	Key       string
	Cluster   string
	Partition int
	// Err is the sentinel that classifies the failure, or nil.
	Err error
	// Cause is the underlying error (from pulsar-client-go or the ctx).
	Cause error

	notWritten bool // see NotWritten
}

func (e *SendError) Error() string {
	var msg string
	switch {
	case e.Err != nil && e.Cause != nil && errors.Is(e.Cause, e.Err):
		msg = e.Cause.Error() // it says Err already
	case e.Err != nil && e.Cause != nil:
		msg = e.Err.Error() + ": " + e.Cause.Error()
	case e.Err != nil:
		msg = e.Err.Error()
	case e.Cause != nil && !e.notWritten:
		msg = "producer: outcome unknown: " + e.Cause.Error()
	case e.Cause != nil:
		msg = "producer: " + e.Cause.Error()
	default:
		msg = "producer: send failed"
	}
	where := " (key " + strconv.Quote(e.Key)
	if e.Cluster != "" {
		where += ", cluster " + strconv.Quote(e.Cluster) + ", partition " + strconv.Itoa(e.Partition)
	}
	return msg + where + ")"
}

// Unwrap returns the sentinel and the cause.
func (e *SendError) Unwrap() []error {
	switch {
	case e.Err == nil:
		return []error{e.Cause}
	case e.Cause == nil:
		return []error{e.Err}
	}
	return []error{e.Err, e.Cause}
}

// ClusterError is an error that concerns a whole cluster (connecting,
// flushing, closing).
type ClusterError struct {
	Cluster string
	Op      string
	Err     error
}

func (e *ClusterError) Error() string {
	return fmt.Sprintf("producer: cluster %q: %s: %v", e.Cluster, e.Op, e.Err)
}

func (e *ClusterError) Unwrap() error { return e.Err }

// CrossClusterError is returned by (*Txn).Send under TxnSingleCluster when
// Key routes to Cluster while the transaction is confined to TxnCluster.
// It matches ErrTxnCrossCluster.
type CrossClusterError struct {
	Key        string // "" for an acknowledgement (Txn.Ack)
	Cluster    string // where Key routes, or the acknowledged message's cluster
	TxnCluster string // the cluster the transaction is confined to
}

func (e *CrossClusterError) Error() string {
	if e.Key == "" {
		return fmt.Sprintf("%v: an acknowledgement of a message from cluster %q, the transaction is confined to cluster %q",
			ErrTxnCrossCluster, e.Cluster, e.TxnCluster)
	}
	return fmt.Sprintf("%v: key %q routes to cluster %q, the transaction is confined to cluster %q",
		ErrTxnCrossCluster, e.Key, e.Cluster, e.TxnCluster)
}

// Unwrap returns ErrTxnCrossCluster.
func (e *CrossClusterError) Unwrap() error { return ErrTxnCrossCluster }

// TxnAbortError is returned by a commit that failed before any cluster
// committed. Nothing was committed anywhere; the Pulsar transactions that
// had begun were ended: aborted where a message may have been written,
// committed empty where nothing was written (so no aborted transaction is
// left on those brokers). It matches ErrTxnAborted and Err.
//
// MaybeVisible lists the clusters (in topology order) whose aborted Pulsar
// transaction may hold written messages. Because of the open upstream bug
// apache/pulsar-client-go#1498 (v0.21.0), the broker still delivers such
// messages after the abort: consumers of those clusters MAY see them. When
// MaybeVisible is empty, no message of the transaction can appear anywhere.
type TxnAbortError struct {
	MaybeVisible []string
	// Err is why the commit failed: the first send error, the BeforeCommit
	// hook's error, the ctx's error, a begin error (as *ClusterError). It
	// also holds the errors of aborts that failed, if any.
	Err error
}

func (e *TxnAbortError) Error() string {
	var b strings.Builder
	b.WriteString(ErrTxnAborted.Error())
	if len(e.MaybeVisible) > 0 {
		b.WriteString(" (messages may still be delivered on ")
		b.WriteString(quoteList(e.MaybeVisible))
		b.WriteString(", apache/pulsar-client-go#1498)")
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns ErrTxnAborted and Err.
func (e *TxnAbortError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrTxnAborted}
	}
	return []error{ErrTxnAborted, e.Err}
}

// PartialCommitError is returned when the commit phase of a transaction did
// not succeed on every cluster it touched. Every message had been written
// (acknowledged) on every cluster before the first commit was sent.
//
// Committed lists the clusters whose Pulsar transaction confirmed its
// commit: their messages are visible. Failed lists the clusters whose
// commit was not confirmed, and Errs says why for each. Where Errs matches
// ErrTxnOutcomeUnknown (no answer before ctx ended or the transaction
// timeout passed, or the connection failed with the commit out: typically
// a cluster that went away) the commit may have been done, or may still
// complete later; otherwise the commit was refused and the broker aborts the
// transaction at its timeout. Because of apache/pulsar-client-go#1498 a
// Failed cluster's messages may be delivered even after that abort. Both
// lists are in topology order; Committed is empty when every commit failed.
type PartialCommitError struct {
	Committed []string
	Failed    []string
	Errs      map[string]error // by cluster, for each Failed cluster
}

func (e *PartialCommitError) Error() string {
	var b strings.Builder
	b.WriteString("producer: transaction commit failed on ")
	b.WriteString(quoteList(e.Failed))
	b.WriteString(", committed on ")
	if len(e.Committed) == 0 {
		b.WriteString("none")
	} else {
		b.WriteString(quoteList(e.Committed))
	}
	for _, name := range e.Failed {
		if err := e.Errs[name]; err != nil {
			b.WriteString("; ")
			b.WriteString(name)
			b.WriteString(": ")
			b.WriteString(err.Error())
		}
	}
	return b.String()
}

// Unwrap returns the per-cluster errors, in the order of Failed.
func (e *PartialCommitError) Unwrap() []error {
	errs := make([]error, 0, len(e.Failed))
	for _, name := range e.Failed {
		if err := e.Errs[name]; err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}
