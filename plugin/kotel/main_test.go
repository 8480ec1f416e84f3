//go:build !e2e

package kotel_test

import (
	"testing"

	"go.uber.org/goleak"
)

// No goroutine of the producer's or the observer's outlives a test.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
