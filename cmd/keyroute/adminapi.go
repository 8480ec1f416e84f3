package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/keyroute/keyroute/topology"
)

// adminAPI is the Pulsar admin REST API of one cluster, called with the
// cluster's TLS material and token (topology.Cluster.AdminClient).
type adminAPI struct {
	cluster string
	base    string // AdminURL without a trailing '/'
	hc      *http.Client
}

// newAdminAPI returns cl's admin API. A cluster without an adminURL, or
// with TLS or token files that cannot be read, is a *ClusterError.
func newAdminAPI(cl topology.Cluster) (*adminAPI, error) {
	hc, err := cl.AdminClient()
	if err != nil {
		return nil, &ClusterError{Cluster: cl.Name, Op: "admin client", Err: err}
	}
	return &adminAPI{cluster: cl.Name, base: strings.TrimRight(cl.AdminURL, "/"), hc: hc}, nil
}

// close releases the client's idle connections.
func (a *adminAPI) close() { a.hc.CloseIdleConnections() }

// topicMeta is what the admin API says of a topic's existence and shape.
type topicMeta struct {
	exists     bool
	partitions int // 0 for a non-partitioned topic
}

// writers is how many partition writers the producer opens for the
// topic: its partition count, or 1 for a non-partitioned topic.
func (m topicMeta) writers() int { return max(1, m.partitions) }

// call does one request and returns the status and at most 4 MiB of body.
func (a *adminAPI) call(ctx context.Context, op, method, path string, body []byte) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, rd)
	if err != nil {
		return 0, nil, a.fail(op, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := a.hc.Do(req)
	if err != nil {
		return 0, nil, a.fail(op, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return resp.StatusCode, nil, a.fail(op, err)
	}
	return resp.StatusCode, b, nil
}

func (a *adminAPI) fail(op string, err error) error {
	return &ClusterError{Cluster: a.cluster, Op: op, Err: err}
}

// statusErr is an ErrStatus failure with the broker's reason, if any.
func (a *adminAPI) statusErr(op string, status int, body []byte) error {
	reason := strings.Join(strings.Fields(string(body)), " ") // one line
	var r struct {
		Reason  string `json:"reason"`
		Message string `json:"message"` // the servlet's own errors (e.g. 401)
	}
	if json.Unmarshal(body, &r) == nil {
		if r.Reason != "" {
			reason = r.Reason
		} else if r.Message != "" {
			reason = r.Message
		}
	}
	if len(reason) > 300 {
		reason = reason[:300] + "..."
	}
	if reason == "" {
		return a.fail(op, fmt.Errorf("%w: HTTP %d", ErrStatus, status))
	}
	return a.fail(op, fmt.Errorf("%w: HTTP %d: %s", ErrStatus, status, reason))
}

// getJSON GETs path into out; found is false on 404.
func (a *adminAPI) getJSON(ctx context.Context, op, path string, out any) (found bool, err error) {
	status, body, err := a.call(ctx, op, http.MethodGet, path, nil)
	switch {
	case err != nil:
		return false, err
	case status == http.StatusNotFound:
		return false, nil
	case status != http.StatusOK:
		return false, a.statusErr(op, status, body)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return false, a.fail(op, fmt.Errorf("decode answer: %w", err))
	}
	return true, nil
}

// meta looks the topic up without creating it: the partitioned metadata,
// then, for 0 partitions, whether a non-partitioned topic exists.
func (a *adminAPI) meta(ctx context.Context, t topicName) (topicMeta, error) {
	const op = "get partitions"
	var m struct {
		Partitions int `json:"partitions"`
	}
	found, err := a.getJSON(ctx, op, t.path("/partitions"), &m)
	if err != nil || !found {
		return topicMeta{}, err
	}
	if m.Partitions > 0 {
		return topicMeta{exists: true, partitions: m.Partitions}, nil
	}
	var stats json.RawMessage
	found, err = a.getJSON(ctx, op, t.path("/stats"), &stats)
	return topicMeta{exists: found}, err
}

// create creates t with n partitions. A topic that exists with n
// partitions is left as it is (created false); with another count it is
// an ErrPartitionMismatch.
func (a *adminAPI) create(ctx context.Context, t topicName, n int) (created bool, err error) {
	const op = "create topic"
	status, body, err := a.call(ctx, op, http.MethodPut, t.path("/partitions"), []byte(strconv.Itoa(n)))
	switch {
	case err != nil:
		return false, err
	case status/100 == 2:
		return true, nil
	case status != http.StatusConflict:
		return false, a.statusErr(op, status, body)
	}
	m, err := a.meta(ctx, t)
	if err != nil {
		return false, err
	}
	if m.partitions != n {
		return false, a.fail(op, fmt.Errorf("%w: %s has %d partition(s) there, not %d", ErrPartitionMismatch, t, m.partitions, n))
	}
	return false, nil
}

// remove deletes t, partitioned or not; force disconnects its producers
// and consumers first (without it the broker refuses while any are
// connected). A missing topic is ErrTopicNotFound.
func (a *adminAPI) remove(ctx context.Context, t topicName, force bool) error {
	const op = "delete topic"
	m, err := a.meta(ctx, t)
	if err != nil {
		return err
	}
	if !m.exists {
		return a.fail(op, fmt.Errorf("%w: %s", ErrTopicNotFound, t))
	}
	suffix := ""
	if m.partitions > 0 {
		suffix = "/partitions"
	}
	status, body, err := a.call(ctx, op, http.MethodDelete, t.path(suffix+"?force="+strconv.FormatBool(force)), nil)
	switch {
	case err != nil:
		return err
	case status/100 == 2:
		return nil
	case status == http.StatusNotFound:
		return a.fail(op, fmt.Errorf("%w: %s", ErrTopicNotFound, t))
	}
	return a.statusErr(op, status, body)
}

// topicStats is the part of the broker's topic stats the commands show.
type topicStats struct {
	MsgInCounter  int64               `json:"msgInCounter"`
	StorageSize   int64               `json:"storageSize"`
	BacklogSize   int64               `json:"backlogSize"`
	Publishers    []json.RawMessage   `json:"publishers"`
	Subscriptions map[string]subStats `json:"subscriptions"`
}

// subStats is one subscription's stats.
type subStats struct {
	MsgBacklog int64             `json:"msgBacklog"`
	Type       string            `json:"type"`
	Consumers  []json.RawMessage `json:"consumers"`
}

// stats returns the stats of an existing topic (summed over its
// partitions when it has some).
func (a *adminAPI) stats(ctx context.Context, t topicName, m topicMeta) (topicStats, error) {
	const op = "get topic stats"
	suffix := "/stats"
	if m.partitions > 0 {
		suffix = "/partitioned-stats"
	}
	var s topicStats
	found, err := a.getJSON(ctx, op, t.path(suffix), &s)
	if err == nil && !found {
		err = a.fail(op, fmt.Errorf("%w: %s", ErrTopicNotFound, t))
	}
	return s, err
}
