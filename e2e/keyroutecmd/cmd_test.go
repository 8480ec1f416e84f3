//go:build e2e

package keyroutecmd

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/e2e/internal/program"
)

type outcome = program.Outcome

// keyroute runs the command with args, extra environment variables and
// stdin, bounded by ctx.
func keyroute(ctx context.Context, env []string, stdin string, args ...string) outcome {
	return program.Run{Bin: binary, Dir: tmpDir, Env: env, Stdin: stdin}.Exec(ctx, args...)
}

// jsonOf decodes the command's JSON output into v.
func jsonOf[T any](out outcome) T {
	var v T
	Expect(json.Unmarshal([]byte(out.Stdout), &v)).To(Succeed(), "JSON output:\n%s", out.Stdout)
	return v
}

// jsonLines decodes one JSON object per line.
func jsonLines[T any](out outcome) []T {
	var all []T
	for _, line := range strings.Split(strings.TrimSpace(out.Stdout), "\n") {
		var v T
		Expect(json.Unmarshal([]byte(line), &v)).To(Succeed(), "JSON line %q", line)
		all = append(all, v)
	}
	return all
}

type subscription struct {
	Name      string `json:"name"`
	Consumers int    `json:"consumers"`
	Backlog   int64  `json:"backlog"`
}

type described struct {
	Cluster       string         `json:"cluster"`
	Exists        bool           `json:"exists"`
	Partitions    int            `json:"partitions"`
	MsgIn         int64          `json:"msgIn"`
	Subscriptions []subscription `json:"subscriptions"`
	Error         string         `json:"error"`
}

type placed struct {
	Key       string `json:"key"`
	Cluster   string `json:"cluster"`
	Partition int    `json:"partition"`
	Topic     string `json:"topic"`
}

type sent struct {
	Key       string `json:"key"`
	Cluster   string `json:"cluster"`
	Partition int    `json:"partition"`
}

type received struct {
	Cluster    string            `json:"cluster"`
	Partition  int               `json:"partition"`
	Key        string            `json:"key"`
	Value      string            `json:"value"`
	Properties map[string]string `json:"properties"`
}

type health struct {
	Cluster           string         `json:"cluster"`
	Healthy           bool           `json:"healthy"`
	Service           string         `json:"service"`
	ServicePartitions int            `json:"servicePartitions"`
	Admin             string         `json:"admin"`
	Partitions        int            `json:"partitions"`
	Subscriptions     []subscription `json:"subscriptions"`
}

// where is a message's cluster and partition.
type where struct {
	cluster   string
	partition int
}

var runID = strconv.FormatInt(time.Now().UnixNano(), 36)

