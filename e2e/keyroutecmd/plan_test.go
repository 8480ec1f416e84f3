//go:build e2e

package keyroutecmd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/internal/admin"
	"github.com/keyroute/keyroute/producer"
	"github.com/keyroute/keyroute/topology"
)

// planned is the -json output of keyroute plan (the fields checked).
type planned struct {
	SlotsMoved int `json:"slotsMoved"`
	Moves      []struct {
		From  string `json:"from"`
		To    string `json:"to"`
		Slots int    `json:"slots"`
		Keys  *int   `json:"keys"`
	} `json:"moves"`
	Growth []struct {
		Cluster          string  `json:"cluster"`
		PartitionsBefore int     `json:"partitionsBefore"`
		PartitionsAfter  int     `json:"partitionsAfter"`
		Share            float64 `json:"share"`
		Tolerance        float64 `json:"tolerance"`
		Keys             *int    `json:"keys"`
	} `json:"growth"`
	Markers   int      `json:"markers"`
	Connect   []string `json:"connect"`
	Drain     []string `json:"drain"`
	Keys      *int     `json:"keys"`
	KeysMoved *int     `json:"keysMoved"`
}

// movedKeys counts, per "from->to" cluster, the keys whose place differs
// between before and after, and in all.
func movedKeys(before, after map[string]where) (map[string]int, int) {
	by := map[string]int{}
	all := 0
	for k, b := range before {
		if a := after[k]; a != b {
			by[b.cluster+"->"+a.cluster]++
			all++
		}
	}
	return by, all
}

// plannedByPair is p's per "from->to" key counts (growth as c->c),
// leaving out zeros.
func plannedByPair(p planned) map[string]int {
	by := map[string]int{}
	for _, m := range p.Moves {
		Expect(m.Keys).NotTo(BeNil())
		if *m.Keys > 0 {
			by[m.From+"->"+m.To] = *m.Keys
		}
	}
	for _, g := range p.Growth {
		Expect(g.Keys).NotTo(BeNil())
		if *g.Keys > 0 {
			by[g.Cluster+"->"+g.Cluster] = *g.Keys
		}
	}
	return by
}

