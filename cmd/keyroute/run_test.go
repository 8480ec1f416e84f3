package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/consumer"
)

func TestUsageErrors(t *testing.T) {
	fakes := startFakes(t, "east")
	topo := writeTopology(t, fakes, true)
	cases := []struct {
		name string
		args []string
		want string // in the error
	}{
		{"no command", nil, "command: missing"},
		{"unknown command", []string{"topic"}, `unknown command "topic"`},
		{"topics alone", []string{"topics"}, "needs create, describe or delete"},
		{"unknown topics verb", []string{"topics", "list"}, `unknown command "topics list"`},
		{"no topology", []string{"topics", "describe", "orders"}, "-topology: required"},
		{"missing topology file", []string{"topics", "describe", "-topology", "/nonexistent/t.yaml", "orders"}, "-topology /nonexistent/t.yaml"},
		{"no topic", []string{"topics", "describe", "-topology", topo}, "needs 1 argument(s), got 0"},
		{"flag after argument", []string{"topics", "describe", "-topology", topo, "orders", "-json"}, `unexpected "-json" (flags go before the arguments)`},
		{"bad topic", []string{"topics", "describe", "-topology", topo, "a/b"}, `argument TOPIC: "a/b" is not`},
		{"non-persistent", []string{"topics", "delete", "-topology", topo, "non-persistent://public/default/x"}, "only persistent topics"},
		{"create without partitions", []string{"topics", "create", "-topology", topo, "orders"}, "-partitions: required"},
		{"partitions of an unknown cluster", []string{"topics", "create", "-topology", topo, "-partitions", "3,west=2", "orders"}, "-partitions: no cluster named west in the topology (clusters: east)"},
		{"zero partitions", []string{"topics", "create", "-topology", topo, "-partitions", "0", "orders"}, `"0": a partition count is a whole number from 1 to 10000`},
		{"bad timeout", []string{"health", "-topology", topo, "-timeout", "0s", "orders"}, "-timeout: must be > 0"},
		{"placement without keys", []string{"placement", "-topology", topo, "-partitions", "3"}, "needs 1 argument(s)"},
		{"placement without source", []string{"placement", "-topology", topo, "k"}, "give -topic (partition counts from the clusters) or -partitions"},
		{"produce without topic", []string{"produce", "-topology", topo, "v"}, "-topic: required"},
		{"bad property", []string{"produce", "-topology", topo, "-topic", "t", "-property", "novalue", "v"}, `"novalue": want name=value`},
		{"consume flags", []string{"consume", "-topology", topo, "-type", "fifo", "-position", "middle", "-n", "-1"},
			"-topic: required\n-subscription: required\n-type: must be exclusive, failover, shared or key_shared (got \"fifo\")\n-position: must be latest or earliest (got \"middle\")\n-n: must be >= 0 (got -1)"},
		{"consume arguments", []string{"consume", "-topology", topo, "-topic", "t", "-subscription", "s", "extra"}, `unexpected "extra"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := dispatchCmd(t, c.args...)
			require.ErrorIs(t, err, ErrUsage)
			assert.Contains(t, err.Error(), c.want)
			out := runCmd(t, nil, c.args...)
			assert.Equal(t, exitUsage, out.code)
			assert.Contains(t, out.stderr, "keyroute: ")
		})
	}
	assert.Zero(t, fakes[0].admin.calls, "no usage error reaches a cluster")
}

func TestHelp(t *testing.T) {
	out := runCmd(t, nil, "help")
	assert.Equal(t, exitOK, out.code)
	for _, c := range commands() {
		assert.Contains(t, out.stderr, c.name)
	}
	out = runCmd(t, nil, "topics", "create", "-h")
	assert.Equal(t, exitOK, out.code)
	assert.Contains(t, out.stderr, "usage: keyroute topics create -topology FILE [flags] TOPIC")
	assert.Contains(t, out.stderr, "-partitions")
}

func TestPartitionSpec(t *testing.T) {
	fakes := startFakes(t, "east", "west", "north")
	topo := loadForTest(t, writeTopology(t, fakes, true))
	good := []struct {
		in   string
		want []int
	}{
		{"3", []int{3, 3, 3}},
		{"east=1,west=2,north=3", []int{1, 2, 3}},
		{"4, west=8", []int{4, 8, 4}},
		{"west=8,2", []int{2, 8, 2}},
	}
	for _, g := range good {
		var p partitionSpec
		require.NoError(t, p.Set(g.in), g.in)
		got, err := p.counts("-partitions", topo)
		require.NoError(t, err, g.in)
		assert.Equal(t, g.want, got, g.in)
	}
	bad := map[string]string{
		"":          "a partition count is a whole number",
		"x":         "a partition count is a whole number",
		"3,4":       "more than one count for every cluster",
		"=3":        "no cluster name before '='",
		"a=1,a=2":   "cluster a named twice",
		"10001":     "from 1 to 10000",
		"east=-1":   "from 1 to 10000",
		"east=2,,3": "a partition count is a whole number",
	}
	for in, want := range bad {
		var p partitionSpec
		err := p.Set(in)
		require.Error(t, err, in)
		assert.Contains(t, err.Error(), want, in)
	}
	var p partitionSpec
	require.NoError(t, p.Set("east=2"))
	_, err := p.counts("-partitions", topo)
	require.ErrorIs(t, err, ErrUsage)
	assert.Contains(t, err.Error(), "no count for cluster(s) west, north")
}

func TestPrintMessage(t *testing.T) {
	m := &consumer.Message{Key: "k 1", Value: []byte("hello\nworld"), Properties: map[string]string{"b": "2", "a": "x y"},
		PublishTime: time.Unix(1700000000, 0).UTC(), ID: consumer.ID{Cluster: "east", Partition: 2}}
	var b strings.Builder
	require.NoError(t, printMessage(&b, m, false))
	assert.Equal(t, "east/2 key=\"k 1\" value=\"hello\\nworld\" a=\"x y\" b=\"2\"\n", b.String())

	b.Reset()
	require.NoError(t, printMessage(&b, &consumer.Message{Key: "gone", NullValue: true, ID: consumer.ID{Cluster: "west"}}, false))
	assert.Equal(t, "west/0 key=\"gone\" value=null\n", b.String())

	b.Reset()
	require.NoError(t, printMessage(&b, m, true))
	assert.JSONEq(t, `{"cluster":"east","partition":2,"key":"k 1","value":"hello\nworld","properties":{"a":"x y","b":"2"},
		"publishTime":"2023-11-14T22:13:20Z","id":"`+m.ID.String()+`"}`, b.String())
}
