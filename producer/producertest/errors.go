package producertest

import "errors"

var (
	// ErrClientClosed is returned by a stalled transaction call (see
	// Cluster.StallBegins) when its client closes, as pulsar-client-go
	// fails the requests in flight on a closed connection.
	ErrClientClosed = errors.New("producertest: client closed")
	// ErrTxnNotOpen is returned by Commit and Abort of a transaction that
	// is no longer open. pulsar-client-go answers those with a
	// *pulsar.Error (InvalidStatus), which it exports no value of, so this
	// is a plain error: the Producer takes it, as it takes every error of
	// a commit or abort that is not a *pulsar.Error, for an unknown
	// outcome (producer.ErrTxnOutcomeUnknown), not a refusal.
	ErrTxnNotOpen = errors.New("producertest: transaction not open")
)
