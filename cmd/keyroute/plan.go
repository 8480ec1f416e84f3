package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"

	"github.com/keyroute/keyroute/producer"
	"github.com/keyroute/keyroute/router"
	"github.com/keyroute/keyroute/topology"
)

// slots is how many slots the router places whole (SPEC.md step 2).
const slots = 1 << router.SlotBits

// samplesPerSlot is how many hashes plan places in each slot whose
// partition count changes, to measure what a growth moves through
// router.Partition itself. Over a cluster of S slots the share it gives
// is within samplingTolerance(S*samplesPerSlot) of a uniform key's.
const samplesPerSlot = 64

// samplingTolerance is the bound plan states for a share measured over n
// sampled hashes: 4 standard errors at the widest (a share of one half),
// 2/sqrt(n).
func samplingTolerance(n int) float64 {
	if n == 0 {
		return 0
	}
	return 2 / math.Sqrt(float64(n))
}

// plan is what applying a new topology (and partition growth) moves.
type plan struct {
	// Slots is 65536, the slots keys are placed in; SlotsMoved is how many
	// change owner in the Update, as its Change.SlotsMoved counts: those
	// that change cluster, and a reconnected cluster's (handed from the
	// old connection to the new one).
	Slots      int `json:"slots"`
	SlotsMoved int `json:"slotsMoved"`
	// Share is the share of keys that change cluster or partition, and
	// Tolerance its bound (from the growth sampling; 0 without growth).
	Share     float64 `json:"share"`
	Tolerance float64 `json:"tolerance"`
	// Moves are the slots, and keys, that change cluster, by old and new
	// cluster.
	Moves []planMove `json:"moves"`
	// Growth are the clusters whose partition count grows.
	Growth []planGrowth `json:"growth"`
	// Markers is the most markers the change writes: one on each partition
	// of every cluster that keys leave (HANDOVER.md 7.6: only where the
	// producer has written).
	Markers   int           `json:"markers"`
	Connect   []string      `json:"connect"`
	Drain     []string      `json:"drain"`
	Reweight  []planWeight  `json:"reweight"`
	Reconnect []planConnect `json:"reconnect"`
	// Keys is the count of the -keys file's distinct keys, and KeysMoved
	// of those whose cluster or partition changes; absent without -keys.
	Keys      *int `json:"keys,omitempty"`
	KeysMoved *int `json:"keysMoved,omitempty"`
}

// planMove is the slots that move from one cluster to another.
type planMove struct {
	From  string  `json:"from"`
	To    string  `json:"to"`
	Slots int     `json:"slots"`
	Share float64 `json:"share"` // of all keys
	Keys  *int    `json:"keys,omitempty"`
}

// planGrowth is one cluster whose topic's partitions grow.
type planGrowth struct {
	Cluster          string `json:"cluster"`
	PartitionsBefore int    `json:"partitionsBefore"`
	PartitionsAfter  int    `json:"partitionsAfter"`
	// Share is the share of the cluster's keys (those that stay on it)
	// that change partition, within Tolerance; ShareOfAll the same keys as
	// a share of all keys.
	Share      float64 `json:"share"`
	Tolerance  float64 `json:"tolerance"`
	ShareOfAll float64 `json:"shareOfAll"`
	Keys       *int    `json:"keys,omitempty"`
}

// planWeight is a kept cluster whose weight changes.
type planWeight struct {
	Cluster string  `json:"cluster"`
	From    float64 `json:"from"`
	To      float64 `json:"to"`
}

// planConnect is a kept cluster whose connection settings change: the
// producer opens a new connection and hands its keys over to it.
type planConnect struct {
	Cluster string `json:"cluster"`
	Field   string `json:"field"` // the first field that differs
	Slots   int    `json:"slots"` // its slots handed over (not moved)
}

// planSide is one topology with its router and each cluster's partition
// writers (1 for a non-partitioned topic; 0 where not known: an added
// cluster, which no figure needs).
type planSide struct {
	topo    *topology.Topology
	r       *router.Router
	writers []int
	counts  []int // the topic's partitions, 0 when not partitioned (cur only)
}

