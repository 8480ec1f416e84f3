package router

import (
	"math"
	"math/bits"
	"slices"
	"strings"

	"github.com/cespare/xxhash/v2"
)

// Constants of the placement function. SPEC.md states them too; changing any
// of them moves keys and breaks the testdata vectors on purpose.
const (
	// SlotBits is how many top bits of the key hash pick the key's slot:
	// the cluster choice is made once per slot, when the Router is built,
	// and a key goes to its slot's cluster.
	SlotBits = 16

	// NumSlots is the number of slots, 2^SlotBits.
	NumSlots = 1 << SlotBits

	// MaxMembers is the most members a Router takes: a slot's owner is
	// stored in one byte.
	MaxMembers = 256

	// scoreSalt is XORed into one operand of the score multiply (the
	// constant of the wyrand output function).
	scoreSalt = 0xe7037ed1a0b428db

	// mixMul1 and mixMul2 are the multipliers of the SplitMix64 finalizer
	// (Stafford's "Mix13"), and golden is the SplitMix64 increment; together
	// they make KeylessHash the standard SplitMix64 sequence.
	mixMul1 = 0xbf58476d1ce4e5b9
	mixMul2 = 0x94d049bb133111eb
	golden  = 0x9e3779b97f4a7c15

	// unit53 is 2^-53, which scales a 53-bit integer into (0, 1).
	unit53 = 0x1p-53

	// lowMask keeps the 64-SlotBits low bits of a key hash, the partition's
	// input; jumpMul is the multiplier of the linear congruential generator
	// that jump consistent hashing draws from (Lamping and Veach).
	lowMask = 1<<(64-SlotBits) - 1
	jumpMul = 0x27bb2ee687b0b0fd
)

// Member is one routing target (a cluster). Weight > 0 is its relative share
// of keys. Any finite positive weight is accepted; shares follow the
// weights while every weight lies in [2^-1016, 2^970] (a limit of
// magnitude, not of ratio: see SPEC.md, Step 0).
type Member struct {
	Name   string
	Weight float64
}

// Router maps key hashes to members. It is immutable after New and safe for
// concurrent use by any number of goroutines.
//
// Internally members are kept in canonical order (ascending by name,
// bytewise) so that the rare tie between two scores is broken the same way
// whatever order the caller listed them in; index maps back to the caller's
// order.
type Router struct {
	// slots[s] is the owner of slot s, as an index into the members slice
	// given to New.
	slots *[NumSlots]uint8
	// seeds[k] is xxhash64 of the k-th name in canonical order.
	seeds []uint64
	// weights[k] is that member's weight, or nil when all weights are equal
	// (the integer path).
	weights []float64
	// index[k] is that member's position in the slice given to New.
	index []int
	// names[i] is the name of the member at caller position i.
	names []string
}

// New validates members and builds a Router over them. Each member needs a
// non-empty, unique Name and a finite Weight > 0, and there may be at most
// MaxMembers. The order of members does not affect which member a key is
// placed on; it only fixes the indexes that Cluster returns.
//
// New computes the owner of every slot (NumSlots rendezvous rankings, a
// few milliseconds; BenchmarkNew); everything after that is a table lookup.
//
// New returns ErrNoMembers for an empty slice, ErrTooManyMembers for more
// than MaxMembers, and otherwise a *MemberError wrapping ErrEmptyName,
// ErrDuplicateName, ErrBadWeight or ErrSeedCollision for the first member at
// fault.
func New(members []Member) (*Router, error) {
	n := len(members)
	switch {
	case n == 0:
		return nil, ErrNoMembers
	case n > MaxMembers:
		return nil, ErrTooManyMembers
	}
	byName := make(map[string]bool, n)
	bySeed := make(map[uint64]bool, n)
	equal := true
	for i, m := range members {
		switch {
		case m.Name == "":
			return nil, &MemberError{Index: i, Name: m.Name, Err: ErrEmptyName}
		case math.IsNaN(m.Weight) || math.IsInf(m.Weight, 0) || m.Weight <= 0:
			return nil, &MemberError{Index: i, Name: m.Name, Err: ErrBadWeight}
		case byName[m.Name]:
			return nil, &MemberError{Index: i, Name: m.Name, Err: ErrDuplicateName}
		}
		seed := Hash(m.Name)
		if bySeed[seed] {
			return nil, &MemberError{Index: i, Name: m.Name, Err: ErrSeedCollision}
		}
		byName[m.Name] = true
		bySeed[seed] = true
		if m.Weight != members[0].Weight {
			equal = false
		}
	}

	r := &Router{
		slots: new([NumSlots]uint8),
		seeds: make([]uint64, n),
		index: make([]int, n),
		names: make([]string, n),
	}
	for i, m := range members {
		r.index[i] = i
		r.names[i] = m.Name
	}
	slices.SortFunc(r.index, func(a, b int) int {
		return strings.Compare(members[a].Name, members[b].Name)
	})
	if !equal {
		r.weights = make([]float64, n)
	}
	for k, i := range r.index {
		r.seeds[k] = Hash(members[i].Name)
		if r.weights != nil {
			r.weights[k] = members[i].Weight
		}
	}
	never := func(int) bool { return false }
	for s := range r.slots {
		r.slots[s] = uint8(r.rank(slotValue(s), never))
	}
	return r, nil
}

// Len returns the number of members.
func (r *Router) Len() int { return len(r.names) }

