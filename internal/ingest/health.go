package ingest

import (
	"sync"
	"time"

	"github.com/keyroute/keyroute/producer"
)

// ClusterHealth is one cluster's state as /healthz reports it.
type ClusterHealth struct {
	Name        string     `json:"name"`
	State       string     `json:"state"` // "ok" or "degraded"
	Reason      string     `json:"reason,omitempty"`
	LastSuccess *time.Time `json:"lastSuccess,omitempty"`
	LastError   string     `json:"lastError,omitempty"`
	LastErrorAt *time.Time `json:"lastErrorAt,omitempty"`
	InFlight    int64      `json:"inFlight"`
	Sent        int64      `json:"sent"`
	Failed      int64      `json:"failed"`
}

// Health is the body of /healthz.
type Health struct {
	Status   string          `json:"status"` // "ok" or "degraded"
	Clusters []ClusterHealth `json:"clusters"`
}

// tracker records this service's outcomes per cluster. Whether a cluster
// is up is the producer's call (Producer.Health); the tracker adds what the
// service itself saw. Its methods are safe for concurrent use.
type tracker struct {
	now      func() time.Time
	clusters sync.Map // cluster name -> *clusterState
}

type clusterState struct {
	mu          sync.Mutex // guards the fields below
	lastSuccess time.Time
	lastError   string
	lastErrorAt time.Time
	inFlight    int64
	sent        int64
	failed      int64
}

func (t *tracker) state(cluster string) *clusterState {
	if c, ok := t.clusters.Load(cluster); ok {
		return c.(*clusterState)
	}
	c, _ := t.clusters.LoadOrStore(cluster, &clusterState{})
	return c.(*clusterState)
}

// start counts a message handed to cluster.
func (t *tracker) start(cluster string) {
	c := t.state(cluster)
	c.mu.Lock()
	c.inFlight++
	c.mu.Unlock()
}

// done records the outcome of a message counted by start.
func (t *tracker) done(cluster string, err error) {
	now := t.now()
	c := t.state(cluster)
	c.mu.Lock()
	c.inFlight--
	if err == nil {
		c.sent++
		c.lastSuccess = now
	} else {
		c.failed++
		c.lastError, c.lastErrorAt = err.Error(), now
	}
	c.mu.Unlock()
}

// snapshot joins the producer's view of each cluster with the service's. A
// cluster is degraded when the producer counts it as down, or when the
// service's most recent outcome there was a failure.
func (t *tracker) snapshot(clusters []producer.ClusterHealth) Health {
	h := Health{Status: "ok", Clusters: make([]ClusterHealth, 0, len(clusters))}
	for _, pc := range clusters {
		c := t.state(pc.Name)
		c.mu.Lock()
		ch := ClusterHealth{Name: pc.Name, State: "ok", LastError: c.lastError, InFlight: c.inFlight, Sent: c.sent, Failed: c.failed}
		if !c.lastSuccess.IsZero() {
			ts := c.lastSuccess
			ch.LastSuccess = &ts
		}
		if !c.lastErrorAt.IsZero() {
			ts := c.lastErrorAt
			ch.LastErrorAt = &ts
		}
		switch {
		case !pc.Up:
			ch.State, ch.Reason = "degraded", "cluster down since "+pc.Since.UTC().Format(time.RFC3339)
		case !c.lastErrorAt.IsZero() && !c.lastErrorAt.Before(c.lastSuccess):
			ch.State, ch.Reason = "degraded", "last outcome failed"
		}
		c.mu.Unlock()
		if ch.State != "ok" {
			h.Status = "degraded"
		}
		h.Clusters = append(h.Clusters, ch)
	}
	return h
}
