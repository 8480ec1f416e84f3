//go:build e2e

package consumer

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/consumer"
	"github.com/keyroute/keyroute/internal/admin"
	"github.com/keyroute/keyroute/producer"
)

// growRate is the messages per second the growth spec offers over every
// cluster; growPhase is how long it writes before the growth and after
// both sides have seen it.
const (
	growRate  = 1000
	growKeys  = 1000
	growPhase = 8 * time.Second
	discovery = time.Second // both sides' PartitionsAutoDiscoveryInterval
)

var _ = Describe("partition growth under load", func() {
	It("Failover: the grown cluster's new partitions join the read set, the old ones are read on; none lost, none twice, every key in order", func(sctx SpecContext) {
		ctx := specCtx(sctx, 10*time.Minute)
		topic := newTopic(ctx, "grow")
		grown := bed.Clusters()[1]
		const to = partitions + 2

		p := openProducer(ctx, topic, producer.PartitionsAutoDiscoveryInterval(discovery))
		c, err := consumer.New(ctx, topo(), consumer.Topic(topic), consumer.Subscription("grow"),
			consumer.Type(consumer.Failover), consumer.PartitionsAutoDiscoveryInterval(discovery))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(c.Close(context.Background())).To(Succeed()) })
		r := startReader(ctx, c)

		// Health, watched through the growth: the grown cluster's rows.
		var (
			hmu     sync.Mutex
			errs    []error
			growing bool
		)
		wctx, stopWatch := context.WithCancel(ctx)
		watched := make(chan struct{})
		go func() {
			defer close(watched)
			for wctx.Err() == nil {
				for _, h := range c.Health(wctx) {
					if h.Cluster != grown.Name {
						continue
					}
					hmu.Lock()
					if h.Err != nil && wctx.Err() == nil {
						errs = append(errs, h.Err)
					}
					growing = growing || h.Growing
					hmu.Unlock()
				}
				time.Sleep(20 * time.Millisecond)
			}
		}()

		w := startWriter(ctx, p, keys("grow", growKeys))
		// The figures before the growth leave out the first half, where
		// the brokers and clients warm up.
		time.Sleep(growPhase / 2)
		warm := time.Now()
		time.Sleep(growPhase / 2)
		suite.Step(fmt.Sprintf("grow %s from %d to %d partitions under load", grown.Name, partitions, to))
		grewAt := time.Now()
		Expect(admin.Plain(grown.AdminURL).UpdatePartitions(ctx, topic, to)).To(Succeed())
		// One discovery interval, then a lookup and the subscribes, each
		// within the operation timeout.
		Eventually(ctx, func() int { return p.Partitions()[1] }).WithTimeout(2*discovery + opTimeout).Should(Equal(to))
		Eventually(ctx, func() int {
			for _, h := range c.Health(ctx) {
				if h.Cluster == grown.Name {
					return h.Partitions
				}
			}
			return 0
		}).WithTimeout(2*discovery + 2*opTimeout).Should(Equal(to))
		seenAt := time.Now()
		time.Sleep(growPhase)
		want, sentAt := w.stop()
		got, _ := drain(ctx, want, r)
		stopWatch()
		<-watched

		f := check(got[0], want)
		GinkgoWriter.Printf("growth of %s: %s; seen by both sides %s after the update\n", grown.Name, f, seenAt.Sub(grewAt).Round(time.Millisecond))
		expectComplete(f)
		hmu.Lock()
		Expect(errs).To(BeEmpty(), "Health errors of %s through the growth", grown.Name)
		GinkgoWriter.Printf("Health showed Growing: %v\n", growing)
		hmu.Unlock()

		// Unmoved keys of the grown cluster: written there, every message
		// on one partition, before the growth and after.
		part := map[string]int{}
		moved := map[string]bool{}
		for v, id := range want {
			k, _, _ := parsePayload(v)
			if id.Cluster != grown.Name {
				moved[k] = true // on another cluster: not the grown one's
				continue
			}
			if q, ok := part[k]; ok && q != id.Partition {
				moved[k] = true
			}
			part[k] = id.Partition
		}
		// Latencies by window: before the growth, while both sides find
		// it, after; for the grown cluster's unmoved keys and for the
		// other clusters.
		var before, during, after, otherBefore, otherDuring, otherAfter []time.Duration
		for _, d := range got[0] {
			sent := sentAt[d.payload]
			lat := d.at.Sub(sent)
			unmoved := d.id.Cluster == grown.Name && !moved[d.key]
			other := d.id.Cluster != grown.Name
			switch {
			case sent.Before(warm) || !unmoved && !other:
			case sent.Before(grewAt) && unmoved:
				before = append(before, lat)
			case sent.Before(grewAt):
				otherBefore = append(otherBefore, lat)
			case sent.Before(seenAt) && unmoved:
				during = append(during, lat)
			case sent.Before(seenAt):
				otherDuring = append(otherDuring, lat)
			case unmoved:
				after = append(after, lat)
			default:
				otherAfter = append(otherAfter, lat)
			}
		}
		unmoved := 0
		for k := range part {
			if !moved[k] {
				unmoved++
			}
		}
		GinkgoWriter.Printf("%s's unmoved keys (%d of %d), end-to-end p50/p99: before the growth %s (%d messages), while found %s (%d), after %s (%d)\n",
			grown.Name, unmoved, len(part), pct(before), len(before), pct(during), len(during), pct(after), len(after))
		GinkgoWriter.Printf("other clusters, end-to-end p50/p99: before %s (%d messages), while found %s (%d), after %s (%d)\n",
			pct(otherBefore), len(otherBefore), pct(otherDuring), len(otherDuring), pct(otherAfter), len(otherAfter))
		Expect(before).NotTo(BeEmpty())
		Expect(after).NotTo(BeEmpty())
	})
})

