package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/producer"
	"github.com/keyroute/keyroute/producer/producertest"
	"github.com/keyroute/keyroute/router"
	"github.com/keyroute/keyroute/topology"
)

// planCluster is one cluster of a test topology: its service URL is a
// function of its name (and of url, when set), so that two topologies
// that keep a cluster keep its connection unless the test changes it.
type planCluster struct {
	name   string
	weight float64
	url    string // "" for the default
}

// planTopology returns the topology of cs.
func planTopology(cs ...planCluster) *topology.Topology {
	t := &topology.Topology{}
	for _, c := range cs {
		url := c.url
		if url == "" {
			url = "pulsar://" + c.name + ".plan.invalid:6650"
		}
		t.Clusters = append(t.Clusters, topology.Cluster{Name: c.name, Weight: c.weight, ServiceURL: url})
	}
	return t
}

// writePlanFile writes t to a file in dir and returns its path.
func writePlanFile(t *testing.T, dir, name string, topo *topology.Topology) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, topo.WriteFile(path))
	return path
}

// writeKeys writes n keys, one per line, and returns them and the path.
func writeKeys(t *testing.T, dir string, n int) ([]string, string) {
	t.Helper()
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "key-" + strconv.Itoa(i)
	}
	path := filepath.Join(dir, "keys.txt")
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(keys, "\n")+"\n"), 0o600))
	return keys, path
}

// runPlanJSON runs plan with args and -json, and decodes its output.
func runPlanJSON(t *testing.T, args ...string) plan {
	t.Helper()
	out := runCmd(t, nil, append([]string{"plan", "-json"}, args...)...)
	require.Equal(t, exitOK, out.code, out.stderr)
	var pl plan
	require.NoError(t, json.Unmarshal([]byte(out.stdout), &pl), out.stdout)
	return pl
}

// spot is where a producer wrote a key.
type spot struct {
	cluster   string
	partition int
}

// sendAll sends each key once through p and returns where each went.
func sendAll(t *testing.T, p *producer.Producer, keys []string) map[string]spot {
	t.Helper()
	out := make(map[string]spot, len(keys))
	for _, k := range keys {
		id, err := p.Send(context.Background(), &producer.Message{Key: k, Value: []byte("v")})
		require.NoError(t, err, k)
		out[k] = spot{id.Cluster, id.Partition}
	}
	return out
}

// movedByPair counts the keys whose spot differs in after, by
// "from->to" cluster.
func movedByPair(keys []string, before, after map[string]spot) (map[string]int, int) {
	by := map[string]int{}
	all := 0
	for _, k := range keys {
		if b, a := before[k], after[k]; b != a {
			by[b.cluster+"->"+a.cluster]++
			all++
		}
	}
	return by, all
}

const planTopic = "persistent://public/default/plan"

