//go:build !unix

package producer_test

import "time"

// used is what the process has used so far; see usage_unix_test.go.
type used struct {
	cpu, sys time.Duration
	switches int64
}

// usage reads nothing where getrusage is not available: the benchmark's
// CPU metrics are then zero.
func usage() used { return used{} }
