package ingest

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/keyroute/keyroute/producer"
)

func TestDegradedWhenTheProducerSaysDownOrTheLastOutcomeFailed(t *testing.T) {
	now := time.Unix(1000, 0)
	tr := &tracker{now: func() time.Time { return now }}
	up := []producer.ClusterHealth{{Name: "a", Up: true}}
	down := []producer.ClusterHealth{{Name: "a", Up: false, Since: now}}

	tr.start("a")
	assert.Equal(t, "ok", tr.snapshot(up).Status)
	h := tr.snapshot(down)
	assert.Equal(t, "degraded", h.Status)
	assert.Contains(t, h.Clusters[0].Reason, "cluster down since")
	assert.Equal(t, int64(1), h.Clusters[0].InFlight)

	tr.done("a", nil)
	h = tr.snapshot(up)
	assert.Equal(t, "ok", h.Status)
	assert.Equal(t, int64(1), h.Clusters[0].Sent)

	tr.start("a")
	tr.done("a", errors.New("boom"))
	h = tr.snapshot(up)
	assert.Equal(t, "degraded", h.Status, "the last outcome failed, even at the same instant as a success")
	assert.Equal(t, "boom", h.Clusters[0].LastError)
}
