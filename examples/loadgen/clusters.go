package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
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

// created is the topics loadgen created, per cluster, for -cleanup. It is
// safe for concurrent use.
type created struct {
	mu   sync.Mutex
	list []createdTopic
}

// createdTopic is one topic created on one cluster.
type createdTopic struct {
	cluster topology.Cluster
	topic   string
}

func (c *created) add(cl topology.Cluster, topic string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.list = append(c.list, createdTopic{cl, topic})
}

// createTopic creates the partitioned topic on every cluster of topo, in
// parallel, through each cluster's admin URL with the cluster's TLS
// settings and token. Where the topic was not there before it is recorded
// in made.
func createTopic(ctx context.Context, topo *topology.Topology, topic string, partitions int, made *created) error {
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
			errs[i] = adminCall(c, func(a *admin.Client) error {
				fresh, err := a.CreatePartitionedTopic(ctx, topic, partitions)
				if fresh {
					made.add(c, topic)
				}
				return err
			})
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// adminCall runs fn with the admin API of cl (its credentials) and names
// the cluster in the error.
func adminCall(cl topology.Cluster, fn func(a *admin.Client) error) error {
	a, err := admin.New(cl)
	if err != nil {
		return fmt.Errorf("cluster %s: %w", cl.Name, err)
	}
	defer a.Close()
	if err := fn(a); err != nil {
		return fmt.Errorf("cluster %s: %w", cl.Name, err)
	}
	return nil
}

// deleteCreated deletes, for -cleanup, every topic in made from the
// cluster it was created on, in parallel, with force (any producer or
// consumer left is disconnected). A topic already gone counts as deleted.
func deleteCreated(ctx context.Context, made *created) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	made.mu.Lock()
	list := slices.Clone(made.list)
	made.mu.Unlock()
	errs := make([]error, len(list))
	forEach(len(list), 8, func(i int) {
		errs[i] = adminCall(list[i].cluster, func(a *admin.Client) error {
			if err := a.DeleteTopic(ctx, list[i].topic); err != nil && !errors.Is(err, admin.ErrNotFound) {
				return err
			}
			return nil
		})
	})
	return len(list), errors.Join(errs...)
}
