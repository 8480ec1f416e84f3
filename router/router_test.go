package router_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/router"
)

func TestNewErrors(t *testing.T) {
	tests := []struct {
		name    string
		members []router.Member
		want    error
		index   int
	}{
		{"nil", nil, router.ErrNoMembers, -1},
		{"empty", []router.Member{}, router.ErrNoMembers, -1},
		{"too many", numbered(router.MaxMembers + 1), router.ErrTooManyMembers, -1},
		{"empty name", []router.Member{{Name: "a", Weight: 1}, {Name: "", Weight: 1}}, router.ErrEmptyName, 1},
		{"duplicate", []router.Member{{Name: "a", Weight: 1}, {Name: "b", Weight: 1}, {Name: "a", Weight: 2}}, router.ErrDuplicateName, 2},
		{"zero weight", []router.Member{{Name: "a", Weight: 0}}, router.ErrBadWeight, 0},
		{"negative weight", []router.Member{{Name: "a", Weight: 1}, {Name: "b", Weight: -1}}, router.ErrBadWeight, 1},
		{"NaN weight", []router.Member{{Name: "a", Weight: math.NaN()}}, router.ErrBadWeight, 0},
		{"Inf weight", []router.Member{{Name: "a", Weight: math.Inf(1)}}, router.ErrBadWeight, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := router.New(tt.members)
			require.Error(t, err)
			assert.Nil(t, r)
			assert.ErrorIs(t, err, tt.want)
			var me *router.MemberError
			if tt.index < 0 {
				assert.False(t, errors.As(err, &me), "%v names no member", tt.want)
				return
			}
			require.ErrorAs(t, err, &me)
			assert.Equal(t, tt.index, me.Index)
			assert.Equal(t, tt.members[tt.index].Name, me.Name)
			assert.Contains(t, err.Error(), tt.members[tt.index].Name)
		})
	}
}

func TestNewAccessors(t *testing.T) {
	members := []router.Member{{Name: "b", Weight: 2}, {Name: "a", Weight: 2}, {Name: "c", Weight: 2}}
	r := mustNew(t, members)
	assert.Equal(t, 3, r.Len())
	for i, m := range members {
		assert.Equal(t, m.Name, r.Name(i))
	}
	assert.False(t, r.Weighted(), "equal weights of any value take the integer path")

	members[0].Weight = 1
	assert.True(t, mustNew(t, members).Weighted())
}

func TestNewDoesNotKeepCallerSlice(t *testing.T) {
	members := equalMembers("a", "b", "c")
	r := mustNew(t, members)
	before := make([]int, 1000)
	for i := range before {
		before[i] = r.Cluster(router.KeylessHash(uint64(i)))
	}
	members[0].Name, members[1].Weight = "zzz", 5
	for i := range before {
		require.Equal(t, before[i], r.Cluster(router.KeylessHash(uint64(i))))
	}
}

// TestKnownHashes checks values computed outside this package, so that the
// vectors file is not only compared against itself.
func TestKnownHashes(t *testing.T) {
	// xxhash64 reference values (seed 0), as published with the xxHash
	// reference implementation's test suite and reproduced by every port.
	assert.Equal(t, uint64(0xef46db3751d8e999), router.Hash(""))
	assert.Equal(t, uint64(0x44bc2cf5ad770999), router.Hash("abc"))

	// SplitMix64 seeded with 0: the first outputs of Vigna's reference
	// splitmix64.c.
	assert.Equal(t, uint64(0xe220a8397b1dcdaf), router.KeylessHash(0))
	assert.Equal(t, uint64(0x6e789e6aa1b965f4), router.KeylessHash(1))
	assert.Equal(t, uint64(0x06c45d188009454f), router.KeylessHash(2))
}

// TestReferenceModel checks the fast code against refRoute, a slow
// transcription of SPEC.md, for many hashes and topologies.
// TestMaxMembers: a Router takes MaxMembers members, and the slot table
// holds every index, including those past 127 (one byte, unsigned).
func TestMaxMembers(t *testing.T) {
	members := numbered(router.MaxMembers)
	r := mustNew(t, members)
	for i, s := range slotShares(r) {
		assert.Positive(t, s, "member %d owns no slot", i)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		h := rng.Uint64()
		want, _ := refRoute(members, h, 1)
		require.Equal(t, want, owner(r, h), "h=%#x", h)
	}
}