// TestPlanMatchesUpdate plans each change, then applies it with a
// producer's Update over fake clusters that were sent every key, and
// holds the plan to what the Update reports and to where the keys then
// go: slots moved, markers, clusters added and removed, and each key
// that moves, by old and new cluster.
func TestPlanMatchesUpdate(t *testing.T) {
	abc := []planCluster{{"a", 1, ""}, {"b", 1, ""}, {"c", 1, ""}}
	cases := []struct {
		name      string
		to        []planCluster
		connect   []string
		drain     []string
		reweight  []planWeight
		reconnect []string
	}{
		{name: "add", to: append(abc[:3:3], planCluster{"d", 1, ""}), connect: []string{"d"}},
		{name: "drain", to: []planCluster{abc[0], abc[2]}, drain: []string{"b"}},
		{name: "reweight", to: []planCluster{abc[0], {"b", 3, ""}, abc[2]}, reweight: []planWeight{{"b", 1, 3}}},
		{name: "drain, add and reweight", to: []planCluster{{"a", 0.5, ""}, abc[2], {"e", 2, ""}},
			connect: []string{"e"}, drain: []string{"b"}, reweight: []planWeight{{"a", 1, 0.5}}},
		{name: "reconnect", to: []planCluster{abc[0], {"b", 1, "pulsar://b2.plan.invalid:6650"}, abc[2]},
			reconnect: []string{"b"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cur, next := planTopology(abc...), planTopology(tc.to...)
			keys, keysPath := writeKeys(t, dir, 3000)
			pl := runPlanJSON(t, "-topology", writePlanFile(t, dir, "cur.yaml", cur), "-to", writePlanFile(t, dir, "next.yaml", next),
				"-partitions", "3,c=2", "-keys", keysPath)

			fake := producertest.New(producertest.Partitions(3), producertest.Partitions(2, "c"), producertest.Partitions(4, "e"))
			ctx := context.Background()
			p, err := producer.New(ctx, cur, producer.Topic(planTopic), fake.Opt())
			require.NoError(t, err)
			t.Cleanup(func() { _ = p.Close(ctx) })
			before := sendAll(t, p, keys)
			require.NoError(t, p.Update(ctx, next))
			ch, ok := p.LastChange()
			require.True(t, ok)
			after := sendAll(t, p, keys)

			assert.Equal(t, ch.SlotsMoved, pl.SlotsMoved, "slots moved")
			assert.Equal(t, ch.Markers, pl.Markers, "markers: every partition was written")
			assert.ElementsMatch(t, ch.Added, pl.Connect)
			assert.ElementsMatch(t, ch.Removed, pl.Drain)
			assert.ElementsMatch(t, ch.Reconnected, names(pl.Reconnect))
			assert.ElementsMatch(t, tc.connect, pl.Connect)
			assert.ElementsMatch(t, tc.drain, pl.Drain)
			assert.ElementsMatch(t, tc.reweight, pl.Reweight)
			assert.ElementsMatch(t, tc.reconnect, names(pl.Reconnect))
			assert.Empty(t, pl.Growth)

			byPair, all := movedByPair(keys, before, after)
			require.NotNil(t, pl.KeysMoved)
			assert.Equal(t, len(keys), *pl.Keys)
			assert.Equal(t, all, *pl.KeysMoved, "keys moved")
			got := map[string]int{}
			slotsSum := 0
			for _, m := range pl.Moves {
				require.NotNil(t, m.Keys)
				if *m.Keys > 0 {
					got[m.From+"->"+m.To] = *m.Keys
				}
				assert.InDelta(t, float64(m.Slots)/slots, m.Share, 1e-12)
				slotsSum += m.Slots
			}
			assert.Equal(t, byPair, got, "keys moved by old and new cluster")
			assert.InDelta(t, float64(slotsSum)/slots, pl.Share, 1e-12)
			assert.Zero(t, pl.Tolerance)
			if tc.name == "reconnect" {
				assert.Zero(t, all, "a reconnection moves no key")
				assert.Equal(t, pl.Reconnect[0].Slots, pl.SlotsMoved, "its slots are handed over")
			} else {
				assert.Positive(t, all)
			}
			// What moves is a share of the keys near the slots' share.
			assert.InDelta(t, pl.Share, float64(all)/float64(len(keys)), 0.04)
		})
	}
}

func names(cs []planConnect) []string {
	out := []string{}
	for _, c := range cs {
		out = append(out, c.Cluster)
	}
	return out
}

// TestPlanGrowth plans a growth of c's partitions from 3 to 5, and holds
// it to where two producers, one over each count, put the same keys: the
// exact count from -keys, and the sampled share within its tolerance.
func TestPlanGrowth(t *testing.T) {
	dir := t.TempDir()
	topo := planTopology(planCluster{"a", 1, ""}, planCluster{"b", 1, ""}, planCluster{"c", 1, ""})
	path := writePlanFile(t, dir, "topo.yaml", topo)
	keys, keysPath := writeKeys(t, dir, 20000)
	pl := runPlanJSON(t, "-topology", path, "-to", path, "-partitions", "3", "-grow", "c=5", "-keys", keysPath)

	placements := func(parts int) map[string]spot {
		fake := producertest.New(producertest.Partitions(3), producertest.Partitions(parts, "c"))
		p, err := producer.New(context.Background(), topo, producer.Topic(planTopic), fake.Opt())
		require.NoError(t, err)
		defer p.Close(context.Background())
		return sendAll(t, p, keys)
	}
	before, after := placements(3), placements(5)
	byPair, all := movedByPair(keys, before, after)
	onC := 0
	for _, k := range keys {
		if before[k].cluster == "c" {
			onC++
		}
	}

	assert.Zero(t, pl.SlotsMoved)
	assert.Empty(t, pl.Moves)
	require.Len(t, pl.Growth, 1)
	g := pl.Growth[0]
	assert.Equal(t, "c", g.Cluster)
	assert.Equal(t, []int{3, 5}, []int{g.PartitionsBefore, g.PartitionsAfter})
	require.NotNil(t, g.Keys)
	assert.Equal(t, map[string]int{"c->c": all}, byPair, "only c's keys move")
	assert.Equal(t, all, *g.Keys)
	assert.Equal(t, all, *pl.KeysMoved)
	assert.Equal(t, 3, pl.Markers, "a marker on each of c's partitions")

	// The sample and the key set each measure a uniform key's share: they
	// differ by at most the plan's tolerance and the key set's own
	// sampling error (4 standard errors).
	exact := float64(all) / float64(onC)
	assert.InDelta(t, exact, g.Share, g.Tolerance+samplingTolerance(onC), "growth share: sampled %.4f, keys %.4f", g.Share, exact)
	assert.Greater(t, g.Tolerance, 0.0)
	assert.Less(t, g.Tolerance, 0.005, "the stated tolerance is tight")
	assert.InDelta(t, g.ShareOfAll+0, pl.Share, 1e-12)
	assert.InDelta(t, g.Share*float64(onC)/float64(len(keys)), g.ShareOfAll, 0.01)
}

