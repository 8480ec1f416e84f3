package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// topicName is a persistent topic split into its parts.
type topicName struct {
	tenant, namespace, local string
}

// parseTopic accepts "persistent://tenant/ns/topic", "tenant/ns/topic" or
// a bare "topic" (in public/default).
func parseTopic(topic string) (topicName, error) {
	s := topic
	if rest, ok := strings.CutPrefix(s, "persistent://"); ok {
		s = rest
	} else if strings.Contains(s, "://") {
		return topicName{}, fmt.Errorf("%w: %q: only persistent topics are supported", ErrBadTopic, topic)
	}
	parts := strings.Split(s, "/")
	switch {
	case len(parts) == 1 && parts[0] != "":
		return topicName{"public", "default", parts[0]}, nil
	case len(parts) == 3 && parts[0] != "" && parts[1] != "" && parts[2] != "":
		return topicName{parts[0], parts[1], parts[2]}, nil
	}
	return topicName{}, fmt.Errorf("%w: %q", ErrBadTopic, topic)
}

func (t topicName) String() string {
	return "persistent://" + t.tenant + "/" + t.namespace + "/" + t.local
}

// path returns the REST path of the topic, with suffix appended.
func (t topicName) path(suffix string) string {
	return "/admin/v2/persistent/" + url.PathEscape(t.tenant) + "/" + url.PathEscape(t.namespace) +
		"/" + url.PathEscape(t.local) + suffix
}

// CreatePartitionedTopic creates topic with the given number of partitions
// on the cluster whose admin API is at adminURL (e.g.
// "http://127.0.0.1:8080"). A topic that already exists with the same
// partition count counts as success; a different count returns
// ErrPartitionMismatch. ctx bounds the whole call. Errors are *Error.
func CreatePartitionedTopic(ctx context.Context, adminURL, topic string, partitions int) error {
	const op = "create partitioned topic"
	t, err := parseTopic(topic)
	if err != nil {
		return &Error{Op: op, AdminURL: adminURL, Topic: topic, Err: err}
	}
	if partitions < 1 {
		return &Error{Op: op, AdminURL: adminURL, Topic: t.String(),
			Err: fmt.Errorf("partitions %d: must be at least 1", partitions)}
	}
	status, body, err := call(ctx, http.MethodPut, adminURL, t.path("/partitions"), []byte(strconv.Itoa(partitions)))
	if err != nil {
		return &Error{Op: op, AdminURL: adminURL, Topic: t.String(), Err: err}
	}
	switch {
	case status/100 == 2:
		return nil
	case status == http.StatusConflict:
		n, err := partitionCount(ctx, adminURL, t)
		if err != nil {
			return err
		}
		if n != partitions {
			return &Error{Op: op, AdminURL: adminURL, Topic: t.String(), Status: status,
				Err: fmt.Errorf("%w: has %d, want %d", ErrPartitionMismatch, n, partitions)}
		}
		return nil
	}
	return &Error{Op: op, AdminURL: adminURL, Topic: t.String(), Status: status, Err: statusErr(body)}
}

// partitionCount returns the partition count of an existing topic; 0 means
// a non-partitioned topic.
func partitionCount(ctx context.Context, adminURL string, t topicName) (int, error) {
	var meta struct {
		Partitions int `json:"partitions"`
	}
	if err := getJSON(ctx, "get partitioned topic metadata", adminURL, t, "/partitions", &meta); err != nil {
		return 0, err
	}
	return meta.Partitions, nil
}

// getJSON reads the JSON answer to a GET of t's path with suffix into out.
// Errors are *Error, naming op.
func getJSON(ctx context.Context, op, adminURL string, t topicName, suffix string, out any) error {
	status, body, err := call(ctx, http.MethodGet, adminURL, t.path(suffix), nil)
	if err != nil {
		return &Error{Op: op, AdminURL: adminURL, Topic: t.String(), Err: err}
	}
	if status != http.StatusOK {
		return &Error{Op: op, AdminURL: adminURL, Topic: t.String(), Status: status, Err: statusErr(body)}
	}
	if err := json.Unmarshal(body, out); err != nil {
		return &Error{Op: op, AdminURL: adminURL, Topic: t.String(), Status: status, Err: err}
	}
	return nil
}

// DeleteTopic deletes topic, partitioned or not, with force (producers and
// consumers are disconnected). It returns ErrNotFound when there is no such
// topic. ctx bounds the whole call. Errors are *Error.
func DeleteTopic(ctx context.Context, adminURL, topic string) error {
	const op = "delete topic"
	t, err := parseTopic(topic)
	if err != nil {
		return &Error{Op: op, AdminURL: adminURL, Topic: topic, Err: err}
	}
	n, err := partitionCount(ctx, adminURL, t)
	if err != nil {
		return err
	}
	path := t.path("?force=true")
	if n > 0 {
		path = t.path("/partitions?force=true")
	}
	status, body, err := call(ctx, http.MethodDelete, adminURL, path, nil)
	if err != nil {
		return &Error{Op: op, AdminURL: adminURL, Topic: t.String(), Err: err}
	}
	switch {
	case status/100 == 2:
		return nil
	case status == http.StatusNotFound:
		return &Error{Op: op, AdminURL: adminURL, Topic: t.String(), Status: status, Err: ErrNotFound}
	}
	return &Error{Op: op, AdminURL: adminURL, Topic: t.String(), Status: status, Err: statusErr(body)}
}

// call does one admin request and returns the status and body.
func call(ctx context.Context, method, adminURL, path string, body []byte) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(adminURL, "/")+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return resp.StatusCode, nil, err
	}
	return resp.StatusCode, b, nil
}

// statusErr wraps ErrStatus with the server's reason, when it gave one.
func statusErr(body []byte) error {
	var r struct {
		Reason string `json:"reason"`
	}
	if json.Unmarshal(body, &r) == nil && r.Reason != "" {
		return fmt.Errorf("%w: %s", ErrStatus, r.Reason)
	}
	if s := strings.TrimSpace(string(body)); s != "" {
		if len(s) > 200 {
			s = s[:200]
		}
		return fmt.Errorf("%w: %s", ErrStatus, s)
	}
	return ErrStatus
}

// EntriesAdded returns how many entries the broker at adminURL has added to
// topic's ledgers since the topic was loaded, over all its partitions (a
// partitioned topic) or the topic itself. A batch of messages is one
// entry, so messages divided by entries is the mean batch the broker
// stored. ctx bounds the whole call. Errors are *Error.
func EntriesAdded(ctx context.Context, adminURL, topic string) (int64, error) {
	const op = "get internal stats"
	t, err := parseTopic(topic)
	if err != nil {
		return 0, &Error{Op: op, AdminURL: adminURL, Topic: topic, Err: err}
	}
	n, err := partitionCount(ctx, adminURL, t)
	if err != nil {
		return 0, err
	}
	parts := []topicName{t}
	if n > 0 {
		parts = parts[:0]
		for i := range n {
			parts = append(parts, topicName{t.tenant, t.namespace, t.local + "-partition-" + strconv.Itoa(i)})
		}
	}
	var sum int64
	for _, p := range parts {
		var st struct {
			EntriesAddedCounter int64 `json:"entriesAddedCounter"`
		}
		if err := getJSON(ctx, op, adminURL, p, "/internalStats", &st); err != nil {
			return 0, err
		}
		sum += st.EntriesAddedCounter
	}
	return sum, nil
}
