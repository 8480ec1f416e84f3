package keyroute_test

import (
	"context"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute"
	"github.com/keyroute/keyroute/topology"
)

// Logger gets pulsar-client-go's logs of each shared client, with its
// cluster: here, those of a lookup on a cluster nothing listens for.
func TestLoggerGetsEachClientsLogsWithItsCluster(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	topo := &topology.Topology{Clusters: []topology.Cluster{{
		Name: "east", ServiceURL: "pulsar://127.0.0.1:" + strconv.Itoa(port), Weight: 1,
		// Bounds the lookup's retries.
		Client: topology.ClientSettings{OperationTimeout: time.Second},
	}}}
	logs := &attrLogs{}
	cs, err := keyroute.NewClients(topo, keyroute.Logger(slog.New(logs)))
	require.NoError(t, err)
	defer cs.Close(context.Background())
	client, err := cs.Client("east")
	require.NoError(t, err)
	_, err = client.TopicPartitions("persistent://public/default/t")
	require.Error(t, err, "nothing listens on %d", port)
	assert.Positive(t, logs.count("cluster=east"), "records with cluster=east")
}

// attrLogs is a slog.Handler that counts the records of each handler
// attribute (slog.Logger.With).
type attrLogs struct {
	mu     sync.Mutex
	counts map[string]int // "key=value": records; guarded by mu
	attrs  []slog.Attr    // this handler's; set by WithAttrs
	root   *attrLogs      // the one that counts; nil: this one
}

func (h *attrLogs) Enabled(context.Context, slog.Level) bool { return true }

func (h *attrLogs) Handle(context.Context, slog.Record) error {
	r := h.top()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.counts == nil {
		r.counts = map[string]int{}
	}
	for _, a := range h.attrs {
		r.counts[a.String()]++
	}
	return nil
}

func (h *attrLogs) WithAttrs(as []slog.Attr) slog.Handler {
	return &attrLogs{attrs: append(append([]slog.Attr(nil), h.attrs...), as...), root: h.top()}
}

func (h *attrLogs) WithGroup(string) slog.Handler { return h }

func (h *attrLogs) top() *attrLogs {
	if h.root != nil {
		return h.root
	}
	return h
}

func (h *attrLogs) count(attr string) int {
	r := h.top()
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts[attr]
}
