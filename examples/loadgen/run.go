package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/keyroute/keyroute/producer"
	"github.com/keyroute/keyroute/topology"
)

// Bounds of the steps around the measured run.
const (
	connectTimeout = 2 * time.Minute
	drainTimeout   = time.Minute      // flush after a normal run
	abortTimeout   = 5 * time.Second  // flush after an interrupt
	closeTimeout   = 30 * time.Second // close after the flush
)

// run is the whole program; it returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err == nil {
		err = checkSupported(cfg)
	}
	if err != nil {
		printErr(stderr, err)
		return exitUsage
	}

	in := newInterrupts(stderr)
	defer in.stop()
	n := 5
	if cfg.compareRaw {
		n = 1 // only the first cluster is used
	}
	cl, err := openClusters(in.ctx, cfg, n, in, stderr)
	if err != nil {
		printErr(stderr, err)
		if errors.Is(err, errUsage) {
			return exitUsage
		}
		if in.interrupted() {
			return exitInterrupted
		}
		return exitFailure
	}
	defer cl.close(stderr)

	topo := cl.topo
	if cfg.compareRaw {
		topo = &topology.Topology{Clusters: topo.Clusters[:1]}
	}
	if cfg.partitions > 0 {
		fmt.Fprintf(stderr, "loadgen: creating %s with %d partitions on %s\n", cfg.topic, cfg.partitions, strings.Join(topo.Names(), ", "))
		if err := createTopic(in.ctx, topo, cfg.topic, cfg.partitions); err != nil {
			printErr(stderr, err)
			return exitFailure
		}
	}

	var code int
	if cfg.compareRaw {
		code = runCompare(in.ctx, cfg, topo, cl.local, stdout, stderr)
	} else {
		code = runLoad(in.ctx, cfg, topo, cl.local, stdout, stderr)
	}
	if code == exitOK && in.interrupted() {
		code = exitInterrupted
	}
	return code
}

func printErr(w io.Writer, err error) {
	for _, line := range strings.Split(err.Error(), "\n") {
		fmt.Fprintln(w, "loadgen:", strings.TrimPrefix(line, errUsage.Error()+": "))
	}
}

// producerOpts maps the flags to producer options.
func producerOpts(cfg *config) []producer.Opt {
	return []producer.Opt{
		producer.Topic(cfg.topic),
		producer.Batching(cfg.batching),
		producer.BatchMaxMessages(cfg.batchMaxMessages),
		producer.Linger(cfg.linger),
		producer.Compression(cfg.codec),
		producer.MaxPendingMessages(cfg.maxPending),
		producer.MemoryLimit(int64(cfg.memoryLimit)),
		producer.SendTimeout(cfg.sendTimeout),
		producer.Transactions(cfg.txnSize > 0),
	}
}

// openProducer connects the SDK to topo and returns it with the load
// (keys, placement, payload) and a fresh recorder.
func openProducer(ctx context.Context, cfg *config, topo *topology.Topology) (*producer.Producer, *load, error) {
	cctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	p, err := producer.New(cctx, topo, producerOpts(cfg)...)
	if err != nil {
		return nil, nil, fmt.Errorf("connect: %w", err)
	}
	names := p.Clusters()
	rec := newRecorder(names, cfg.senders, time.Now())
	keys := makeKeys(cfg.keys)
	place := make([]int, len(keys))
	for i, k := range keys {
		c, _ := p.Placement(k)
		place[i] = rec.index[c]
	}
	return p, &load{keys: keys, place: place, payload: makePayload(cfg.size, cfg.seed), rec: rec}, nil
}

// makePayload returns size pseudo-random bytes, shared by every message.
// Random bytes keep compression honest; they are generated once.
func makePayload(size int, seed uint64) []byte {
	b := make([]byte, size)
	x := seed*0x9E3779B97F4A7C15 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
	return b
}

// sdkTarget returns the target for cfg.mode.
func sdkTarget(cfg *config, p *producer.Producer, l *load) target {
	if cfg.txnSize > 0 {
		return newSDKTxn(l, p, cfg.senders, cfg.txnSize, cfg.size)
	}
	if cfg.mode == "sync" {
		return newSDKSync(l, p, cfg.senders)
	}
	return newSDKAsync(l, p, cfg.maxPending+2*cfg.senders)
}