// numbered returns n equal members named m0, m1, ...
func numbered(n int) []router.Member {
	names := make([]string, n)
	for i := range names {
		names[i] = "m" + strconv.Itoa(i)
	}
	return equalMembers(names...)
}

func TestReferenceModel(t *testing.T) {
	sets := [][]router.Member{
		equalMembers("solo"),
		equalMembers("a", "b"),
		equalMembers("ams", "fra", "lon", "par", "waw"),
		{{Name: "x", Weight: 1}, {Name: "y", Weight: 2}, {Name: "z", Weight: 3}},
		{{Name: "p", Weight: 0.25}, {Name: "q", Weight: 1e-3}, {Name: "r", Weight: 7}, {Name: "s", Weight: 7}},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, members := range sets {
		r := mustNew(t, members)
		for range 20_000 {
			h := rng.Uint64()
			n := 1 + rng.IntN(200)
			wantCluster, wantPartition := refRoute(members, h, n)
			require.Equal(t, wantCluster, owner(r, h), "h=%#x members=%v", h, members)
			require.Equal(t, wantPartition, router.Partition(h, n), "h=%#x n=%d", h, n)
		}
	}
}

func TestOrderIndependence(t *testing.T) {
	members := []router.Member{
		{Name: "ams", Weight: 1}, {Name: "fra", Weight: 2}, {Name: "lon", Weight: 3},
		{Name: "par", Weight: 1}, {Name: "waw", Weight: 2}, {Name: "mad", Weight: 1},
	}
	for _, weighted := range []bool{false, true} {
		ms := append([]router.Member(nil), members...)
		if !weighted {
			for i := range ms {
				ms[i].Weight = 1
			}
		}
		base := mustNew(t, ms)
		rng := rand.New(rand.NewPCG(3, 4))
		for range 20 {
			shuffled := append([]router.Member(nil), ms...)
			rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
			r := mustNew(t, shuffled)
			for _, h := range sampleHashes(t)[:50_000] {
				if owner(r, h) != owner(base, h) {
					t.Fatalf("weighted=%v: order %v moved hash %#x", weighted, shuffled, h)
				}
			}
		}
	}
}

func TestPartitionRange(t *testing.T) {
	for _, un := range []uint64{1, 2, 3, 5, 7, 10, 100, 1 << 20, 1 << 32, 1<<32 + 1, 1 << 40, math.MaxInt64} {
		n := int(min(un, math.MaxInt)) // on 32-bit platforms, the largest int
		for _, h := range []uint64{0, 1, math.MaxUint64, 0x8000000000000000, 0xffffffffffff, 0x123456789abcdef} {
			p := router.Partition(h, n)
			assert.True(t, p >= 0 && p < n, "Partition(%#x, %d) = %d", h, n, p)
			assert.Equal(t, refPartition(h, n), p, "Partition(%#x, %d)", h, n)
		}
	}
	assert.Equal(t, 0, router.Partition(12345, 1))
	assert.Panics(t, func() { router.Partition(1, 0) })
	assert.Panics(t, func() { router.Partition(1, -3) })
}

func TestSingleMember(t *testing.T) {
	r := mustNew(t, equalMembers("only"))
	for _, h := range sampleHashes(t)[:1000] {
		require.Equal(t, 0, r.Cluster(h))
	}
}

func TestConcurrentUse(t *testing.T) {
	r := mustNew(t, []router.Member{{Name: "a", Weight: 1}, {Name: "b", Weight: 2}})
	hs := sampleHashes(t)[:10_000]
	want := make([]int, len(hs))
	for i, h := range hs {
		want[i] = r.Cluster(h)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i, h := range hs {
				if r.Cluster(h) != want[i] {
					t.Errorf("hash %#x: unstable under concurrency", h)
					return
				}
			}
		})
	}
	wg.Wait()
}
