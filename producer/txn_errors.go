package producer

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

var (
	// ErrTxnDisabled is returned by BeginTxn, RunInTxn and SendTxnBulk when
	// the Producer was made without Transactions(true).
	ErrTxnDisabled = errors.New("producer: transactions not enabled (use Transactions(true))")

	// ErrTxnTooLarge is returned by (*Txn).Send when the message would take
	// the transaction past TxnMaxMessages or TxnMaxBytes. The message is not
	// staged; the transaction stays usable.
	ErrTxnTooLarge = errors.New("producer: transaction too large")

	// ErrTxnCrossCluster is returned (inside a *CrossClusterError) by
	// (*Txn).Send when a transaction confined by TxnSingleCluster gets a key
	// that routes to another cluster.
	ErrTxnCrossCluster = errors.New("producer: key routes outside the transaction's cluster")

	// ErrTxnAborted is returned (inside a *TxnAbortError) when a commit
	// failed before any cluster committed: no cluster committed, and every
	// Pulsar transaction it began was ended.
	ErrTxnAborted = errors.New("producer: transaction aborted")

	// ErrTxnOutcomeUnknown is returned (in PartialCommitError.Errs, or for
	// an abort inside a *TxnAbortError) for a cluster whose commit or abort
	// got no answer before ctx ended or the transaction timeout passed.
	// pulsar-client-go retries such calls for as long as the cluster is
	// unreachable, so the outcome is decided later: a commit may still
	// happen (the coordinator completes a commit it logged), otherwise the
	// broker aborts the transaction at its timeout.
	ErrTxnOutcomeUnknown = errors.New("producer: transaction outcome unknown")

	// ErrTxnDone is returned when a transaction is used after Commit or
	// Abort: Send after either, Commit twice, Abort after Commit began.
	ErrTxnDone = errors.New("producer: transaction already committed or aborted")
)

// CrossClusterError is returned by (*Txn).Send under TxnSingleCluster when
// Key routes to Cluster while the transaction is confined to TxnCluster.
// It matches ErrTxnCrossCluster.
type CrossClusterError struct {
	Key        string
	Cluster    string // where Key routes
	TxnCluster string // the cluster the transaction is confined to
}

func (e *CrossClusterError) Error() string {
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
// timeout passed, typically a cluster that went away) the commit may still
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
