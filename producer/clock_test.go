package producer

import (
	"strings"
	"testing"
	"time"
)

// TestStartClock: a reading lies between the time.Now readings taken
// around it, by the monotonic clock, and carries a monotonic reading of its
// own, so that time.Since(ev.Start) is exact.
func TestStartClock(t *testing.T) {
	var c startClock
	c.reset(time.Now())
	for range 3 {
		before := time.Now()
		got := c.now()
		after := time.Now()
		if got.Before(before) || got.After(after) {
			t.Fatalf("now() = %v, not between %v and %v", got, before, after)
		}
		if !strings.Contains(got.String(), " m=") {
			t.Fatalf("now() = %v has no monotonic reading", got)
		}
		c.reset(after)
	}
}

// clockSink keeps BenchmarkStartClock's readings alive.
var clockSink time.Time

// BenchmarkStartClock compares Event.Start's clock with time.Now.
func BenchmarkStartClock(b *testing.B) {
	b.Run("time.Now", func(b *testing.B) {
		for range b.N {
			clockSink = time.Now()
		}
	})
	b.Run("startClock", func(b *testing.B) {
		var c startClock
		c.reset(time.Now())
		for range b.N {
			clockSink = c.now()
		}
	})
}
