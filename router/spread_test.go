package router_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/keyroute/keyroute/router"
)

// TestEqualShares: with 2, 5 or 6 equal clusters each owns its even share
// of the slots within slotTolerance and of the keys within ±2%, and keys
// spread over the slots without bias (chi-square against the slot shares).
func TestEqualShares(t *testing.T) {
	for _, names := range [][]string{five, append(append([]string(nil), five...), "mad"), {"a", "b"}} {
		r := mustNew(t, equalMembers(names...))
		slots := slotShares(r)
		ideal := 1 / float64(len(names))
		for i, s := range slots {
			assert.InDelta(t, ideal, s, slotTolerance(ideal), "%s's share of the slots", names[i])
		}
		counts := make([]int, r.Len())
		for _, h := range sampleHashes(t) {
			counts[r.Cluster(h)]++
		}
		x2, limit := chiSquareWant(counts, slots), chiSquareLimit(len(names)-1)
		t.Logf("%d clusters: slot shares %.4f, counts %v, max deviation from even %.3f%%, chi2 against the slot shares %.1f (limit %.1f)",
			len(names), slots, counts, 100*maxRelDev(counts), x2, limit)
		assert.Less(t, maxRelDev(counts), 0.02)
		assert.Less(t, x2, limit)
	}
}

// TestWeightedShares: weights 1:2:3 give slot shares 1/6:2/6:3/6 within
// slotTolerance, and keys follow the slot shares.
func TestWeightedShares(t *testing.T) {
	for _, ws := range [][]float64{{1, 2, 3}, {0.5, 1, 1.5}, {10, 1, 1, 1, 1}} {
		members := make([]router.Member, len(ws))
		var sum float64
		for i, w := range ws {
			members[i] = router.Member{Name: string(rune('a' + i)), Weight: w}
			sum += w
		}
		r := mustNew(t, members)
		slots := slotShares(r)
		counts := make([]int, r.Len())
		hs := sampleHashes(t)
		for _, h := range hs {
			counts[r.Cluster(h)]++
		}
		x2, limit := chiSquareWant(counts, slots), chiSquareLimit(len(ws)-1)
		t.Logf("weights %v: slot shares %.4f, counts %v, chi2 against the slot shares %.1f (limit %.1f)", ws, slots, counts, x2, limit)
		for i, w := range ws {
			assert.InDelta(t, w/sum, slots[i], slotTolerance(w/sum), "member %d weight %v: slot share", i, w)
			assert.InDelta(t, w/sum, float64(counts[i])/float64(len(hs)), slotTolerance(w/sum)+0.002, "member %d weight %v: key share", i, w)
		}
		assert.Less(t, x2, limit)
	}
}

// TestJointSpread: the (cluster, partition) pairs follow the clusters' slot
// shares times even partition shares, including when the partition count is
// a multiple of the cluster count, and within every cluster the partitions
// are uniform.
func TestJointSpread(t *testing.T) {
	r := mustNew(t, equalMembers(five...))
	slots := slotShares(r)
	for _, parts := range []int{5, 10, 7, 100} {
		counts := make([]int, r.Len()*parts)
		want := make([]float64, len(counts))
		for _, h := range sampleHashes(t) {
			counts[r.Cluster(h)*parts+router.Partition(h, parts)]++
		}
		for i := range want {
			want[i] = slots[i/parts] / float64(parts)
		}
		x2, limit := chiSquareWant(counts, want), chiSquareLimit(len(counts)-1)
		t.Logf("5 x %d: chi2 %.1f (limit %.1f), max deviation %.2f%%", parts, x2, limit, 100*maxRelDevWant(counts, want))
		assert.Less(t, x2, limit, "5 clusters x %d partitions", parts)
		if parts <= 10 {
			assert.Less(t, maxRelDevWant(counts, want), 0.04, "5 clusters x %d partitions", parts)
		}
		for c := range r.Len() {
			row := counts[c*parts : (c+1)*parts]
			assert.Less(t, chiSquare(row), chiSquareLimit(parts-1), "partitions within cluster %d", c)
		}
	}
}

// TestKeylessSpread: consecutive keyless seqs cover clusters and partitions
// evenly and do not stick to one cluster.
func TestKeylessSpread(t *testing.T) {
	r := mustNew(t, equalMembers(five...))
	const n, parts = 500_000, 10
	counts := make([]int, r.Len()*parts)
	slots := slotShares(r)
	want := make([]float64, len(counts))
	for i := range want {
		want[i] = slots[i/parts] / parts
	}
	same, prev := 0, -1
	for seq := range uint64(n) {
		h := router.KeylessHash(seq)
		c := r.Cluster(h)
		counts[c*parts+router.Partition(h, parts)]++
		if c == prev {
			same++
		}
		prev = c
	}
	x2, limit := chiSquareWant(counts, want), chiSquareLimit(len(counts)-1)
	t.Logf("keyless 5 x %d: chi2 %.1f (limit %.1f); consecutive same cluster %.3f (ideal 0.2)", parts, x2, limit, float64(same)/n)
	assert.Less(t, x2, limit)
	assert.InDelta(t, 0.2, float64(same)/n, 0.005)

	// The first few seqs already reach several clusters.
	seen := map[int]bool{}
	for seq := range uint64(10) {
		seen[r.Cluster(router.KeylessHash(seq))] = true
	}
	assert.GreaterOrEqual(t, len(seen), 3)
}
