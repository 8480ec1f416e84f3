//go:build e2e

package consumer

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/consumer"
)

// figures is what check found in what one consumer (or one instance, or
// one run) took against what the producer acknowledged.
type figures struct {
	messages   int // acknowledged by the producer
	taken      int // copies taken, duplicates included
	lost       int // acknowledged, never taken
	reordered  int // a key's first copies out of send order
	duplicates int // copies of a payload already taken
	misplaced  int // taken from another cluster or partition than written to
	unknown    int // never acknowledged by the producer
	// examples of the faults above, a few of each, for the failure message
	examples []string
}

func (f figures) String() string {
	return fmt.Sprintf("messages %d, taken %d, lost %d, reordered %d, duplicates %d, misplaced %d, unknown %d",
		f.messages, f.taken, f.lost, f.reordered, f.duplicates, f.misplaced, f.unknown)
}

// check compares got, in the order taken, with want: every payload of
// want taken, each key's first copies in send order (strictly rising
// sequence numbers: with none lost, that is exactly the send order), each
// from the cluster and partition the producer wrote it to.
func check(got []delivery, want written) figures {
	f := figures{messages: len(want), taken: len(got)}
	example := func(format string, args ...any) {
		if len(f.examples) < 20 {
			f.examples = append(f.examples, fmt.Sprintf(format, args...))
		}
	}
	first := map[string]consumer.ID{}
	last := map[string]int{}
	for _, d := range got {
		w, ok := want[d.payload]
		if !ok {
			f.unknown++
			example("unknown %s from %s", d.payload, d.id)
			continue
		}
		if id, dup := first[d.payload]; dup {
			f.duplicates++
			example("duplicate %s: first %s, again %s (redelivery count %d)", d.payload, id, d.id, d.redelivery)
			continue
		}
		first[d.payload] = d.id
		if n, ok := last[d.key]; ok && d.seq <= n {
			f.reordered++
			example("reordered %s after %s|%d", d.payload, d.key, n)
		}
		last[d.key] = d.seq
		if d.id.Cluster != w.Cluster || d.id.Partition != w.Partition {
			f.misplaced++
			example("misplaced %s: written to %s, taken from %s", d.payload, w, d.id)
		}
	}
	for p := range want {
		if _, ok := first[p]; !ok {
			f.lost++
			example("lost %s (written to %s)", p, want[p])
		}
	}
	return f
}

// expectComplete checks that got is want exactly: nothing lost, nothing
// twice, nothing else, each key in send order from the cluster and
// partition it was written to.
func expectComplete(f figures) {
	GinkgoHelper()
	Expect(f.lost).To(BeZero(), "lost: %v", f.examples)
	Expect(f.reordered).To(BeZero(), "reordered: %v", f.examples)
	Expect(f.duplicates).To(BeZero(), "duplicates: %v", f.examples)
	Expect(f.misplaced).To(BeZero(), "misplaced: %v", f.examples)
	Expect(f.unknown).To(BeZero(), "not expected: %v", f.examples)
}

// ordered counts the messages of got whose key's previous message in got
// had an equal or higher sequence number: per-key order within one run or
// one instance, duplicates counted as disorder.
func ordered(got []delivery) (reordered int, example string) {
	last := map[string]int{}
	for _, d := range got {
		if n, ok := last[d.key]; ok && d.seq <= n {
			if reordered == 0 {
				example = fmt.Sprintf("%s after %s|%d", d.payload, d.key, n)
			}
			reordered++
		}
		last[d.key] = d.seq
	}
	return reordered, example
}

// byCluster counts got's messages per cluster.
func byCluster(got []delivery) map[string]int {
	out := map[string]int{}
	for _, d := range got {
		out[d.id.Cluster]++
	}
	return out
}
