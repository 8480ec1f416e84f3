//go:build e2e

package producer

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/e2e/internal/consume"
	"github.com/keyroute/keyroute/producer"
)

// received is one consumed message with its "key|seq" payload parsed.
type received struct {
	cluster   string
	partition int
	key       string
	seq       int
}

// consumeAll reads topic back from every cluster: until want messages have
// arrived and then nothing more for 3 s, so that duplicates beyond want
// show up too.
func consumeAll(ctx context.Context, topic string, want int) []received {
	got, err := consume.All(ctx, bed.Clusters(), topic, "verify", want, 3*time.Second)
	Expect(err).NotTo(HaveOccurred())
	out := make([]received, len(got))
	for i, m := range got {
		key, seq, _ := strings.Cut(m.Payload, "|")
		n, err := strconv.Atoi(seq)
		Expect(err).NotTo(HaveOccurred(), "payload %q", m.Payload)
		out[i] = received{cluster: m.Cluster, partition: m.Partition, key: key, seq: n}
	}
	return out
}

var _ = Describe("routing producer on five real clusters", func() {
	It("delivers 100,000 async and 1,000 sync messages exactly once, in key order, where router says", func(sctx SpecContext) {
		ctx, cancel := context.WithTimeout(sctx, 10*time.Minute)
		defer cancel()
		topic := newTopic(ctx, "delivery")
		p, err := producer.New(ctx, bed.Topology(), producer.Topic(topic), producer.Compression(producer.LZ4))
		Expect(err).NotTo(HaveOccurred())
		Expect(p.Partitions()).To(Equal([]int{5, 5, 5, 5, 5}))

		const keys, async, sync = 10_000, 100_000, 1_000
		keyName := func(i int) string { return fmt.Sprintf("user-%05d", i) }
		next := make([]int, keys) // next sequence number per key
		var failed, acked sync_counter
		start := time.Now()
		total := async + sync
		every := total / sync // every 101st message is a sync send
		for i := 0; i < total; i++ {
			k := i % keys
			msg := &producer.Message{Key: keyName(k), Value: []byte(fmt.Sprintf("%s|%d", keyName(k), next[k]))}
			next[k]++
			if i%every == every-1 {
				id, err := p.Send(ctx, msg)
				Expect(err).NotTo(HaveOccurred())
				c, part := p.Placement(msg.Key)
				Expect(id.Cluster).To(Equal(c))
				Expect(id.Partition).To(Equal(part))
				acked.add(1)
				continue
			}
			p.SendAsync(ctx, msg, func(id producer.ID, m *producer.Message, err error) {
				if err != nil {
					failed.add(1)
					return
				}
				acked.add(1)
			})
		}
		Expect(p.Flush(ctx)).To(Succeed())
		GinkgoWriter.Printf("produced %d in %s (%.0f msg/s)\n", total, time.Since(start), float64(total)/time.Since(start).Seconds())
		Expect(failed.get()).To(BeZero())
		Expect(acked.get()).To(Equal(total))
		Expect(p.Close(ctx)).To(Succeed())

		got := consumeAll(ctx, topic, total)
		Expect(got).To(HaveLen(total))

		type place struct {
			cluster string
			part    int
		}
		where := map[string]place{}
		lastSeq := map[string]int{}
		seen := map[string]bool{}
		perCluster := map[string]int{}
		for _, r := range got {
			id := fmt.Sprintf("%s|%d", r.key, r.seq)
			Expect(seen[id]).To(BeFalse(), "duplicate %s", id)
			seen[id] = true
			perCluster[r.cluster]++
			pl := place{r.cluster, r.partition}
			if prev, ok := where[r.key]; ok {
				Expect(pl).To(Equal(prev), "key %s on two places", r.key)
			} else {
				c, part := p.Placement(r.key)
				Expect(pl).To(Equal(place{c, part}), "key %s not where router says", r.key)
				where[r.key] = pl
				lastSeq[r.key] = -1
			}
			Expect(r.seq).To(Equal(lastSeq[r.key]+1), "key %s out of order", r.key)
			lastSeq[r.key] = r.seq
		}
		for k := 0; k < keys; k++ {
			Expect(lastSeq[keyName(k)]).To(Equal(next[k]-1), "key %s incomplete", keyName(k))
		}
		GinkgoWriter.Printf("per cluster: %v\n", perCluster)
		Expect(perCluster).To(HaveLen(5))
		for name, n := range perCluster {
			Expect(float64(n)).To(BeNumerically("~", float64(total)/5, float64(total)/5*0.10), name)
		}
	})

	It("rejects a message over the broker's size limit with a clear error, and others still go", func(sctx SpecContext) {
		ctx, cancel := context.WithTimeout(sctx, 2*time.Minute)
		defer cancel()
		topic := newTopic(ctx, "large")
		p, err := producer.New(ctx, bed.Topology(), producer.Topic(topic))
		Expect(err).NotTo(HaveOccurred())
		defer p.Close(ctx)
		big := &producer.Message{Key: "big", Value: make([]byte, 6<<20)}
		_, err = p.Send(ctx, big)
		Expect(err).To(MatchError(producer.ErrMessageTooLarge))
		var se *producer.SendError
		Expect(err).To(BeAssignableToTypeOf(se))
		Expect(err.Error()).To(ContainSubstring(`key "big"`))
		var asyncErr error
		done := make(chan struct{})
		p.SendAsync(ctx, big, func(_ producer.ID, _ *producer.Message, err error) { asyncErr = err; close(done) })
		<-done
		Expect(asyncErr).To(MatchError(producer.ErrMessageTooLarge))
		_, err = p.Send(ctx, &producer.Message{Key: "small", Value: []byte("ok")})
		Expect(err).NotTo(HaveOccurred())
	})

	It("Close flushes accepted async messages and fails later sends with ErrClosed", func(sctx SpecContext) {
		ctx, cancel := context.WithTimeout(sctx, 2*time.Minute)
		defer cancel()
		topic := newTopic(ctx, "close")
		p, err := producer.New(ctx, bed.Topology(), producer.Topic(topic), producer.Linger(time.Second))
		Expect(err).NotTo(HaveOccurred())
		var ok, failed sync_counter
		const n = 5000
		for i := 0; i < n; i++ {
			p.SendAsync(ctx, &producer.Message{Key: strconv.Itoa(i), Value: []byte(fmt.Sprintf("%d|0", i))}, func(_ producer.ID, _ *producer.Message, err error) {
				if err != nil {
					failed.add(1)
				} else {
					ok.add(1)
				}
			})
		}
		Expect(p.Close(ctx)).To(Succeed())
		Expect(ok.get()).To(Equal(n))
		Expect(failed.get()).To(BeZero())
		_, err = p.Send(ctx, &producer.Message{Key: "late"})
		Expect(err).To(MatchError(producer.ErrClosed))
		Expect(consumeAll(ctx, topic, n)).To(HaveLen(n))
	})
})

type sync_counter struct {
	mu sync.Mutex
	n  int
}

func (c *sync_counter) add(d int) { c.mu.Lock(); c.n += d; c.mu.Unlock() }
func (c *sync_counter) get() int  { c.mu.Lock(); defer c.mu.Unlock(); return c.n }
