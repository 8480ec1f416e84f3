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
func chiSquare(counts []int) float64 {
	total := 0
	for _, c := range counts {
		total += c
	}
	want := float64(total) / float64(len(counts))
	var x2 float64
	for _, c := range counts {
		d := float64(c) - want
		x2 += d * d / want
	}
	return x2
}

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
func maxRelDev(counts []int) float64 {
	total := 0
	for _, c := range counts {
		total += c
	}
	want := float64(total) / float64(len(counts))
	var m float64
	for _, c := range counts {
		m = max(m, math.Abs(float64(c)/want-1))
	}
	return m
}
