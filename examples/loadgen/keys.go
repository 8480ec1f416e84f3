package main

import (
	"fmt"
	"math/rand/v2"
)

// makeKeys returns n distinct keys, "key-0000000" and up, built once so
// that the send loops never format or allocate a key.
func makeKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("key-%07d", i)
	}
	return keys
}

// keyChooser picks key indexes in [0, n) with the configured distribution.
// Each sender owns one; it is not safe for concurrent use.
type keyChooser struct {
	n    int
	rng  *rand.Rand
	zipf *rand.Zipf // nil for uniform
}

// newKeyChooser returns a chooser for n keys. dist is "uniform" or "zipf";
// for zipf, key index 0 is the most frequent and s > 1 is the exponent.
// Choosers with the same arguments return the same sequence.
func newKeyChooser(dist string, n int, s float64, seed, stream uint64) *keyChooser {
	rng := rand.New(rand.NewPCG(seed, stream))
	k := &keyChooser{n: n, rng: rng}
	if dist == "zipf" {
		k.zipf = rand.NewZipf(rng, s, 1, uint64(n-1))
	}
	return k
}

// next returns the next key index.
func (k *keyChooser) next() int {
	if k.zipf != nil {
		return int(k.zipf.Uint64())
	}
	return k.rng.IntN(k.n)
}
