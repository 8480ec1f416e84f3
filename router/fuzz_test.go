package router_test

import (
	"testing"

	"github.com/keyroute/keyroute/router"
)

// FuzzRoute checks, for any key and partition count, that placement does not
// panic, stays in range, is deterministic, matches the reference model of
// SPEC.md, and keeps the rendezvous property that adding a member only ever
// moves a key to that member.
func FuzzRoute(f *testing.F) {
	for _, k := range vectorKeys {
		f.Add(k, uint16(10), uint64(0))
	}
	f.Add("", uint16(1), uint64(1<<63))
	f.Add("\xff\xfe", uint16(65535), uint64(7))

	sets := [][]router.Member{
		equalMembers(five...),
		equalMembers(append(append([]string(nil), five...), "mad")...),
		{{Name: "large", Weight: 3}, {Name: "small", Weight: 1}, {Name: "medium", Weight: 2}},
		{{Name: "large", Weight: 3}, {Name: "small", Weight: 1}, {Name: "medium", Weight: 2}, {Name: "tiny", Weight: 1e-9}},
	}
	routers := make([]*router.Router, len(sets))
	for i, s := range sets {
		routers[i] = mustNew(f, s)
	}

	f.Fuzz(func(t *testing.T, key string, parts uint16, seq uint64) {
		n := int(parts) + 1
		for _, h := range []uint64{router.Hash(key), router.KeylessHash(seq)} {
			p := router.Partition(h, n)
			if p < 0 || p >= n || p != router.Partition(h, n) {
				t.Fatalf("Partition(%#x, %d) = %d: out of range or unstable", h, n, p)
			}
			owners := make([]string, len(routers))
			for i, r := range routers {
				c := r.Cluster(h)
				if c < 0 || c >= r.Len() || c != r.Cluster(h) {
					t.Fatalf("set %d: Cluster(%#x) = %d: out of range or unstable", i, h, c)
				}
				owners[i] = r.Name(c)
				wantName, wantPart := refRoute(sets[i], h, n)
				if owners[i] != wantName || p != wantPart {
					t.Fatalf("set %d hash %#x: got (%s, %d), reference says (%s, %d)", i, h, owners[i], p, wantName, wantPart)
				}
			}
			if owners[1] != owners[0] && owners[1] != "mad" {
				t.Fatalf("hash %#x moved %s -> %s when mad was added", h, owners[0], owners[1])
			}
			if owners[3] != owners[2] && owners[3] != "tiny" {
				t.Fatalf("hash %#x moved %s -> %s when tiny was added", h, owners[2], owners[3])
			}
		}
	})
}