// writer sends a steady load through a keyroute producer, round after
// round over its keys, and notes when each message was sent.
type writer struct {
	mu     sync.Mutex // guards out, sentAt and failed
	out    written
	sentAt map[string]time.Time
	failed map[string]error

	p      *producer.Producer
	cancel context.CancelFunc
	done   chan struct{}
}

// startWriter starts writing through p at growRate until stop.
func startWriter(ctx context.Context, p *producer.Producer, ks []string) *writer {
	wctx, cancel := context.WithCancel(ctx)
	w := &writer{out: written{}, sentAt: map[string]time.Time{}, failed: map[string]error{}, p: p, cancel: cancel, done: make(chan struct{})}
	go w.run(wctx, ctx, ks)
	DeferCleanup(func() { cancel(); <-w.done })
	return w
}

// run writes until ctx ends; each send is bounded by sendCtx, which
// outlives it (a message in flight when the writing stops is not failed).
func (w *writer) run(ctx, sendCtx context.Context, ks []string) {
	defer close(w.done)
	const tick = 10 * time.Millisecond
	per := growRate * int(tick) / int(time.Second)
	t := time.NewTicker(tick)
	defer t.Stop()
	i := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for range per {
			k := ks[i%len(ks)]
			v := payload(k, i/len(ks))
			i++
			w.mu.Lock()
			w.sentAt[v] = time.Now()
			w.mu.Unlock()
			w.p.SendAsync(sendCtx, &producer.Message{Key: k, Value: []byte(v)}, func(id producer.ID, _ *producer.Message, err error) {
				w.mu.Lock()
				defer w.mu.Unlock()
				if err != nil {
					w.failed[v] = err
					return
				}
				w.out[v] = id
			})
		}
	}
}

// stop ends the writing, flushes, and returns what the producer
// acknowledged and when each message was sent; every message must be
// acknowledged (the clusters are healthy).
func (w *writer) stop() (written, map[string]time.Time) {
	GinkgoHelper()
	w.cancel()
	<-w.done
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	Expect(w.p.Flush(ctx)).To(Succeed())
	w.mu.Lock()
	defer w.mu.Unlock()
	Expect(w.failed).To(BeEmpty(), "messages the producer failed on healthy clusters")
	Expect(w.out).To(HaveLen(len(w.sentAt)), "every message has its outcome after Flush")
	GinkgoWriter.Printf("wrote %d messages\n", len(w.out))
	return w.out, w.sentAt
}

// pct returns the median and 99th percentile of ds as "p50/p99", "-"
// for none.
func pct(ds []time.Duration) string {
	if len(ds) == 0 {
		return "-"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(q int) time.Duration { return s[min(len(s)-1, len(s)*q/100)].Round(time.Millisecond) }
	return fmt.Sprintf("%s/%s", at(50), at(99))
}
