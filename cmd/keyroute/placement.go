package main

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/keyroute/keyroute/router"
	"github.com/keyroute/keyroute/topology"
)

// placed is where one key goes.
type placed struct {
	Key string `json:"key"`
	// Keyless is true for the empty key, which has no place: the producer
	// spreads keyless messages over every cluster and partition instead
	// of hashing them. Cluster, Partition and Topic are then unset.
	Keyless   bool   `json:"keyless,omitempty"`
	Cluster   string `json:"cluster,omitempty"`
	Partition *int   `json:"partition,omitempty"`
	// Topic is the partition's full topic name, with -topic.
	Topic string `json:"topic,omitempty"`
}

// spread is the text output's row for the empty key.
const spread = "keyless: spread over every cluster and partition, not hashed"

// placer computes placements as the producer does: the router over the
// topology's cluster names and weights, then the partition among the
// topic's partition writers on the chosen cluster.
type placer struct {
	r       *router.Router
	names   []string
	writers []int // per cluster: the topic's partitions, 1 when non-partitioned
}

func newPlacer(topo *topology.Topology, writers []int) (*placer, error) {
	members := make([]router.Member, len(topo.Clusters))
	for i, cl := range topo.Clusters {
		members[i] = router.Member{Name: cl.Name, Weight: cl.Weight}
	}
	r, err := router.New(members)
	if err != nil {
		return nil, err
	}
	return &placer{r: r, names: topo.Names(), writers: writers}, nil
}

// place returns key's cluster index and partition.
func (p *placer) place(key string) (cluster, partition int) {
	h := router.Hash(key)
	c := p.r.Cluster(h)
	return c, router.Partition(h, p.writers[c])
}

func runPlacement(ctx context.Context, e *env, name string, args []string) error {
	var c common
	var parts partitionSpec
	fs := newFlags(e, &c, name, "KEY...", true)
	topic := fs.String("topic", "", "the `topic` whose partition counts each cluster's admin API gives (without -partitions)")
	fs.Var(&parts, "partitions", "partition counts instead of asking the clusters: `N` for every cluster, or east=3,west=6")
	if err := c.parse(fs, args, 1, -1); err != nil {
		return err
	}
	var t topicName
	if *topic != "" {
		var err error
		if t, err = parseTopicName("-topic", *topic); err != nil {
			return err
		}
	} else if !parts.given() {
		return badUsage("-topic", "give -topic (partition counts from the clusters) or -partitions")
	}
	topo, err := c.load()
	if err != nil {
		return err
	}
	counts, writers, err := partitionCounts(ctx, &parts, topo, t, c.timeout)
	if err != nil {
		return err
	}
	p, err := newPlacer(topo, writers)
	if err != nil {
		return fmt.Errorf("%w: -topology: %v", ErrUsage, err)
	}
	out := make([]placed, fs.NArg())
	for i, key := range fs.Args() {
		if key == "" {
			out[i] = placed{Key: key, Keyless: true}
			continue
		}
		ci, pi := p.place(key)
		out[i] = placed{Key: key, Cluster: p.names[ci], Partition: &pi}
		switch {
		case *topic != "" && counts[ci] > 0:
			out[i].Topic = t.partition(pi)
		case *topic != "":
			out[i].Topic = t.String()
		}
	}
	if c.json {
		return writeJSON(e.stdout, out)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "KEY\tCLUSTER\tPARTITION\t%s\n", map[bool]string{true: "TOPIC"}[*topic != ""])
	for _, o := range out {
		if o.Keyless {
			fmt.Fprintf(tw, "%q\t%s\n", o.Key, spread)
			continue
		}
		fmt.Fprintf(tw, "%q\t%s\t%d\t%s\n", o.Key, o.Cluster, *o.Partition, o.Topic)
	}
	return tw.Flush()
}

// partitionCounts returns the topic's partition count on each cluster of
// topo (0: a non-partitioned topic), from parts when it was given, else
// from each cluster's admin API (topicPartitions), and the partition
// writers the producer opens there.
func partitionCounts(ctx context.Context, parts *partitionSpec, topo *topology.Topology, t topicName, timeout time.Duration) (counts, writers []int, err error) {
	if parts.given() {
		counts, err = parts.counts("-partitions", topo)
	} else {
		counts, err = topicPartitions(ctx, topo, t, timeout)
	}
	if err != nil {
		return nil, nil, err
	}
	writers = make([]int, len(counts))
	for i, n := range counts {
		writers[i] = topicMeta{exists: true, partitions: n}.writers()
	}
	return counts, writers, nil
}

// topicPartitions returns t's partition count on each cluster (0 for a
// non-partitioned topic). A cluster without the topic is an
// ErrTopicNotFound naming it.
func topicPartitions(ctx context.Context, topo *topology.Topology, t topicName, timeout time.Duration) ([]int, error) {
	counts := make([]int, len(topo.Clusters))
	errs := eachCluster(ctx, topo, timeout, func(ctx context.Context, i int, a *adminAPI) error {
		m, err := a.meta(ctx, t)
		if err != nil {
			return err
		}
		if !m.exists {
			return a.fail("get partitions", fmt.Errorf("%w: %s", ErrTopicNotFound, t))
		}
		counts[i] = m.partitions
		return nil
	})
	return counts, errors.Join(errs...)
}
