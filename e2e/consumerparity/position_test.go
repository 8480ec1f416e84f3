//go:build e2e

package consumerparity

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/consumer"
	"github.com/keyroute/keyroute/producer"
)

var _ = Describe("Positions", func() {
	// With batches, a saved ID is mostly inside one: the broker moves a
	// cursor by entry, and the consumer skips the batch's start. Without,
	// the broker's exclusive reset alone places it.
	for _, batching := range []bool{true, false} {
		Context(fmt.Sprint("batching ", batching), func() {
			positionSpecs(batching)
		})
	}
})

func positionSpecs(batching bool) {
	for _, fresh := range []bool{false, true} {
		resumeSpec(batching, fresh)
	}
	seekSpec(batching)
}

// resumeSpec resumes on the same subscription, or (fresh) on a new one,
// which StartAfter creates at the positions.
func resumeSpec(batching, fresh bool) {
	It(fmt.Sprintf("resumes a fresh consumer exactly after the IDs it saved (StartAfter, new subscription %v): none missing, none twice, each key in order", fresh), func(sctx SpecContext) {
		ctx := specCtx(sctx, 3*time.Minute)
		topic := newTopic(ctx, "resume")
		p := openProducer(ctx, topic, producer.Batching(batching))
		sent := map[string]int{}
		sendKeyed(ctx, p, sent, 400)

		// The first reader processes some messages, saves the ID of the
		// last one of each cluster and partition as text, and
		// acknowledges only the first half: without the positions, the
		// rest of what it processed would come again.
		const processed = 250
		c := openConsumer(ctx, topic, "resume")
		got := map[string][]int{} // per key, the sequence numbers processed, in order
		saved := map[string]string{}
		for i := range processed {
			m, err := c.Receive(ctx)
			Expect(err).NotTo(HaveOccurred())
			got[m.Key] = append(got[m.Key], seqOf(m))
			saved[partOf(m)] = m.ID.String()
			if i < processed/2 {
				Expect(c.Ack(ctx, m)).To(Succeed())
			}
		}
		Expect(c.Close(ctx)).To(Succeed())
		sendKeyed(ctx, p, sent, 200)

		var from []consumer.ID
		for _, text := range saved {
			id, err := consumer.ParseID(text)
			Expect(err).NotTo(HaveOccurred())
			from = append(from, id)
		}
		sub := "resume"
		if fresh {
			sub = "resume-new" // a partition not positioned starts at Earliest, as the first reader did
		}
		c2 := openConsumer(ctx, topic, sub, consumer.StartAfter(from...))
		if !batching {
			// The broker's own record: the saved message itself counts as
			// processed (the reset excludes it). Inside a batch the
			// broker stops at the batch, and the consumer skips its start.
			for _, id := range from {
				Expect(markDelete(ctx, id, topic, sub)).To(Equal(fmt.Sprintf("%d:%d", id.Pulsar.LedgerID(), id.Pulsar.EntryID())), "%s", id)
			}
		}
		seen := map[string]bool{}
		for range 600 - processed {
			m, err := c2.Receive(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(seqOf(m)).To(Equal(len(got[m.Key])), "key %s at %s: the next one expected (not one processed, not past a gap)", m.Key, m.ID)
			got[m.Key] = append(got[m.Key], seqOf(m))
			seen[partOf(m)] = true
			Expect(c2.Ack(ctx, m)).To(Succeed())
		}
		for key, n := range sent {
			Expect(got[key]).To(HaveLen(n), "key %s", key)
		}
		// Every partition positioned delivered after its position: a
		// message at or before it would have come before those (a
		// partition's order), and was refused above.
		for part := range saved {
			Expect(seen).To(HaveKey(part))
		}
		GinkgoWriter.Printf("resumed after %d positions (%v): %d processed before, %d after\n", len(saved), from, processed, 600-processed)
	})
}

func seekSpec(batching bool) {
	It("moves a running consumer back to an earlier ID (SeekByID): that partition is read again from just after it, nothing else", func(sctx SpecContext) {
		ctx := specCtx(sctx, 3*time.Minute)
		topic := newTopic(ctx, "seekback")
		p := openProducer(ctx, topic, producer.Batching(batching))
		sent := map[string]int{}
		const n = 300
		sendKeyed(ctx, p, sent, n)
		c := openConsumer(ctx, topic, "seekback")
		type read struct {
			id   consumer.ID
			part string
			key  string
			seq  int
		}
		var all []read
		for range n {
			m, err := c.Receive(ctx)
			Expect(err).NotTo(HaveOccurred())
			all = append(all, read{m.ID, partOf(m), m.Key, seqOf(m)})
			Expect(c.Ack(ctx, m)).To(Succeed())
		}
		pick := all[n/3]
		var want []read
		for _, r := range all[n/3+1:] {
			if r.part == pick.part {
				want = append(want, r)
			}
		}
		Expect(want).NotTo(BeEmpty())

		Expect(c.SeekByID(ctx, pick.id)).To(Succeed())
		for i, w := range want {
			m, err := c.Receive(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect([]any{partOf(m), m.Key, seqOf(m)}).To(Equal([]any{w.part, w.key, w.seq}), "re-read #%d after %s", i, pick.id)
			Expect(c.Ack(ctx, m)).To(Succeed())
		}
		// Then only new messages: none of the other partitions comes again.
		before := map[string]int{}
		for k, v := range sent {
			before[k] = v
		}
		sendKeyed(ctx, p, sent, 100)
		for range 100 {
			m, err := c.Receive(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(seqOf(m)).To(BeNumerically(">=", before[m.Key]), "key %s at %s came again", m.Key, m.ID)
			before[m.Key] = seqOf(m) + 1
			Expect(c.Ack(ctx, m)).To(Succeed())
		}
		GinkgoWriter.Printf("sought back to %s: %d messages of %s read again\n", pick.id, len(want), pick.part)
	})
}

// sendKeyed sends n messages over 40 keys, each message's value its
// key's sequence number (counted in sent), and waits for every outcome.
func sendKeyed(ctx context.Context, p *producer.Producer, sent map[string]int, n int) {
	GinkgoHelper()
	var mu sync.Mutex
	var errs []error
	for i := range n {
		key := fmt.Sprint("k-", i%40)
		p.SendAsync(ctx, &producer.Message{Key: key, Value: []byte(strconv.Itoa(sent[key]))}, func(_ producer.ID, _ *producer.Message, err error) {
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
		sent[key]++
	}
	Expect(p.Flush(ctx)).To(Succeed())
	mu.Lock()
	defer mu.Unlock()
	Expect(errs).To(BeEmpty())
}

func seqOf(m *consumer.Message) int {
	GinkgoHelper()
	n, err := strconv.Atoi(string(m.Value))
	Expect(err).NotTo(HaveOccurred())
	return n
}

// partOf names a message's cluster and partition.
func partOf(m *consumer.Message) string { return fmt.Sprint(m.ID.Cluster, "/", m.ID.Partition) }

// markDelete asks id's cluster for the mark-delete position
// ("ledger:entry") of subscription sub on id's partition of topic.
func markDelete(ctx context.Context, id consumer.ID, topic, sub string) string {
	GinkgoHelper()
	cl := bed.Cluster(id.Cluster)
	Expect(cl).NotTo(BeNil())
	url := fmt.Sprintf("%s/admin/v2/persistent/%s-partition-%d/internalStats", cl.AdminURL, topic[len("persistent://"):], id.Partition)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	Expect(err).NotTo(HaveOccurred())
	resp, err := http.DefaultClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	Expect(resp.StatusCode).To(Equal(http.StatusOK), url)
	var stats struct {
		Cursors map[string]struct {
			MarkDeletePosition string `json:"markDeletePosition"`
		} `json:"cursors"`
	}
	Expect(json.NewDecoder(resp.Body).Decode(&stats)).To(Succeed())
	return stats.Cursors[sub].MarkDeletePosition
}
