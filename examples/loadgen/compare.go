package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"text/tabwriter"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/keyroute/keyroute/producer"
	"github.com/keyroute/keyroute/topology"
)

// compareRounds is how many rounds each side runs, alternating raw, sdk,
// raw, sdk so that drift on a shared machine hits both sides alike.
const compareRounds = 2

// round is one measured round of -compare-raw.
type round struct {
	Side  string `json:"side"` // "raw" or "sdk"
	Round int    `json:"round"`
	summary
	Series []second `json:"series"`
}

// compare is the outcome of -compare-raw.
type compare struct {
	Cluster string  `json:"cluster"`
	Rounds  []round `json:"rounds"`
	Raw     summary `json:"raw"` // all raw rounds together
	SDK     summary `json:"sdk"` // all SDK rounds together
	// Ratios sdk/raw: throughput (higher is better for the SDK) and
	// latency percentiles (lower is better for the SDK).
	ThroughputRatio float64 `json:"throughputRatio"`
	P50Ratio        float64 `json:"p50Ratio"`
	P99Ratio        float64 `json:"p99Ratio"`
}

// side accumulates one side's rounds.
type side struct {
	name string
	msgs int64
	errs int64
	secs float64
	hist *hdr.Histogram
}

// runCompare runs the same load through raw pulsar-client-go and through the
// SDK on the one cluster of topo, alternating, and prints the ratio.
func runCompare(ctx context.Context, cfg *config, topo *topology.Topology, local bool, stdout, stderr io.Writer) int {
	started := time.Now()
	cluster := topo.Clusters[0]
	sdk, l, err := openProducer(ctx, cfg, topo)
	if err != nil {
		printErr(stderr, err)
		return exitFailure
	}
	partitions := sdk.Partitions()
	if partitions[0] == 0 { // the Producer started without it (producer.StartTimeout)
		_ = sdk.Close(context.Background())
		printErr(stderr, fmt.Errorf("-compare-raw: cluster %q did not answer", cluster.Name))
		return exitFailure
	}
	raw, err := openRaw(cfg, cluster, partitions[0])
	if err != nil {
		_ = sdk.Close(context.Background())
		printErr(stderr, err)
		return exitFailure
	}
	fmt.Fprintf(stderr, "loadgen: -compare-raw on %s: %s mode, %d sender(s), %d B, %d keys; %d rounds each of %s warm-up + %s\n",
		cluster.Name, cfg.mode, cfg.senders, cfg.size, cfg.keys, compareRounds, cfg.warmup, cfg.duration)

	sides := map[string]*side{"raw": {name: "raw", hist: newHist()}, "sdk": {name: "sdk", hist: newHist()}}
	cmp := &compare{Cluster: cluster.Name}
	var recs []*recorder
	var all []second
	offset := 0.0
	interrupted := false
rounds:
	for r := 1; r <= compareRounds; r++ {
		for _, name := range []string{"raw", "sdk"} {
			rl := *l
			rl.rec = newRecorder([]string{cluster.Name}, cfg.senders, time.Now())
			recs = append(recs, rl.rec)
			var tgt target
			var flush func(context.Context) error
			switch {
			case name == "raw" && cfg.mode == "sync":
				tgt = newRawSync(&rl, raw.p, cfg.senders)
			case name == "raw":
				tgt = newRawAsync(&rl, raw.p, cfg.maxPending+2*cfg.senders)
			default:
				tgt = sdkTarget(cfg, []*producer.Producer{sdk}, &rl)
			}
			if name == "raw" {
				flush = func(context.Context) error { return raw.p.Flush() }
			} else {
				flush = sdk.Flush
			}
			series, intr := drive(ctx, driveSpec{cfg: cfg, tgt: tgt, rec: rl.rec, keys: len(rl.keys), warmup: cfg.warmup,
				duration: cfg.duration, progress: stderr, label: fmt.Sprintf("%s r%d", name, r)})
			d := drainTimeout
			if intr {
				d = abortTimeout
			}
			fctx, cancel := context.WithTimeout(context.Background(), d)
			if err := flush(fctx); err != nil {
				fmt.Fprintf(stderr, "loadgen: flush %s: %v\n", name, err)
			}
			cancel()

			overall, _, h, _ := rl.rec.results(cfg.size)
			for i := range series {
				series[i].T += offset
			}
			if len(series) > 0 {
				offset = series[len(series)-1].T
			}
			all = append(all, series...)
			overall.Cluster = cluster.Name
			cmp.Rounds = append(cmp.Rounds, round{Side: name, Round: r, summary: overall, Series: series})
			s := sides[name]
			s.msgs += overall.Messages
			s.errs += overall.Errors
			s.secs += rl.rec.window().Seconds()
			s.hist.Merge(h)
			if intr {
				interrupted = true
				break rounds
			}
		}
	}
	// Close both (Close fails whatever is left), then every outcome is in.
	raw.close()
	cctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	if err := sdk.Close(cctx); err != nil {
		fmt.Fprintf(stderr, "loadgen: close: %v\n", err)
	}
	cancel()
	var acc accounting
	for _, rec := range recs {
		_, _, _, a := rec.results(cfg.size)
		acc.Sent += a.Sent
		acc.Acked += a.Acked
		acc.Failed += a.Failed
	}
	acc.Balanced = acc.Acked+acc.Failed == acc.Sent

	cmp.Raw = sides["raw"].summarize(cfg.size)
	cmp.SDK = sides["sdk"].summarize(cfg.size)
	cmp.ThroughputRatio = ratio(cmp.SDK.MsgPerSec, cmp.Raw.MsgPerSec)
	cmp.P50Ratio = ratio(cmp.SDK.Latency.P50, cmp.Raw.Latency.P50)
	cmp.P99Ratio = ratio(cmp.SDK.Latency.P99, cmp.Raw.Latency.P99)

	res := &results{
		Settings: settingsOf(cfg, []string{cluster.Name}, partitions, local), Started: started,
		WindowSeconds: sides["raw"].secs + sides["sdk"].secs, Interrupted: interrupted,
		Overall: cmp.SDK, Clusters: []summary{cmp.SDK}, Accounting: acc, Series: all, Compare: cmp,
	}
	printCompare(stdout, cfg, cmp, acc)
	return writeOutputs(cfg, res, acc, stderr)
}

