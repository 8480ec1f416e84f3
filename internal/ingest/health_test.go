package ingest

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestStalledClusterIsDegraded(t *testing.T) {
	now := time.Unix(1000, 0)
	tr := newTracker([]string{"a"}, 10*time.Second, func() time.Time { return now })
	tr.start("a")
	assert.Equal(t, "ok", tr.snapshot().Status)
	now = now.Add(11 * time.Second)
	h := tr.snapshot()
	assert.Equal(t, "degraded", h.Status)
	assert.Contains(t, h.Clusters[0].Reason, "no outcome")
	assert.Equal(t, int64(1), h.Clusters[0].InFlight)

	tr.done("a", nil)
	h = tr.snapshot()
	assert.Equal(t, "ok", h.Status)
	assert.Equal(t, int64(1), h.Clusters[0].Sent)

	tr.start("a")
	tr.done("a", errors.New("boom"))
	h = tr.snapshot()
	assert.Equal(t, "degraded", h.Status, "the last outcome failed, even at the same instant as a success")
	assert.Equal(t, "boom", h.Clusters[0].LastError)
}
