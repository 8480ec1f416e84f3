package producer

import (
	"errors"
	"fmt"
	"strconv"
)

var (
	// ErrClosed is returned when a message is handed to a closed (or
	// closing) Producer, and for messages still pending when Close could
	// not deliver them.
	ErrClosed = errors.New("producer: closed")

	// ErrNoTopic is returned by New when no Topic option was given.
	ErrNoTopic = errors.New("producer: no topic")

	// ErrBadOption is returned by New when an option has a value it cannot
	// use; the error names the option.
	ErrBadOption = errors.New("producer: bad option")

	// ErrBadTopology is returned by New when the topology does not validate.
	ErrBadTopology = errors.New("producer: bad topology")

	// ErrConnect is returned by New when a cluster could not be reached or
	// its producers could not be created; the *ClusterError names the cluster.
	ErrConnect = errors.New("producer: cannot connect")

	// ErrSendTimeout is returned when the broker did not acknowledge a
	// message within the send timeout.
	ErrSendTimeout = errors.New("producer: send timeout")

	// ErrMessageTooLarge is returned when a message is larger than the
	// broker's maximum message size.
	ErrMessageTooLarge = errors.New("producer: message too large")

	// ErrClusterDown is returned for a message routed to a cluster that is
	// down (see OnClusterDown), when the policy fails it.
	ErrClusterDown = errors.New("producer: cluster down")

	// ErrBufferFull is returned when a message's cluster has used up its
	// share of MaxPendingMessages or MemoryLimit and BlockWhenFull is off.
	ErrBufferFull = errors.New("producer: buffer full")

	// ErrNilMessage is returned when a nil *Message is handed over.
	ErrNilMessage = errors.New("producer: nil message")

	// ErrNilProducer is returned by every method called on a nil
	// *Producer (SendAsync calls its callback with it).
	ErrNilProducer = errors.New("producer: nil *Producer")

	// ErrBadMessage is returned for a message whose fields contradict each
	// other (NullValue with a non-empty Value); the error says which.
	ErrBadMessage = errors.New("producer: bad message")

	// ErrInCallback is returned by Send, Flush and Close, and by a
	// SendAsync or transaction send that would wait for buffer space, when
	// called from a Callback or an Observer's OnDone: they wait for
	// callbacks to run, and the callback goroutine is busy running the
	// caller, so they would wait for ever.
	ErrInCallback = errors.New("producer: called from a callback, where waiting would deadlock")
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