// nonPartitioned reports whether the topic is a non-partitioned one on
// the cluster name.
func (s planSide) nonPartitioned(name string) bool {
	i := slices.Index(s.topo.Names(), name)
	return i >= 0 && s.counts != nil && s.counts[i] == 0
}

// makePlan compares cur and next: the slots whose cluster changes, the
// keys of kept clusters whose partition count changes (sampled through
// router.Partition), and, when keys is not nil, the exact count of those
// keys that move.
func makePlan(cur, next planSide, keys []string) plan {
	out := plan{Slots: slots, Moves: []planMove{}, Growth: []planGrowth{}, Connect: []string{},
		Drain: []string{}, Reweight: []planWeight{}, Reconnect: []planConnect{}}
	nextIdx := map[string]int{}
	for i, cl := range next.topo.Clusters {
		nextIdx[cl.Name] = i
	}
	curIdx := map[string]int{}
	reconnect := map[int]*planConnect{} // by cur index
	for i, cl := range cur.topo.Clusters {
		curIdx[cl.Name] = i
		j, kept := nextIdx[cl.Name]
		if !kept {
			out.Drain = append(out.Drain, cl.Name)
			continue
		}
		ncl := next.topo.Clusters[j]
		if cl.Weight != ncl.Weight {
			out.Reweight = append(out.Reweight, planWeight{cl.Name, cl.Weight, ncl.Weight})
		}
		if f := connectionField(cl, ncl); f != "" {
			reconnect[i] = &planConnect{Cluster: cl.Name, Field: f}
		}
	}
	for _, cl := range next.topo.Clusters {
		if _, kept := curIdx[cl.Name]; !kept {
			out.Connect = append(out.Connect, cl.Name)
		}
	}

	type pair struct{ from, to int } // cur index, next index
	moved := map[pair]int{}
	var order []pair
	left := make([]bool, len(cur.topo.Clusters)) // keys leave it: it gets markers
	type sampled struct{ n, moved int }
	grown := map[int]*sampled{} // by cur index
	for s := range slots {
		h := uint64(s) << (64 - router.SlotBits)
		a, b := cur.r.Cluster(h), next.r.Cluster(h)
		if cur.topo.Clusters[a].Name != next.topo.Clusters[b].Name {
			k := pair{a, b}
			if moved[k] == 0 {
				order = append(order, k)
			}
			moved[k]++
			left[a] = true
			continue
		}
		if rc := reconnect[a]; rc != nil {
			rc.Slots++
			left[a] = true
		}
		p, q := cur.writers[a], next.writers[b]
		if p == q {
			continue
		}
		g := grown[a]
		if g == nil {
			g = &sampled{}
			grown[a] = g
		}
		for j := range samplesPerSlot {
			// A uniform hash in slot s: its low bits from SplitMix64.
			x := h | router.KeylessHash(uint64(s)*samplesPerSlot+uint64(j))>>router.SlotBits
			g.n++
			if router.Partition(x, p) != router.Partition(x, q) {
				g.moved++
			}
		}
	}

	slices.SortFunc(order, func(x, y pair) int {
		if x.from != y.from {
			return x.from - y.from
		}
		return x.to - y.to
	})
	for _, k := range order {
		n := moved[k]
		out.SlotsMoved += n
		out.Moves = append(out.Moves, planMove{From: cur.topo.Clusters[k.from].Name, To: next.topo.Clusters[k.to].Name,
			Slots: n, Share: float64(n) / slots})
	}
	out.Share = float64(out.SlotsMoved) / slots
	for i, cl := range cur.topo.Clusters {
		if rc := reconnect[i]; rc != nil {
			out.SlotsMoved += rc.Slots
			out.Reconnect = append(out.Reconnect, *rc)
		}
		if left[i] {
			out.Markers += cur.writers[i]
		}
		g := grown[i]
		if g == nil {
			continue
		}
		tol := samplingTolerance(g.n)
		of := float64(g.n) / (samplesPerSlot * slots) // the cluster's staying keys, of all
		out.Growth = append(out.Growth, planGrowth{Cluster: cl.Name, PartitionsBefore: cur.writers[i],
			PartitionsAfter: next.writers[nextIdx[cl.Name]], Share: float64(g.moved) / float64(g.n), Tolerance: tol,
			ShareOfAll: float64(g.moved) / (samplesPerSlot * slots)})
		out.Share += float64(g.moved) / (samplesPerSlot * slots)
		out.Tolerance += tol * of
		// Each partition the cluster had loses keys to the new ones: the
		// growth is a change of its own with a marker on each.
		out.Markers += cur.writers[i]
	}
	if keys != nil {
		out.countKeys(cur, next, keys)
	}
	return out
}