// lifecycle runs a topic's whole life through the command on b.
func lifecycle(ctx context.Context, b bedUnderTest) {
	const keys = 24
	topic := "persistent://public/default/cmd-" + runID + "-" + b.names[0]
	first, second := b.names[0], b.names[1]
	// args is the command line of verb ("topics create", "placement")
	// on b's topology, then the flags and arguments.
	args := func(verb string, rest ...string) []string {
		return append(append(strings.Fields(verb), "-topology", b.topology), rest...)
	}

	By("topics create: 2 partitions on the first cluster, 3 on the second")
	out := keyroute(ctx, nil, "", args("topics create", "-partitions", "2,"+second+"=3", "-json", topic)...)
	Expect(out.Code).To(Equal(0))
	Expect(out.Stdout).To(MatchJSON(fmt.Sprintf(`[{"cluster":%q,"partitions":2,"result":"created"},{"cluster":%q,"partitions":3,"result":"created"}]`, first, second)))
	out = keyroute(ctx, nil, "", args("topics create", "-partitions", "2,"+second+"=3", topic)...)
	Expect(out.Code).To(Equal(0))
	Expect(out.Stdout).To(MatchRegexp(`(?m)^` + second + `\s+3\s+exists$`))
	out = keyroute(ctx, nil, "", args("topics create", "-partitions", "4", topic)...)
	Expect(out.Code).To(Equal(1), "another partition count")
	Expect(out.Stderr).To(ContainSubstring("cluster " + first + ": create topic: topic exists with a different partition count"))

	By("topics describe")
	d := jsonOf[[]described](keyroute(ctx, nil, "", args("topics describe", "-json", topic)...))
	Expect(d).To(HaveLen(2))
	Expect([]int{d[0].Partitions, d[1].Partitions}).To(Equal([]int{2, 3}))
	Expect(d[0].Exists && d[1].Exists).To(BeTrue())

	By("placement of the keys, from the clusters' partition counts")
	names := make([]string, keys)
	for i := range names {
		names[i] = "key-" + strconv.Itoa(i)
	}
	pl := jsonOf[[]placed](keyroute(ctx, nil, "", append(args("placement", "-topic", topic, "-json"), names...)...))
	Expect(pl).To(HaveLen(keys))
	want := map[string]where{}
	perCluster := map[string]int64{}
	for i, p := range pl {
		Expect(p.Key).To(Equal(names[i]))
		Expect(p.Topic).To(Equal(topic + "-partition-" + strconv.Itoa(p.Partition)))
		want[p.Key] = where{p.Cluster, p.Partition}
		perCluster[p.Cluster]++
	}
	Expect(perCluster).To(HaveLen(2), "the keys reach both clusters")

	By("consume once to create the subscription on every cluster (nothing to read yet)")
	out = keyroute(ctx, nil, "", args("consume", "-topic", topic, "-subscription", "look", "-position", "earliest", "-wait", "1s")...)
	Expect(out.Code).To(Equal(0))
	Expect(out.Stderr).To(ContainSubstring("0 message(s) received"))

	By("produce: each message goes where placement said")
	var lines strings.Builder
	for _, k := range names {
		fmt.Fprintf(&lines, "%s=value of %s\n", k, k)
	}
	out = keyroute(ctx, nil, lines.String(), args("produce", "-topic", topic, "-key-separator", "=", "-property", "origin=e2e", "-json")...)
	Expect(out.Code).To(Equal(0))
	s := jsonLines[sent](out)
	Expect(s).To(HaveLen(keys))
	for _, m := range s {
		Expect(where{m.Cluster, m.Partition}).To(Equal(want[m.Key]), "key %s", m.Key)
	}

	By("health: every cluster healthy, the subscription's backlog is what was sent there")
	h := jsonOf[[]health](keyroute(ctx, nil, "", args("health", "-json", topic)...))
	Expect(h).To(HaveLen(2))
	for _, c := range h {
		Expect(c.Healthy).To(BeTrue(), "%+v", c)
		Expect(c.ServicePartitions).To(Equal(map[string]int{first: 2, second: 3}[c.Cluster]))
		Expect(c.Partitions).To(Equal(c.ServicePartitions))
		Expect(c.Subscriptions).To(Equal([]subscription{{Name: "look", Backlog: perCluster[c.Cluster]}}), c.Cluster)
	}

	By("consume: every message, with its key, value and properties, from where it was placed")
	out = keyroute(ctx, nil, "", args("consume", "-topic", topic, "-subscription", "look", "-n", strconv.Itoa(keys), "-json")...)
	Expect(out.Code).To(Equal(0))
	got := jsonLines[received](out)
	Expect(got).To(HaveLen(keys))
	seen := map[string]bool{}
	for _, m := range got {
		Expect(where{m.Cluster, m.Partition}).To(Equal(want[m.Key]), "key %s", m.Key)
		Expect(m.Value).To(Equal("value of " + m.Key))
		Expect(m.Properties).To(Equal(map[string]string{"origin": "e2e"}))
		seen[m.Key] = true
	}
	Expect(seen).To(HaveLen(keys))
	out = keyroute(ctx, nil, "", args("consume", "-topic", topic, "-subscription", "look", "-wait", "1s")...)
	Expect(out.Code).To(Equal(0))
	Expect(out.Stdout).To(BeEmpty(), "all were acknowledged")

	By("topics delete, then describe finds it on no cluster")
	out = keyroute(ctx, nil, "", args("topics delete", "-force", topic)...)
	Expect(out.Code).To(Equal(0))
	Expect(out.Stdout).To(MatchRegexp(`(?m)^` + first + `\s+deleted$`))
	Expect(out.Stdout).To(MatchRegexp(`(?m)^` + second + `\s+deleted$`))
	out = keyroute(ctx, nil, "", args("topics describe", topic)...)
	Expect(out.Code).To(Equal(1))
	for _, n := range b.names {
		Expect(out.Stderr).To(ContainSubstring("cluster " + n + ": describe: topic not found"))
	}
}

var _ = Describe("the keyroute command", func() {
	It("runs a topic's life on plain clusters", func(ctx SpecContext) {
		lifecycle(ctx, plain)
	}, SpecTimeout(5*time.Minute))

	It("runs a topic's life on TLS + token clusters", func(ctx SpecContext) {
		lifecycle(ctx, secure)
	}, SpecTimeout(5*time.Minute))

	It("names the cluster whose admin URL is wrong, and still answers for the other", func(ctx SpecContext) {
		topic := "cmd-down-" + runID
		bad := []string{"KEYROUTE_CLUSTER_" + strings.ToUpper(strings.ReplaceAll(plain.names[1], "-", "_")) + "_ADMIN_URL=http://127.0.0.1:1"}
		out := keyroute(ctx, bad, "", "topics", "create", "-topology", plain.topology, "-partitions", "1", topic)
		Expect(out.Code).To(Equal(1))
		Expect(out.Stdout).To(MatchRegexp(`(?m)^` + plain.names[0] + `\s+1\s+created$`))
		Expect(out.Stdout).To(MatchRegexp(`(?m)^` + plain.names[1] + `\s+1\s+failed$`))
		Expect(out.Stderr).To(ContainSubstring("keyroute: cluster " + plain.names[1] + ": create topic:"))
		Expect(out.Stderr).To(ContainSubstring("connection refused"))
		out = keyroute(ctx, nil, "", "topics", "delete", "-topology", plain.topology, topic)
		Expect(out.Code).To(Equal(1), "the second cluster never got it")
		Expect(out.Stdout).To(MatchRegexp(`(?m)^` + plain.names[0] + `\s+deleted$`))
		Expect(out.Stdout).To(MatchRegexp(`(?m)^` + plain.names[1] + `\s+not found$`))
	}, SpecTimeout(2*time.Minute))

	It("names the secure cluster whose token is wrong, on the admin and the service URL", func(ctx SpecContext) {
		topic := "cmd-token-" + runID
		out := keyroute(ctx, nil, "", "topics", "create", "-topology", secure.topology, "-partitions", "2", topic)
		Expect(out.Code).To(Equal(0))
		victim := secure.names[1]
		bad := []string{"KEYROUTE_CLUSTER_" + strings.ToUpper(strings.ReplaceAll(victim, "-", "_")) + "_TOKEN=not-a-token"}

		out = keyroute(ctx, bad, "", "topics", "describe", "-topology", secure.topology, topic)
		Expect(out.Code).To(Equal(1))
		Expect(out.Stderr).To(ContainSubstring("keyroute: cluster " + victim + ": get partitions: unexpected admin API status: HTTP 401"))
		Expect(out.Stdout).To(MatchRegexp(`(?m)^`+secure.names[0]+`\s+2\s+0\s+0\s`), "the other cluster still described")

		h := jsonOf[[]health](keyroute(ctx, bad, "", "health", "-topology", secure.topology, "-timeout", "10s", "-json", topic))
		Expect(h).To(HaveLen(2))
		Expect(h[0].Healthy).To(BeTrue(), "%+v", h[0])
		Expect(h[1].Healthy).To(BeFalse())
		Expect(h[1].Service).NotTo(Equal("ok"))
		Expect(h[1].Admin).To(ContainSubstring("HTTP 401"))

		out = keyroute(ctx, nil, "", "topics", "delete", "-topology", secure.topology, topic)
		Expect(out.Code).To(Equal(0))
	}, SpecTimeout(2*time.Minute))
})