func (s *side) summarize(size int) summary {
	out := summary{Cluster: s.name, Messages: s.msgs, Errors: s.errs, Latency: latencyOf(s.hist)}
	if s.secs > 0 {
		out.MsgPerSec = float64(s.msgs) / s.secs
		out.MBPerSec = out.MsgPerSec * float64(size) / 1e6
	}
	return out
}

func ratio(a, b float64) float64 {
	if b == 0 || math.IsNaN(a) || math.IsNaN(b) {
		return 0
	}
	return a / b
}

// printCompare writes the per-round table, the sides and the ratios.
func printCompare(w io.Writer, cfg *config, c *compare, acc accounting) {
	fmt.Fprintf(w, "\ncompare-raw on %s: %s mode, %d sender(s), %d B, %d keys (%s), batching %v, %s, %s measured per round\n",
		c.Cluster, cfg.mode, cfg.senders, cfg.size, cfg.keys, cfg.keyDist, cfg.batching, cfg.codec, cfg.duration)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "round\tside\tmessages\tmsg/s\tMB/s\terrors\tp50 ms\tp95 ms\tp99 ms\tp99.9 ms\tmax ms\t")
	row := func(label, name string, s summary) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.2f\t%s\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t\n", label, name, commas(s.Messages),
			commas(int64(s.MsgPerSec+0.5)), s.MBPerSec, commas(s.Errors),
			s.Latency.P50, s.Latency.P95, s.Latency.P99, s.Latency.P999, s.Latency.Max)
	}
	for _, r := range c.Rounds {
		row(fmt.Sprint(r.Round), r.Side, r.summary)
	}
	row("all", "raw", c.Raw)
	row("all", "sdk", c.SDK)
	tw.Flush()
	fmt.Fprintf(w, "sdk/raw: throughput %.3fx, p50 %.3fx, p99 %.3fx", c.ThroughputRatio, c.P50Ratio, c.P99Ratio)
	if cfg.mode == "async" && cfg.rate == 0 {
		fmt.Fprint(w, " (unpaced async latencies measure queueing, not service time)")
	}
	fmt.Fprintln(w)
	verdict := "OK"
	if !acc.Balanced {
		verdict = fmt.Sprintf("MISMATCH: %s unaccounted", commas(acc.Sent-acc.Acked-acc.Failed))
	}
	fmt.Fprintf(w, "accounting: sent %s = acked %s + failed %s: %s\n", commas(acc.Sent), commas(acc.Acked), commas(acc.Failed), verdict)
}
