package consumer_test

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute"
	"github.com/keyroute/keyroute/consumer"
	"github.com/keyroute/keyroute/consumer/consumertest"
)

// Logger gets the Consumer's own logs, each naming its cluster, also when
// the Consumer subscribes through shared clients (WithClients).
func TestLoggerGetsTheConsumersLogs(t *testing.T) {
	for _, shared := range []bool{false, true} {
		topo := consumertest.Topology("east", "west")
		fake := consumertest.New()
		logs := &clusterLogs{}
		opts := []consumer.Opt{consumer.Topic("t"), consumer.Subscription("s"), fake.Opt(), consumer.Logger(slog.New(logs))}
		if shared {
			cs, err := keyroute.NewClients(topo)
			require.NoError(t, err)
			defer cs.Close(context.Background())
			opts = append(opts, consumer.WithClients(cs))
		}
		c, err := consumer.New(context.Background(), topo, opts...)
		require.NoError(t, err, "shared clients: %t", shared)
		require.NoError(t, c.Close(context.Background()))
		assert.Equal(t, []string{"east", "west"}, logs.clusters(), "shared clients: %t", shared)
	}
}

// clusterLogs is a slog.Handler that keeps the "cluster" attribute of each
// record.
type clusterLogs struct {
	mu    sync.Mutex
	names []string // guarded by mu
}

func (h *clusterLogs) Enabled(context.Context, slog.Level) bool { return true }

func (h *clusterLogs) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "cluster" {
			h.mu.Lock()
			h.names = append(h.names, a.Value.String())
			h.mu.Unlock()
		}
		return true
	})
	return nil
}

func (h *clusterLogs) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *clusterLogs) WithGroup(string) slog.Handler      { return h }

// clusters returns the clusters the records named, sorted, once each.
func (h *clusterLogs) clusters() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	names := slices.Clone(h.names)
	slices.Sort(names)
	return slices.Compact(names)
}