// finish flushes and closes the producer: bounded by drainTimeout, or by
// abortTimeout after an interrupt. Close reports every message still
// pending (ErrClosed), so the accounting balances either way.
func finish(p *producer.Producer, interrupted bool, log io.Writer) {
	d := drainTimeout
	if interrupted {
		d = abortTimeout
	}
	t0 := time.Now()
	fctx, cancel := context.WithTimeout(context.Background(), d)
	if err := p.Flush(fctx); err != nil {
		fmt.Fprintf(log, "loadgen: flush: %v\n", err)
	}
	cancel()
	cctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	if err := p.Close(cctx); err != nil {
		fmt.Fprintf(log, "loadgen: close: %v\n", err)
	}
	cancel()
	fmt.Fprintf(log, "loadgen: drained and closed in %s\n", time.Since(t0).Round(time.Millisecond))
}

// runLoad is the main job: the configured load through the SDK against
// every cluster of topo.
func runLoad(ctx context.Context, cfg *config, topo *topology.Topology, local bool, stdout, stderr io.Writer) int {
	started := time.Now()
	p, l, err := openProducer(ctx, cfg, topo)
	if err != nil {
		printErr(stderr, err)
		return exitFailure
	}
	names := p.Clusters()
	fmt.Fprintf(stderr, "loadgen: %s mode, %d sender(s), %d B, %d keys (%s), warm-up %s, measuring %s\n",
		cfg.mode, cfg.senders, cfg.size, cfg.keys, cfg.keyDist, cfg.warmup, cfg.duration)
	tgt := sdkTarget(cfg, p, l)
	series, interrupted := drive(ctx, driveSpec{cfg: cfg, tgt: tgt, rec: l.rec,
		warmup: cfg.warmup, duration: cfg.duration, progress: stderr, names: names})
	if txn, ok := tgt.(*sdkTxn); ok {
		d := drainTimeout
		if interrupted {
			d = abortTimeout
		}
		sctx, cancel := context.WithTimeout(context.Background(), d)
		txn.flushStaged(sctx)
		cancel()
	}
	finish(p, interrupted, stderr)

	overall, per, _, acc := l.rec.results(cfg.size)
	res := &results{
		Settings: settingsOf(cfg, names, p.Partitions(), local), Started: started,
		WindowSeconds: l.rec.window().Seconds(), Interrupted: interrupted,
		Overall: overall, Clusters: per, Accounting: acc, Series: series,
	}
	printTable(stdout, res)
	return writeOutputs(cfg, res, acc, stderr)
}

// writeOutputs writes -json and -plot and turns the accounting into the
// exit code.
func writeOutputs(cfg *config, res *results, acc accounting, stderr io.Writer) int {
	code := exitOK
	if cfg.jsonPath != "" {
		if err := writeJSON(cfg.jsonPath, res); err != nil {
			fmt.Fprintln(stderr, "loadgen: -json:", err)
			code = exitFailure
		} else {
			fmt.Fprintln(stderr, "loadgen: results written to", cfg.jsonPath)
		}
	}
	if cfg.plotPath != "" {
		if err := writePlot(cfg.plotPath, res.Series, plotTitle(res)); err != nil {
			fmt.Fprintln(stderr, "loadgen: -plot:", err)
			code = exitFailure
		} else {
			fmt.Fprintln(stderr, "loadgen: plot written to", cfg.plotPath)
		}
	}
	if !acc.Balanced {
		fmt.Fprintf(stderr, "loadgen: %d message(s) without an outcome\n", acc.Sent-acc.Acked-acc.Failed)
		code = exitFailure
	}
	return code
}

func plotTitle(r *results) string {
	return fmt.Sprintf("keyroute loadgen: %d cluster(s), %s, %d B, %s", len(r.Settings.Clusters),
		r.Settings.Mode, r.Settings.Size, rateText(r.Settings.Rate))
}
