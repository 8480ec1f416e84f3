package router_test

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/router"
)

// numKeys is the sample size of the statistical tests.
const numKeys = 1_000_000

var (
	hashesOnce sync.Once
	hashes     []uint64
)

// sampleHashes returns the hashes of numKeys pseudo-random keys of 16-36
// printable ASCII bytes. The keys come from a fixed PCG seed, so every run
// tests the same sample and the statistical tests cannot flake.
func sampleHashes(tb testing.TB) []uint64 {
	tb.Helper()
	hashesOnce.Do(func() {
		const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_:./"
		rng := rand.New(rand.NewPCG(2024, 11))
		buf := make([]byte, 36)
		hashes = make([]uint64, numKeys)
		for i := range hashes {
			k := buf[:16+rng.IntN(21)]
			for j := range k {
				k[j] = alphabet[rng.IntN(len(alphabet))]
			}
			hashes[i] = router.Hash(string(k))
		}
	})
	return hashes
}

// equalMembers returns members with the given names and weight 1.
func equalMembers(names ...string) []router.Member {
	ms := make([]router.Member, len(names))
	for i, n := range names {
		ms[i] = router.Member{Name: n, Weight: 1}
	}
	return ms
}

func mustNew(tb testing.TB, members []router.Member) *router.Router {
	tb.Helper()
	r, err := router.New(members)
	require.NoError(tb, err)
	return r
}

// owner returns the name of the member that owns h.
func owner(r *router.Router, h uint64) string { return r.Name(r.Cluster(h)) }

// chiSquare returns Pearson's statistic for observed counts against equal
// expected counts.
func chiSquare(counts []int) float64 { return chiSquareWant(counts, uniform(len(counts))) }

// chiSquareWant returns Pearson's statistic for observed counts against
// expected shares want (summing to 1).
func chiSquareWant(counts []int, want []float64) float64 {
	total := 0
	for _, c := range counts {
		total += c
	}
	var x2 float64
	for i, c := range counts {
		e := want[i] * float64(total)
		d := float64(c) - e
		x2 += d * d / e
	}
	return x2
}

// uniform returns n equal shares.
func uniform(n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = 1 / float64(n)
	}
	return s
}

// slotShares returns each member's share of the slots: the share of keys
// it owns, as the slot table fixes it.
func slotShares(r *router.Router) []float64 {
	s := make([]float64, r.Len())
	for slot := range uint64(router.NumSlots) {
		s[r.Cluster(slot<<(64-router.SlotBits))] += 1.0 / router.NumSlots
	}
	return s
}

// slotTolerance is how far a member's slot share may stray from its ideal
// share p: four standard deviations of a share drawn over NumSlots slots.
func slotTolerance(p float64) float64 { return 4 * math.Sqrt(p*(1-p)/router.NumSlots) }

// chiSquareLimit is the chi-square value that a uniform sample exceeds with
// probability about 1e-4 at df degrees of freedom (Wilson-Hilferty
// approximation; z = 3.719 is the standard normal 1e-4 upper quantile).
func chiSquareLimit(df int) float64 {
	const z = 3.719
	k := float64(df)
	c := 2 / (9 * k)
	return k * math.Pow(1-c+z*math.Sqrt(c), 3)
}

// maxRelDev returns the largest |count/expected - 1| over equal expected counts.
func maxRelDev(counts []int) float64 { return maxRelDevWant(counts, uniform(len(counts))) }

// maxRelDevWant returns the largest |count/expected - 1| for expected shares
// want (summing to 1).
func maxRelDevWant(counts []int, want []float64) float64 {
	total := 0
	for _, c := range counts {
		total += c
	}
	var m float64
	for i, c := range counts {
		m = max(m, math.Abs(float64(c)/(want[i]*float64(total))-1))
	}
	return m
}
