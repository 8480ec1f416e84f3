package main

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMakeKeysDistinct(t *testing.T) {
	keys := makeKeys("uniform", 1000, 1)
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

func TestOMBKeysAreOMBShaped(t *testing.T) {
	keys := makeKeys("round-robin", ombKeyCount, 7)
	require.Len(t, keys, ombKeyCount)
	seen := map[string]bool{}
	for _, k := range keys {
		// 7 random bytes in unpadded base64url, as OMB's KeyDistributor.
		require.Len(t, k, 10, k)
		for _, r := range k {
			require.True(t, r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_', k)
		}
		assert.False(t, seen[k], k)
		seen[k] = true
	}
	assert.Equal(t, keys, makeKeys("random-nano", ombKeyCount, 7), "same seed, same keys")
	assert.NotEqual(t, keys[:5], makeKeys("round-robin", ombKeyCount, 8)[:5])
}

func TestNoKeyDistributor(t *testing.T) {
	c := newKeyChooser("none", ombKeyCount, 0, 1, 0)
	for range 10 {
		assert.Equal(t, -1, c.next())
	}
}

func TestKeyRoundRobinStartsAtOneAndWraps(t *testing.T) {
	// OMB's KeyRoundRobin increments before it reads: 1, 2, ..., n-1, 0, 1.
	c := newKeyChooser("round-robin", 4, 0, 1, 0)
	var got []int
	for range 9 {
		got = append(got, c.next())
	}
	assert.Equal(t, []int{1, 2, 3, 0, 1, 2, 3, 0, 1}, got)
}

func TestRandomNanoIndex(t *testing.T) {
	// Math.abs((int) System.nanoTime() % 10000): the cast keeps the low 32
	// bits (as a signed int) before the remainder.
	for _, c := range []struct {
		nanos int64
		want  int
	}{
		{0, 0},
		{12345, 2345},
		{1<<32 + 7, 7},     // high bits dropped
		{0xFFFFFFFF, 1},    // int32 -1 -> -1 % 10000 = -1 -> 1
		{0x80000000, 3648}, // int32 min -2147483648 % 10000 = -3648
	} {
		assert.Equal(t, c.want, randomNanoIndex(c.nanos, 10000), "%d", c.nanos)
	}
	c := newKeyChooser("random-nano", ombKeyCount, 0, 1, 0)
	for range 1000 {
		k := c.next()
		require.True(t, k >= 0 && k < ombKeyCount, "%d", k)
	}
}
