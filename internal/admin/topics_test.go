package admin

import (
	"context"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/topology"
)

// fakeAdmin serves the partitions and internal stats endpoints for
// persistent topics.
type fakeAdmin struct {
	mu      sync.Mutex
	topics  map[string]int   // path without /partitions -> partition count
	entries map[string]int64 // path without /internalStats -> entries added
	plain   map[string]bool  // non-partitioned topics, by path (stats only)
	// missing404 answers the partitions of a topic that does not exist
	// with 404, as Pulsar 4.0 does, instead of 0 partitions.
	missing404 bool
}

func (f *fakeAdmin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	const suffix = "/partitions"
	path := r.URL.Path
	base, partitioned := path, false
	if len(path) > len(suffix) && path[len(path)-len(suffix):] == suffix {
		base, partitioned = path[:len(path)-len(suffix)], true
	}
	if base, ok := strings.CutSuffix(path, "/stats"); ok && r.Method == http.MethodGet {
		if !f.plain[base] {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		io.WriteString(w, `{"msgInCounter":0}`)
		return
	}
	if stats, ok := strings.CutSuffix(path, "/internalStats"); ok && r.Method == http.MethodGet {
		n, ok := f.entries[stats]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"reason":"Topic not found"}`)
			return
		}
		io.WriteString(w, `{"entriesAddedCounter":`+strconv.FormatInt(n, 10)+`,"numberOfEntries":1}`)
		return
	}
	n, exists := f.topics[base]
	switch {
	case r.Method == http.MethodPut && partitioned:
		if r.Header.Get("Content-Type") != "application/json" {
			w.WriteHeader(http.StatusUnsupportedMediaType)
			return
		}
		if exists {
			w.WriteHeader(http.StatusConflict)
			io.WriteString(w, `{"reason":"This topic already exists"}`)
			return
		}
		b, _ := io.ReadAll(r.Body)
		p, err := strconv.Atoi(string(b))
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		f.topics[base] = p
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodPost && partitioned:
		b, _ := io.ReadAll(r.Body)
		p, err := strconv.Atoi(string(b))
		switch {
		case !exists:
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"reason":"Topic not found"}`)
		case err != nil || p <= n:
			w.WriteHeader(http.StatusUnprocessableEntity)
			io.WriteString(w, `{"reason":"Expect partitions to grow"}`)
		default:
			f.topics[base] = p
			w.WriteHeader(http.StatusNoContent)
		}
	case r.Method == http.MethodGet && partitioned && !exists && !f.plain[base] && f.missing404:
		w.WriteHeader(http.StatusNotFound) // as Pulsar 4.0 answers
		io.WriteString(w, `{"reason":"Topic not found"}`)
	case r.Method == http.MethodGet && partitioned:
		io.WriteString(w, `{"partitions":`+strconv.Itoa(n)+`}`)
	case r.Method == http.MethodDelete:
		if !exists {
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"reason":"Topic not found"}`)
			return
		}
		delete(f.topics, base)
		w.WriteHeader(http.StatusNoContent)
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
	}
}

func newFake(t *testing.T) (*fakeAdmin, string) {
	t.Helper()
	f := &fakeAdmin{topics: map[string]int{}, entries: map[string]int64{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL
}

func TestParseTopic(t *testing.T) {
	for in, want := range map[string]string{
		"orders":                        "persistent://public/default/orders",
		"t/ns/orders":                   "persistent://t/ns/orders",
		"persistent://t/ns/orders":      "persistent://t/ns/orders",
		"persistent://public/default/x": "persistent://public/default/x",
	} {
		got, err := parseTopic(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got.String(), in)
	}
	for _, in := range []string{"", "a/b", "non-persistent://t/ns/x", "t//x", "persistent://t/ns/x/y"} {
		_, err := parseTopic(in)
		assert.ErrorIs(t, err, ErrBadTopic, in)
	}
}

func TestCreatePartitionedTopic(t *testing.T) {
	f, url := newFake(t)
	ctx := context.Background()
	require.NoError(t, CreatePartitionedTopic(ctx, url, "persistent://public/default/orders", 5))
	assert.Equal(t, 5, f.topics["/admin/v2/persistent/public/default/orders"])

	// Same count again: success.
	require.NoError(t, CreatePartitionedTopic(ctx, url, "orders", 5))

	// Different count: a typed error naming the cluster and topic.
	err := CreatePartitionedTopic(ctx, url, "orders", 3)
	require.ErrorIs(t, err, ErrPartitionMismatch)
	var aerr *Error
	require.True(t, errors.As(err, &aerr))
	assert.Equal(t, url, aerr.AdminURL)
	assert.Equal(t, "persistent://public/default/orders", aerr.Topic)
	assert.Contains(t, err.Error(), url)

}

func TestUpdatePartitions(t *testing.T) {
	f, url := newFake(t)
	ctx := context.Background()
	c := Plain(url)
	require.NoError(t, CreatePartitionedTopic(ctx, url, "t/ns/grow", 5))
	require.NoError(t, c.UpdatePartitions(ctx, "t/ns/grow", 8))
	assert.Equal(t, 8, f.topics["/admin/v2/persistent/t/ns/grow"])

	err := c.UpdatePartitions(ctx, "t/ns/grow", 6)
	require.ErrorIs(t, err, ErrStatus, "a shrink is refused by the broker")
	var aerr *Error
	require.ErrorAs(t, err, &aerr)
	assert.Equal(t, http.StatusUnprocessableEntity, aerr.Status)
	assert.Equal(t, "persistent://t/ns/grow", aerr.Topic)
	assert.ErrorIs(t, c.UpdatePartitions(ctx, "t/ns/none", 3), ErrNotFound)
	assert.ErrorIs(t, c.UpdatePartitions(ctx, "a/b", 3), ErrBadTopic)
}

func TestCreatePartitionedTopicRejectsBadInput(t *testing.T) {
	_, url := newFake(t)
	ctx := context.Background()
	assert.ErrorIs(t, CreatePartitionedTopic(ctx, url, "a/b", 2), ErrBadTopic)
	var aerr *Error
	require.ErrorAs(t, CreatePartitionedTopic(ctx, url, "x", 0), &aerr)
	assert.Equal(t, 0, aerr.Status)
}

func TestDeleteTopic(t *testing.T) {
	f, url := newFake(t)
	ctx := context.Background()
	require.NoError(t, CreatePartitionedTopic(ctx, url, "t/ns/a", 2))
	require.NoError(t, DeleteTopic(ctx, url, "t/ns/a"))
	assert.Empty(t, f.topics)
	err := DeleteTopic(ctx, url, "t/ns/a")
	assert.ErrorIs(t, err, ErrNotFound)
}

func TestUnreachableAdminNamesURL(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	err := CreatePartitionedTopic(context.Background(), url, "orders", 1)
	require.Error(t, err)
	assert.Contains(t, err.Error(), url)
	assert.Contains(t, err.Error(), "persistent://public/default/orders")
}

func TestContextCancelled(t *testing.T) {
	_, url := newFake(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := CreatePartitionedTopic(ctx, url, "orders", 1)
	assert.ErrorIs(t, err, context.Canceled)
}

func TestEntriesAdded(t *testing.T) {
	f, url := newFake(t)
	ctx := context.Background()
	require.NoError(t, CreatePartitionedTopic(ctx, url, "t/ns/orders", 3))
	for i, n := range []int64{7, 0, 35} {
		f.entries["/admin/v2/persistent/t/ns/orders-partition-"+strconv.Itoa(i)] = n
	}
	n, err := EntriesAdded(ctx, url, "persistent://t/ns/orders")
	require.NoError(t, err)
	assert.Equal(t, int64(42), n, "the sum over the partitions")

	// A topic that is not partitioned is read itself.
	f.entries["/admin/v2/persistent/public/default/plain"] = 5
	n, err = EntriesAdded(ctx, url, "plain")
	require.NoError(t, err)
	assert.Equal(t, int64(5), n)

	// A partition the broker does not know: an error naming it.
	delete(f.entries, "/admin/v2/persistent/t/ns/orders-partition-1")
	_, err = EntriesAdded(ctx, url, "t/ns/orders")
	var aerr *Error
	require.ErrorAs(t, err, &aerr)
	assert.Equal(t, http.StatusNotFound, aerr.Status)
	assert.Equal(t, "persistent://t/ns/orders-partition-1", aerr.Topic)

	_, err = EntriesAdded(ctx, url, "a/b")
	assert.ErrorIs(t, err, ErrBadTopic)
}

// TestClientUsesTheClusterCredentials calls an HTTPS admin API that
// requires a token, as a secured cluster's does: the Plain client is
// refused, the client of the topology entry (its CA and token) is not.
func TestClientUsesTheClusterCredentials(t *testing.T) {
	f := &fakeAdmin{topics: map[string]int{}, entries: map[string]int64{}, plain: map[string]bool{}, missing404: true}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer the-token" {
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"reason":"Authentication required"}`)
			return
		}
		f.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600))
	cl := topology.Cluster{Name: "secure-east", ServiceURL: "pulsar+ssl://127.0.0.1:6651", AdminURL: srv.URL, Weight: 1,
		Auth: topology.Auth{Token: "the-token"}, TLS: topology.TLS{CAFile: ca}}
	ctx := context.Background()

	// Without the CA the certificate is not trusted; without the token
	// the call is refused.
	require.Error(t, CreatePartitionedTopic(ctx, srv.URL, "orders", 2))
	noToken := cl
	noToken.Auth = topology.Auth{}
	c, err := New(noToken)
	require.NoError(t, err)
	_, err = c.CreatePartitionedTopic(ctx, "orders", 2)
	var aerr *Error
	require.ErrorAs(t, err, &aerr)
	assert.Equal(t, http.StatusUnauthorized, aerr.Status)
	assert.Equal(t, "secure-east", aerr.Cluster)
	assert.Contains(t, err.Error(), "cluster secure-east ("+srv.URL+")")
	c.Close()

	c, err = New(cl)
	require.NoError(t, err)
	defer c.Close()
	created, err := c.CreatePartitionedTopic(ctx, "orders", 2)
	require.NoError(t, err)
	assert.True(t, created)
	created, err = c.CreatePartitionedTopic(ctx, "orders", 2)
	require.NoError(t, err)
	assert.False(t, created, "it was there before")
	f.entries["/admin/v2/persistent/public/default/orders-partition-0"] = 3
	f.entries["/admin/v2/persistent/public/default/orders-partition-1"] = 4
	n, err := c.EntriesAdded(ctx, "orders")
	require.NoError(t, err)
	assert.Equal(t, int64(7), n)
	ok, err := c.TopicExists(ctx, "orders")
	require.NoError(t, err)
	assert.True(t, ok)
	require.NoError(t, c.DeleteTopic(ctx, "orders"))
	assert.Empty(t, f.topics)
	ok, err = c.TopicExists(ctx, "orders")
	require.NoError(t, err)
	assert.False(t, ok)
	err = c.DeleteTopic(ctx, "orders")
	require.ErrorIs(t, err, ErrNotFound, "a 404 on the partitions is the topic missing")
	_, err = c.EntriesAdded(ctx, "orders")
	require.ErrorIs(t, err, ErrNotFound)
	f.plain["/admin/v2/persistent/public/default/single"] = true
	ok, err = c.TopicExists(ctx, "single")
	require.NoError(t, err)
	assert.True(t, ok, "a non-partitioned topic")

	_, err = New(topology.Cluster{Name: "no-admin"})
	require.ErrorIs(t, err, topology.ErrNoAdminURL)
}
