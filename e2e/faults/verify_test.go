//go:build e2e

package faults

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// consumeAll reads topic on every cluster from the start until want
// messages have arrived (or ctx ends) and then nothing new for quiet; it
// returns the payloads per cluster in arrival order.
func consumeAll(ctx context.Context, topic string, want int, quiet time.Duration) map[string][]string {
	out := map[string][]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, p := range out {
			n += len(p)
		}
		return n
	}
	for _, c := range bed.Clusters() {
		client, err := pulsar.NewClient(pulsar.ClientOptions{URL: c.ServiceURL, Logger: plog.DefaultNopLogger()})
		Expect(err).NotTo(HaveOccurred())
		defer client.Close()
		cons, err := client.Subscribe(pulsar.ConsumerOptions{
			Topic: topic, SubscriptionName: "verify", Type: pulsar.Exclusive,
			SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest,
		})
		Expect(err).NotTo(HaveOccurred(), c.Name)
		defer cons.Close()
		wg.Add(1)
		go func(name string) {
			defer wg.Done()
			for {
				rctx, cancel := context.WithTimeout(ctx, quiet)
				m, err := cons.Receive(rctx)
				cancel()
				if err != nil {
					if ctx.Err() != nil || count() >= want {
						return
					}
					continue // still short of what was acknowledged: keep waiting
				}
				cons.AckID(m.ID())
				mu.Lock()
				out[name] = append(out[name], string(m.Payload()))
				mu.Unlock()
			}
		}(c.Name)
	}
	wg.Wait()
	return out
}

// verify checks that every acknowledged message was consumed exactly once,
// on the cluster its key belongs to (or anywhere for spilled ones), and in
// key order; it returns how many consumed messages had failed outcomes
// (written although the client gave up on them).
func verify(ctx context.Context, l *load, topic string) (ambiguous int) {
	l.mu.Lock()
	want := len(l.ackedIDs)
	l.mu.Unlock()
	cctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	got := consumeAll(cctx, topic, want, 3*time.Second)
	seen := map[string]int{}
	last := map[string]int{}
	total := 0
	for cluster, payloads := range got {
		for _, id := range payloads {
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
