//go:build !unix

package kotel_test

import "time"

// processCPU reads nothing where getrusage is not available: the
// benchmark's CPU metrics are then zero.
func processCPU() time.Duration { return 0 }
