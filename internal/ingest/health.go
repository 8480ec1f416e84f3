package ingest

import (
	"sync"
	"time"
)

// DefaultStallAfter is how long a cluster may have messages in flight
// without any outcome before it counts as degraded.
const DefaultStallAfter = 15 * time.Second

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

// tracker records outcomes per cluster. Its methods are safe for
// concurrent use.
type tracker struct {
	stallAfter time.Duration
	now        func() time.Time
	order      []string
	clusters   map[string]*clusterState // fixed at construction
}

type clusterState struct {
	mu          sync.Mutex // guards the fields below
	lastSuccess time.Time
	lastError   string
	lastErrorAt time.Time
	progress    time.Time // last outcome, or when in-flight went 0 -> 1
	inFlight    int64
	sent        int64
	failed      int64
}

func newTracker(names []string, stallAfter time.Duration, now func() time.Time) *tracker {
	t := &tracker{stallAfter: stallAfter, now: now, order: names, clusters: make(map[string]*clusterState, len(names))}
	for _, n := range names {
		t.clusters[n] = &clusterState{}
	}
	return t
}

// start counts a message handed to cluster.
func (t *tracker) start(cluster string) {
	c := t.clusters[cluster]
	if c == nil {
		return
	}
	c.mu.Lock()
	if c.inFlight == 0 {
		c.progress = t.now()
	}
	c.inFlight++
	c.mu.Unlock()
}

// done records the outcome of a message counted by start.
func (t *tracker) done(cluster string, err error) {
	c := t.clusters[cluster]
	if c == nil {
		return
	}
	now := t.now()
	c.mu.Lock()
	c.inFlight--
	c.progress = now
	if err == nil {
		c.sent++
		c.lastSuccess = now
	} else {
		c.failed++
		c.lastError, c.lastErrorAt = err.Error(), now
	}
	c.mu.Unlock()
}

func (t *tracker) snapshot() Health {
	now := t.now()
	h := Health{Status: "ok", Clusters: make([]ClusterHealth, 0, len(t.order))}
	for _, name := range t.order {
		c := t.clusters[name]
		c.mu.Lock()
		ch := ClusterHealth{Name: name, State: "ok", LastError: c.lastError, InFlight: c.inFlight, Sent: c.sent, Failed: c.failed}
		if !c.lastSuccess.IsZero() {
			ts := c.lastSuccess
			ch.LastSuccess = &ts
		}
		if !c.lastErrorAt.IsZero() {
			ts := c.lastErrorAt
			ch.LastErrorAt = &ts
		}
		switch {
		case !c.lastErrorAt.IsZero() && !c.lastErrorAt.Before(c.lastSuccess):
			ch.State, ch.Reason = "degraded", "last outcome failed"
		case c.inFlight > 0 && now.Sub(c.progress) >= t.stallAfter:
			ch.State, ch.Reason = "degraded", "no outcome for "+now.Sub(c.progress).Round(time.Second).String()
		}
		c.mu.Unlock()
		if ch.State != "ok" {
			h.Status = "degraded"
		}
		h.Clusters = append(h.Clusters, ch)
	}
	return h
}
