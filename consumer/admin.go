package consumer

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

// do sends a request with body as JSON (none when nil) and returns the
// answer's status and body. A request that gets no answer is an
// *adminUnreachable.
func (a *admin) do(ctx context.Context, method, path string, body any) (int, []byte, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.url+path, r)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		return 0, nil, &adminUnreachable{err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	return resp.StatusCode, b, err
}

// answerError is the error of an admin API answer with status code st.
func answerError(method, path string, st int, body []byte) error {
	return fmt.Errorf("admin %s %s: %d %s: %s", method, path, st, http.StatusText(st), strings.TrimSpace(string(body)))
}

// get GETs path into v; found is false on 404.
func (a *admin) get(ctx context.Context, path string, v any) (found bool, err error) {
	st, body, err := a.do(ctx, http.MethodGet, path, nil)
	switch {
	case err != nil:
		return false, err
	case st == http.StatusNotFound:
		return false, nil
	case st != http.StatusOK:
		return false, answerError(http.MethodGet, path, st, body)
	}
	return true, json.Unmarshal(body, v)
}

// partitions returns how many partitions topic has: 0 when it is not
// partitioned (or does not exist).
func (a *admin) partitions(ctx context.Context, topic string) (int, error) {
	p, err := adminPath(topic)
	if err != nil {
		return 0, err
	}
	var meta struct {
		Partitions int `json:"partitions"`
	}
	if _, err := a.get(ctx, p+"/partitions", &meta); err != nil {
		return 0, err
	}
	return meta.Partitions, nil
}

// topicExists checks over the admin API that topic exists, partitioned or
// not, without creating it.
func (a *admin) topicExists(ctx context.Context, topic string) error {
	n, err := a.partitions(ctx, topic)
	if err != nil || n > 0 {
		return err
	}
	p, _ := adminPath(topic) // partitions checked it
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

// cursorAt is the body that creates a subscription at a message
// (Pulsar's admin API: PUT .../subscription/{sub}).
type cursorAt struct {
	Ledger    int64 `json:"ledgerId"`
	Entry     int64 `json:"entryId"`
	Partition int32 `json:"partitionIndex"`
}

// cursorAfter is the body that moves a subscription's cursor (Pulsar's
// ResetCursorData: POST .../subscription/{sub}/resetcursor). Excluded
// puts the cursor just after the message rather than at it; Batch is its
// index in its batch (-1 when not batched), so that the messages after it
// in the same batch come and those before do not.
type cursorAfter struct {
	cursorAt
	Batch    int32 `json:"batchIndex"`
	Excluded bool  `json:"excluded"`
}

// resetAfter moves subscription sub on one partition of topic (the
// partition of id when the topic has parts > 0 partitions, the topic
// itself when parts is 0) to just after id: the next message delivered
// there is the one after it. It creates the subscription there first
// when it does not exist. No consumer should be attached to the
// subscription on that partition: the broker disconnects those that are.
func (a *admin) resetAfter(ctx context.Context, topic, sub string, parts int, kid ID) error {
	p, err := adminPath(topic)
	if err != nil {
		return err
	}
	if parts > 0 {
		p += partitionSuffix + strconv.Itoa(kid.Partition)
	}
	p += "/subscription/" + url.PathEscape(sub)
	id := kid.Pulsar
	at := cursorAt{Ledger: id.LedgerID(), Entry: id.EntryID(), Partition: int32(kid.Partition)}
	st, body, err := a.do(ctx, http.MethodPut, p, at)
	switch {
	case err != nil:
		return err
	case st == http.StatusNotFound:
		return fmt.Errorf("%w: %s", ErrTopicNotFound, answerError(http.MethodPut, p, st, body))
	case st != http.StatusConflict && (st < 200 || st > 299): // 409: it exists
		return answerError(http.MethodPut, p, st, body)
	}
	p += "/resetcursor"
	st, body, err = a.do(ctx, http.MethodPost, p, cursorAfter{cursorAt: at, Batch: id.BatchIdx(), Excluded: true})
	switch {
	case err != nil:
		return err
	case st < 200 || st > 299:
		return answerError(http.MethodPost, p, st, body)
	}
	return nil
}

// adminUnreachable is an admin API request that got no answer (the
// connection refused or cut, a timeout): the cluster has not answered,
// as opposed to answering that the topic is missing.
type adminUnreachable struct{ err error }

func (e *adminUnreachable) Error() string { return e.err.Error() }
func (e *adminUnreachable) Unwrap() error { return e.err }
