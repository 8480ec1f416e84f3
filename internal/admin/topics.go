package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/keyroute/keyroute/topology"
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

// Client is the admin API of one cluster: its admin URL and the HTTP
// client that carries the cluster's TLS settings and token.
type Client struct {
	cluster string // "" for a Plain client
	url     string
	hc      *http.Client
}

// New returns the admin API of cl, called as cl's topology entry says:
// over https with its CA, client certificate and hostname settings, and
// with its token (topology.Cluster.AdminClient). A cluster without an
// AdminURL, or with TLS or token files that cannot be read, is an error
// naming the cluster.
func New(cl topology.Cluster) (*Client, error) {
	hc, err := cl.AdminClient()
	if err != nil {
		return nil, err
	}
	return &Client{cluster: cl.Name, url: strings.TrimRight(cl.AdminURL, "/"), hc: hc}, nil
}

// Plain returns a client of the admin API at adminURL (e.g.
// "http://127.0.0.1:8080") without credentials: http.DefaultClient.
func Plain(adminURL string) *Client {
	return &Client{url: strings.TrimRight(adminURL, "/"), hc: http.DefaultClient}
}

// Close releases the client's idle connections.
func (c *Client) Close() { c.hc.CloseIdleConnections() }

// errorf returns an *Error of the client's cluster.
func (c *Client) errorf(op, topic string, status int, err error) *Error {
	return &Error{Op: op, Cluster: c.cluster, AdminURL: c.url, Topic: topic, Status: status, Err: err}
}

// CreatePartitionedTopic creates topic with the given number of partitions
// on the cluster whose admin API is at adminURL, without credentials (see
// Client.CreatePartitionedTopic).
func CreatePartitionedTopic(ctx context.Context, adminURL, topic string, partitions int) error {
	_, err := Plain(adminURL).CreatePartitionedTopic(ctx, topic, partitions)
	return err
}

// CreatePartitionedTopic creates topic with the given number of
// partitions. A topic that already exists with the same partition count
// counts as success, with created false (it was there before); a
// different count returns ErrPartitionMismatch. ctx bounds the whole call.
// Errors are *Error.
func (c *Client) CreatePartitionedTopic(ctx context.Context, topic string, partitions int) (created bool, err error) {
	const op = "create partitioned topic"
	t, err := parseTopic(topic)
	if err != nil {
		return false, c.errorf(op, topic, 0, err)
	}
	if partitions < 1 {
		return false, c.errorf(op, t.String(), 0, fmt.Errorf("partitions %d: must be at least 1", partitions))
	}
	status, body, err := c.call(ctx, http.MethodPut, t.path("/partitions"), []byte(strconv.Itoa(partitions)))
	if err != nil {
		return false, c.errorf(op, t.String(), 0, err)
	}
	switch {
	case status/100 == 2:
		return true, nil
	case status == http.StatusConflict:
		n, err := c.partitionCount(ctx, t)
		if err != nil {
			return false, err
		}
		if n != partitions {
			return false, c.errorf(op, t.String(), status, fmt.Errorf("%w: has %d, want %d", ErrPartitionMismatch, n, partitions))
		}
		return false, nil
	}
	return false, c.errorf(op, t.String(), status, statusErr(body))
}

// UpdatePartitions grows topic, a partitioned topic, to partitions
// partitions (Pulsar's update-partitioned-topic; the broker creates the
// new partitions and the topic's subscriptions on them). Pulsar refuses a
// count that is not larger (an *Error wrapping ErrStatus with its
// reason); a topic that does not exist is ErrNotFound. ctx bounds the
// whole call. Errors are *Error.
func (c *Client) UpdatePartitions(ctx context.Context, topic string, partitions int) error {
	const op = "update partitioned topic"
	t, err := parseTopic(topic)
	if err != nil {
		return c.errorf(op, topic, 0, err)
	}
	if partitions < 1 {
		return c.errorf(op, t.String(), 0, fmt.Errorf("partitions %d: must be at least 1", partitions))
	}
	return c.exec(ctx, op, t, http.MethodPost, t.path("/partitions"), []byte(strconv.Itoa(partitions)))
}

// exec does a request whose answer has no content: nil for a 2xx status,
// ErrNotFound for 404, else ErrStatus with the server's reason. Errors
// are *Error, naming op and t.
func (c *Client) exec(ctx context.Context, op string, t topicName, method, path string, body []byte) error {
	status, answer, err := c.call(ctx, method, path, body)
	if err != nil {
		return c.errorf(op, t.String(), 0, err)
	}
	switch {
	case status/100 == 2:
		return nil
	case status == http.StatusNotFound:
		return c.errorf(op, t.String(), status, ErrNotFound)
	}
	return c.errorf(op, t.String(), status, statusErr(answer))
}

