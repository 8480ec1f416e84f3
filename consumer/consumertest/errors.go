package consumertest

import "errors"

var (
	// ErrBusy is returned to consumer.New (in its *consumer.ClusterError)
	// when a subscription already has a Consumer on that fake cluster: the
	// fake serves one Consumer per subscription and cluster at a time,
	// and moves no cursor (consumer.StartAfter) under one.
	ErrBusy = errors.New("consumertest: the subscription already has a consumer")
	// ErrStalled is the probe error of a stalled cluster (see
	// Cluster.Stall): Health reports it as not connected.
	ErrStalled = errors.New("consumertest: cluster stalled")
	// ErrNoPosition is returned, in the error of consumer.New
	// (consumer.StartAfter) or Consumer.SeekByID naming the cluster and
	// partition, when a position names a message the fake cluster does
	// not have (or a partition: package consumer refuses that one itself
	// first, with consumer.ErrBadPosition); that partition's cursor was
	// not moved.
	ErrNoPosition = errors.New("consumertest: no such position on the cluster")
	// ErrStreamClosed is returned by an acknowledgement on a closed
	// stream.
	ErrStreamClosed = errors.New("consumertest: consumer closed")
)