// Name returns the name of member i (its index in the slice given to New),
// where 0 <= i < Len().
func (r *Router) Name(i int) string { return r.names[i] }

// Weighted reports whether the members' weights differ, so that slot owners
// are ranked on the floating-point path of SPEC.md rather than the integer
// one.
func (r *Router) Weighted() bool { return r.weights != nil }

// Hash is the key hash every placement starts from: xxhash64 (seed 0) of the
// key's UTF-8 bytes.
//
// The empty key "" means "no key" in Pulsar; callers must place such
// messages with KeylessHash instead (the producer does).
func Hash(key string) uint64 { return xxhash.Sum64String(key) }

// Slot returns the slot of hash h: its top SlotBits bits (SPEC.md, step 2).
func Slot(h uint64) int { return int(h >> (64 - SlotBits)) }

// slotValue returns the value slot s is ranked by: the s-th output of
// SplitMix64 seeded with 0, the same sequence as KeylessHash (SPEC.md,
// step 2).
func slotValue(s int) uint64 { return KeylessHash(uint64(s)) }

// Cluster returns the index (into the members slice given to New) of the
// member that owns hash h: the owner of h's slot, which is the member with
// the highest rendezvous score for that slot (SPEC.md, step 2). It is one
// table lookup (none with one member, which owns every slot: the table,
// 64 KiB, is out of the nearest caches on a busy core); it is safe for
// concurrent use and does not allocate.
func (r *Router) Cluster(h uint64) int {
	if len(r.seeds) == 1 {
		return 0
	}
	return int(r.slots[h>>(64-SlotBits)])
}

// rank returns the index (into the members slice given to New) of the member
// with the highest rendezvous score for v among those for which skip(i) is
// false, or -1 when every member is skipped. On a tie the member with the
// lowest name wins: canonical order is by name and only a strictly greater
// score takes over.
func (r *Router) rank(v uint64, skip func(int) bool) int {
	best := -1
	var bestScore uint64
	bestWeighted := math.Inf(-1)
	for k, s := range r.seeds {
		if skip(r.index[k]) {
			continue
		}
		x := score(v, s)
		if r.weights != nil {
			// The logarithmic method for weighted rendezvous: member k
			// scores -w_k / ln(u_k) with u_k uniform in (0, 1), which
			// makes it win with probability w_k / sum(w).
			u := float64(x>>11|1) * unit53
			if w := -r.weights[k] / math.Log(u); best < 0 || w > bestWeighted {
				best, bestWeighted = k, w
			}
			continue
		}
		if best < 0 || x > bestScore {
			best, bestScore = k, x
		}
	}
	if best < 0 {
		return -1
	}
	return r.index[best]
}

// Partition maps h to one of n >= 1 partitions by jump consistent hashing
// of the low 64-SlotBits bits of h, which the cluster choice does not look
// at (SPEC.md, step 3). Growing n from P to Q moves only keys to
// partitions P to Q-1, about (Q-P)/Q of them: a key's partition under Q is
// its partition under P or one of the new ones. It does not allocate, and
// panics if n < 1, as a zero partition count is a caller bug.
func Partition(h uint64, n int) int {
	if n < 1 {
		panic("router: Partition called with n < 1")
	}
	if uint64(n) > 1<<32 {
		return partitionWide(h, uint64(n))
	}
	// SPEC.md's loop, except that the last candidate j = floor(a / r) is
	// found to be n or more without the division: floor(a / r) >= n
	// exactly when a >= n * r (which fits: n <= 2^32, r <= 2^31).
	k, un, b := h&lowMask, uint64(n), uint64(0)
	for {
		k = k*jumpMul + 1
		r := k>>33 + 1
		a := (b + 1) << 31
		if a >= un*r {
			return int(b)
		}
		b = a / r
	}
}

// partitionWide is Partition for n above 2^32: SPEC.md's loop as written,
// with a 128-bit product where (b+1) * 2^31 needs one.
func partitionWide(h, n uint64) int {
	k := h & lowMask
	var b, j uint64
	for j < n {
		b = j
		k = k*jumpMul + 1
		r := k>>33 + 1
		if b < 1<<32 {
			j = (b + 1) << 31 / r
			continue
		}
		hi, lo := bits.Mul64(b+1, 1<<31)
		if hi >= r {
			break // j >= 2^64 > n
		}
		j, _ = bits.Div64(hi, lo, r)
	}
	return int(b)
}

// KeylessHash returns the hash used to place the seq-th message that has no
// key; the caller keeps the counter. It is the seq-th output (counting from
// 0) of SplitMix64 seeded with 0, so consecutive seqs land on clusters and
// partitions as if their keys were random: evenly in the long run, with no
// order promise between them.
func KeylessHash(seq uint64) uint64 { return mix64((seq + 1) * golden) }

// score is a member's rendezvous score for slot value v: the wyrand output
// function applied to v + seed, i.e. the two 64-bit halves of the 128-bit
// product (z XOR scoreSalt) * z, XORed together.
func score(v, seed uint64) uint64 {
	z := v + seed
	hi, lo := bits.Mul64(z^scoreSalt, z)
	return hi ^ lo
}

// mix64 is the SplitMix64 finalizer: a bijection on uint64 in which every
// input bit affects every output bit.
func mix64(z uint64) uint64 {
	z = (z ^ z>>30) * mixMul1
	z = (z ^ z>>27) * mixMul2
	return z ^ z>>31
}
