package kzap_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/keyroute/keyroute/plugin/kzap"
	"github.com/keyroute/keyroute/producer"
	"github.com/keyroute/keyroute/topology"
)

const secret = "tok-3b1f9c2e-do-not-log"

// flat renders an entry's message and every field, so that a secret
// anywhere in it is found.
func flat(e observer.LoggedEntry) string {
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range e.Context {
		f.AddTo(enc)
	}
	return e.LoggerName + " " + e.Message + " " + fmt.Sprint(enc.Fields)
}

// TestPulsarLogsArriveWithCluster points a producer at a cluster that
// refuses connections: pulsar-client-go's connection errors must arrive in
// zap carrying the cluster name, and the token must appear nowhere.
func TestPulsarLogsArriveWithCluster(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	z := zap.New(core).Named("keyroute")

	topo := &topology.Topology{Clusters: []topology.Cluster{{
		Name:       "down-1",
		ServiceURL: "pulsar://127.0.0.1:1", // nothing listens on port 1
		Weight:     1,
		Auth:       topology.Auth{Token: secret},
		Client:     topology.ClientSettings{OperationTimeout: time.Second, ConnectionTimeout: 500 * time.Millisecond},
	}}}
	// The topology itself, logged by a caller, is redacted too.
	kzap.Slog(z).Info("topology", "auth", topo.Clusters[0].Auth, "cluster", topo.Clusters[0])

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := producer.New(ctx, topo, producer.Topic("persistent://public/default/kzap"), kzap.Logger(z))
	require.Error(t, err, "nothing listens on the service URL")
	require.Nil(t, p)

	require.NotZero(t, logs.Len(), "pulsar-client-go's logs must reach zap")
	var withCluster int
	for _, e := range logs.All() {
		line := flat(e)
		assert.NotContains(t, line, secret, "a log line leaked the token: %s", line)
		assert.Equal(t, "keyroute", e.LoggerName)
		if e.ContextMap()["cluster"] == "down-1" {
			withCluster++
		}
	}
	assert.NotZero(t, withCluster, "pulsar-client-go's lines carry the cluster: %v", logs.All())
	t.Logf("%d log lines, %d with cluster=down-1; first: %s", logs.Len(), withCluster, flat(logs.All()[0]))
}

func TestLevelsFollowZap(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	l := kzap.Slog(zap.New(core))
	l.Info("dropped")
	l.Warn("kept", "cluster", "east-1")
	require.Equal(t, 1, logs.Len())
	e := logs.All()[0]
	assert.Equal(t, zapcore.WarnLevel, e.Level)
	assert.Equal(t, "east-1", e.ContextMap()["cluster"])
}

func TestNilLogger(t *testing.T) {
	assert.Nil(t, kzap.Slog(nil))
	assert.NotNil(t, kzap.Logger(nil))
}

func Example() {
	z := zap.NewExample()
	l := kzap.Slog(z)
	l.Info("cluster up", "cluster", "east-1")
	// Output: {"level":"info","msg":"cluster up","cluster":"east-1"}
}
