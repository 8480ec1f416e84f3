//go:build e2e

package consumer

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/producer"
)

const (
	restartKeys   = 500
	restartPerKey = 40 // 20,000 messages
)

// deliveries turns the payloads a child took into deliveries for ordered.
func deliveries(payloads []string) []delivery {
	GinkgoHelper()
	out := make([]delivery, len(payloads))
	for i, p := range payloads {
		k, seq, err := parsePayload(p)
		Expect(err).NotTo(HaveOccurred())
		out[i] = delivery{payload: p, key: k, seq: seq}
	}
	return out
}

// entryOf names the ledger entry the producer wrote payload p in: the
// messages of one batch share it.
func entryOf(id producer.ID) string {
	return fmt.Sprintf("%s/%d/%d:%d", id.Cluster, id.Partition, id.MessageID.LedgerID(), id.MessageID.EntryID())
}

// runs is what the two runs of the restart spec took, compared.
type runs struct {
	recv1, recv2   []string // taken, in order
	acked1, acked2 int      // Acks that returned nil
	entries        int      // ledger entries the messages were written in
	inFlight       int      // taken by the first run, Ack not returned at the kill
	// Acknowledged by neither run and not in flight at the kill: lost
	// (a few).
	lost  []string
	never []string // taken by the second run, never written (a few)
	// Taken by both runs: in all, whose Ack was in flight at the kill,
	// whose Ack had returned nil.
	again, againInFlight, againAcked int
	// Of againAcked, those with no message left unacknowledged by the
	// first run in their entry (and a few of them): pulsar-client-go's
	// batch exception does not explain them.
	againWhole  int
	unexplained []string
}

// compareRuns compares what the two runs took and acknowledged with
// what was written. A message of a batch is acknowledged to the broker
// only once every message of its batch (its entry) is: pulsar-client-go
// v0.21.0 returns nil at once from the Ack of the others, even with
// AckWithResponse, when batch index acknowledgement is off (the consumer
// does not turn it on). So a message whose Ack returned nil may come
// again when another message of its entry was not acknowledged.
func compareRuns(want written, first, second *child) runs {
	recv1, ids1, acked1 := first.snapshot()
	recv2, ids2, acked2 := second.snapshot()
	r := runs{recv1: recv1, recv2: recv2, acked1: len(acked1), acked2: len(acked2)}
	entries := map[string][]string{}
	for pl, id := range want {
		entries[entryOf(id)] = append(entries[entryOf(id)], pl)
	}
	r.entries = len(entries)
	inFlight := map[string]bool{}
	for _, pl := range recv1 {
		if !acked1[pl] {
			inFlight[pl] = true
		}
	}
	r.inFlight = len(inFlight)
	for pl := range want {
		if !acked1[pl] && !inFlight[pl] && !acked2[pl] && len(r.lost) < 10 {
			r.lost = append(r.lost, pl)
		}
	}
	for _, pl := range recv2 {
		if _, ok := want[pl]; !ok && len(r.never) < 10 {
			r.never = append(r.never, pl)
		}
		if _, ok := ids1[pl]; !ok {
			continue
		}
		r.again++
		if inFlight[pl] {
			r.againInFlight++
			continue
		}
		r.againAcked++
		partial := false
		for _, sib := range entries[entryOf(want[pl])] {
			partial = partial || !acked1[sib]
		}
		if !partial {
			r.againWhole++
			if len(r.unexplained) < 10 {
				r.unexplained = append(r.unexplained, fmt.Sprintf("%s (first %s, again %s)", pl, ids1[pl], ids2[pl]))
			}
		}
	}
	return r
}

