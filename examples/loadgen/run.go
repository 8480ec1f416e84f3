package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"sync"
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
func run(args []string, stdout, stderr io.Writer) (code int) {
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
	topics := topicNames(cfg)
	var made created
	if cfg.cleanup {
		defer func() { code = cleanup(in.ctx, &made, code, stderr) }()
	}
	if cfg.partitions > 0 {
		fmt.Fprintf(stderr, "loadgen: creating %s with %d partitions on %s\n", topicsText(topics), cfg.partitions, strings.Join(topo.Names(), ", "))
		if err := createTopics(in.ctx, topo, topics, cfg.partitions, &made); err != nil {
			printErr(stderr, err)
			return exitFailure
		}
	}

	if cfg.compareRaw {
		code = runCompare(in.ctx, cfg, topo, cl.local, stdout, stderr)
	} else {
		code = runLoad(in.ctx, cfg, topo, topics, cl.local, stdout, stderr)
	}
	if code == exitOK && in.interrupted() {
		code = exitInterrupted
	}
	return code
}

// cleanup deletes the topics the run created (-cleanup), also after a
// failed or interrupted run, and returns the exit code: a failed deletion
// turns success into exitFailure.
func cleanup(ctx context.Context, made *created, code int, stderr io.Writer) int {
	n, err := deleteCreated(context.WithoutCancel(ctx), made)
	if err != nil {
		printErr(stderr, fmt.Errorf("-cleanup: %w", err))
		if code == exitOK {
			code = exitFailure
		}
		return code
	}
	fmt.Fprintf(stderr, "loadgen: -cleanup: deleted %d topic(s) loadgen created\n", n)
	return code
}

func printErr(w io.Writer, err error) {
	for _, line := range strings.Split(err.Error(), "\n") {
		fmt.Fprintln(w, "loadgen:", strings.TrimPrefix(line, errUsage.Error()+": "))
	}
}

// producerOpts maps the flags to producer options for topic.
func producerOpts(cfg *config, topic string) []producer.Opt {
	return []producer.Opt{
		producer.Topic(topic),
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

// openProducer connects the SDK to topo for cfg.topic and returns it with
// the load (keys, placement, payloads) and a fresh recorder.
func openProducer(ctx context.Context, cfg *config, topo *topology.Topology) (*producer.Producer, *load, error) {
	cctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	p, err := producer.New(cctx, topo, producerOpts(cfg, cfg.topic)...)
	if err != nil {
		return nil, nil, fmt.Errorf("connect: %w", err)
	}
	return p, newLoad(cfg, p, newRecorder(p.Clusters(), cfg.senders, time.Now())), nil
}

// newLoad builds the keys, their placement (as p routes them) and each
// sender's payload picker.
func newLoad(cfg *config, p *producer.Producer, rec *recorder) *load {
	keys := makeKeys(cfg.keyDist, cfg.keys, cfg.seed)
	place := make([]int, len(keys))
	for i, k := range keys {
		c, _ := p.Placement(k)
		place[i] = rec.index[c]
	}
	return &load{keys: keys, place: place, pay: cfg.pay, pick: newPickers(cfg.senders, cfg.seed), rec: rec, intended: cfg.intended}
}

// sdkTarget returns the target for cfg.mode over the producers.
func sdkTarget(cfg *config, ps []*producer.Producer, l *load) target {
	if cfg.txnSize > 0 {
		return newSDKTxn(l, ps[0], cfg.senders, cfg.txnSize, cfg.size)
	}
	if cfg.mode == "sync" {
		return newSDKSync(l, ps, cfg.senders)
	}
	return newSDKAsync(l, ps, cfg.maxPending+2*cfg.senders)
}

// finish flushes and closes the producers, in parallel: bounded by
// drainTimeout, or by abortTimeout after an interrupt. Close reports every
// message still pending (ErrClosed), so the accounting balances either way.
func finish(ps []*producer.Producer, interrupted bool, log io.Writer) {
	d := drainTimeout
	if interrupted {
		d = abortTimeout
	}
	t0 := time.Now()
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
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
		}()
	}
	wg.Wait()
	fmt.Fprintf(log, "loadgen: drained and closed in %s\n", time.Since(t0).Round(time.Millisecond))
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
	if res.omb != nil {
		if err := writeOMB(res.ombPath, res.omb); err != nil {
			fmt.Fprintln(stderr, "loadgen: -omb-json:", err)
			code = exitFailure
		} else {
			fmt.Fprintln(stderr, "loadgen: OMB result written to", res.ombPath)
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
	if c := acc.Consumed; c != nil && !c.Complete {
		fmt.Fprintf(stderr, "loadgen: %d acknowledged message(s) not received by every subscription\n", c.Missing)
		code = exitFailure
	}
	return code
}

func plotTitle(r *results) string {
	return fmt.Sprintf("keyroute loadgen: %d cluster(s), %s, %d B, %s", len(r.Settings.Clusters),
		r.Settings.Mode, r.Settings.Size, rateText(r.Settings.Rate))
}
