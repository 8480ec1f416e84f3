package testbed

import (
	"errors"
	"fmt"
	"strings"
)

var (
	// ErrChecksum is returned when the downloaded Pulsar distribution does
	// not match the pinned SHA-512.
	ErrChecksum = errors.New("testbed: checksum mismatch")
	// ErrToolMissing is returned when java or mvn cannot be found.
	ErrToolMissing = errors.New("testbed: required tool not found")
	// ErrExited is returned when a cluster's JVM exits while it is expected
	// to be running (for example before it became ready).
	ErrExited = errors.New("testbed: JVM exited")
	// ErrNotRunning is returned when an operation needs a running JVM but the
	// cluster has been stopped or killed.
	ErrNotRunning = errors.New("testbed: cluster not running")
	// ErrRunning is returned by Start or Restart when the cluster's JVM is
	// still running.
	ErrRunning = errors.New("testbed: cluster already running")
	// ErrBadOptions is returned when Options hold an invalid value.
	ErrBadOptions = errors.New("testbed: invalid options")
	// ErrNotSecure is returned by Bed.Token when the bed was not started
	// with Options.Secure.
	ErrNotSecure = errors.New("testbed: bed is not secure")
)

// ClusterError reports a failure of one cluster. It carries the tail of the
// cluster's log so that a failing test shows why the broker misbehaved.
type ClusterError struct {
	// Cluster is the cluster's name, e.g. "local-1".
	Cluster string
	// Op is what was being done: "start", "ready", "stop", ...
	Op string
	// LogTail holds the last lines of the cluster's log, oldest first.
	LogTail []string
	// Err is the underlying error.
	Err error
}

func (e *ClusterError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "testbed: cluster %s: %s: %v", e.Cluster, e.Op, e.Err)
	if len(e.LogTail) > 0 {
		fmt.Fprintf(&b, "\n--- last %d log lines of %s ---\n", len(e.LogTail), e.Cluster)
		b.WriteString(strings.Join(e.LogTail, "\n"))
	}
	return b.String()
}

// Unwrap returns the underlying error.
func (e *ClusterError) Unwrap() error { return e.Err }