// partitionCount returns the partition count of an existing topic; 0 means
// a non-partitioned topic, or (from brokers that answer so) none at all.
// A broker that answers 404 (Pulsar 4.0 does for a topic that does not
// exist) gives an *Error wrapping ErrNotFound.
func (c *Client) partitionCount(ctx context.Context, t topicName) (int, error) {
	const op = "get partitioned topic metadata"
	var meta struct {
		Partitions int `json:"partitions"`
	}
	if err := c.getJSON(ctx, op, t, "/partitions", &meta); err != nil {
		var aerr *Error
		if errors.As(err, &aerr) && aerr.Status == http.StatusNotFound {
			aerr.Err = fmt.Errorf("%w: %w", ErrNotFound, aerr.Err)
		}
		return 0, err
	}
	return meta.Partitions, nil
}

// getJSON reads the JSON answer to a GET of t's path with suffix into out.
// Errors are *Error, naming op.
func (c *Client) getJSON(ctx context.Context, op string, t topicName, suffix string, out any) error {
	status, body, err := c.call(ctx, http.MethodGet, t.path(suffix), nil)
	if err != nil {
		return c.errorf(op, t.String(), 0, err)
	}
	if status != http.StatusOK {
		return c.errorf(op, t.String(), status, statusErr(body))
	}
	if err := json.Unmarshal(body, out); err != nil {
		return c.errorf(op, t.String(), status, err)
	}
	return nil
}

// TopicExists reports whether topic exists, partitioned or not, without
// creating it. ctx bounds the whole call. Errors are *Error.
func (c *Client) TopicExists(ctx context.Context, topic string) (bool, error) {
	const op = "get topic stats"
	t, err := parseTopic(topic)
	if err != nil {
		return false, c.errorf(op, topic, 0, err)
	}
	n, err := c.partitionCount(ctx, t)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	if err != nil || n > 0 {
		return n > 0, err
	}
	var stats json.RawMessage
	err = c.getJSON(ctx, op, t, "/stats", &stats)
	var aerr *Error
	if errors.As(err, &aerr) && aerr.Status == http.StatusNotFound {
		return false, nil
	}
	return err == nil, err
}

// DeleteTopic deletes topic on the cluster whose admin API is at adminURL,
// without credentials (see Client.DeleteTopic).
func DeleteTopic(ctx context.Context, adminURL, topic string) error {
	return Plain(adminURL).DeleteTopic(ctx, topic)
}

// DeleteTopic deletes topic, partitioned or not, with force (producers and
// consumers are disconnected). It returns ErrNotFound when there is no such
// topic. ctx bounds the whole call. Errors are *Error.
func (c *Client) DeleteTopic(ctx context.Context, topic string) error {
	const op = "delete topic"
	t, err := parseTopic(topic)
	if err != nil {
		return c.errorf(op, topic, 0, err)
	}
	n, err := c.partitionCount(ctx, t)
	if err != nil {
		return err
	}
	path := t.path("?force=true")
	if n > 0 {
		path = t.path("/partitions?force=true")
	}
	return c.exec(ctx, op, t, http.MethodDelete, path, nil)
}

// call does one admin request and returns the status and body.
func (c *Client) call(ctx context.Context, method, path string, body []byte) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.url+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.hc.Do(req)
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

// EntriesAdded returns Client.EntriesAdded of the cluster whose admin API
// is at adminURL, without credentials.
func EntriesAdded(ctx context.Context, adminURL, topic string) (int64, error) {
	return Plain(adminURL).EntriesAdded(ctx, topic)
}

// EntriesAdded returns how many entries the broker has added to topic's
// ledgers since the topic was loaded, over all its partitions (a
// partitioned topic) or the topic itself. A batch of messages is one
// entry, so messages divided by entries is the mean batch the broker
// stored. ctx bounds the whole call. Errors are *Error.
func (c *Client) EntriesAdded(ctx context.Context, topic string) (int64, error) {
	const op = "get internal stats"
	t, err := parseTopic(topic)
	if err != nil {
		return 0, c.errorf(op, topic, 0, err)
	}
	n, err := c.partitionCount(ctx, t)
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
		if err := c.getJSON(ctx, op, p, "/internalStats", &st); err != nil {
			return 0, err
		}
		sum += st.EntriesAddedCounter
	}
	return sum, nil
}
