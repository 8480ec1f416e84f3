//go:build e2e

package faults

import (
	"context"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/e2e/internal/consume"
)

// verify checks that every acknowledged message was consumed exactly once,
// on the cluster its key belongs to, and in
// key order; it returns how many consumed messages had failed outcomes
// (written although the client gave up on them).
func verify(ctx context.Context, l *load, topic string) (ambiguous int) {
	l.mu.Lock()
	want := len(l.ackedIDs)
	l.mu.Unlock()
	cctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	got, err := consume.All(cctx, bed.Clusters(), topic, "verify", want, 3*time.Second)
	if err != nil {
		GinkgoWriter.Printf("consume: %v (checking what arrived)\n", err)
	}
	seen := map[string]int{}
	last := map[string]int{}
	total := 0
	for _, m := range got {
		cluster, id := m.Cluster, m.Payload
		total++
		seen[id]++
		Expect(seen[id]).To(Equal(1), "duplicate %s on %s", id, cluster)
		key, seqs, _ := strings.Cut(id, "|")
		seq, _ := strconv.Atoi(seqs)
		if prev, ok := last[key]; ok {
			Expect(seq).To(BeNumerically(">", prev), "key %s out of order on %s", key, cluster)
		}
		last[key] = seq
		own, _ := l.p.Placement(key)
		Expect(cluster).To(Equal(own), "key %s on %s", key, cluster)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	missing := map[string]int{}
	for id := range l.ackedIDs {
		if seen[id] == 0 {
			key, _, _ := strings.Cut(id, "|")
			own, _ := l.p.Placement(key)
			missing[own]++
		}
	}
	Expect(missing).To(BeEmpty(), "acknowledged but not consumed, per cluster")
	for id := range l.failed {
		if seen[id] > 0 {
			ambiguous++
		}
	}
	GinkgoWriter.Printf("sent %d, acknowledged %d, failed %d, consumed %d (of them failed-but-written %d), duplicates 0\n",
		l.sent, len(l.ackedIDs), len(l.failed), total, ambiguous)
	Expect(len(l.ackedIDs)+len(l.failed)).To(Equal(l.sent), "every message has exactly one outcome")
	Expect(total).To(Equal(len(l.ackedIDs) + ambiguous))
	return ambiguous
}
