package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/keyroute/keyroute/topology"
)

// partitionSpec is the value of a -partitions flag: a count for every
// cluster ("3"), counts per cluster ("east=3,west=6"), or both, the bare
// count then being the default of the clusters not named ("3,west=6").
type partitionSpec struct {
	text     string
	all      int            // 0: not given
	clusters map[string]int // name -> count
}

func (p *partitionSpec) String() string { return p.text }

// Set parses the value; counts must be 1 to 10000.
func (p *partitionSpec) Set(s string) error {
	q := partitionSpec{text: s, clusters: map[string]int{}}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		name, count, named := strings.Cut(item, "=")
		if !named {
			count = name
		}
		n, err := strconv.Atoi(strings.TrimSpace(count))
		if err != nil || n < 1 || n > 10000 {
			return fmt.Errorf("%q: a partition count is a whole number from 1 to 10000", item)
		}
		switch name = strings.TrimSpace(name); {
		case !named && q.all != 0:
			return fmt.Errorf("%q: more than one count for every cluster", item)
		case !named:
			q.all = n
		case name == "":
			return fmt.Errorf("%q: no cluster name before '='", item)
		case q.clusters[name] != 0:
			return fmt.Errorf("%q: cluster %s named twice", item, name)
		default:
			q.clusters[name] = n
		}
	}
	*p = q
	return nil
}

// given reports whether the flag was set.
func (p *partitionSpec) given() bool { return p.text != "" }

// counts returns the partition count of each cluster of topo, in topology
// order. Every cluster needs a count, and every named cluster must be in
// topo; errors are usage errors naming flag.
func (p *partitionSpec) counts(flag string, topo *topology.Topology) ([]int, error) {
	names := topo.Names()
	var unknown []string
	for name := range p.clusters {
		if !slices.Contains(names, name) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return nil, badUsage(flag, "no cluster named %s in the topology (clusters: %s)",
			strings.Join(unknown, ", "), strings.Join(names, ", "))
	}
	out := make([]int, len(names))
	var missing []string
	for i, name := range names {
		if n := p.clusters[name]; n != 0 {
			out[i] = n
		} else if p.all != 0 {
			out[i] = p.all
		} else {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return nil, badUsage(flag, "no count for cluster(s) %s: give one for every cluster (e.g. %d) or name each", strings.Join(missing, ", "), 3)
	}
	return out, nil
}
