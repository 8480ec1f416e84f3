package kotel

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
)

// Bucket i holds (bounds[i-1], bounds[i]]: a duration on a bound belongs to
// the bucket below it, as with the SDK's explicit buckets.
func TestHistBuckets(t *testing.T) {
	h := NewDurations().hist(attribute.NewSet(attribute.String("a", "b")))
	_, ok := h.point(time.Time{}, time.Time{})
	require.False(t, ok, "an empty histogram has no point")
	for _, d := range []time.Duration{-time.Second, 0, 5 * time.Millisecond, 5*time.Millisecond + 1,
		10 * time.Second, 10*time.Second + 1, time.Hour} {
		h.record(d)
	}
	p, ok := h.point(time.Time{}, time.Time{})
	require.True(t, ok)
	assert.Equal(t, uint64(7), p.Count)
	assert.Equal(t, []uint64{3, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2}, p.BucketCounts)
	minV, _ := p.Min.Value()
	maxV, _ := p.Max.Value()
	assert.Equal(t, 0.0, minV, "a negative duration counts as 0")
	assert.Equal(t, 3600.0, maxV)
	assert.InDelta(t, 0.005+0.005+20+3600, p.Sum, 1e-6)
}
