package router_test

import (
	"math"
	"math/big"
	"sort"

	"github.com/cespare/xxhash/v2"

	"github.com/keyroute/keyroute/router"
)

// This file is a deliberately slow, literal transcription of SPEC.md, written
// without the package's internals: big.Int for the 128-bit products, a sort
// instead of a running maximum. Tests and the fuzzer compare the package
// against it.

var two64 = new(big.Int).Lsh(big.NewInt(1), 64)

// refMul128 returns the high and low 64-bit halves of a*b.
func refMul128(a, b uint64) (hi, lo uint64) {
	p := new(big.Int).Mul(new(big.Int).SetUint64(a), new(big.Int).SetUint64(b))
	q, r := new(big.Int).QuoRem(p, two64, new(big.Int))
	return q.Uint64(), r.Uint64()
}

// refScore is SPEC.md step 2a.
func refScore(h, seed uint64) uint64 {
	z := h + seed // wraps mod 2^64
	hi, lo := refMul128(z^0xe7037ed1a0b428db, z)
	return hi ^ lo
}

// refSplitMix is the s-th output of SplitMix64 seeded with 0 (Vigna's
// splitmix64.c: add the golden gamma, then finalize).
func refSplitMix(s uint64) uint64 {
	z := (s + 1) * 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// refRoute returns the owning member's name and the partition of hash h.
func refRoute(members []router.Member, h uint64, n int) (string, int) {
	type cand struct {
		name  string
		score float64
		x     uint64
	}
	equal := true
	for _, m := range members {
		equal = equal && m.Weight == members[0].Weight
	}
	v := refSplitMix(h / (1 << 48)) // the slot's value
	cands := make([]cand, len(members))
	for i, m := range members {
		x := refScore(v, xxhash.Sum64String(m.Name))
		c := cand{name: m.Name, x: x}
		if !equal {
			u := float64((x>>11)|1) / (1 << 53)
			c.score = -m.Weight / math.Log(u)
		}
		cands[i] = c
	}
	sort.Slice(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if equal && a.x != b.x {
			return a.x > b.x
		}
		if !equal && a.score != b.score {
			return a.score > b.score
		}
		return a.name < b.name
	})
	return cands[0].name, refPartition(h, n)
}

// refPartition is SPEC.md step 3, in big integers.
func refPartition(h uint64, n int) int {
	k := new(big.Int).SetUint64(h % (1 << 48))
	mul := new(big.Int).SetUint64(0x27bb2ee687b0b0fd)
	b, j := big.NewInt(-1), big.NewInt(0)
	limit := big.NewInt(int64(n))
	for j.Cmp(limit) < 0 {
		b.Set(j)
		k.Mul(k, mul).Add(k, big.NewInt(1)).Mod(k, two64)
		r := new(big.Int).Rsh(k, 33)
		r.Add(r, big.NewInt(1))
		j.Add(b, big.NewInt(1)).Lsh(j, 31).Quo(j, r)
	}
	return int(b.Int64())
}
