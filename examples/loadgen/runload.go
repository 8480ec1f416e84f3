package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/keyroute/keyroute"
	"github.com/keyroute/keyroute/internal/reload"
	"github.com/keyroute/keyroute/producer"
	"github.com/keyroute/keyroute/topology"
)

// topicNames returns the topics of the run: -topic itself, or with
// -workload, one per workload topic named as OMB names them,
// "<topic>-0000000-<random>", so that every run starts on fresh topics.
func topicNames(cfg *config) []string {
	if cfg.wl == nil {
		return []string{cfg.topic}
	}
	out := make([]string, cfg.topics)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%07d-%s", cfg.topic, i, randomSuffix())
	}
	return out
}

func topicsText(topics []string) string {
	if len(topics) == 1 {
		return topics[0]
	}
	return fmt.Sprintf("%d topics (%s, ...)", len(topics), topics[0])
}

// forEach runs fn(0) ... fn(n-1) on goroutines, at most limit at a time,
// and waits for them all.
func forEach(n, limit int, fn func(i int)) {
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			fn(i)
		}()
	}
	wg.Wait()
}

// createTopics creates every topic on every cluster (createTopic), a few
// topics at a time, recording in made those it created.
func createTopics(ctx context.Context, topo *topology.Topology, topics []string, partitions int, made *created) error {
	errs := make([]error, len(topics))
	forEach(len(topics), 4, func(i int) { errs[i] = createTopic(ctx, topo, topics[i], partitions, made) })
	return errors.Join(errs...)
}

// openProducers opens producersPerTopic producers on every topic, topic by
// topic (sender s uses producer s), through cs when it is not nil.
func openProducers(ctx context.Context, cfg *config, topo *topology.Topology, topics []string, cs *keyroute.Clients) ([]*producer.Producer, error) {
	cctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	ps := make([]*producer.Producer, len(topics)*cfg.producersPerTopic)
	errs := make([]error, len(ps))
	forEach(len(ps), 8, func(i int) {
		opts := producerOpts(cfg, topics[i/cfg.producersPerTopic])
		if cs != nil {
			opts = append(opts, producer.WithClients(cs))
		}
		ps[i], errs[i] = producer.New(cctx, topo, opts...)
	})
	if err := errors.Join(errs...); err != nil {
		for _, p := range ps {
			if p != nil {
				_ = p.Close(context.Background())
			}
		}
		return nil, fmt.Errorf("connect: %w", err)
	}
	return ps, nil
}

