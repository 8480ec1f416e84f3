package kzap_test

import (
	"testing"

	"go.uber.org/goleak"
)

// No goroutine of the producer's or the logger's outlives a test.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