var _ = Describe("keyroute plan", func() {
	// Four changes in a row on the plain bed, each planned first and then
	// applied by a producer's Update (the growth: found by its partition
	// discovery) while it sends every key once before and once after:
	// the plan's slots and markers are what the Update reports, and its
	// exact count from -keys is how many keys were then written, and read
	// back, at another cluster or partition.
	It("plans what an Update then moves, on real clusters", func(sctx SpecContext) {
		ctx, cancel := context.WithTimeout(sctx, 8*time.Minute)
		defer cancel()
		const nKeys = 600
		first, second := plain.names[0], plain.names[1]
		topic := "persistent://public/default/cmd-plan-" + runID

		By("topics create: 2 partitions on the first cluster, 3 on the second")
		out := keyroute(ctx, nil, "", "topics", "create", "-topology", plain.topology, "-partitions", "2,"+second+"=3", topic)
		Expect(out.Code).To(Equal(0), out.Stderr)

		both, err := topology.Load(plain.topology)
		Expect(err).NotTo(HaveOccurred())
		file := func(name string, weights map[string]float64) string {
			t := &topology.Topology{}
			for _, cl := range both.Clusters {
				if w, ok := weights[cl.Name]; ok {
					cl.Weight = w
					t.Clusters = append(t.Clusters, cl)
				}
			}
			path := filepath.Join(tmpDir, "plan-"+name+".yaml")
			Expect(t.WriteFile(path)).To(Succeed())
			return path
		}
		steps := []struct {
			name, from, to string
			grow           int // the second cluster's partitions after; 0: a topology change
			connect, drain []string
		}{
			{name: "add", from: file("one", map[string]float64{first: 1}), to: file("two", map[string]float64{first: 1, second: 1}),
				connect: []string{second}},
			{name: "reweight", from: file("two", map[string]float64{first: 1, second: 1}),
				to: file("reweighted", map[string]float64{first: 1, second: 3})},
			{name: "growth", from: file("reweighted", map[string]float64{first: 1, second: 3}),
				to: file("reweighted", map[string]float64{first: 1, second: 3}), grow: 5},
			{name: "drain", from: file("reweighted", map[string]float64{first: 1, second: 3}),
				to: file("drained", map[string]float64{second: 3}), drain: []string{first}},
		}
		keys := make([]string, nKeys)
		for i := range keys {
			keys[i] = "plan-key-" + strconv.Itoa(i)
		}
		keysFile := filepath.Join(tmpDir, "plan-keys.txt")
		Expect(os.WriteFile(keysFile, []byte(strings.Join(keys, "\n")+"\n"), 0o600)).To(Succeed())

		start, err := topology.Load(steps[0].from)
		Expect(err).NotTo(HaveOccurred())
		p, err := producer.New(ctx, start, producer.Topic(topic), producer.PartitionsAutoDiscoveryInterval(time.Second))
		Expect(err).NotTo(HaveOccurred())
		defer func() { _ = p.Close(context.Background()) }()
		// send sends every key once with value round, and returns where
		// the producer wrote each.
		send := func(round int) map[string]where {
			at := map[string]where{}
			for _, k := range keys {
				id, err := p.Send(ctx, &producer.Message{Key: k, Value: []byte(strconv.Itoa(round))})
				Expect(err).NotTo(HaveOccurred(), "key %s round %d", k, round)
				at[k] = where{id.Cluster, id.Partition}
			}
			return at
		}
		rounds := []map[string]where{send(0)}
		for i, st := range steps {
			By(fmt.Sprintf("%s: plan, then apply", st.name))
			args := []string{"plan", "-topology", st.from, "-to", st.to, "-topic", topic, "-keys", keysFile, "-json"}
			if st.grow > 0 {
				args = append(args, "-grow", second+"="+strconv.Itoa(st.grow))
			}
			out := keyroute(ctx, nil, "", args...)
			Expect(out.Code).To(Equal(0), out.Stderr)
			pl := jsonOf[planned](out)
			Expect(*pl.Keys).To(Equal(nKeys))
			epoch := p.Epoch()
			if st.grow > 0 {
				Expect(admin.Plain(both.Clusters[1].AdminURL).UpdatePartitions(ctx, topic, st.grow)).To(Succeed())
				Eventually(p.Epoch).WithContext(ctx).WithTimeout(time.Minute).Should(Equal(epoch+1), "the producer finds the growth")
			} else {
				next, err := topology.Load(st.to)
				Expect(err).NotTo(HaveOccurred())
				Expect(p.Update(ctx, next)).To(Succeed())
				Expect(p.Epoch()).To(Equal(epoch + 1))
			}
			ch, ok := p.LastChange()
			Expect(ok).To(BeTrue())
			rounds = append(rounds, send(i+1))
			by, all := movedKeys(rounds[i], rounds[i+1])
			GinkgoWriter.Printf("%s: planned %d slots, %d markers, %d of %d keys moved %v; the change: %d slots, %d markers; the keys: %d moved %v\n",
				st.name, pl.SlotsMoved, pl.Markers, *pl.KeysMoved, nKeys, plannedByPair(pl), ch.SlotsMoved, ch.Markers, all, by)
			Expect(all).To(BeNumerically(">", 0))
			Expect(*pl.KeysMoved).To(Equal(all), "keys moved")
			Expect(plannedByPair(pl)).To(Equal(by), "keys moved, by old and new cluster")
			if st.grow > 0 {
				Expect(pl.Growth).To(HaveLen(1))
				g := pl.Growth[0]
				Expect([]int{g.PartitionsBefore, g.PartitionsAfter}).To(Equal([]int{3, st.grow}))
				Expect(ch.Grown).To(Equal(second))
				Expect([]int{ch.PartitionsBefore, ch.PartitionsAfter}).To(Equal([]int{3, st.grow}))
				Expect(ch.Markers).To(BeNumerically("<=", pl.Markers), "markers: at most")
				continue
			}
			Expect(pl.Growth).To(BeEmpty())
			Expect(ch.SlotsMoved).To(Equal(pl.SlotsMoved), "slots moved")
			Expect(ch.Markers).To(Equal(pl.Markers), "markers: every partition was written")
			Expect(ch.Added).To(ConsistOf(toAny(st.connect)...))
			Expect(pl.Connect).To(ConsistOf(toAny(st.connect)...))
			Expect(ch.Removed).To(ConsistOf(toAny(st.drain)...))
			Expect(pl.Drain).To(ConsistOf(toAny(st.drain)...))
		}
		Expect(p.Flush(ctx)).To(Succeed())

		By("read back: every message where the producer said it wrote it")
		total := nKeys * len(rounds)
		got := jsonLines[received](keyroute(ctx, nil, "", "consume", "-topology", plain.topology, "-topic", topic,
			"-subscription", "plan", "-position", "earliest", "-n", strconv.Itoa(total), "-json"))
		Expect(got).To(HaveLen(total))
		for _, m := range got {
			round, err := strconv.Atoi(m.Value)
			Expect(err).NotTo(HaveOccurred(), "value %q", m.Value)
			Expect(where{m.Cluster, m.Partition}).To(Equal(rounds[round][m.Key]), "key %s round %d", m.Key, round)
		}

		out = keyroute(ctx, nil, "", "topics", "delete", "-topology", plain.topology, "-force", topic)
		Expect(out.Code).To(Equal(0), out.Stderr)
	}, SpecTimeout(10*time.Minute))
})

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