// countKeys counts the keys that change cluster or partition, into the
// moves and growth entries of p (which makePlan filled).
func (p *plan) countKeys(cur, next planSide, keys []string) {
	total, all := len(keys), 0
	p.Keys, p.KeysMoved = &total, &all
	pairs := map[[2]string]*int{}
	for i := range p.Moves {
		m := &p.Moves[i]
		m.Keys = new(int)
		pairs[[2]string{m.From, m.To}] = m.Keys
	}
	for i := range p.Growth {
		g := &p.Growth[i]
		g.Keys = new(int)
		pairs[[2]string{g.Cluster, g.Cluster}] = g.Keys
	}
	for _, key := range keys {
		h := router.Hash(key)
		a, b := cur.r.Cluster(h), next.r.Cluster(h)
		from, to := cur.topo.Clusters[a].Name, next.topo.Clusters[b].Name
		if from == to && router.Partition(h, cur.writers[a]) == router.Partition(h, next.writers[b]) {
			continue
		}
		all++
		*pairs[[2]string{from, to}]++
	}
}

// connectionField names what of a kept cluster's settings b changes so
// that the producer's Update reconnects it: its client settings
// (topology.SameClient) or its producer settings; "" when neither.
func connectionField(a, b topology.Cluster) string {
	switch {
	case !topology.SameClient(a, b):
		return "client settings"
	case a.Producer != b.Producer:
		return "producer settings"
	}
	return ""
}

// loadTo reads the -to topology and checks it as producer.Update does
// before it connects anything (topology.Topology.Validate, then
// router.New over the clusters' names and weights), refusing it with the
// error Update returns, wrapped as a usage error naming the file.
func loadTo(path string) (*topology.Topology, *router.Router, error) {
	refuse := func(err error) error { return fmt.Errorf("%w: -to %s: %w", ErrUsage, path, err) }
	topo, err := topology.Load(path)
	var fe *topology.FieldError
	switch {
	case errors.As(err, &fe): // Validate's
		return nil, nil, refuse(fmt.Errorf("%w: %w", producer.ErrBadTopology, err))
	case err != nil:
		return nil, nil, refuse(err)
	}
	p, err := newPlacer(topo, nil)
	if err != nil {
		return nil, nil, refuse(fmt.Errorf("%w: %w", producer.ErrBadTopology, err))
	}
	return topo, p.r, nil
}

