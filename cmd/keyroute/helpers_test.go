package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/topology"
)

// fakeAdmin is an in-memory Pulsar admin API for persistent topics: the
// partitions, stats, partitioned-stats and delete endpoints.
type fakeAdmin struct {
	mu     sync.Mutex
	token  string                // required Bearer token; "" accepts any request
	topics map[string]*fakeTopic // "tenant/ns/local" -> topic
	calls  int
}

type fakeTopic struct {
	partitions int // 0: non-partitioned
	stats      topicStats
}

func newFakeAdmin(token string) *fakeAdmin {
	return &fakeAdmin{token: token, topics: map[string]*fakeTopic{}}
}

func (f *fakeAdmin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.token != "" && r.Header.Get("Authorization") != "Bearer "+f.token {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		// As the broker's servlet answers: a multi-line JSON body.
		fmt.Fprint(w, "{\n\"servlet\":\"x\",\n\"message\":\"Authentication required\",\n\"status\":\"401\"\n}")
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/admin/v2/persistent/")
	parts := strings.SplitN(rest, "/", 4)
	if !ok || len(parts) < 3 {
		http.Error(w, "no such endpoint", http.StatusNotFound)
		return
	}
	name, suffix := strings.Join(parts[:3], "/"), ""
	if len(parts) == 4 {
		suffix = parts[3]
	}
	t := f.topics[name]
	notFound := func() { http.Error(w, `{"reason":"Topic not found"}`, http.StatusNotFound) }
	switch {
	case r.Method == http.MethodPut && suffix == "partitions":
		if t != nil {
			http.Error(w, `{"reason":"This topic already exists"}`, http.StatusConflict)
			return
		}
		var n int
		if err := json.NewDecoder(r.Body).Decode(&n); err != nil || n < 1 {
			http.Error(w, "bad count", http.StatusBadRequest)
			return
		}
		f.topics[name] = &fakeTopic{partitions: n, stats: topicStats{Subscriptions: map[string]subStats{}}}
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodGet && suffix == "partitions":
		n := 0
		if t != nil {
			n = t.partitions
		}
		fmt.Fprintf(w, `{"partitions":%d}`, n)
	case r.Method == http.MethodGet && (suffix == "stats" && t != nil && t.partitions == 0 ||
		suffix == "partitioned-stats" && t != nil && t.partitions > 0):
		_ = json.NewEncoder(w).Encode(t.stats)
	case r.Method == http.MethodDelete && (suffix == "partitions" && t != nil && t.partitions > 0 ||
		suffix == "" && t != nil && t.partitions == 0):
		if r.URL.Query().Get("force") != "true" && len(t.stats.Publishers) > 0 {
			http.Error(w, `{"reason":"Topic has active producers/subscriptions"}`, http.StatusPreconditionFailed)
			return
		}
		delete(f.topics, name)
		w.WriteHeader(http.StatusNoContent)
	default:
		notFound()
	}
}

// put adds a topic directly.
func (f *fakeAdmin) put(name string, t *fakeTopic) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.topics[name] = t
}

// drop removes a topic directly.
func (f *fakeAdmin) drop(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.topics, name)
}

// get returns a topic, nil when there is none.
func (f *fakeAdmin) get(name string) *fakeTopic {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.topics[name]
}

// fakeCluster is one cluster of a test topology and its admin API.
type fakeCluster struct {
	name  string
	admin *fakeAdmin
	srv   *httptest.Server
	tls   bool
}

// startFakes starts one fake admin API per name; names ending in "-tls"
// get an HTTPS server that requires the token "secret-<name>".
func startFakes(t *testing.T, names ...string) []*fakeCluster {
	t.Helper()
	out := make([]*fakeCluster, len(names))
	for i, n := range names {
		fc := &fakeCluster{name: n, tls: strings.HasSuffix(n, "-tls")}
		if fc.tls {
			fc.admin = newFakeAdmin("secret-" + n)
			fc.srv = httptest.NewTLSServer(fc.admin)
		} else {
			fc.admin = newFakeAdmin("")
			fc.srv = httptest.NewServer(fc.admin)
		}
		t.Cleanup(fc.srv.Close)
		out[i] = fc
	}
	return out
}

// writeTopology writes a topology of the fakes (service URLs on ports
// nothing listens on) and returns its path. TLS clusters trust their
// server's certificate and carry their token unless withTokens is false.
func writeTopology(t *testing.T, fakes []*fakeCluster, withTokens bool) string {
	t.Helper()
	dir := t.TempDir()
	var topo topology.Topology
	for i, fc := range fakes {
		cl := topology.Cluster{Name: fc.name, Weight: 1, AdminURL: fc.srv.URL,
			ServiceURL: "pulsar://127.0.0.1:" + strconv.Itoa(1+i)}
		if fc.tls {
			ca := filepath.Join(dir, fc.name+"-ca.pem")
			der := fc.srv.Certificate().Raw
			require.NoError(t, os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
			cl.ServiceURL = "pulsar+ssl://127.0.0.1:" + strconv.Itoa(1+i)
			cl.TLS.CAFile = ca
			if withTokens {
				cl.Auth.Token = "secret-" + fc.name
			}
		}
		topo.Clusters = append(topo.Clusters, cl)
	}
	path := filepath.Join(dir, "topology.yaml")
	require.NoError(t, topo.WriteFile(path))
	return path
}

// outcome is one run of the command.
type outcome struct {
	code           int
	stdout, stderr string
}

// runCmd runs the command line with a probe that must not be called
// unless the test gives one.
func runCmd(t *testing.T, probe func(context.Context, topology.Cluster, string) (int, error), args ...string) outcome {
	t.Helper()
	var stdout, stderr bytes.Buffer
	e := &env{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr, probe: probe}
	if probe == nil {
		e.probe = func(context.Context, topology.Cluster, string) (int, error) {
			t.Error("unexpected service probe")
			return 0, nil
		}
	}
	code := run(context.Background(), e, args)
	return outcome{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// dispatchCmd runs the command line and returns its error, for errors.Is
// and errors.As.
func dispatchCmd(t *testing.T, args ...string) error {
	t.Helper()
	var out bytes.Buffer
	e := &env{stdin: strings.NewReader(""), stdout: &out, stderr: &out,
		probe: func(context.Context, topology.Cluster, string) (int, error) { return 1, nil }}
	return dispatch(context.Background(), e, args)
}

// loadForTest loads a topology file.
func loadForTest(t *testing.T, path string) *topology.Topology {
	t.Helper()
	topo, err := topology.Load(path)
	require.NoError(t, err)
	return topo
}