// runLoad is the main job: the configured load through the SDK against
// every cluster of topo, and with -subscriptions (or a workload's
// subscriptionsPerTopic) the keyroute consumer reading it back.
func runLoad(ctx context.Context, cfg *config, topo *topology.Topology, topics []string, local bool, stdout, stderr io.Writer) int {
	started := time.Now()
	names := topo.Names()
	rec := newRecorder(names, cfg.senders, started)
	rec.subscriptions = cfg.subscriptions

	// Several producers, or consumers too: one client per cluster for all.
	var cs *keyroute.Clients
	if len(topics)*cfg.producersPerTopic > 1 || cfg.subscriptions > 0 {
		var err error
		cs, err = keyroute.NewClients(topo, keyroute.MemoryLimit(int64(cfg.memoryLimit)), keyroute.Transactions(cfg.txnSize > 0))
		if err != nil {
			printErr(stderr, err)
			return exitFailure
		}
		defer cs.Close(context.Background())
	}
	var cons *consumers
	if cfg.subscriptions > 0 {
		var err error
		if cons, err = startConsumers(ctx, cfg, cs, topo, topics, rec, cfg.pay); err != nil {
			printErr(stderr, err)
			return exitFailure
		}
		defer cons.close()
		fmt.Fprintf(stderr, "loadgen: %d consumer(s): %d subscription(s) x %d consumer(s) (%s) per topic; end-to-end latency from %s\n",
			len(cons.list), cfg.subscriptions, cfg.consumers, cfg.subType, e2eFrom(cfg.pay))
	}
	ps, err := openProducers(ctx, cfg, topo, topics, cs)
	if err != nil {
		printErr(stderr, err)
		return exitFailure
	}
	l := newLoad(cfg, ps[0], rec)
	if cfg.topology != "" {
		defer reloadOnHangup(ctx, cfg.topology, topo, cs, ps[0], stderr)()
	}

	var hl *histLog
	if cfg.histFile != "" {
		rec.keepPerCluster()
		if hl, err = openHistLog(cfg.histFile, rec, names, cfg.subscriptions > 0, started); err != nil {
			finish(ps, true, stderr)
			printErr(stderr, bad("histogram-file", "%v", err))
			return exitFailure
		}
	}
	col := newOMBCollector(rec, ombIntervalSeconds(cfg.ombMinute))
	until := cfg.duration.String()
	if cfg.untilN {
		until = "until " + commas(cfg.numMessages) + " messages"
	}
	fmt.Fprintf(stderr, "loadgen: %s mode, %d producer(s), %d sender(s), %s, %d keys (%s), warm-up %s, measuring %s\n",
		cfg.mode, len(ps), cfg.senders, cfg.pay.desc, cfg.keys, cfg.keyDist, cfg.warmup, until)
	tgt := sdkTarget(cfg, ps, l)
	series, interrupted := drive(ctx, driveSpec{cfg: cfg, tgt: tgt, rec: rec, keys: len(l.keys),
		warmup: cfg.warmup, duration: cfg.duration, progress: stderr, names: names,
		onTick: func(s second, measured bool) {
			col.tick(s, measured)
			if hl != nil {
				hl.tick(time.Now())
			}
		}})
	col.finish()
	if txn, ok := tgt.(*sdkTxn); ok {
		d := drainTimeout
		if interrupted {
			d = abortTimeout
		}
		sctx, cancel := context.WithTimeout(context.Background(), d)
		txn.flushStaged(sctx)
		cancel()
	}
	finish(ps, interrupted, stderr)
	var redelivered int64
	if cons != nil {
		d := drainTimeout
		if interrupted {
			d = abortTimeout
		}
		dctx, cancel := context.WithTimeout(context.Background(), d)
		redelivered = cons.drain(dctx, rec, stderr)
		cancel()
	}

	overall, per, _, acc := rec.results(cfg.size)
	if acc.Consumed != nil {
		acc.Consumed.Redelivered = redelivered
	}
	res := &results{
		Settings: settingsOf(cfg, names, ps[0].Partitions(), local, topics...), Started: started,
		WindowSeconds: rec.window().Seconds(), Interrupted: interrupted,
		Overall: overall, Clusters: per, Accounting: acc, Series: series,
	}
	if cfg.ombJSON != "" || cfg.wl != nil {
		pub, delay, e2e := rec.windowHists()
		res.omb = buildOMB(ombMetaOf(cfg, len(names)), col.intervals, pub, delay, e2e)
		res.ombPath = cfg.ombJSON
		if res.ombPath == "" {
			res.ombPath = ombFileName(cfg.workloadPath, res.omb.Driver, started)
		}
	}
	printTable(stdout, res)
	code := writeOutputs(cfg, res, acc, stderr)
	if hl != nil {
		if err := hl.close(); err != nil {
			fmt.Fprintln(stderr, "loadgen: -histogram-file:", err)
			code = exitFailure
		} else {
			fmt.Fprintln(stderr, "loadgen: histogram log written to", cfg.histFile)
		}
	}
	return code
}

func e2eFrom(p *payloads) string {
	if p.stamp {
		return "the send time in each payload's first 8 bytes"
	}
	return "the broker's publish time (ms)"
}

// ombMetaOf describes the run for the OMB result.
func ombMetaOf(cfg *config, clusters int) ombMeta {
	m := ombMeta{driver: cfg.ombDriver, messageSize: int64(cfg.size), topics: cfg.topics, partitions: cfg.partitions,
		producers: cfg.producersPerTopic}
	if cfg.subscriptions > 0 {
		m.consumers = cfg.consumers
	}
	if m.driver == "" {
		m.driver = fmt.Sprintf("keyroute-%d-clusters", clusters)
		if clusters == 1 {
			m.driver = "keyroute-1-cluster"
		}
	}
	if cfg.wl != nil {
		m.workload = cfg.wl.Name
	} else {
		m.workload = strings.TrimSpace(fmt.Sprintf("loadgen %d B, rate %s, %d partitions", cfg.size, rateText(cfg.rate), cfg.partitions))
	}
	return m
}

// reloadOnHangup applies the topology file again on SIGHUP: through cs
// (every producer and consumer follows), or to p alone. It prints the
// change, and the moved keys' stall once p has handed them over. Per-key
// placement in the report stays that of the start.
func reloadOnHangup(ctx context.Context, path string, topo *topology.Topology, cs *keyroute.Clients, p *producer.Producer, w io.Writer) (stop func()) {
	apply := p.Update
	if cs != nil {
		apply = cs.Update
	}
	return reload.OnHangup(path, topo, apply, func(c reload.Change) {
		fmt.Fprintln(w, "loadgen: SIGHUP:", c)
		if c.Err != nil {
			return
		}
		go func() {
			t := time.NewTicker(100 * time.Millisecond)
			defer t.Stop()
			for {
				if ch, ok := p.LastChange(); ok && ch.Done {
					fmt.Fprintf(w, "loadgen: epoch %d handed over: %d messages of moved keys held, stall %s, %d forced\n",
						ch.Epoch, ch.Held, ch.Stall.Round(time.Millisecond), ch.Forced)
					return
				}
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
			}
		}()
	})
}