// TestPlanRefusesWhatUpdateRefuses gives plan and a producer's Update the
// same bad new topologies: plan refuses each with Update's error, as a
// usage error naming the file.
func TestPlanRefusesWhatUpdateRefuses(t *testing.T) {
	dir := t.TempDir()
	cur := planTopology(planCluster{"a", 1, ""}, planCluster{"b", 1, ""})
	curPath := writePlanFile(t, dir, "cur.yaml", cur)
	tooMany := make([]planCluster, router.MaxMembers+1) // topology takes them; the router does not
	for i := range tooMany {
		tooMany[i] = planCluster{fmt.Sprintf("c%03d", i), 1, ""}
	}
	bad := map[string]*topology.Topology{
		"weight 0":         planTopology(planCluster{"a", 0, ""}, planCluster{"b", 1, ""}),
		"duplicate name":   planTopology(planCluster{"a", 1, ""}, planCluster{"a", 1, "pulsar://other.plan.invalid:6650"}),
		"scheme":           planTopology(planCluster{"a", 1, "http://a.plan.invalid:8080"}),
		"too many members": planTopology(tooMany...),
	}
	fake := producertest.New()
	ctx := context.Background()
	p, err := producer.New(ctx, cur, producer.Topic(planTopic), fake.Opt())
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close(ctx) })
	for name, topo := range bad {
		t.Run(name, func(t *testing.T) {
			path := writePlanFile(t, dir, strings.ReplaceAll(name, " ", "-")+".yaml", topo)
			updateErr := p.Update(ctx, topo)
			require.ErrorIs(t, updateErr, producer.ErrBadTopology)

			err := dispatchCmd(t, "plan", "-topology", curPath, "-to", path, "-partitions", "2")
			require.ErrorIs(t, err, ErrUsage)
			require.ErrorIs(t, err, producer.ErrBadTopology)
			assert.Equal(t, "usage: -to "+path+": "+updateErr.Error(), err.Error())

			out := runCmd(t, nil, "plan", "-topology", curPath, "-to", path, "-partitions", "2")
			assert.Equal(t, exitUsage, out.code)
			assert.Empty(t, out.stdout)
		})
	}
	assert.Zero(t, p.Epoch(), "Update applied none")
}

func TestPlanUsage(t *testing.T) {
	dir := t.TempDir()
	cur := writePlanFile(t, dir, "cur.yaml", planTopology(planCluster{"a", 1, ""}, planCluster{"b", 1, ""}))
	next := writePlanFile(t, dir, "next.yaml", planTopology(planCluster{"a", 1, ""}, planCluster{"c", 1, ""}))
	emptyLine := filepath.Join(dir, "empty.txt")
	require.NoError(t, os.WriteFile(emptyLine, []byte("k1\n\nk2\n"), 0o600))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-topology", cur, "-partitions", "2"}, "-to: required"},
		{[]string{"-topology", cur, "-to", next}, "-topic: give -topic"},
		{[]string{"-topology", cur, "-to", next, "-topic", "t", "-partitions", "2"}, "not both"},
		{[]string{"-topology", cur, "-to", filepath.Join(dir, "none.yaml"), "-partitions", "2"}, "-to " + filepath.Join(dir, "none.yaml")},
		{[]string{"-topology", cur, "-to", next, "-partitions", "2", "-grow", "a=1"}, "-grow: cluster a: 1 partitions, fewer than its 2"},
		{[]string{"-topology", cur, "-to", next, "-partitions", "2", "-grow", "b=4"}, "-grow: cluster b is not in both"},
		{[]string{"-topology", cur, "-to", next, "-partitions", "2", "-keys", filepath.Join(dir, "none.txt")}, "-keys: open " + filepath.Join(dir, "none.txt")},
		{[]string{"-topology", cur, "-to", next, "-partitions", "2", "-keys", emptyLine}, "-keys: " + emptyLine + ": line 2 is empty"},
		{[]string{"-topology", cur, "-to", next, "-partitions", "2", "extra"}, "arguments: unexpected \"extra\""},
	} {
		err := dispatchCmd(t, append([]string{"plan"}, tc.args...)...)
		require.ErrorIs(t, err, ErrUsage, "%v", tc.args)
		assert.Contains(t, err.Error(), tc.want)
	}
}

