package router_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/router"
)

var five = []string{"ams", "fra", "lon", "par", "waw"}

// TestAddMember: growing 5 equal clusters to 6 moves at most 1/6 + 1% of
// keys, and every moved key moves to the new cluster.
func TestAddMember(t *testing.T) {
	for _, tc := range []struct {
		name      string
		before    []router.Member
		added     router.Member
		wantShare float64
	}{
		{"equal", equalMembers(five...), router.Member{Name: "mad", Weight: 1}, 1.0 / 6},
		{"weighted", []router.Member{{Name: "a", Weight: 1}, {Name: "b", Weight: 2}, {Name: "c", Weight: 3}}, router.Member{Name: "d", Weight: 2}, 2.0 / 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := mustNew(t, tc.before)
			after := mustNew(t, append(append([]router.Member(nil), tc.before...), tc.added))
			hs := sampleHashes(t)
			moved := 0
			for _, h := range hs {
				from, to := owner(before, h), owner(after, h)
				if from == to {
					continue
				}
				moved++
				if to != tc.added.Name {
					t.Fatalf("hash %#x moved %s -> %s, not to the new member", h, from, to)
				}
			}
			share := float64(moved) / float64(len(hs))
			t.Logf("adding %q moved %d of %d keys (%.4f%%; ideal %.4f%%)", tc.added.Name, moved, len(hs), 100*share, 100*tc.wantShare)
			assert.LessOrEqual(t, share, tc.wantShare+0.01)
			assert.InDelta(t, tc.wantShare, share, 0.005, "the new member should take its fair share")
		})
	}
}

// TestRemoveMember: removing any one of 5 clusters moves only that
// cluster's keys, and spreads them over the rest.
func TestRemoveMember(t *testing.T) {
	full := mustNew(t, equalMembers(five...))
	hs := sampleHashes(t)
	for gone := range five {
		rest := append(append([]string(nil), five[:gone]...), five[gone+1:]...)
		t.Run("without "+five[gone], func(t *testing.T) {
			after := mustNew(t, equalMembers(rest...))
			moved := make(map[string]int)
			total := 0
			for _, h := range hs {
				from, to := owner(full, h), owner(after, h)
				if from != five[gone] {
					if from != to {
						t.Fatalf("hash %#x moved %s -> %s though %s stayed", h, from, to, from)
					}
					continue
				}
				moved[to]++
				total++
			}
			t.Logf("removing %s moved %d keys (%.4f%%) as %v", five[gone], total, 100*float64(total)/float64(len(hs)), moved)
			require.Len(t, moved, 4)
			for _, name := range rest {
				assert.InDelta(t, 0.25, float64(moved[name])/float64(total), 0.01, "%s's share of the orphans", name)
			}
		})
	}
}

// TestReweight: raising one member's weight moves keys only to it, and
// lowering it moves keys only away from it.
func TestReweight(t *testing.T) {
	base := []router.Member{{Name: "a", Weight: 1}, {Name: "b", Weight: 2}, {Name: "c", Weight: 3}}
	heavier := append([]router.Member(nil), base...)
	heavier[0].Weight = 2
	r1, r2 := mustNew(t, base), mustNew(t, heavier)
	for _, h := range sampleHashes(t) {
		from, to := owner(r1, h), owner(r2, h)
		if from != to && to != "a" {
			t.Fatalf("hash %#x moved %s -> %s when only a got heavier", h, from, to)
		}
	}
}

// TestGrowPartitions: growing a topic from P to Q partitions moves only
// keys whose partition under Q is P or more, about (Q-P)/Q of them, spread
// evenly over the new partitions; every other key keeps its partition.
func TestGrowPartitions(t *testing.T) {
	hs := sampleHashes(t)
	for _, tc := range []struct{ from, to int }{{1, 2}, {5, 8}, {5, 6}, {7, 100}, {10, 11}, {64, 65}, {3, 1000}} {
		t.Run(fmt.Sprintf("%d->%d", tc.from, tc.to), func(t *testing.T) {
			moved := 0
			into := make([]int, tc.to)
			for _, h := range hs {
				p, q := router.Partition(h, tc.from), router.Partition(h, tc.to)
				if p == q {
					continue
				}
				if q < tc.from {
					t.Fatalf("hash %#x moved from partition %d to %d, an old one", h, p, q)
				}
				moved++
				into[q]++
			}
			want := float64(tc.to-tc.from) / float64(tc.to)
			share := float64(moved) / float64(len(hs))
			t.Logf("%d -> %d partitions moved %.4f%% of keys (ideal %.4f%%)", tc.from, tc.to, 100*share, 100*want)
			assert.InDelta(t, want, share, 0.003)
			for q := tc.from; q < tc.to; q++ {
				assert.InDelta(t, 1/float64(tc.to), float64(into[q])/float64(len(hs)), 5*math.Sqrt(1/float64(tc.to)/float64(len(hs))), "share moved into (5 sigma) partition %d", q)
			}
		})
	}
}
