package main

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/topology"
)

const testTopic = "persistent://public/default/orders"

func TestTopicsCreateDescribeDelete(t *testing.T) {
	fakes := startFakes(t, "east", "west-tls")
	topo := writeTopology(t, fakes, true)

	out := runCmd(t, nil, "topics", "create", "-topology", topo, "-partitions", "3,west-tls=5", "-json", "orders")
	require.Equal(t, exitOK, out.code, out.stderr)
	var created []createResult
	require.NoError(t, json.Unmarshal([]byte(out.stdout), &created))
	assert.Equal(t, []createResult{{Cluster: "east", Partitions: 3, Result: "created"}, {Cluster: "west-tls", Partitions: 5, Result: "created"}}, created)
	assert.Equal(t, 3, fakes[0].admin.get("public/default/orders").partitions)
	assert.Equal(t, 5, fakes[1].admin.get("public/default/orders").partitions)

	// Again: both exist with those counts.
	out = runCmd(t, nil, "topics", "create", "-topology", topo, "-partitions", "3,west-tls=5", "orders")
	require.Equal(t, exitOK, out.code, out.stderr)
	assert.Regexp(t, `(?m)^east\s+3\s+exists$`, out.stdout)
	assert.Regexp(t, `(?m)^west-tls\s+5\s+exists$`, out.stdout)

	fakes[1].admin.get("public/default/orders").stats = topicStats{MsgInCounter: 42, StorageSize: 4200,
		Publishers: []json.RawMessage{[]byte(`{}`)},
		Subscriptions: map[string]subStats{
			"billing": {MsgBacklog: 7, Type: "Failover", Consumers: []json.RawMessage{[]byte(`{}`), []byte(`{}`)}},
			"audit":   {MsgBacklog: 0, Type: "Exclusive"},
		}}
	out = runCmd(t, nil, "topics", "describe", "-topology", topo, "-json", testTopic)
	require.Equal(t, exitOK, out.code, out.stderr)
	var desc []describeResult
	require.NoError(t, json.Unmarshal([]byte(out.stdout), &desc))
	require.Len(t, desc, 2)
	assert.Equal(t, describeResult{Cluster: "east", Exists: true, Partitions: 3, Subscriptions: []subscriptionRow{}}, desc[0])
	assert.Equal(t, describeResult{Cluster: "west-tls", Exists: true, Partitions: 5, Producers: 1, MsgIn: 42, StorageBytes: 4200,
		Subscriptions: []subscriptionRow{{Name: "audit", Type: "Exclusive"}, {Name: "billing", Type: "Failover", Consumers: 2, Backlog: 7}}}, desc[1])

	out = runCmd(t, nil, "topics", "describe", "-topology", topo, testTopic)
	require.Equal(t, exitOK, out.code, out.stderr)
	assert.Regexp(t, `(?m)^west-tls\s+5\s+1\s+42\s+4200\s+billing\s+Failover\s+2\s+7$`, out.stdout)

	// A connected producer: delete without -force is refused by the broker,
	// with -force it goes through.
	err := dispatchCmd(t, "topics", "delete", "-topology", topo, testTopic)
	require.ErrorIs(t, err, ErrStatus)
	var ce *ClusterError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "west-tls", ce.Cluster)
	assert.Nil(t, fakes[0].admin.get("public/default/orders"), "deleted where nothing was connected")

	out = runCmd(t, nil, "topics", "delete", "-topology", topo, "-force", testTopic)
	assert.Equal(t, exitFailure, out.code, "east no longer has it")
	assert.Regexp(t, `(?m)^east\s+not found$`, out.stdout)
	assert.Regexp(t, `(?m)^west-tls\s+deleted$`, out.stdout)
	assert.Contains(t, out.stderr, "keyroute: cluster east: delete topic: topic not found: "+testTopic)
	assert.Nil(t, fakes[1].admin.get("public/default/orders"))

	err = dispatchCmd(t, "topics", "describe", "-topology", topo, testTopic)
	require.ErrorIs(t, err, ErrTopicNotFound)
}

func TestTopicsCreatePartitionMismatchNamesTheCluster(t *testing.T) {
	fakes := startFakes(t, "a", "b", "c")
	fakes[1].admin.put("public/default/orders", &fakeTopic{partitions: 2})
	topo := writeTopology(t, fakes, true)

	err := dispatchCmd(t, "topics", "create", "-topology", topo, "-partitions", "3", testTopic)
	require.ErrorIs(t, err, ErrPartitionMismatch)
	var ce *ClusterError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "b", ce.Cluster)
	assert.Equal(t, 3, fakes[0].admin.get("public/default/orders").partitions, "the other clusters still get it")
	assert.Equal(t, 3, fakes[2].admin.get("public/default/orders").partitions)
	assert.Equal(t, 2, fakes[1].admin.get("public/default/orders").partitions, "left as it was")

	out := runCmd(t, nil, "topics", "create", "-topology", topo, "-partitions", "3", testTopic)
	assert.Equal(t, exitFailure, out.code)
	assert.Regexp(t, `(?m)^b\s+3\s+failed$`, out.stdout)
	assert.Contains(t, out.stderr, "keyroute: cluster b: create topic: topic exists with a different partition count")
}

func TestAdminCallsCarryTheClusterToken(t *testing.T) {
	fakes := startFakes(t, "plain", "sec-tls")
	noTokens := writeTopology(t, fakes, false)

	// Without the token the TLS cluster refuses, and the error names it.
	err := dispatchCmd(t, "topics", "create", "-topology", noTokens, "-partitions", "2", testTopic)
	require.ErrorIs(t, err, ErrStatus)
	var ce *ClusterError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "sec-tls", ce.Cluster)
	assert.Contains(t, err.Error(), "HTTP 401: Authentication required")
	assert.Nil(t, fakes[1].admin.get("public/default/orders"))

	// The SDK's environment override supplies it (topology.Load applies it).
	t.Setenv("KEYROUTE_CLUSTER_SEC_TLS_TOKEN", "secret-sec-tls")
	require.NoError(t, dispatchCmd(t, "topics", "create", "-topology", noTokens, "-partitions", "2", testTopic))
	assert.Equal(t, 2, fakes[1].admin.get("public/default/orders").partitions)
}

func TestAdminURLOverrideFromEnvironment(t *testing.T) {
	fakes := startFakes(t, "east", "west")
	topo := writeTopology(t, fakes, true)
	other := startFakes(t, "elsewhere")[0]
	t.Setenv("KEYROUTE_CLUSTER_WEST_ADMIN_URL", other.srv.URL)

	require.NoError(t, dispatchCmd(t, "topics", "create", "-topology", topo, "-partitions", "1", testTopic))
	assert.Nil(t, fakes[1].admin.get("public/default/orders"), "the file's adminURL is replaced")
	assert.NotNil(t, other.admin.get("public/default/orders"))
}

func TestClusterWithoutAdminURL(t *testing.T) {
	fakes := startFakes(t, "east", "west")
	path := writeTopology(t, fakes, true)
	topo := loadForTest(t, path)
	topo.Clusters[1].AdminURL = ""
	require.NoError(t, topo.WriteFile(path))

	err := dispatchCmd(t, "topics", "create", "-topology", path, "-partitions", "1", testTopic)
	var ce *ClusterError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "west", ce.Cluster)
	assert.True(t, errors.Is(err, topology.ErrNoAdminURL), "%v", err)
}