// TestPlanFromTheClustersPartitions reads the partition counts through
// each current cluster's admin API: a non-partitioned topic counts one
// partition and cannot grow; an added cluster is not asked.
func TestPlanFromTheClustersPartitions(t *testing.T) {
	fakes := startFakes(t, "east", "west-tls")
	fakes[0].admin.put("public/default/orders", &fakeTopic{partitions: 4})
	fakes[1].admin.put("public/default/orders", &fakeTopic{partitions: 0})
	path := writeTopology(t, fakes, true)
	cur := loadForTest(t, path)
	next := *cur
	next.Clusters = append([]topology.Cluster{{Name: "north", Weight: 1, ServiceURL: "pulsar://north.plan.invalid:6650",
		AdminURL: "http://127.0.0.1:1"}}, cur.Clusters...)
	nextPath := writePlanFile(t, t.TempDir(), "next.yaml", &next)

	pl := runPlanJSON(t, "-topology", path, "-to", nextPath, "-topic", "orders")
	assert.Equal(t, []string{"north"}, pl.Connect)
	assert.Equal(t, 4+1, pl.Markers, "east's 4 partitions and west's topic")
	pl = runPlanJSON(t, "-topology", path, "-to", nextPath, "-topic", "orders", "-grow", "east=6")
	require.Len(t, pl.Growth, 1)
	assert.Equal(t, []int{4, 6}, []int{pl.Growth[0].PartitionsBefore, pl.Growth[0].PartitionsAfter})

	err := dispatchCmd(t, "plan", "-topology", path, "-to", nextPath, "-topic", "orders", "-grow", "west-tls=3")
	require.ErrorIs(t, err, ErrUsage)
	assert.Contains(t, err.Error(), "cluster west-tls: the topic is not partitioned there")

	fakes[1].admin.drop("public/default/orders")
	err = dispatchCmd(t, "plan", "-topology", path, "-to", nextPath, "-topic", "orders")
	require.ErrorIs(t, err, ErrTopicNotFound)
	var ce *ClusterError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "west-tls", ce.Cluster)
}

