package main

import (
	"bytes"
	"context"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/topology"
)

// topicAdmin is an admin API that keeps partitioned topics by REST path
// and, when token is set, refuses requests without it.
type topicAdmin struct {
	token  string
	mu     sync.Mutex
	topics map[string]int // "/admin/v2/persistent/t/ns/x" -> partitions
}

func (a *topicAdmin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.token != "" && r.Header.Get("Authorization") != "Bearer "+a.token {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	base, ok := strings.CutSuffix(r.URL.Path, "/partitions")
	n, exists := a.topics[base]
	switch {
	case !ok:
		w.WriteHeader(http.StatusNotFound)
	case r.Method == http.MethodGet:
		fmt.Fprintf(w, `{"partitions":%d}`, n)
	case r.Method == http.MethodPut && exists:
		w.WriteHeader(http.StatusConflict)
	case r.Method == http.MethodPut:
		_, err := fmt.Fscan(r.Body, &n)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		a.topics[base] = n
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodDelete && exists && r.URL.Query().Get("force") == "true":
		delete(a.topics, base)
		w.WriteHeader(http.StatusNoContent)
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

func (a *topicAdmin) has(path string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.topics[path]
	return ok
}

// secureTopology returns a topology of two clusters whose admin APIs are
// a plain fake and an HTTPS fake that requires the cluster's token, and
// the two fakes. Their service URLs answer nothing, and the client gives
// up on them after a second.
func secureTopology(t *testing.T) (*topology.Topology, *topicAdmin, *topicAdmin) {
	t.Helper()
	plain := &topicAdmin{topics: map[string]int{}}
	secure := &topicAdmin{token: "east-token", topics: map[string]int{}}
	ps := httptest.NewServer(plain)
	ss := httptest.NewTLSServer(secure)
	t.Cleanup(ps.Close)
	t.Cleanup(ss.Close)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ss.Certificate().Raw}), 0o600))
	quick := topology.ClientSettings{OperationTimeout: time.Second, ConnectionTimeout: time.Second}
	topo := &topology.Topology{Clusters: []topology.Cluster{
		{Name: "west", ServiceURL: "pulsar://127.0.0.1:1", AdminURL: ps.URL, Weight: 1, Client: quick},
		{Name: "east", ServiceURL: "pulsar+ssl://127.0.0.1:2", AdminURL: ss.URL, Weight: 1, Client: quick,
			Auth: topology.Auth{Token: "east-token"}, TLS: topology.TLS{CAFile: ca}},
	}}
	require.NoError(t, topo.Validate())
	return topo, plain, secure
}

const ordersPath = "/admin/v2/persistent/public/default/orders"

// TestCreateTopicsWithTheTopologysCredentials creates topics through an
// HTTPS admin API that requires the cluster's token, and -cleanup's
// deletion removes exactly the topics that were not there before.
func TestCreateTopicsWithTheTopologysCredentials(t *testing.T) {
	topo, plain, secure := secureTopology(t)
	plain.topics[ordersPath] = 3 // there before the run: must survive it
	ctx := context.Background()

	var made created
	require.NoError(t, createTopics(ctx, topo, []string{"orders", "events"}, 3, &made))
	assert.True(t, secure.has(ordersPath))
	assert.True(t, secure.has("/admin/v2/persistent/public/default/events"))
	assert.True(t, plain.has("/admin/v2/persistent/public/default/events"))
	var got []string
	for _, c := range made.list {
		got = append(got, c.cluster.Name+" "+c.topic)
	}
	assert.ElementsMatch(t, []string{"east orders", "east events", "west events"}, got)

	n, err := deleteCreated(ctx, &made)
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	assert.True(t, plain.has(ordersPath), "a topic loadgen did not create stays")
	assert.Empty(t, secure.topics)
	assert.Len(t, plain.topics, 1)

	// Without the token the secure cluster refuses, and the error names it.
	topo.Clusters[1].Auth = topology.Auth{}
	err = createTopics(ctx, topo, []string{"orders"}, 3, &created{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cluster east: ")
	assert.Contains(t, err.Error(), "HTTP 401")
}

// TestRunCleanupAfterAFailedRun runs loadgen with -cleanup on clusters
// whose brokers do not answer: the run fails to connect, and the topics it
// created are deleted anyway.
func TestRunCleanupAfterAFailedRun(t *testing.T) {
	topo, plain, secure := secureTopology(t)
	path := filepath.Join(t.TempDir(), "topology.yaml")
	require.NoError(t, topo.WriteFile(path))
	var stdout, stderr bytes.Buffer
	code := run([]string{"-topology", path, "-topic", "orders", "-partitions", "2", "-cleanup", "-duration", "1s", "-warmup", "0s"}, &stdout, &stderr)
	assert.Equal(t, exitFailure, code, stderr.String())
	assert.Contains(t, stderr.String(), "loadgen: creating orders with 2 partitions on west, east")
	assert.Contains(t, stderr.String(), "loadgen: -cleanup: deleted 2 topic(s) loadgen created")
	assert.Empty(t, plain.topics)
	assert.Empty(t, secure.topics)

	code = run([]string{"-topology", path, "-partitions", "0", "-cleanup"}, &stdout, &stderr)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr.String(), "-cleanup: has nothing to delete with -partitions 0")
}
