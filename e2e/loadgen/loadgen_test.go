//go:build e2e

package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/internal/testbed"
)

// result is the part of loadgen's -json output the suite checks.
type result struct {
	Settings struct {
		Clusters      []string `json:"clusters"`
		LocalClusters bool     `json:"localClusters"`
		Mode          string   `json:"mode"`
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
	} `json:"clusters"`
	Accounting struct {
		Sent     int64 `json:"sent"`
		Acked    int64 `json:"acked"`
		Failed   int64 `json:"failed"`
		Balanced bool  `json:"balanced"`
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

// runOutcome is what one loadgen run produced.
type runOutcome struct {
	code           int
	stdout, stderr string
}

// runLoadgen runs the binary with args, bounded by ctx.
func runLoadgen(ctx context.Context, args ...string) runOutcome {
	GinkgoWriter.Printf("$ loadgen %s\n", strings.Join(args, " "))
	t0 := time.Now()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Dir = tmpDir
	cmd.WaitDelay = 30 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else {
		Expect(err).NotTo(HaveOccurred())
	}
	GinkgoWriter.Printf("exit %d after %s\n--- stdout\n%s--- stderr (tail)\n%s\n", code,
		time.Since(t0).Round(time.Millisecond), stdout.String(), tail(stderr.String(), 25))
	return runOutcome{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
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
})
