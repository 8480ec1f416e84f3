package producertest

import "errors"

var (
	// ErrClientClosed is returned by a stalled transaction call (see
	// Cluster.StallBegins) when its client closes, as pulsar-client-go
	// fails the requests in flight on a closed connection.
	ErrClientClosed = errors.New("producertest: client closed")
	// ErrTxnNotOpen is returned by Commit and Abort of a transaction that
	// is no longer open.
	ErrTxnNotOpen = errors.New("producertest: transaction not open")
)
