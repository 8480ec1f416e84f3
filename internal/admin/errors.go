package admin

import (
	"errors"
	"fmt"
)

var (
	// ErrBadTopic is returned when a topic name cannot be parsed as
	// [persistent://]tenant/namespace/topic or a bare local name.
	ErrBadTopic = errors.New("admin: invalid topic name")
	// ErrPartitionMismatch is returned by CreatePartitionedTopic when the
	// topic already exists with a different partition count.
	ErrPartitionMismatch = errors.New("admin: topic exists with a different partition count")
	// ErrNotFound is returned when the topic does not exist (the broker
	// answered 404).
	ErrNotFound = errors.New("admin: topic not found")
	// ErrStatus is returned when the admin API answers with an unexpected
	// HTTP status.
	ErrStatus = errors.New("admin: unexpected HTTP status")
)

// Error reports a failed admin call: which cluster (by name when the
// Client has one, and admin URL), which topic and what was being done.
type Error struct {
	// Op is the operation, e.g. "create partitioned topic".
	Op string
	// Cluster is the cluster's name (New), "" for a Plain client.
	Cluster string
	// AdminURL is the cluster's admin URL.
	AdminURL string
	// Topic is the full topic name.
	Topic string
	// Status is the HTTP status, or 0 when no response arrived.
	Status int
	// Err is the underlying error; often one of the sentinels above.
	Err error
}

func (e *Error) Error() string {
	where := e.AdminURL
	if e.Cluster != "" {
		where = "cluster " + e.Cluster + " (" + e.AdminURL + ")"
	}
	if e.Status != 0 {
		return fmt.Sprintf("admin: %s %s at %s: HTTP %d: %v", e.Op, e.Topic, where, e.Status, e.Err)
	}
	return fmt.Sprintf("admin: %s %s at %s: %v", e.Op, e.Topic, where, e.Err)
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }
