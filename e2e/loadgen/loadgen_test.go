//go:build e2e

package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/e2e/internal/program"
	"github.com/keyroute/keyroute/internal/admin"
	"github.com/keyroute/keyroute/internal/testbed"
	"github.com/keyroute/keyroute/topology"
)

// result is the part of loadgen's -json output the suite checks.
type result struct {
	Settings struct {
		Clusters      []string `json:"clusters"`
		LocalClusters bool     `json:"localClusters"`
		Mode          string   `json:"mode"`
		Topics        []string `json:"topics"`
	} `json:"settings"`
	Overall struct {
		Messages  int64   `json:"messages"`
		MsgPerSec float64 `json:"msgPerSec"`
		Latency   struct {
			P50 float64 `json:"p50"`
			P99 float64 `json:"p99"`
		} `json:"latencyMs"`
	} `json:"overall"`
	Clusters []struct {
		Cluster  string `json:"cluster"`
		Messages int64  `json:"messages"`
		Received int64  `json:"received"`
		EndToEnd *struct {
			P50 float64 `json:"p50"`
		} `json:"endToEndMs"`
	} `json:"clusters"`
	WindowSeconds float64 `json:"windowSeconds"`
	Accounting    struct {
		Sent     int64 `json:"sent"`
		Acked    int64 `json:"acked"`
		Failed   int64 `json:"failed"`
		Balanced bool  `json:"balanced"`
		Consumed *struct {
			Subscriptions int64 `json:"subscriptions"`
			Expected      int64 `json:"expected"`
			Received      int64 `json:"received"`
			Missing       int64 `json:"missing"`
			Complete      bool  `json:"complete"`
			PerCluster    []struct {
				Cluster  string `json:"cluster"`
				Expected int64  `json:"expected"`
				Received int64  `json:"received"`
			} `json:"perCluster"`
		} `json:"consumed"`
	} `json:"accounting"`
	Series []struct {
		T float64 `json:"t"`
	} `json:"series"`
	Compare *struct {
		Rounds []struct {
			Side     string `json:"side"`
			Messages int64  `json:"messages"`
		} `json:"rounds"`
		ThroughputRatio float64 `json:"throughputRatio"`
	} `json:"compareRaw"`
}

// ombResult is the part of OMB's result JSON (-omb-json) the suite reads
// by name; the field set itself is checked against testResultFields.
type ombResult struct {
	Workload          string    `json:"workload"`
	Driver            string    `json:"driver"`
	MessageSize       int64     `json:"messageSize"`
	Topics            int64     `json:"topics"`
	Partitions        int64     `json:"partitions"`
	ProducersPerTopic int64     `json:"producersPerTopic"`
	ConsumersPerTopic int64     `json:"consumersPerTopic"`
	PublishRate       []float64 `json:"publishRate"`
	PublishErrorRate  []float64 `json:"publishErrorRate"`
	ConsumeRate       []float64 `json:"consumeRate"`
	Backlog           []int64   `json:"backlog"`

	PublishLatency50pct      []float64 `json:"publishLatency50pct"`
	PublishLatency99pct      []float64 `json:"publishLatency99pct"`
	PublishLatencyMax        []float64 `json:"publishLatencyMax"`
	PublishDelayLatency99pct []int64   `json:"publishDelayLatency99pct"`
	EndToEndLatencyAvg       []float64 `json:"endToEndLatencyAvg"`
	EndToEndLatency50pct     []float64 `json:"endToEndLatency50pct"`
	EndToEndLatency95pct     []float64 `json:"endToEndLatency95pct"`

	AggregatedPublishLatency50pct      float64 `json:"aggregatedPublishLatency50pct"`
	AggregatedPublishLatency99pct      float64 `json:"aggregatedPublishLatency99pct"`
	AggregatedPublishLatency9999pct    float64 `json:"aggregatedPublishLatency9999pct"`
	AggregatedPublishLatencyMax        float64 `json:"aggregatedPublishLatencyMax"`
	AggregatedPublishDelayLatency50pct int64   `json:"aggregatedPublishDelayLatency50pct"`
	AggregatedEndToEndLatency50pct     float64 `json:"aggregatedEndToEndLatency50pct"`
	AggregatedEndToEndLatency99pct     float64 `json:"aggregatedEndToEndLatency99pct"`
	AggregatedEndToEndLatencyMax       float64 `json:"aggregatedEndToEndLatencyMax"`

	AggregatedPublishLatencyQuantiles      map[string]float64 `json:"aggregatedPublishLatencyQuantiles"`
	AggregatedPublishDelayLatencyQuantiles map[string]float64 `json:"aggregatedPublishDelayLatencyQuantiles"`
	AggregatedEndToEndLatencyQuantiles     map[string]float64 `json:"aggregatedEndToEndLatencyQuantiles"`
}

// workloadFile is the suite's OMB workload.
var workloadFile = func() string {
	p, err := filepath.Abs(filepath.Join("testdata", "small-omb.yaml"))
	if err != nil {
		panic(err)
	}
	return p
}()

// testResultFields returns the JSON names of OMB's TestResult fields, from
// the fixture loadgen's unit tests use (derived from TestResult.java).
func testResultFields() []string {
	b, err := os.ReadFile(filepath.Join("..", "..", "examples", "loadgen", "testdata", "omb_testresult_fields.txt"))
	Expect(err).NotTo(HaveOccurred())
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		_, name, ok := strings.Cut(line, "\t")
		Expect(ok).To(BeTrue(), line)
		out = append(out, name)
	}
	Expect(out).NotTo(BeEmpty())
	return out
}

// runOutcome is what one loadgen run produced.
type runOutcome struct {
	code           int
	stdout, stderr string
}

// runLoadgen runs the binary with args, bounded by ctx.
func runLoadgen(ctx context.Context, args ...string) runOutcome {
	out := program.Run{Bin: binary, Dir: tmpDir, StderrLines: 25}.Exec(ctx, args...)
	return runOutcome{code: out.Code, stdout: out.Stdout, stderr: out.Stderr}
}

var accountingLine = regexp.MustCompile(`accounting: sent ([0-9,]+) = acked ([0-9,]+) \+ failed ([0-9,]+): OK`)

// expectAccounted checks the printed accounting line: acked == sent and
// nothing failed.
func expectAccounted(stdout string) int64 {
	m := accountingLine.FindStringSubmatch(stdout)
	Expect(m).NotTo(BeNil(), "accounting line in:\n%s", stdout)
	num := func(s string) int64 {
		n, err := strconv.ParseInt(strings.ReplaceAll(s, ",", ""), 10, 64)
		Expect(err).NotTo(HaveOccurred())
		return n
	}
	sent, acked, failed := num(m[1]), num(m[2]), num(m[3])
	Expect(sent).To(BeNumerically(">", 0))
	Expect(acked).To(Equal(sent))
	Expect(failed).To(BeZero())
	return sent
}

func readResult(path string) result {
	b, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	var r result
	Expect(json.Unmarshal(b, &r)).To(Succeed(), "-json output parses")
	return r
}

// tableRow matches a row of the final table for cluster name.
func tableRow(name string) *regexp.Regexp {
	return regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(name) + `\s+[0-9,]+\s+[0-9,]+\s+[0-9.]+\s+[0-9,]+\s+[0-9.]+`)
}

var jvmLine = regexp.MustCompile(`loadgen: (local-\d+) .* pid (\d+)`)

var _ = Describe("loadgen", Ordered, func() {
	It("starts five local clusters, loads them all, prints the table and stops them", func(ctx SpecContext) {
		jsonPath := filepath.Join(tmpDir, "five.json")
		plotPath := filepath.Join(tmpDir, "five.png")
		out := runLoadgen(ctx, "-duration", "5s", "-warmup", "2s", "-json", jsonPath, "-plot", plotPath)
		Expect(out.code).To(Equal(0), "exit code")

		Expect(out.stdout).To(MatchRegexp(`cluster\s+messages\s+msg/s\s+MB/s\s+errors\s+p50 ms\s+p95 ms\s+p99 ms\s+p99.9 ms\s+max ms`))
		names := []string{"local-1", "local-2", "local-3", "local-4", "local-5"}
		for _, n := range append(names, "total") {
			Expect(out.stdout).To(MatchRegexp(tableRow(n).String()), "table row for %s", n)
		}
		sent := expectAccounted(out.stdout)
		Expect(out.stderr).To(ContainSubstring("msg/s"), "live progress on stderr")

		r := readResult(jsonPath)
		Expect(r.Settings.Clusters).To(Equal(names))
		Expect(r.Settings.LocalClusters).To(BeTrue())
		Expect(r.Accounting.Balanced).To(BeTrue())
		Expect(r.Accounting.Sent).To(Equal(sent))
		Expect(r.Accounting.Acked).To(Equal(sent))
		Expect(r.Clusters).To(HaveLen(5))
		for _, c := range r.Clusters {
			Expect(c.Messages).To(BeNumerically(">", 0), "cluster %s got messages", c.Cluster)
		}
		Expect(r.Overall.Messages).To(BeNumerically(">", 0))
		Expect(r.Series).NotTo(BeEmpty())
		info, err := os.Stat(plotPath)
		Expect(err).NotTo(HaveOccurred())
		Expect(info.Size()).To(BeNumerically(">", 1000))

		// The clusters it started are gone.
		pids := jvmLine.FindAllStringSubmatch(out.stderr, -1)
		Expect(pids).To(HaveLen(5))
		for _, m := range pids {
			pid, _ := strconv.Atoi(m[2])
			Expect(errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)).To(BeTrue(), "JVM %s (pid %d) stopped", m[1], pid)
		}
	}, SpecTimeout(20*time.Minute))

	It("rejects a workload file with an unknown field or a backlog, naming the field, before starting anything", func(ctx SpecContext) {
		bad := filepath.Join(tmpDir, "bad.yaml")
		body, err := os.ReadFile(workloadFile)
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(bad, append(body, []byte("producerRatePerSecond: 5\n")...), 0o644)).To(Succeed())
		out := runLoadgen(ctx, "-workload", bad)
		Expect(out.code).To(Equal(2))
		Expect(out.stderr).To(MatchRegexp(`bad.yaml:\d+: producerRatePerSecond: unknown field`))
		Expect(out.stderr).NotTo(ContainSubstring("starting"))

		Expect(os.WriteFile(bad, []byte(strings.Replace(string(body), "consumerBacklogSizeGB: 0", "consumerBacklogSizeGB: 10", 1)), 0o644)).To(Succeed())
		out = runLoadgen(ctx, "-workload", bad, "-size", "100")
		Expect(out.code).To(Equal(2))
		Expect(out.stderr).To(ContainSubstring("consumerBacklogSizeGB: 10 is not supported"))
	}, SpecTimeout(time.Minute))

	It("rejects bad flags with exit code 2 naming the flag", func(ctx SpecContext) {
		out := runLoadgen(ctx, "-rate", "-3", "-mode", "turbo")
		Expect(out.code).To(Equal(2))
		Expect(out.stderr).To(ContainSubstring("-rate:"))
		Expect(out.stderr).To(ContainSubstring("-mode:"))
	}, SpecTimeout(time.Minute))

	Context("against a topology file", Ordered, func() {
		var topoPath string

		BeforeAll(func(ctx SpecContext) {
			bed, err := testbed.Start(ctx, testbed.Options{Clusters: 2, Log: GinkgoWriter})
			// Never skip: a test bed that cannot start is a failure.
			Expect(err).NotTo(HaveOccurred(), "the test bed must start two clusters")
			DeferCleanup(func() { Expect(bed.Stop()).To(Succeed()) })
			topoPath = filepath.Join(tmpDir, "topology.yaml")
			Expect(bed.WriteTopology(topoPath)).To(Succeed())
		}, NodeTimeout(10*time.Minute))

		It("runs in sync mode", func(ctx SpecContext) {
			jsonPath := filepath.Join(tmpDir, "sync.json")
			out := runLoadgen(ctx, "-topology", topoPath, "-mode", "sync", "-duration", "3s", "-warmup", "1s", "-json", jsonPath)
			Expect(out.code).To(Equal(0))
			expectAccounted(out.stdout)
			for _, n := range []string{"local-1", "local-2", "total"} {
				Expect(out.stdout).To(MatchRegexp(tableRow(n).String()), "table row for %s", n)
			}
			Expect(out.stderr).NotTo(ContainSubstring("starting"), "no local clusters started with -topology")
			r := readResult(jsonPath)
			Expect(r.Settings.Mode).To(Equal("sync"))
			Expect(r.Settings.LocalClusters).To(BeFalse())
			Expect(r.Accounting.Balanced).To(BeTrue())
			Expect(r.Overall.Messages).To(BeNumerically(">", 0))
			Expect(r.Overall.Latency.P50).To(BeNumerically(">", 0))
		}, SpecTimeout(5*time.Minute))

		It("runs an OpenMessaging Benchmark workload file end to end and writes OMB's result JSON", func(ctx SpecContext) {
			ombPath := filepath.Join(tmpDir, "omb.json")
			ownPath := filepath.Join(tmpDir, "omb-own.json")
			plotPath := filepath.Join(tmpDir, "omb.png")
			// testdata/small-omb.yaml: 2 topics x 2 partitions, 2 producers and
			// 2 subscriptions x 2 consumers per topic, 2,000 msg/s of 256 B;
			// 1 + 2 of its minutes at 6 s each: 6 s warm-up, 12 s measured,
			// 1 s reporting intervals.
			out := runLoadgen(ctx, "-topology", topoPath, "-workload", workloadFile, "-omb-minute", "6s",
				"-omb-json", ombPath, "-json", ownPath, "-plot", plotPath)
			Expect(out.code).To(Equal(0))
			sent := expectAccounted(out.stdout)
			Expect(out.stdout).To(MatchRegexp(`consumed: received [0-9,]+ = 2 subscription\(s\) x acked [0-9,]+: OK`))
			Expect(out.stdout).To(MatchRegexp(`end to end \(send -> receive, from the payload's send time\)`))
			Expect(out.stderr).To(MatchRegexp(`recv\s+[0-9,]+ msg/s\s+e2e p50`), "end-to-end latency in the live view")

			// loadgen's own JSON: nothing lost, every cluster consumed.
			own := readResult(ownPath)
			Expect(own.Accounting.Balanced).To(BeTrue())
			Expect(own.Accounting.Consumed).NotTo(BeNil())
			c := own.Accounting.Consumed
			Expect(c.Subscriptions).To(BeEquivalentTo(2))
			Expect(c.Complete).To(BeTrue())
			Expect(c.Missing).To(BeZero())
			Expect(c.Expected).To(Equal(2 * sent))
			Expect(c.Received).To(BeNumerically(">=", c.Expected))
			Expect(c.PerCluster).To(HaveLen(2))
			for _, pc := range c.PerCluster {
				Expect(pc.Expected).To(BeNumerically(">", 0), pc.Cluster)
				Expect(pc.Received).To(BeNumerically(">=", pc.Expected), pc.Cluster)
			}
			for _, cl := range own.Clusters {
				Expect(cl.EndToEnd).NotTo(BeNil(), cl.Cluster)
				Expect(cl.EndToEnd.P50).To(BeNumerically(">", 0), cl.Cluster)
				Expect(cl.Received).To(BeNumerically(">", 0), cl.Cluster)
			}
			Expect(own.Settings.Topics).To(HaveLen(2))

			// OMB's JSON: exactly TestResult's fields, sane values.
			b, err := os.ReadFile(ombPath)
			Expect(err).NotTo(HaveOccurred())
			var raw map[string]any
			Expect(json.Unmarshal(b, &raw)).To(Succeed())
			for _, f := range testResultFields() {
				Expect(raw).To(HaveKey(f), "TestResult field %s", f)
			}
			Expect(raw).To(HaveLen(len(testResultFields())))
			var r ombResult
			Expect(json.Unmarshal(b, &r)).To(Succeed())
			Expect(r.Workload).To(Equal("e2e 2 topics / 2 partitions / 256 B / 2 x 2 consumers"))
			Expect(r.Driver).To(Equal("keyroute-2-clusters"))
			Expect([]int64{r.MessageSize, r.Topics, r.Partitions, r.ProducersPerTopic, r.ConsumersPerTopic}).To(Equal([]int64{256, 2, 2, 2, 2}))
			n := len(r.PublishRate)
			Expect(n).To(BeNumerically(">=", 10), "about twelve 1 s intervals")
			Expect(n).To(BeNumerically("<=", 13))
			for _, l := range [][]float64{r.PublishErrorRate, r.ConsumeRate, r.PublishLatency50pct, r.PublishLatency99pct,
				r.PublishLatencyMax, r.EndToEndLatency50pct, r.EndToEndLatency95pct, r.EndToEndLatencyAvg} {
				Expect(l).To(HaveLen(n))
			}
			Expect(r.Backlog).To(HaveLen(n))
			Expect(r.PublishDelayLatency99pct).To(HaveLen(n))
			var pubSum, consSum float64
			for i := range n {
				Expect(r.PublishErrorRate[i]).To(BeZero())
				Expect(r.Backlog[i]).To(BeNumerically(">=", 0))
				Expect(r.Backlog[i]).To(BeNumerically("<", 4000), "backlog under a second of traffic (interval %d)", i)
				if i < n-1 { // whole intervals: paced at 2,000 msg/s
					Expect(r.PublishRate[i]).To(BeNumerically("~", 2000, 500), "interval %d", i)
				}
				Expect(r.PublishLatency50pct[i]).To(BeNumerically(">", 0))
				Expect(r.PublishLatency99pct[i]).To(BeNumerically(">=", r.PublishLatency50pct[i]))
				Expect(r.PublishLatencyMax[i]).To(BeNumerically(">=", r.PublishLatency99pct[i]))
				Expect(r.EndToEndLatency50pct[i]).To(BeNumerically(">", 0))
				pubSum += r.PublishRate[i]
				consSum += r.ConsumeRate[i]
			}
			// Every message is consumed by both subscriptions.
			Expect(consSum).To(BeNumerically("~", 2*pubSum, 0.1*pubSum))
			Expect(pubSum).To(BeNumerically("~", float64(own.Overall.Messages)/own.WindowSeconds*float64(n), 0.15*pubSum))
			Expect(r.AggregatedPublishLatency50pct).To(BeNumerically(">", 0))
			Expect(r.AggregatedPublishLatency99pct).To(BeNumerically(">=", r.AggregatedPublishLatency50pct))
			Expect(r.AggregatedPublishLatencyMax).To(BeNumerically(">=", r.AggregatedPublishLatency9999pct))
			Expect(r.AggregatedEndToEndLatency50pct).To(BeNumerically(">", 0))
			Expect(r.AggregatedEndToEndLatencyMax).To(BeNumerically(">=", r.AggregatedEndToEndLatency99pct))
			Expect(r.AggregatedPublishDelayLatency50pct).To(BeNumerically(">=", 0))
			for name, q := range map[string]map[string]float64{"publish": r.AggregatedPublishLatencyQuantiles,
				"delay": r.AggregatedPublishDelayLatencyQuantiles, "e2e": r.AggregatedEndToEndLatencyQuantiles} {
				Expect(q).To(HaveKey("50.0"), name)
				Expect(q).To(HaveKey("100.0"), name)
				Expect(q["100.0"]).To(BeNumerically(">=", q["50.0"]), name)
			}
			info, err := os.Stat(plotPath)
			Expect(err).NotTo(HaveOccurred())
			Expect(info.Size()).To(BeNumerically(">", 1000))
		}, SpecTimeout(5*time.Minute))

		It("stops after -n messages, takes payloads from -payload-file and writes an HdrHistogram log", func(ctx SpecContext) {
			payloads := filepath.Join(tmpDir, "payloads.txt")
			Expect(os.WriteFile(payloads, []byte(strings.Repeat("a payload of some length\nanother, longer payload line here\n", 10)), 0o644)).To(Succeed())
			logPath := filepath.Join(tmpDir, "run.hlog")
			jsonPath := filepath.Join(tmpDir, "n.json")
			out := runLoadgen(ctx, "-topology", topoPath, "-n", "3000", "-rate", "1500", "-payload-file", payloads,
				"-subscriptions", "1", "-histogram-file", logPath, "-json", jsonPath)
			Expect(out.code).To(Equal(0))
			Expect(expectAccounted(out.stdout)).To(BeEquivalentTo(3000), "exactly -n messages")
			r := readResult(jsonPath)
			Expect(r.Accounting.Consumed.Received).To(BeNumerically(">=", 3000))
			Expect(r.Accounting.Consumed.Complete).To(BeTrue())

			b, err := os.ReadFile(logPath)
			Expect(err).NotTo(HaveOccurred())
			log := string(b)
			Expect(log).To(HavePrefix("#[Histogram log format version 1.3]\n"))
			Expect(log).To(ContainSubstring("#[StartTime: "))
			interval := `^Tag=%s,[0-9.]+,[0-9.]+,[0-9.]+,HISTF[A-Za-z0-9+/=]+$`
			for _, tag := range []string{"publish", "e2e", "publish.local-1", "e2e.local-2"} {
				Expect(log).To(MatchRegexp("(?m)"+fmt.Sprintf(interval, regexp.QuoteMeta(tag))), "tag %s", tag)
			}
		}, SpecTimeout(5*time.Minute))

		It("compares the SDK with raw pulsar-client-go", func(ctx SpecContext) {
			jsonPath := filepath.Join(tmpDir, "compare.json")
			out := runLoadgen(ctx, "-topology", topoPath, "-compare-raw", "-duration", "3s", "-warmup", "1s", "-json", jsonPath)
			Expect(out.code).To(Equal(0))
			expectAccounted(out.stdout)
			Expect(out.stdout).To(MatchRegexp(`sdk/raw: throughput [0-9.]+x, p50 [0-9.]+x, p99 [0-9.]+x`))
			for _, side := range []string{"raw", "sdk"} {
				Expect(out.stdout).To(MatchRegexp(`(?m)^\s*1\s+`+side+`\s+[0-9,]+`), "round 1 %s", side)
				Expect(out.stdout).To(MatchRegexp(`(?m)^\s*2\s+`+side+`\s+[0-9,]+`), "round 2 %s", side)
			}
			r := readResult(jsonPath)
			Expect(r.Compare).NotTo(BeNil())
			Expect(r.Compare.Rounds).To(HaveLen(4))
			for i, want := range []string{"raw", "sdk", "raw", "sdk"} {
				Expect(r.Compare.Rounds[i].Side).To(Equal(want))
				Expect(r.Compare.Rounds[i].Messages).To(BeNumerically(">", 0), fmt.Sprintf("round %d", i))
			}
			Expect(r.Compare.ThroughputRatio).To(BeNumerically(">", 0))
			Expect(r.Settings.Clusters).To(Equal([]string{"local-1"}), "only the first cluster")
		}, SpecTimeout(5*time.Minute))
	})

	Context("against a topology file of TLS + token clusters", Ordered, func() {
		var (
			topoPath string
			topo     *topology.Topology
		)

		BeforeAll(func(ctx SpecContext) {
			bed, err := testbed.Start(ctx, testbed.Options{Clusters: 2, NamePrefix: "secure-", Secure: true, Log: GinkgoWriter})
			// Never skip: a test bed that cannot start is a failure.
			Expect(err).NotTo(HaveOccurred(), "the test bed must start two secure clusters")
			DeferCleanup(func() { Expect(bed.Stop()).To(Succeed()) })
			topoPath = filepath.Join(tmpDir, "secure.yaml")
			Expect(bed.WriteTopology(topoPath)).To(Succeed())
			topo = bed.Topology()
		}, NodeTimeout(10*time.Minute))

		// exists reports whether topic is on cluster c, through its admin
		// API with its credentials.
		exists := func(ctx context.Context, c topology.Cluster, topic string) bool {
			a, err := admin.New(c)
			Expect(err).NotTo(HaveOccurred())
			defer a.Close()
			ok, err := a.TopicExists(ctx, topic)
			Expect(err).NotTo(HaveOccurred(), c.Name)
			return ok
		}

		It("creates its topic through each cluster's TLS and token, produces and consumes, and -cleanup deletes it", func(ctx SpecContext) {
			topic := "persistent://public/default/loadgen-secure-" + strconv.FormatInt(time.Now().UnixNano(), 36)
			jsonPath := filepath.Join(tmpDir, "secure.json")
			out := runLoadgen(ctx, "-topology", topoPath, "-topic", topic, "-partitions", "2", "-cleanup",
				"-subscriptions", "1", "-rate", "500", "-duration", "3s", "-warmup", "1s", "-json", jsonPath)
			Expect(out.code).To(Equal(0))
			expectAccounted(out.stdout)
			r := readResult(jsonPath)
			Expect(r.Accounting.Consumed).NotTo(BeNil())
			Expect(r.Accounting.Consumed.Complete).To(BeTrue())
			for _, c := range r.Clusters {
				Expect(c.Messages).To(BeNumerically(">", 0), c.Cluster)
			}
			Expect(out.stderr).To(ContainSubstring("loadgen: -cleanup: deleted 2 topic(s) loadgen created"))
			for _, c := range topo.Clusters {
				Expect(exists(ctx, c, topic)).To(BeFalse(), "%s: -cleanup deleted %s", c.Name, topic)
			}
		}, SpecTimeout(5*time.Minute))

		It("-cleanup leaves a topic that was there before the run", func(ctx SpecContext) {
			topic := "persistent://public/default/loadgen-kept-" + strconv.FormatInt(time.Now().UnixNano(), 36)
			for _, c := range topo.Clusters {
				a, err := admin.New(c)
				Expect(err).NotTo(HaveOccurred())
				created, err := a.CreatePartitionedTopic(ctx, topic, 2)
				a.Close()
				Expect(err).NotTo(HaveOccurred(), c.Name)
				Expect(created).To(BeTrue(), c.Name)
			}
			out := runLoadgen(ctx, "-topology", topoPath, "-topic", topic, "-partitions", "2", "-cleanup",
				"-rate", "500", "-duration", "2s", "-warmup", "0s")
			Expect(out.code).To(Equal(0))
			expectAccounted(out.stdout)
			Expect(out.stderr).To(ContainSubstring("loadgen: -cleanup: deleted 0 topic(s) loadgen created"))
			for _, c := range topo.Clusters {
				Expect(exists(ctx, c, topic)).To(BeTrue(), "%s: %s was there before: kept", c.Name, topic)
			}
		}, SpecTimeout(5*time.Minute))
	})
})
