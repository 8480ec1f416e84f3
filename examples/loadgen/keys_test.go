package main

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMakeKeysDistinct(t *testing.T) {
	keys := makeKeys(1000)
	seen := map[string]bool{}
	for _, k := range keys {
		assert.False(t, seen[k], k)
		seen[k] = true
	}
	assert.Equal(t, "key-0000000", keys[0])
}

func counts(c *keyChooser, n, draws int) []int {
	out := make([]int, n)
	for range draws {
		k := c.next()
		if k < 0 || k >= n {
			panic("key index out of range")
		}
		out[k]++
	}
	return out
}

func TestUniformKeysAreEven(t *testing.T) {
	const n, draws = 100, 200_000
	got := counts(newKeyChooser("uniform", n, 0, 1, 0), n, draws)
	want := float64(draws) / n
	var chi2 float64
	for _, c := range got {
		chi2 += (float64(c) - want) * (float64(c) - want) / want
	}
	// 99 degrees of freedom: chi2 above ~150 would be p < 0.001.
	assert.Less(t, chi2, 150.0)
}

func TestZipfKeysAreSkewed(t *testing.T) {
	const n, draws, s = 1000, 200_000, 1.2
	got := counts(newKeyChooser("zipf", n, s, 1, 0), n, draws)
	// Rank 0 is the most frequent, and rank 0 vs rank 1 follows
	// ((1+1)/(0+1))^s = 2^s.
	for i := 1; i < n; i++ {
		require.GreaterOrEqual(t, got[0], got[i], "rank %d", i)
	}
	r := float64(got[0]) / float64(got[1])
	assert.InDelta(t, math.Pow(2, s), r, 0.15)
	// The top 1% of keys take far more than 1% of the draws.
	top := 0
	for _, c := range got[:10] {
		top += c
	}
	assert.Greater(t, float64(top)/draws, 0.3)
}

func TestKeyChooserIsDeterministic(t *testing.T) {
	for _, dist := range []string{"uniform", "zipf"} {
		a := counts(newKeyChooser(dist, 50, 1.1, 42, 3), 50, 1000)
		b := counts(newKeyChooser(dist, 50, 1.1, 42, 3), 50, 1000)
		c := counts(newKeyChooser(dist, 50, 1.1, 42, 4), 50, 1000)
		assert.Equal(t, a, b, dist)
		assert.NotEqual(t, a, c, dist)
	}
}

func TestSingleKey(t *testing.T) {
	for _, dist := range []string{"uniform", "zipf"} {
		c := newKeyChooser(dist, 1, 1.5, 1, 0)
		for range 100 {
			assert.Zero(t, c.next(), dist)
		}
	}
}
