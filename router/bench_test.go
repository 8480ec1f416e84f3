package router_test

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/cespare/xxhash/v2"

	"github.com/keyroute/keyroute/router"
)

// sink keeps the compiler from discarding benchmark results.
var sink int

// numBenchKeys is how many distinct keys the benchmarks cycle through: too
// many for a branch predictor to learn which cluster wins, as with real
// traffic. (With one fixed key, or a few hundred, a branchy Cluster looks
// twice as fast as it is.)
const numBenchKeys = 1 << 16

// benchKeys returns numBenchKeys distinct keys of n bytes.
func benchKeys(n int) []string {
	keys := make([]string, numBenchKeys)
	for i := range keys {
		s := fmt.Sprintf("%0*d", n, i*7919)
		keys[i] = s[len(s)-n:]
	}
	return keys
}

// BenchmarkRoute is the per-message placement cost of the producer: Hash,
// Cluster over 5 equal clusters, Partition over 10 partitions.
func BenchmarkRoute(b *testing.B) { benchRoute(b, equalMembers(five...), true) }

// BenchmarkRouteWeighted is BenchmarkRoute with weights 1:2:3:1:2 (the slot
// owners were ranked on the floating-point path).
func BenchmarkRouteWeighted(b *testing.B) {
	benchRoute(b, []router.Member{
		{Name: "ams", Weight: 1}, {Name: "fra", Weight: 2}, {Name: "lon", Weight: 3},
		{Name: "par", Weight: 1}, {Name: "waw", Weight: 2},
	}, true)
}

// BenchmarkCluster is BenchmarkRoute without the partition: Hash and the
// slot table lookup, so that a route's cost splits into xxhash
// (BenchmarkXXHash), the cluster (this less BenchmarkXXHash) and the
// partition (BenchmarkRoute less this).
func BenchmarkCluster(b *testing.B) { benchRoute(b, equalMembers(five...), false) }

// benchRoute places the benchmark keys over members, with their
// partition among 10 or without one.
func benchRoute(b *testing.B, members []router.Member, partition bool) {
	r := mustNew(b, members)
	for _, n := range []int{16, 24, 36} {
		keys := benchKeys(n)
		b.Run("keylen="+strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			if !partition {
				for b.Loop() {
					sink += r.Cluster(router.Hash(keys[i%numBenchKeys]))
					i++
				}
				return
			}
			for b.Loop() {
				h := router.Hash(keys[i%numBenchKeys])
				sink += r.Cluster(h) + router.Partition(h, 10)
				i++
			}
		})
	}
}

// BenchmarkPartition is Partition alone over the hashes of 64K keys, by
// partition count: jump hashing loops about ln(n) + 1 times.
func BenchmarkPartition(b *testing.B) {
	keys := benchKeys(24)
	hs := make([]uint64, len(keys))
	for i, k := range keys {
		hs[i] = router.Hash(k)
	}
	for _, n := range []int{1, 5, 10, 100, 1000} {
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			i := 0
			for b.Loop() {
				sink += router.Partition(hs[i%numBenchKeys], n)
				i++
			}
		})
	}
}

// BenchmarkXXHash is the baseline: xxhash64 alone over the same keys.
func BenchmarkXXHash(b *testing.B) {
	for _, n := range []int{16, 24, 36} {
		keys := benchKeys(n)
		b.Run("keylen="+strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				sink += int(xxhash.Sum64String(keys[i%numBenchKeys]))
				i++
			}
		})
	}
}

// BenchmarkNew is the cost of building a Router: ranking the members for
// every slot, once.
func BenchmarkNew(b *testing.B) {
	for _, n := range []int{5, 16, 256} {
		for _, weighted := range []bool{false, true} {
			members := numbered(n)
			if weighted {
				members[0].Weight = 2
			}
			b.Run(fmt.Sprintf("members=%d/weighted=%t", n, weighted), func(b *testing.B) {
				for b.Loop() {
					mustNew(b, members)
				}
			})
		}
	}
}

func TestAllocs(t *testing.T) {
	equal := mustNew(t, equalMembers(five...))
	weighted := mustNew(t, []router.Member{{Name: "a", Weight: 1}, {Name: "b", Weight: 2}, {Name: "c", Weight: 3}})
	key := benchKeys(24)[7]
	for name, r := range map[string]*router.Router{"equal": equal, "weighted": weighted} {
		allocs := testing.AllocsPerRun(1000, func() {
			h := router.Hash(key)
			sink += r.Cluster(h) + router.Partition(h, 10)
			k := router.KeylessHash(uint64(sink))
			sink += r.Cluster(k) + router.Partition(k, 10)
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocs per Hash+Cluster+Partition, want 0", name, allocs)
		}
	}
}
