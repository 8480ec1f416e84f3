package consumer

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/keyroute/keyroute/topology"
)

// adminPath returns the admin API path of topic ("persistent://t/ns/x",
// "non-persistent://t/ns/x", "t/ns/x" or "x" in public/default).
func adminPath(topic string) (string, error) {
	domain, rest := "persistent", topic
	if d, r, ok := strings.Cut(topic, "://"); ok {
		domain, rest = d, r
	}
	parts := strings.Split(rest, "/")
	if len(parts) == 1 {
		parts = []string{"public", "default", parts[0]}
	}
	if (domain != "persistent" && domain != "non-persistent") || len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return "", fmt.Errorf("%w: topic %q is not [persistent://]tenant/namespace/name", ErrBadOption, topic)
	}
	return "/admin/v2/" + domain + "/" + url.PathEscape(parts[0]) + "/" + url.PathEscape(parts[1]) + "/" + url.PathEscape(parts[2]), nil
}

// admin is one cluster's admin API: its URL and one HTTP client, made at
// New and released at Close, so that connections are reused and none
// outlives the Consumer.
type admin struct {
	url string
	hc  *http.Client
}

// newAdmin returns the admin API of cl, nil when the topology gives it
// none; a bad TLS or token file is an error naming the cluster and field.
func newAdmin(cl topology.Cluster) (*admin, error) {
	if cl.AdminURL == "" {
		return nil, nil
	}
	hc, err := cl.AdminClient()
	if err != nil {
		return nil, err
	}
	return &admin{url: strings.TrimSuffix(cl.AdminURL, "/"), hc: hc}, nil
}

// close releases the client's idle connections.
func (a *admin) close() {
	if a != nil {
		a.hc.CloseIdleConnections()
	}
}

// get GETs path into v; found is false on 404.
func (a *admin) get(ctx context.Context, path string, v any) (found bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.url+path, nil)
	if err != nil {
		return false, err
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		return false, &adminUnreachable{err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return false, err
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return false, nil
	case resp.StatusCode != http.StatusOK:
		return false, fmt.Errorf("admin GET %s: %s: %s", path, resp.Status, strings.TrimSpace(string(body)))
	}
	return true, json.Unmarshal(body, v)
}

// topicExists checks over the admin API that topic exists, partitioned or
// not, without creating it.
func (a *admin) topicExists(ctx context.Context, topic string) error {
	p, err := adminPath(topic)
	if err != nil {
		return err
	}
	var meta struct {
		Partitions int `json:"partitions"`
	}
	if _, err := a.get(ctx, p+"/partitions", &meta); err != nil {
		return err
	}
	if meta.Partitions > 0 {
		return nil
	}
	var stats json.RawMessage
	found, err := a.get(ctx, p+"/stats", &stats)
	if err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("%w: %q", ErrTopicNotFound, topic)
	}
	return nil
}

// backlog returns the subscription's backlog over the admin API.
func (a *admin) backlog(ctx context.Context, topic, sub string, partitioned bool) (int64, error) {
	p, err := adminPath(topic)
	if err != nil {
		return 0, err
	}
	suffix := "/stats"
	if partitioned {
		suffix = "/partitioned-stats"
	}
	var stats struct {
		Subscriptions map[string]struct {
			MsgBacklog int64 `json:"msgBacklog"`
		} `json:"subscriptions"`
	}
	found, err := a.get(ctx, p+suffix, &stats)
	if err != nil {
		return 0, err
	}
	s, ok := stats.Subscriptions[sub]
	if !found || !ok {
		return 0, fmt.Errorf("subscription %q not found on %q", sub, topic)
	}
	return s.MsgBacklog, nil
}

// adminUnreachable is an admin API request that got no answer (the
// connection refused or cut, a timeout): the cluster has not answered,
// as opposed to answering that the topic is missing.
type adminUnreachable struct{ err error }

func (e *adminUnreachable) Error() string { return e.err.Error() }
func (e *adminUnreachable) Unwrap() error { return e.err }
