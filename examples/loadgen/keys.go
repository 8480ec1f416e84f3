package main

import (
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"time"
)

// Key distributions (-key-dist). uniform and zipf are loadgen's own; none,
// round-robin and random-nano are OpenMessaging Benchmark's NO_KEY,
// KEY_ROUND_ROBIN and RANDOM_NANO (a workload file's keyDistributor).
var keyDists = []string{"uniform", "zipf", "none", "round-robin", "random-nano"}

// ombKeyCount is the number of keys OMB's KeyDistributor draws from.
const ombKeyCount = 10000

// makeKeys returns n distinct keys for dist, built once so that the send
// loops never format or allocate a key: "key-0000000" and up for uniform
// and zipf; for OMB's distributors, as OMB makes them, random 7-byte
// strings in unpadded base64url (10 characters), from seed (OMB seeds
// them at random on each run).
func makeKeys(dist string, n int, seed uint64) []string {
	keys := make([]string, n)
	switch dist {
	case "round-robin", "random-nano", "none":
		rng := rand.New(rand.NewPCG(seed, 0x6f6d62)) // "omb"
		seen := make(map[string]bool, n)
		var buf [7]byte
		for i := 0; i < n; {
			for j := range buf {
				buf[j] = byte(rng.Uint32())
			}
			k := base64.RawURLEncoding.EncodeToString(buf[:])
			if seen[k] {
				continue
			}
			seen[k] = true
			keys[i] = k
			i++
		}
	default:
		for i := range keys {
			keys[i] = fmt.Sprintf("key-%07d", i)
		}
	}
	return keys
}

// keyChooser picks key indexes in [0, n) with the configured distribution,
// or -1 for "no key" (none). Each sender owns one; it is not safe for
// concurrent use.
type keyChooser struct {
	dist string
	n    int
	rng  *rand.Rand
	zipf *rand.Zipf // zipf only
	rr   int        // round-robin: the last index returned
}

// nanoBase is the origin of random-nano's clock, like Java's
// System.nanoTime an arbitrary fixed point.
var nanoBase = time.Now()

// newKeyChooser returns a chooser for n keys. For zipf, key index 0 is the
// most frequent and s > 1 is the exponent. Choosers with the same
// arguments return the same sequence, except random-nano, which reads the
// clock.
func newKeyChooser(dist string, n int, s float64, seed, stream uint64) *keyChooser {
	rng := rand.New(rand.NewPCG(seed, stream))
	k := &keyChooser{dist: dist, n: n, rng: rng}
	if dist == "zipf" {
		k.zipf = rand.NewZipf(rng, s, 1, uint64(n-1))
	}
	return k
}

// next returns the next key index, or -1 for no key.
func (k *keyChooser) next() int {
	switch k.dist {
	case "zipf":
		return int(k.zipf.Uint64())
	case "none":
		return -1
	case "round-robin":
		// As OMB's KeyRoundRobin: advance first, so the first key
		// returned is index 1, then wrap to 0 after n-1.
		k.rr++
		if k.rr >= k.n {
			k.rr = 0
		}
		return k.rr
	case "random-nano":
		return randomNanoIndex(int64(time.Since(nanoBase)), k.n)
	}
	return k.rng.IntN(k.n)
}

// randomNanoIndex is OMB's RandomNano: Math.abs((int) System.nanoTime() %
// n), the clock truncated to a 32-bit int first.
func randomNanoIndex(nanos int64, n int) int {
	i := int(int32(nanos)) % n
	if i < 0 {
		i = -i
	}
	return i
}