// readKeys reads the -keys file: one key per line (a trailing "\r" is
// not part of it), each distinct key once. An empty line is refused: a
// keyless message is not placed by a key and never moves.
func readKeys(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, badUsage("-keys", "%v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	seen := map[string]bool{}
	keys := []string{}
	line := 0
	for sc.Scan() {
		line++
		k := sc.Text()
		if n := len(k); n > 0 && k[n-1] == '\r' {
			k = k[:n-1]
		}
		if k == "" {
			return nil, badUsage("-keys", "%s: line %d is empty: give one key per line", path, line)
		}
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, badUsage("-keys", "%s: after line %d: %v", path, line, err)
	}
	return keys, nil
}

// grownWriters returns the partition writers of next's clusters: their
// count under cur, or the -grow count; added clusters get 0 (not known).
// A -grow count below the current one, on a non-partitioned topic, or
// for a cluster not in both topologies is refused.
func grownWriters(grow *partitionSpec, cur planSide, next *topology.Topology) ([]int, error) {
	byName := map[string]int{}
	for i, cl := range cur.topo.Clusters {
		byName[cl.Name] = cur.writers[i]
	}
	out := make([]int, len(next.Clusters))
	for j, cl := range next.Clusters {
		out[j] = byName[cl.Name]
	}
	if !grow.given() {
		return out, nil
	}
	for name := range grow.clusters {
		if _, ok := byName[name]; !ok || !slices.Contains(next.Names(), name) {
			return nil, badUsage("-grow", "cluster %s is not in both -topology and -to: only a kept cluster grows", name)
		}
	}
	for j, cl := range next.Clusters {
		n, ok := grow.clusters[cl.Name]
		if !ok {
			n = grow.all
		}
		if n == 0 || out[j] == 0 || n == out[j] {
			continue
		}
		if cur.nonPartitioned(cl.Name) {
			return nil, badUsage("-grow", "cluster %s: the topic is not partitioned there, so it cannot grow", cl.Name)
		}
		if n < out[j] {
			return nil, badUsage("-grow", "cluster %s: %d partitions, fewer than its %d: a partitioned topic only grows (a producer does not apply a shrink)", cl.Name, n, out[j])
		}
		out[j] = n
	}
	return out, nil
}

// runPlan is keyroute plan: what applying -to would move.
func runPlan(ctx context.Context, e *env, name string, args []string) error {
	var c common
	var parts, grow partitionSpec
	fs := newFlags(e, &c, name, "", true)
	to := fs.String("to", "", "the new topology YAML `file` (required): what Update would be given")
	topic := fs.String("topic", "", "the `topic` whose partition counts each cluster of -topology gives through its admin API (without -partitions)")
	fs.Var(&parts, "partitions", "partition counts under -topology instead of asking the clusters: `N` for every cluster, or east=3,west=6")
	fs.Var(&grow, "grow", "partition counts after the change, for the clusters whose topic grows: `east=8` (or N for every kept cluster)")
	keysFile := fs.String("keys", "", "a `file` of keys, one per line: also count exactly which of them move")
	if err := c.parse(fs, args, 0, 0); err != nil {
		return err
	}
	switch {
	case *to == "":
		return badUsage("-to", "required (the new topology YAML file)")
	case *topic != "" && parts.given():
		return badUsage("-partitions", "give -topic (partition counts from the clusters) or -partitions, not both")
	case *topic == "" && !parts.given():
		return badUsage("-topic", "give -topic (partition counts from the clusters) or -partitions")
	}
	var t topicName
	if *topic != "" {
		var err error
		if t, err = parseTopicName("-topic", *topic); err != nil {
			return err
		}
	}
	curTopo, err := c.load()
	if err != nil {
		return err
	}
	nextTopo, nextR, err := loadTo(*to)
	if err != nil {
		return err
	}
	var keys []string
	if *keysFile != "" {
		if keys, err = readKeys(*keysFile); err != nil {
			return err
		}
	}
	counts, writers, err := partitionCounts(ctx, &parts, curTopo, t, c.timeout)
	if err != nil {
		return err
	}
	curP, err := newPlacer(curTopo, writers)
	if err != nil {
		return fmt.Errorf("%w: -topology: %v", ErrUsage, err)
	}
	cur := planSide{topo: curTopo, r: curP.r, writers: writers, counts: counts}
	nextWriters, err := grownWriters(&grow, cur, nextTopo)
	if err != nil {
		return err
	}
	pl := makePlan(cur, planSide{topo: nextTopo, r: nextR, writers: nextWriters}, keys)
	if c.json {
		return writeJSON(e.stdout, pl)
	}
	return pl.print(e.stdout, *keysFile)
}