var _ = Describe("a consumer process killed and started again", func() {
	DescribeTable("takes, in its second run, only what its first run had not acknowledged, and together they take everything",
		func(sctx SpecContext, batching bool) {
			ctx := specCtx(sctx, 6*time.Minute)
			topic := newTopic(ctx, "restart")
			ks := keys("restart", restartKeys)
			p := openProducer(ctx, topic, producer.Batching(batching))
			want := produce(ctx, p, ks, 0, restartPerKey)
			Expect(p.Close(ctx)).To(Succeed())
			topoFile := filepath.Join(GinkgoT().TempDir(), "topology.yaml")
			Expect(topo().WriteFile(topoFile)).To(Succeed())
			sub := "restart"

			// Kill after a random count of acknowledged messages, between
			// a tenth and a half of them.
			h := fnv.New64a()
			_, _ = h.Write([]byte(topic))
			rng := rand.New(rand.NewPCG(uint64(GinkgoRandomSeed()), h.Sum64()))
			killAt := len(want)/10 + rng.IntN(len(want)*4/10)

			suite.Step("first run, killed")
			start := time.Now()
			first := startChild(topoFile, topic, sub)
			Eventually(ctx, func() int64 {
				first.stopIfExited()
				return first.acks.Load()
			}).WithPolling(quiet/100).Should(BeNumerically(">=", killAt),
				"the first run acknowledges %d messages", killAt)
			first.kill()
			firstRan := time.Since(start)
			_, ids1, _ := first.snapshot()

			// A message the first run took but whose Ack had not returned
			// at the kill may or may not have been recorded by the broker:
			// it comes again, or it does not. Every other message is
			// acknowledged by one of the runs.
			suite.Step("second run, to the end")
			start = time.Now()
			second := startChild(topoFile, topic, sub)
			Eventually(ctx, func() int {
				second.stopIfExited()
				_, _, acked2 := second.snapshot()
				n := 0
				for pl := range want {
					if _, taken1 := ids1[pl]; !taken1 && !acked2[pl] {
						n++
					}
				}
				return n
			}).WithPolling(quiet/20).Should(BeZero(), "the second run acknowledges every message the first did not take")
			secondTook := time.Since(start)
			time.Sleep(quiet) // the Acks in flight at the kill that were not recorded come again: early
			second.finish()

			suite.Step("check")
			r := compareRuns(want, first, second)
			GinkgoWriter.Printf("batching %v, %d messages in %d entries, seed %d: first run killed after %d acknowledged (at %d; %s), %d taken, %d with their Ack in flight\n",
				batching, len(want), r.entries, GinkgoRandomSeed(), r.acked1, killAt, firstRan.Round(time.Millisecond), len(r.recv1), r.inFlight)
			GinkgoWriter.Printf("second run: %d taken in %s, of which %d taken by the first run too: %d of the %d whose Ack was in flight (the other %d were recorded), %d acknowledged in a batch acknowledged in part, %d unexplained\n",
				len(r.recv2), secondTook.Round(time.Millisecond), r.again, r.againInFlight, r.inFlight, r.inFlight-r.againInFlight,
				r.againAcked-r.againWhole, r.againWhole)

			Expect(r.never).To(BeEmpty(), "taken by the second run, never written")
			Expect(r.lost).To(BeEmpty(), "neither acknowledged by a run nor in flight at the kill")
			// The in-flight Acks that did not come again were recorded:
			// the broker holds no message back.
			bl := backlogs(ctx, topic, sub)
			Expect(bl).To(HaveEach(BeZero()), "the subscription's backlog once the second run has closed, by cluster")
			Expect(r.acked1).To(BeNumerically("<", len(want)), "the kill interrupted the first run")
			// Both children have exited and their output is read: their
			// fields are no longer written.
			Expect(first.ackErrs).To(BeEmpty(), "first run Ack errors")
			Expect(first.bad).To(BeEmpty())
			Expect(second.ackErrs).To(BeEmpty(), "second run Ack errors")
			Expect(second.bad).To(BeEmpty())
			Expect(second.done).To(Equal(fmt.Sprintf("done %d %d", len(r.recv2), r.acked2)),
				"the second run's Health counts what it took and acknowledged")
			n1, ex1 := ordered(deliveries(r.recv1))
			Expect(n1).To(BeZero(), "per-key order in the first run: %s", ex1)
			n2, ex2 := ordered(deliveries(r.recv2))
			Expect(n2).To(BeZero(), "per-key order in the second run: %s", ex2)
			Expect(r.acked2).To(Equal(len(r.recv2)), "the second run acknowledged everything it took")
			if batching {
				Expect(r.againWhole).To(BeZero(), "taken again though acknowledged, its whole batch too: %v", r.unexplained)
			} else {
				Expect(r.againAcked).To(BeZero(), "taken again though acknowledged by the first run: %v", r.unexplained)
			}
		},
		// One message per entry: an Ack that returned nil was answered by
		// the broker, so nothing acknowledged comes again.
		Entry("each message in an entry of its own (producer batching off)", false),
		// The producer's default: what comes again though acknowledged is
		// only what shares an entry with a message that was not.
		Entry("with the producer's batching", true),
	)
})
