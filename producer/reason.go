package producer

import (
	"context"
	"errors"
	"strconv"
)

// ReasonCode is a stable name for why a message (or a call) failed: an
// enumeration to switch on, log or count, instead of matching error text.
// Codes are only ever added.
type ReasonCode uint8

// Reason codes. Reason(err) returns one of them.
const (
	ReasonNone              ReasonCode = iota // err is nil
	ReasonOther                               // an error the SDK does not classify
	ReasonNilProducer                         // ErrNilProducer
	ReasonNilMessage                          // ErrNilMessage
	ReasonBadMessage                          // ErrBadMessage
	ReasonClosed                              // ErrClosed
	ReasonClusterDown                         // ErrClusterDown
	ReasonBufferFull                          // ErrBufferFull
	ReasonInCallback                          // ErrInCallback
	ReasonCanceled                            // the ctx was canceled
	ReasonDeadlineExceeded                    // the ctx's deadline passed
	ReasonSendTimeout                         // ErrSendTimeout
	ReasonMessageTooLarge                     // ErrMessageTooLarge
	ReasonBroker                              // pulsar-client-go or the broker reported another error
	ReasonBadOption                           // ErrBadOption, ErrNoTopic
	ReasonBadTopology                         // ErrBadTopology
	ReasonConnect                             // ErrConnect
	ReasonTxnDisabled                         // ErrTxnDisabled
	ReasonTxnTooLarge                         // ErrTxnTooLarge
	ReasonTxnCrossCluster                     // ErrTxnCrossCluster
	ReasonTxnDone                             // ErrTxnDone
	ReasonTxnPartialCommit                    // a *PartialCommitError
	ReasonTxnOutcomeUnknown                   // ErrTxnOutcomeUnknown
	ReasonTxnAborted                          // ErrTxnAborted, for another cause than those above
	ReasonEncryption                          // ErrEncryption
)

var reasonNames = [...]string{
	ReasonNone:              "none",
	ReasonOther:             "other",
	ReasonNilProducer:       "nil_producer",
	ReasonNilMessage:        "nil_message",
	ReasonBadMessage:        "bad_message",
	ReasonClosed:            "closed",
	ReasonClusterDown:       "cluster_down",
	ReasonBufferFull:        "buffer_full",
	ReasonInCallback:        "in_callback",
	ReasonCanceled:          "canceled",
	ReasonDeadlineExceeded:  "deadline_exceeded",
	ReasonSendTimeout:       "send_timeout",
	ReasonMessageTooLarge:   "message_too_large",
	ReasonBroker:            "broker",
	ReasonBadOption:         "bad_option",
	ReasonBadTopology:       "bad_topology",
	ReasonConnect:           "connect",
	ReasonTxnDisabled:       "txn_disabled",
	ReasonEncryption:        "encryption",
	ReasonTxnTooLarge:       "txn_too_large",
	ReasonTxnCrossCluster:   "txn_cross_cluster",
	ReasonTxnDone:           "txn_done",
	ReasonTxnPartialCommit:  "txn_partial_commit",
	ReasonTxnOutcomeUnknown: "txn_outcome_unknown",
	ReasonTxnAborted:        "txn_aborted",
}

// String returns the code's snake_case name, e.g. "send_timeout": short,
// stable and of low cardinality, fit for a metric attribute.
func (r ReasonCode) String() string {
	if int(r) < len(reasonNames) && reasonNames[r] != "" {
		return reasonNames[r]
	}
	return "reason(" + strconv.Itoa(int(r)) + ")"
}

// reasons maps sentinels to codes, in the order they are checked: the
// first match wins, so a message that failed with ErrClosed because its ctx
// ended is "closed", not "canceled".
var reasons = []struct {
	err  error
	code ReasonCode
}{
	{ErrInCallback, ReasonInCallback},
	{ErrNilProducer, ReasonNilProducer},
	{ErrNilMessage, ReasonNilMessage},
	{ErrBadMessage, ReasonBadMessage},
	{ErrClosed, ReasonClosed},
	{ErrClusterDown, ReasonClusterDown},
	{ErrBufferFull, ReasonBufferFull},
	{ErrSendTimeout, ReasonSendTimeout},
	{ErrMessageTooLarge, ReasonMessageTooLarge},
	{ErrEncryption, ReasonEncryption},
	{ErrNoTopic, ReasonBadOption},
	{ErrBadOption, ReasonBadOption},
	{ErrBadTopology, ReasonBadTopology},
	{ErrConnect, ReasonConnect},
	{ErrTxnDisabled, ReasonTxnDisabled},
	{ErrTxnTooLarge, ReasonTxnTooLarge},
	{ErrTxnCrossCluster, ReasonTxnCrossCluster},
	{ErrTxnDone, ReasonTxnDone},
	{context.DeadlineExceeded, ReasonDeadlineExceeded},
	{context.Canceled, ReasonCanceled},
	{ErrTxnOutcomeUnknown, ReasonTxnOutcomeUnknown},
	{ErrTxnAborted, ReasonTxnAborted},
}

// Reason returns the code for err, an error from any call of this package
// (Send, a Callback, Flush, Close, New, a transaction): ReasonNone for nil,
// ReasonBroker for a message that pulsar-client-go or the broker failed for
// a reason the SDK has no code for, ReasonOther for an error not from this
// package.
func Reason(err error) ReasonCode {
	if err == nil {
		return ReasonNone
	}
	var pe *PartialCommitError
	if errors.As(err, &pe) {
		return ReasonTxnPartialCommit
	}
	for _, r := range reasons {
		if errors.Is(err, r.err) {
			return r.code
		}
	}
	var se *SendError
	if errors.As(err, &se) && se.Cause != nil {
		return ReasonBroker
	}
	return ReasonOther
}

// NotWritten reports whether err says that the message (or, for a
// transaction, every message of it) was definitely not written: no broker
// stored it and none will, so sending it again cannot duplicate it. It is
// false for nil, and false when the outcome is unknown: the message may
// have been written (a send timeout, a ctx that ended after the message was
// handed to its writer, a connection lost while the broker had it, Close
// before its acknowledgement), where sending it again may store it twice.
//
// For errors joined from several messages or transactions (SendTxnBulk),
// it is true only when it is true for every one of them. Errors that do not
// concern a message being written (Flush's, Close's, New's) are not
// "not written": NotWritten is false for them.
func NotWritten(err error) bool {
	switch e := err.(type) {
	case nil:
		return false
	case *SendError:
		return e.notWritten
	case *TxnAbortError:
		return len(e.MaybeVisible) == 0
	case *PartialCommitError:
		return false
	case *CrossClusterError:
		return true // refused by Txn.Send, never staged
	case interface{ Unwrap() []error }:
		errs := e.Unwrap()
		for _, err := range errs {
			if !NotWritten(err) {
				return false
			}
		}
		return len(errs) > 0
	case interface{ Unwrap() error }:
		return NotWritten(e.Unwrap())
	}
	return false
}