// TestPlanTextOutput shows a change in short: the clusters, what moves
// in all and per cluster pair and growth, and the markers.
func TestPlanTextOutput(t *testing.T) {
	dir := t.TempDir()
	cur := writePlanFile(t, dir, "cur.yaml", planTopology(planCluster{"a", 1, ""}, planCluster{"b", 1, ""}))
	next := writePlanFile(t, dir, "next.yaml", planTopology(planCluster{"a", 2, ""}, planCluster{"c", 1, ""}))
	_, keys := writeKeys(t, dir, 100)
	out := runCmd(t, nil, "plan", "-topology", cur, "-to", next, "-partitions", "3", "-grow", "a=4", "-keys", keys)
	require.Equal(t, exitOK, out.code, out.stderr)
	pl := runPlanJSON(t, "-topology", cur, "-to", next, "-partitions", "3", "-grow", "a=4", "-keys", keys)

	assert.Contains(t, out.stdout, "clusters: connect c; drain b; reweight a 1 -> 2\n")
	assert.Contains(t, out.stdout, fmt.Sprintf("keys moved: %s; of the 100 keys in %s: %d\n", percent(pl.Share, pl.Tolerance), keys, *pl.KeysMoved))
	assert.Contains(t, out.stdout, fmt.Sprintf("slots moved: %d of 65536\n", pl.SlotsMoved))
	assert.Regexp(t, `(?m)^FROM\s+TO\s+SLOTS\s+KEYS\s+IN -keys$`, out.stdout)
	for _, m := range pl.Moves {
		assert.Regexp(t, fmt.Sprintf(`(?m)^%s\s+%s\s+%d\s+%s\s+%d$`, m.From, m.To, m.Slots, regexpQuote(percent(m.Share, 0)), *m.Keys), out.stdout)
	}
	g := pl.Growth[0]
	assert.Regexp(t, fmt.Sprintf(`(?m)^a\s+3 -> 4\s+%s\s+%s\s+%d$`, regexpQuote(percent(g.Share, g.Tolerance)), regexpQuote(percent(g.ShareOfAll, 0)), *g.Keys), out.stdout)
	assert.Contains(t, out.stdout, fmt.Sprintf("markers: at most %d, one on each partition", pl.Markers))
	assert.Equal(t, 3+3+3, pl.Markers, "a and b lose slots; a grows")

	moved := writePlanFile(t, dir, "moved.yaml", planTopology(planCluster{"a", 1, ""}, planCluster{"b", 1, "pulsar://b2.plan.invalid:6650"}))
	out = runCmd(t, nil, "plan", "-topology", cur, "-to", moved, "-partitions", "3")
	require.Equal(t, exitOK, out.code, out.stderr)
	assert.Regexp(t, `^clusters: reconnect b \(client settings changes: \d+ slots handed to the new connection, not moved\)\n`+
		`keys moved: 0\.00%\nslots moved: \d+ of 65536 \(with those handed to a new connection, as Update counts them\)\n`+
		`markers: at most 3, `, out.stdout)

	out = runCmd(t, nil, "plan", "-topology", cur, "-to", cur, "-partitions", "3")
	require.Equal(t, exitOK, out.code, out.stderr)
	assert.Equal(t, "clusters: none to connect, drain, reweight or reconnect\nkeys moved: 0.00%\nslots moved: 0 of 65536\nmarkers: none (no key leaves a partition)\n", out.stdout)
}

func regexpQuote(s string) string {
	r := strings.NewReplacer(".", `\.`, "+", `\+`, "%", "%")
	return r.Replace(s)
}

// TestSamplingTolerance pins the bound: 4 standard errors of a share of
// one half over n samples.
func TestSamplingTolerance(t *testing.T) {
	assert.Zero(t, samplingTolerance(0))
	assert.InDelta(t, 4*math.Sqrt(0.25/10000), samplingTolerance(10000), 1e-15)
}

// TestPlanJSONFields pins the -json field names, which scripts read.
func TestPlanJSONFields(t *testing.T) {
	dir := t.TempDir()
	cur := writePlanFile(t, dir, "cur.yaml", planTopology(planCluster{"a", 1, ""}, planCluster{"b", 1, ""}))
	next := writePlanFile(t, dir, "next.yaml", planTopology(planCluster{"a", 2, ""}, planCluster{"b", 1, "pulsar://b2.plan.invalid:6650"}, planCluster{"c", 1, ""}))
	_, keys := writeKeys(t, dir, 10)
	out := runCmd(t, nil, "plan", "-json", "-topology", cur, "-to", next, "-partitions", "3", "-grow", "a=4", "-keys", keys)
	require.Equal(t, exitOK, out.code, out.stderr)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(out.stdout), &got))
	fields := func(m map[string]any) []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		return out
	}
	assert.ElementsMatch(t, []string{"slots", "slotsMoved", "share", "tolerance", "moves", "growth", "markers",
		"connect", "drain", "reweight", "reconnect", "keys", "keysMoved"}, fields(got))
	assert.ElementsMatch(t, []string{"from", "to", "slots", "share", "keys"}, fields(got["moves"].([]any)[0].(map[string]any)))
	assert.ElementsMatch(t, []string{"cluster", "partitionsBefore", "partitionsAfter", "share", "tolerance", "shareOfAll", "keys"},
		fields(got["growth"].([]any)[0].(map[string]any)))
	assert.ElementsMatch(t, []string{"cluster", "from", "to"}, fields(got["reweight"].([]any)[0].(map[string]any)))
	assert.ElementsMatch(t, []string{"cluster", "field", "slots"}, fields(got["reconnect"].([]any)[0].(map[string]any)))

	out = runCmd(t, nil, "plan", "-json", "-topology", cur, "-to", cur, "-partitions", "3")
	require.Equal(t, exitOK, out.code, out.stderr)
	assert.JSONEq(t, `{"slots":65536,"slotsMoved":0,"share":0,"tolerance":0,"moves":[],"growth":[],"markers":0,
		"connect":[],"drain":[],"reweight":[],"reconnect":[]}`, out.stdout, "no change; no keys fields without -keys")
}
