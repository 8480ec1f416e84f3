// Package reload applies a topology file again each time the process gets
// SIGHUP, for the example programs (ingest, loadgen): edit the file, send
// the signal, and the running producer or consumer moves to it with the
// ordered hand-over.
package reload

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/keyroute/keyroute/router"
	"github.com/keyroute/keyroute/topology"
)

// Change is the outcome of one reload.
type Change struct {
	From, To *topology.Topology // To is nil when the file could not be read
	Took     time.Duration      // how long apply took
	Err      error              // reading the file, or apply's error
}

// String says what changed (clusters added, removed, reweighted, the share
// of routing slots that move) and how it ended.
func (c Change) String() string {
	if c.To == nil {
		return fmt.Sprintf("topology not reloaded: %v", c.Err)
	}
	s := Describe(c.From, c.To)
	if c.Err != nil {
		return fmt.Sprintf("topology change refused or failed after %s (%s): %v", c.Took.Round(time.Millisecond), s, c.Err)
	}
	return fmt.Sprintf("topology changed in %s: %s", c.Took.Round(time.Millisecond), s)
}

// OnHangup reads the topology file at path and calls apply with it each
// time the process receives SIGHUP, one reload at a time, until stop is
// called; report gets every Change. from is the topology running now.
// apply's ctx ends at stop.
func OnHangup(path string, from *topology.Topology, apply func(context.Context, *topology.Topology) error, report func(Change)) (stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGHUP)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ch:
			}
			c := Change{From: from}
			c.To, c.Err = topology.Load(path)
			if c.Err == nil {
				start := time.Now()
				c.Err = apply(ctx, c.To)
				c.Took = time.Since(start)
				if c.Err == nil {
					from = c.To
				}
			}
			report(c)
		}
	}()
	return func() {
		signal.Stop(ch)
		cancel()
		wg.Wait()
	}
}

// Describe says how to differs from from: the clusters added, removed and
// reweighted, and the share of routing slots whose cluster changes.
func Describe(from, to *topology.Topology) string {
	old := map[string]float64{}
	for _, c := range from.Clusters {
		old[c.Name] = c.Weight
	}
	var parts []string
	seen := map[string]bool{}
	for _, c := range to.Clusters {
		seen[c.Name] = true
		w, ok := old[c.Name]
		switch {
		case !ok:
			parts = append(parts, fmt.Sprintf("+%s", c.Name))
		case w != c.Weight:
			parts = append(parts, fmt.Sprintf("%s weight %g -> %g", c.Name, w, c.Weight))
		}
	}
	for _, c := range from.Clusters {
		if !seen[c.Name] {
			parts = append(parts, fmt.Sprintf("-%s", c.Name))
		}
	}
	if len(parts) == 0 {
		parts = append(parts, "same clusters and weights")
	}
	if moved, err := Moved(from, to); err == nil {
		parts = append(parts, fmt.Sprintf("%.1f%% of routing slots move to another cluster", 100*moved))
	}
	return strings.Join(parts, ", ")
}

// Moved returns the share of routing slots (router.SlotBits) whose cluster
// differs between the two topologies.
func Moved(from, to *topology.Topology) (float64, error) {
	a, err := routerOf(from)
	if err != nil {
		return 0, err
	}
	b, err := routerOf(to)
	if err != nil {
		return 0, err
	}
	const slots = router.NumSlots
	moved := 0
	for s := range uint64(slots) {
		h := s << (64 - router.SlotBits)
		if a.Name(a.Cluster(h)) != b.Name(b.Cluster(h)) {
			moved++
		}
	}
	return float64(moved) / slots, nil
}

func routerOf(t *topology.Topology) (*router.Router, error) {
	members := make([]router.Member, len(t.Clusters))
	for i, c := range t.Clusters {
		members[i] = router.Member{Name: c.Name, Weight: c.Weight}
	}
	return router.New(members)
}
