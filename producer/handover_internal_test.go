package producer

import "testing"

// TestOriginPartitionsMatchConcerns: partitions yields exactly the
// partitions concerns accepts, each once.
func TestOriginPartitionsMatchConcerns(t *testing.T) {
	var os []origin
	for fromN := 1; fromN <= 9; fromN++ {
		for p := range fromN {
			os = append(os, origin{p: p, fromN: fromN}, origin{p: p, fromN: fromN, grown: true})
			open := newPartSet(fromN)
			open.add(p)
			if p > 0 {
				open.add(p - 1)
			}
			os = append(os, origin{fromN: fromN, open: open})
		}
	}
	os = append(os, origin{fromN: 0, open: newPartSet(1)})
	for _, o := range os {
		for n := 1; n <= 9; n++ {
			seen := map[int]bool{}
			for q := range o.partitions(n) {
				if seen[q] || !o.concerns(q, n) || q < 0 || q >= n {
					t.Fatalf("%+v, n %d: partitions yields %d (again: %t)", o, n, q, seen[q])
				}
				seen[q] = true
			}
			for q := range n {
				if o.concerns(q, n) && !seen[q] {
					t.Fatalf("%+v, n %d: partitions misses %d", o, n, q)
				}
			}
		}
	}
}
