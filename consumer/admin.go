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

// adminGet GETs path on cl's admin API into v; found is false on 404.
func adminGet(ctx context.Context, cl topology.Cluster, path string, v any) (found bool, err error) {
	hc, err := cl.AdminClient()
	if err != nil {
		return false, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(cl.AdminURL, "/")+path, nil)
	if err != nil {
		return false, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return false, err
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

// topicExists checks over the admin API that topic exists on cl,
// partitioned or not, without creating it.
func topicExists(ctx context.Context, cl topology.Cluster, topic string) error {
	p, err := adminPath(topic)
	if err != nil {
		return err
	}
	var meta struct {
		Partitions int `json:"partitions"`
	}
	if _, err := adminGet(ctx, cl, p+"/partitions", &meta); err != nil {
		return err
	}
	if meta.Partitions > 0 {
		return nil
	}
	var stats json.RawMessage
	found, err := adminGet(ctx, cl, p+"/stats", &stats)
	if err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("%w: %q", ErrTopicNotFound, topic)
	}
	return nil
}

// backlog returns the subscription's backlog on cl over the admin API.
func backlog(ctx context.Context, cl topology.Cluster, topic, sub string, partitioned bool) (int64, error) {
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
	found, err := adminGet(ctx, cl, p+suffix, &stats)
	if err != nil {
		return 0, err
	}
	s, ok := stats.Subscriptions[sub]
	if !found || !ok {
		return 0, fmt.Errorf("subscription %q not found on %q", sub, topic)
	}
	return s.MsgBacklog, nil
}
