// Command ingest is an HTTP service that produces JSON events through
// keyroute: POST /events, GET /healthz (README.md here gives the API).
//
//	go run ./examples/ingest -addr :8080                  # 5 local clusters
//	go run ./examples/ingest -topology prod.yaml -topic persistent://public/default/events
//	curl -d '{"key":"user-42","payload":"hi","sync":true}' localhost:8080/events
//
// Without -topology it starts five local clusters with internal/testbed
// (and creates the topic with 4 partitions unless -partitions says
// otherwise). -partitions N > 0 creates the topic with N partitions on every
// cluster through its adminURL, with the cluster's TLS files and token. OTEL_EXPORTER=stdout prints metrics and
// spans (kotel) to stdout; none (the default) exports nothing. -v logs the
// SDK's and pulsar-client-go's info lines through zap (kzap); warnings and
// errors are always logged. SIGINT or SIGTERM shut down gracefully: stop
// accepting, flush, close.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/keyroute/keyroute/internal/admin"
	"github.com/keyroute/keyroute/internal/ingest"
	"github.com/keyroute/keyroute/internal/reload"
	"github.com/keyroute/keyroute/internal/testbed"
	"github.com/keyroute/keyroute/plugin/kotel"
	"github.com/keyroute/keyroute/plugin/kzap"
	"github.com/keyroute/keyroute/producer"
	"github.com/keyroute/keyroute/topology"
)

func main() {
	topoPath := flag.String("topology", "", "topology YAML file (empty: start 5 local clusters)")
	topic := flag.String("topic", "persistent://public/default/ingest", "topic to produce to on every cluster")
	addr := flag.String("addr", ":8080", "HTTP listen address")
	partitions := flag.Int("partitions", 0, "create the topic with this many partitions on every cluster (0: don't; 4 on local clusters)")
	verbose := flag.Bool("v", false, "log info lines (else warnings and errors only)")
	flag.Parse()
	if err := run(*topoPath, *topic, *addr, *partitions, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "ingest:", err)
		os.Exit(1)
	}
}

func run(topoPath, topic, addr string, partitions int, verbose bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	level := zap.WarnLevel
	if verbose {
		level = zap.InfoLevel
	}
	zcfg := zap.NewProductionConfig()
	zcfg.Level = zap.NewAtomicLevelAt(level)
	z, err := zcfg.Build()
	if err != nil {
		return err
	}
	defer func() { _ = z.Sync() }()

	shutdownOTel, err := setupOTel(os.Getenv("OTEL_EXPORTER"))
	if err != nil {
		return err
	}
	defer func() { _ = shutdownOTel(context.Background()) }()
	obs, err := kotel.New()
	if err != nil {
		return err
	}

	topo, cleanup, err := loadTopology(ctx, topoPath, &partitions)
	if err != nil {
		return err
	}
	defer cleanup()
	if topoPath == "" {
		// Take SIGINT/SIGTERM over from the test bed, whose own handler
		// would kill the JVMs and exit at once, so that a signal goes
		// through the graceful shutdown below (and then bed.Stop).
		stop()
		signal.Reset(os.Interrupt, syscall.SIGTERM)
		ctx, stop = signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
	}
	if partitions > 0 {
		for _, c := range topo.Clusters {
			ac, err := admin.New(c) // the cluster's TLS files and token
			if err != nil {
				return err
			}
			_, err = ac.CreatePartitionedTopic(ctx, topic, partitions)
			ac.Close()
			if err != nil {
				return err // names the cluster
			}
		}
	}

	p, err := producer.New(ctx, topo, producer.Topic(topic), producer.Observe(obs), kzap.Logger(z))
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		_ = p.Close(context.Background())
		return err
	}
	if topoPath != "" {
		// Edit the file and send SIGHUP: the producer moves to it live,
		// keeping each key's order (its log reports the change and, once
		// handed over, the moved keys' stall).
		stopReload := reload.OnHangup(topoPath, topo, p.Update, func(c reload.Change) {
			if c.Err != nil {
				z.Warn(c.String())
				return
			}
			z.Info(c.String())
		})
		defer stopReload()
	}
	z.Info("serving", zap.String("addr", ln.Addr().String()), zap.String("topic", topic), zap.Strings("clusters", p.Clusters()))
	return ingest.Run(ctx, ln, ingest.New(p, ingest.Options{Log: kzap.Slog(z)}), 30*time.Second)
}

// loadTopology reads the topology file, or starts five local clusters and
// defaults *partitions to 4 for them. cleanup stops what it started.
func loadTopology(ctx context.Context, path string, partitions *int) (*topology.Topology, func(), error) {
	if path != "" {
		t, err := topology.Load(path)
		return t, func() {}, err
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	bed, err := testbed.Start(sctx, testbed.Options{Clusters: 5})
	if err != nil {
		return nil, nil, err
	}
	if *partitions == 0 {
		*partitions = 4
	}
	return bed.Topology(), func() { _ = bed.Stop() }, nil
}
