package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/keyroute/keyroute/internal/admin"
	"github.com/keyroute/keyroute/internal/testbed"
	"github.com/keyroute/keyroute/topology"
)

// startTimeout bounds starting local clusters, a first download included.
const startTimeout = 15 * time.Minute

// clusters is the set of clusters a run loads: from a topology file, or
// local ones loadgen started (and must stop).
type clusters struct {
	topo  *topology.Topology
	bed   *testbed.Bed // nil with -topology
	local bool
}

// openClusters loads -topology, or starts n local clusters when it is empty.
func openClusters(ctx context.Context, cfg *config, n int, in *interrupts, log io.Writer) (*clusters, error) {
	if cfg.topology != "" {
		topo, err := topology.Load(cfg.topology)
		if err != nil {
			return nil, fmt.Errorf("%w: -topology: %v", errUsage, err)
		}
		return &clusters{topo: topo}, nil
	}
	fmt.Fprintf(log, "loadgen: starting %d local Pulsar clusters (the first run downloads Pulsar %s, ~245 MB)\n", n, testbed.PulsarVersion)
	t0 := time.Now()
	sctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	bed, err := testbed.Start(sctx, testbed.Options{Clusters: n, Log: log})
	if err != nil {
		return nil, fmt.Errorf("start local clusters: %w", err)
	}
	in.adoptBed(bed)
	for _, c := range bed.Clusters() {
		fmt.Fprintf(log, "loadgen: %-8s %s  admin %s  pid %d\n", c.Name, c.ServiceURL, c.AdminURL, c.PID())
	}
	fmt.Fprintf(log, "loadgen: %d clusters ready in %s\n", n, time.Since(t0).Round(100*time.Millisecond))
	return &clusters{topo: bed.Topology(), bed: bed, local: true}, nil
}

// close stops the clusters loadgen started.
func (c *clusters) close(log io.Writer) {
	if c.bed == nil {
		return
	}
	fmt.Fprintln(log, "loadgen: stopping local clusters")
	if err := c.bed.Stop(); err != nil {
		fmt.Fprintln(log, "loadgen: stop clusters:", err)
	}
}

// createTopic creates the partitioned topic on every cluster of topo, in
// parallel, through each cluster's admin URL.
func createTopic(ctx context.Context, topo *topology.Topology, topic string, partitions int) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	errs := make([]error, len(topo.Clusters))
	var wg sync.WaitGroup
	for i, c := range topo.Clusters {
		if c.AdminURL == "" {
			errs[i] = fmt.Errorf("cluster %s has no adminURL in the topology: cannot create the topic (use -partitions 0 and create it beforehand)", c.Name)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := admin.CreatePartitionedTopic(ctx, c.AdminURL, topic, partitions); err != nil {
				errs[i] = fmt.Errorf("cluster %s: %w", c.Name, err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
