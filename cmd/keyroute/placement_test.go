package main

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/topology"
)

// vectors is router/testdata/vectors.json, the placement contract.
type vectors struct {
	Sets []struct {
		Name    string `json:"name"`
		Members []struct {
			Name   string  `json:"name"`
			Weight float64 `json:"weight"`
		} `json:"members"`
	} `json:"sets"`
	Keyed []struct {
		Set        string `json:"set"`
		KeyHex     string `json:"key_utf8_hex"`
		Cluster    string `json:"cluster"`
		Partitions int    `json:"partitions"`
		Partition  int    `json:"partition"`
	} `json:"keyed"`
}

func loadVectors(t *testing.T) vectors {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "router", "testdata", "vectors.json"))
	require.NoError(t, err)
	var v vectors
	require.NoError(t, json.Unmarshal(b, &v))
	require.NotEmpty(t, v.Keyed)
	return v
}

// vectorTopology writes a topology with the set's members, in their order.
func vectorTopology(t *testing.T, v vectors, set string) string {
	t.Helper()
	var topo topology.Topology
	for _, s := range v.Sets {
		if s.Name != set {
			continue
		}
		for i, m := range s.Members {
			topo.Clusters = append(topo.Clusters, topology.Cluster{Name: m.Name, Weight: m.Weight,
				ServiceURL: "pulsar://127.0.0.1:" + strconv.Itoa(6650+i)})
		}
	}
	require.NotEmpty(t, topo.Clusters, set)
	path := filepath.Join(t.TempDir(), set+".yaml")
	require.NoError(t, topo.WriteFile(path))
	return path
}

// TestPlacementKnownAnswers runs placement -partitions N on every keyed
// vector of the routing contract: the command must place keys exactly as
// the producer does.
func TestPlacementKnownAnswers(t *testing.T) {
	v := loadVectors(t)
	paths := map[string]string{}
	for _, kv := range v.Keyed {
		key, err := hex.DecodeString(kv.KeyHex)
		require.NoError(t, err)
		if paths[kv.Set] == "" {
			paths[kv.Set] = vectorTopology(t, v, kv.Set)
		}
		out := runCmd(t, nil, "placement", "-topology", paths[kv.Set], "-partitions", strconv.Itoa(kv.Partitions), "-json", "--", string(key))
		require.Equal(t, exitOK, out.code, out.stderr)
		var got []placed
		require.NoError(t, json.Unmarshal([]byte(out.stdout), &got))
		require.Equal(t, []placed{{Key: string(key), Cluster: kv.Cluster, Partition: &kv.Partition}}, got,
			"set %s key %x partitions %d", kv.Set, key, kv.Partitions)
	}
}

func TestPlacementFromTheClustersPartitions(t *testing.T) {
	fakes := startFakes(t, "east", "west-tls")
	fakes[0].admin.put("public/default/orders", &fakeTopic{partitions: 4})
	fakes[1].admin.put("public/default/orders", &fakeTopic{partitions: 0}) // non-partitioned
	path := writeTopology(t, fakes, true)
	p, err := newPlacer(loadForTest(t, path), []int{4, 1})
	require.NoError(t, err)

	keys := []string{"k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8"}
	out := runCmd(t, nil, append([]string{"placement", "-topology", path, "-topic", "orders", "-json"}, keys...)...)
	require.Equal(t, exitOK, out.code, out.stderr)
	var got []placed
	require.NoError(t, json.Unmarshal([]byte(out.stdout), &got))
	require.Len(t, got, len(keys))
	seen := map[string]bool{}
	for i, g := range got {
		ci, pi := p.place(keys[i])
		want := placed{Key: keys[i], Cluster: p.names[ci], Partition: &pi, Topic: testTopic}
		if ci == 0 {
			want.Topic = testTopic + "-partition-" + strconv.Itoa(pi)
		}
		assert.Equal(t, want, g)
		seen[g.Cluster] = true
	}
	assert.Len(t, seen, 2, "the keys reach both clusters")

	// A cluster without the topic is named.
	fakes[1].admin.drop("public/default/orders")
	err = dispatchCmd(t, "placement", "-topology", path, "-topic", "orders", "k1")
	require.ErrorIs(t, err, ErrTopicNotFound)
	var ce *ClusterError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "west-tls", ce.Cluster)
}

func TestPlacementTextOutput(t *testing.T) {
	v := loadVectors(t)
	path := vectorTopology(t, v, "five-equal")
	out := runCmd(t, nil, "placement", "-topology", path, "-partitions", "5", "a")
	require.Equal(t, exitOK, out.code, out.stderr)
	// The first vector of five-equal: "a" -> ams, partition 2 of 5.
	assert.Regexp(t, `(?m)^"a"\s+ams\s+2\s*$`, out.stdout)
}

// The empty key has no place: the producer spreads keyless messages, so
// placement says so instead of printing the cluster and partition a hash
// of "" would give; the other keys are placed as usual.
func TestPlacementOfTheEmptyKeySaysItIsSpread(t *testing.T) {
	v := loadVectors(t)
	path := vectorTopology(t, v, "five-equal")
	p, err := newPlacer(loadForTest(t, path), []int{5, 5, 5, 5, 5})
	require.NoError(t, err)
	ci, pi := p.place("a")
	out := runCmd(t, nil, "placement", "-topology", path, "-partitions", "5", "-json", "--", "", "a")
	require.Equal(t, exitOK, out.code, out.stderr)
	var got []placed
	require.NoError(t, json.Unmarshal([]byte(out.stdout), &got))
	assert.Equal(t, []placed{{Key: "", Keyless: true}, {Key: "a", Cluster: p.names[ci], Partition: &pi}}, got)
	assert.JSONEq(t, `[{"key":"","keyless":true},{"key":"a","cluster":"`+p.names[ci]+`","partition":`+strconv.Itoa(pi)+`}]`, out.stdout)

	out = runCmd(t, nil, "placement", "-topology", path, "-partitions", "5", "--", "", "a")
	require.Equal(t, exitOK, out.code, out.stderr)
	assert.Regexp(t, `(?m)^""\s+keyless: spread over every cluster and partition, not hashed\s*$`, out.stdout)
	assert.Regexp(t, `(?m)^"a"\s+`+p.names[ci]+`\s+`+strconv.Itoa(pi)+`\s*$`, out.stdout)
}
