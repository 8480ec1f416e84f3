// Command benchomb regenerates BENCH.md (`make bench-omb`): it starts five
// local Pulsar clusters once (internal/testbed), builds loadgen, and runs
// loadgen's OpenMessaging Benchmark workloads (examples/loadgen/workloads)
// against one cluster and against all five, in rounds, alternating which
// side goes first, then writes the machine, the commands, every round, the
// medians and the five-to-one ratios of OMB's result JSON.
//
//	go run ./examples/loadgen/benchomb -out BENCH.md            # from the repository root
//	go run ./examples/loadgen/benchomb -rounds 5 -omb-minute 15s
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/keyroute/keyroute/internal/testbed"
	"github.com/keyroute/keyroute/topology"
)

// jvmArgs are the brokers' heap and GC, as e2e/bench has them: the test
// bed's default 128 MiB brokers stalled under the unlimited 1 KB workload
// (a cluster stopped acknowledging, send timeouts, nothing delivered).
var jvmArgs = []string{"-XX:+UseG1GC", "-Xms512m", "-Xmx512m", "-XX:MaxDirectMemorySize=512m"}

var workloads = []string{
	"examples/loadgen/workloads/1-topic-5-partitions-1kb-10k.yaml",
	"examples/loadgen/workloads/1-topic-5-partitions-1kb-max.yaml",
}

// ombFigures is the part of loadgen's -omb-json a round reports.
type ombFigures struct {
	Workload    string    `json:"workload"`
	PublishRate []float64 `json:"publishRate"`
	ConsumeRate []float64 `json:"consumeRate"`
	Pub50       float64   `json:"aggregatedPublishLatency50pct"`
	Pub99       float64   `json:"aggregatedPublishLatency99pct"`
	E2E50       float64   `json:"aggregatedEndToEndLatency50pct"`
	E2E99       float64   `json:"aggregatedEndToEndLatency99pct"`
}

// round is one loadgen run's figures.
type round struct {
	workload string
	side     string // "1 cluster" or "5 clusters"
	n        int
	pubRate  float64 // mean of the intervals' publishRate
	consRate float64
	pub50    float64
	pub99    float64
	e2e50    float64
	e2e99    float64
	secs     float64 // wall time of the run
}

func main() {
	out := flag.String("out", "BENCH.md", "file to write")
	rounds := flag.Int("rounds", 3, "rounds per workload (each runs both sides)")
	minute := flag.Duration("omb-minute", 8*time.Second, "loadgen's -omb-minute: the workloads' 1 + 2 minutes become warm-up + measured time")
	flag.Parse()
	if err := run(*out, *rounds, *minute); err != nil {
		fmt.Fprintln(os.Stderr, "benchomb:", err)
		os.Exit(1)
	}
}

func run(outPath string, rounds int, minute time.Duration) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	t0 := time.Now()
	dir, err := os.MkdirTemp("", "benchomb-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "loadgen")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "./examples/loadgen").CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./examples/loadgen (run from the repository root): %v\n%s", err, out)
	}
	bed, err := testbed.Start(ctx, testbed.Options{Clusters: 5, Log: os.Stderr, JVMArgs: jvmArgs})
	if err != nil {
		return fmt.Errorf("start 5 clusters: %w", err)
	}
	defer bed.Stop()
	topos := map[string]string{"1 cluster": filepath.Join(dir, "one.yaml"), "5 clusters": filepath.Join(dir, "five.yaml")}
	all := bed.Topology()
	if err := all.WriteFile(topos["5 clusters"]); err != nil {
		return err
	}
	if err := (&topology.Topology{Clusters: all.Clusters[:1]}).WriteFile(topos["1 cluster"]); err != nil {
		return err
	}

	// Warm the brokers' JIT up before anything counts (PULSAR.md: a cold
	// broker needs ~20 s of load).
	fmt.Fprintln(os.Stderr, "benchomb: warming the brokers up (20 s, not measured)")
	if err := loadgen(ctx, bin, dir, "-topology", topos["5 clusters"], "-duration", "20s", "-warmup", "0s", "-rate", "20000", "-size", "1024"); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}

	var rs []round
	for _, w := range workloads {
		for r := 1; r <= rounds; r++ {
			sides := []string{"1 cluster", "5 clusters"}
			if r%2 == 0 {
				slices.Reverse(sides)
			}
			for _, side := range sides {
				res := filepath.Join(dir, "omb.json")
				start := time.Now()
				fmt.Fprintf(os.Stderr, "benchomb: %s, round %d, %s\n", filepath.Base(w), r, side)
				abs, err := filepath.Abs(w)
				if err != nil {
					return err
				}
				if err := loadgen(ctx, bin, dir, "-topology", topos[side], "-workload", abs, "-omb-minute", minute.String(), "-omb-json", res); err != nil {
					return fmt.Errorf("%s round %d on %s: %w", w, r, side, err)
				}
				f, err := readFigures(res)
				if err != nil {
					return err
				}
				rs = append(rs, round{workload: f.Workload, side: side, n: r, pubRate: meanOf(f.PublishRate), consRate: meanOf(f.ConsumeRate),
					pub50: f.Pub50, pub99: f.Pub99, e2e50: f.E2E50, e2e99: f.E2E99, secs: time.Since(start).Seconds()})
			}
		}
	}
	var b strings.Builder
	report(&b, rs, rounds, minute, time.Since(t0))
	if err := os.WriteFile(outPath, []byte(b.String()), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "benchomb: wrote %s in %s\n", outPath, time.Since(t0).Round(time.Second))
	return nil
}

