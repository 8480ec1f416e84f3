package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/topology"
)

var errRefused = errors.New("connection refused")

func TestHealth(t *testing.T) {
	fakes := startFakes(t, "east", "west-tls", "north")
	for i, fc := range fakes {
		fc.admin.put("public/default/orders", &fakeTopic{partitions: 3, stats: topicStats{
			Subscriptions: map[string]subStats{"billing": {MsgBacklog: int64(10 * (i + 1)), Type: "Shared"}}}})
	}
	fakes[2].admin.drop("public/default/orders") // north lacks the topic
	path := writeTopology(t, fakes, true)

	var mu sync.Mutex
	probed := map[string]string{}
	probe := func(_ context.Context, cl topology.Cluster, topic string) (int, error) {
		mu.Lock()
		probed[cl.Name] = topic
		mu.Unlock()
		if cl.Name == "west-tls" {
			return 0, errRefused
		}
		return 3, nil
	}
	out := runCmd(t, probe, "health", "-topology", path, "-json", "orders")
	assert.Equal(t, exitFailure, out.code)
	assert.Equal(t, map[string]string{"east": testTopic, "west-tls": testTopic, "north": testTopic}, probed)
	var got []clusterHealth
	require.NoError(t, json.Unmarshal([]byte(out.stdout), &got))
	require.Len(t, got, 3)
	assert.Equal(t, clusterHealth{Cluster: "east", Healthy: true, Service: "ok", ServicePartitions: 3, Admin: "ok", Partitions: 3,
		Subscriptions: []subscriptionRow{{Name: "billing", Type: "Shared", Backlog: 10}}}, got[0])
	assert.False(t, got[1].Healthy)
	assert.Contains(t, got[1].Service, "connection refused")
	assert.Equal(t, "ok", got[1].Admin)
	assert.Equal(t, []subscriptionRow{{Name: "billing", Type: "Shared", Backlog: 20}}, got[1].Subscriptions, "the admin part still reported")
	assert.False(t, got[2].Healthy)
	assert.Equal(t, "ok", got[2].Service)
	assert.Contains(t, got[2].Admin, "topic not found")
	assert.Equal(t, -1, got[2].Partitions)
	assert.Contains(t, out.stderr, "keyroute: cluster west-tls: look the topic up through pulsar+ssl://127.0.0.1:2: connection refused")
	assert.Contains(t, out.stderr, "keyroute: cluster north: health: topic not found")

	var stdout, stderr strings.Builder
	e := &env{stdout: &stdout, stderr: &stderr, probe: probe}
	err := dispatch(context.Background(), e, []string{"health", "-topology", path, "orders"})
	require.ErrorIs(t, err, ErrUnhealthy)
	require.ErrorIs(t, err, errRefused)
	var ce *ClusterError
	require.ErrorAs(t, err, &ce)
	assert.Contains(t, []string{"west-tls", "north"}, ce.Cluster)
	assert.Regexp(t, `(?m)^east\s+yes\s+ok\s+ok\s+3\s+billing\s+0\s+10$`, stdout.String())
	assert.Regexp(t, `(?m)^west-tls\s+NO\s+failed\s+ok\s+3\s+billing\s+0\s+20$`, stdout.String())
	assert.Regexp(t, `(?m)^north\s+NO\s+ok\s+failed\s+-\s+-\s+-\s+-$`, stdout.String())

	fakes[2].admin.put("public/default/orders", &fakeTopic{partitions: 3})
	healthy := func(context.Context, topology.Cluster, string) (int, error) { return 3, nil }
	out = runCmd(t, healthy, "health", "-topology", path, "orders")
	assert.Equal(t, exitOK, out.code, out.stderr)
}
