package consumertest

import "errors"

var (
	// ErrBusy is returned to consumer.New (in its *consumer.ClusterError)
	// when a subscription already has a Consumer on that fake cluster: the
	// fake serves one Consumer per subscription and cluster at a time.
	ErrBusy = errors.New("consumertest: the subscription already has a consumer")
	// ErrStalled is the probe error of a stalled cluster (see
	// Cluster.Stall): Health reports it as not connected.
	ErrStalled = errors.New("consumertest: cluster stalled")
	// ErrStreamClosed is returned by an acknowledgement on a closed
	// stream.
	ErrStreamClosed = errors.New("consumertest: consumer closed")
)
