package main

import (
	"errors"
	"fmt"
)

var (
	// ErrUsage is returned when the command line is wrong: an unknown
	// command or flag, a missing argument or a value out of range. The
	// error names the flag or argument; the exit code is 2.
	ErrUsage = errors.New("usage")
	// ErrTopicNotFound is returned when the topic does not exist on a
	// cluster (describe, delete, placement and health need it to).
	ErrTopicNotFound = errors.New("topic not found")
	// ErrPartitionMismatch is returned by topics create when the topic
	// already exists on a cluster with another partition count, and by
	// placement when a cluster holds a non-partitioned topic of the name.
	ErrPartitionMismatch = errors.New("topic exists with a different partition count")
	// ErrStatus is returned when an admin API answers with an HTTP status
	// the command does not expect; the error carries the status and the
	// broker's reason.
	ErrStatus = errors.New("unexpected admin API status")
	// ErrUnhealthy is returned by health when at least one cluster is not
	// reachable (service or admin URL) or lacks the topic.
	ErrUnhealthy = errors.New("not every cluster is healthy")
)

// ClusterError is a failure on one cluster: which cluster, what was being
// done there and why.
type ClusterError struct {
	// Cluster is the cluster's name in the topology.
	Cluster string
	// Op is the step, e.g. "create topic", "get partitions", "connect".
	Op string
	// Err is the cause, often one of the sentinels above wrapped with
	// detail.
	Err error
}

func (e *ClusterError) Error() string {
	return fmt.Sprintf("cluster %s: %s: %v", e.Cluster, e.Op, e.Err)
}

// Unwrap returns the cause.
func (e *ClusterError) Unwrap() error { return e.Err }

// usageError is a problem with one flag or argument.
type usageError struct {
	what   string // "-partitions", "argument TOPIC", "command"
	reason string
}

func (e *usageError) Error() string { return e.what + ": " + e.reason }
func (e *usageError) Unwrap() error { return ErrUsage }

func badUsage(what, format string, args ...any) error {
	return &usageError{what: what, reason: fmt.Sprintf(format, args...)}
}