// loadgen runs the binary in dir, its final table to stderr; a non-zero
// exit is an error carrying the end of loadgen's log.
func loadgen(ctx context.Context, bin, dir string, args ...string) error {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = os.Stderr, &log
	cmd.WaitDelay = 30 * time.Second
	if err := cmd.Run(); err != nil {
		lines := strings.Split(strings.TrimRight(log.String(), "\n"), "\n")
		return fmt.Errorf("%w; loadgen said:\n%s", err, strings.Join(lines[max(0, len(lines)-15):], "\n"))
	}
	return nil
}

func readFigures(path string) (*ombFigures, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f ombFigures
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(f.PublishRate) == 0 {
		return nil, errors.New(path + ": no intervals")
	}
	return &f, nil
}

func meanOf(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(max(len(xs), 1))
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// report writes BENCH.md.
func report(w io.Writer, rs []round, rounds int, minute time.Duration, took time.Duration) {
	fmt.Fprintf(w, `# loadgen: OpenMessaging Benchmark workloads, one cluster vs five

Generated by `+"`make bench-omb`"+` (`+"`go run ./examples/loadgen/benchomb -out BENCH.md`"+`)
on %s in %s. Do not edit by hand: run it again.

## Machine

%s

## What ran

Five local Pulsar %s standalones (internal/testbed with `+"`%s`"+`,
`+"`journalFlushWhenQueueEmpty=true`"+`) on this machine, started once; the
client (loadgen: keyroute producer and consumer) on the same cores. One
unmeasured 20 s warm-up run first, then for each workload %d round(s), each
running the workload against the first cluster alone ("1 cluster") and
against all five ("5 clusters", keys spread by keyroute's router), the side
that goes first alternating from round to round:

`+"```sh"+`
loadgen -topology one.yaml|five.yaml -workload WORKLOAD -omb-minute %s -omb-json omb.json
`+"```"+`

-omb-minute %s makes the workloads' warmupDurationMinutes 1 and
testDurationMinutes 2 a %s warm-up and %s measured, in %d s reporting
intervals. Figures come from OMB's result JSON (TestResult): throughput is
the mean of the intervals' publishRate / consumeRate (msg/s), latencies
the aggregated percentiles (ms): publish = send to ack, end to end = send
to receive (from the send time stamped in the payload). Producer settings
are loadgen's defaults (batching, 10 ms linger, LZ4); OMB's Pulsar driver
uses a 1 ms batching delay, so absolute latencies are not comparable with
published OMB Pulsar figures, only the ratios within this file.
Absolute numbers swing on a shared 2-core machine: read the ratios.

`, time.Now().UTC().Format("2006-01-02 15:04 UTC"), took.Round(time.Second), machine(), testbed.PulsarVersion, strings.Join(jvmArgs, " "),
		rounds, minute, minute, minute, 2*minute, max(1, int(math.Round(minute.Seconds()/6))))

	byWorkload := map[string][]round{}
	var order []string
	for _, r := range rs {
		if _, ok := byWorkload[r.workload]; !ok {
			order = append(order, r.workload)
		}
		byWorkload[r.workload] = append(byWorkload[r.workload], r)
	}
	for _, name := range order {
		fmt.Fprintf(w, "## %s\n\n", name)
		tw := w
		fmt.Fprintln(tw, "| round | side | publish msg/s | consume msg/s | publish p50 ms | publish p99 ms | e2e p50 ms | e2e p99 ms | run s |")
		fmt.Fprintln(tw, "|---|---|---:|---:|---:|---:|---:|---:|---:|")
		for _, r := range byWorkload[name] {
			fmt.Fprintf(tw, "| %d | %s | %.0f | %.0f | %.2f | %.2f | %.2f | %.2f | %.0f |\n",
				r.n, r.side, r.pubRate, r.consRate, r.pub50, r.pub99, r.e2e50, r.e2e99, r.secs)
		}
		med := map[string]round{}
		for _, side := range []string{"1 cluster", "5 clusters"} {
			var m [6][]float64
			for _, r := range byWorkload[name] {
				if r.side == side {
					for i, v := range []float64{r.pubRate, r.consRate, r.pub50, r.pub99, r.e2e50, r.e2e99} {
						m[i] = append(m[i], v)
					}
				}
			}
			md := round{side: side, pubRate: median(m[0]), consRate: median(m[1]), pub50: median(m[2]), pub99: median(m[3]), e2e50: median(m[4]), e2e99: median(m[5])}
			med[side] = md
			fmt.Fprintf(tw, "| **median** | **%s** | **%.0f** | **%.0f** | **%.2f** | **%.2f** | **%.2f** | **%.2f** | |\n",
				side, md.pubRate, md.consRate, md.pub50, md.pub99, md.e2e50, md.e2e99)
		}
		one, five := med["1 cluster"], med["5 clusters"]
		fmt.Fprintf(tw, "| **5 / 1** | | **%.2fx** | **%.2fx** | **%.2fx** | **%.2fx** | **%.2fx** | **%.2fx** | |\n",
			five.pubRate/one.pubRate, five.consRate/one.consRate, five.pub50/one.pub50, five.pub99/one.pub99, five.e2e50/one.e2e50, five.e2e99/one.e2e99)
		fmt.Fprintln(w)
	}
	fmt.Fprint(w, `## Reading it

- At a fixed rate (10k msg/s) throughput is the rate on both sides; the
  latency ratios show what spreading one producer's keys over five clusters
  costs or saves: five batches per linger instead of one, five brokers'
  journals instead of one, on the same two cores.
- At a fixed rate on this machine, five clusters cost latency: five
  brokers' threads (GC, JIT, journal, dispatch) share two cores with the
  client, where one broker has them to itself (the four others idle). On
  five machines the case is the opposite one; this file measures only what
  one 2-core machine shows.
- At "max rate" the producer sends without a limit (OMB would search for
  the highest sustainable rate instead): throughput is what one client
  gets through one or five brokers, and latency is queueing, not service
  time. The consumers, on the same two cores, are starved by the unlimited
  producer (consume rate far below publish rate, end-to-end latency in
  seconds) and catch up once the producer stops: loadgen drains them and
  fails the run if any acknowledged message is missing, and no run above
  did.
- To plot these beside other systems, run OMB's bin/create_charts.py on the
  -omb-json files (the driver names keyroute-1-cluster and
  keyroute-5-clusters label the series).
`)
}

// machine describes the host: CPU model and count, memory, kernel, Go.
func machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		if _, err := fmt.Sscanf(strings.SplitN(string(b), "\n", 2)[0], "MemTotal: %d kB", &kb); err == nil {
			mem = fmt.Sprintf(", %.0f GiB memory", float64(kb)/(1<<20))
		}
	}
	kernel := ""
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel = ", Linux " + strings.TrimSpace(string(b))
	}
	java := ""
	if out, err := exec.Command("java", "-version").CombinedOutput(); err == nil {
		java = ", " + strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
	}
	return fmt.Sprintf("%d x %s%s%s, %s%s.", runtime.NumCPU(), model, mem, kernel, runtime.Version(), java)
}
