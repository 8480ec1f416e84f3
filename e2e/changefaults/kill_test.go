//go:build e2e

package changefaults

import (
	"context"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/consumer"
	"github.com/keyroute/keyroute/e2e/internal/ordercheck"
	"github.com/keyroute/keyroute/producer"
)

// burst sends rounds messages of each key through p's SendAsync, recorded
// in l under name, and waits, within sendBound, for every outcome; each
// must be an acknowledgement.
func burst(ctx context.Context, p *producer.Producer, l *ordercheck.Ledger, name string, keys []string, rounds int) {
	GinkgoHelper()
	var wg sync.WaitGroup
	var mu sync.Mutex // guards failed
	var failed []error
	for range rounds {
		for _, k := range keys {
			s, payload := l.Next(name, k)
			wg.Add(1)
			p.SendAsync(ctx, &producer.Message{Key: k, Value: payload}, func(_ producer.ID, _ *producer.Message, err error) {
				defer wg.Done()
				l.Done(s, time.Now(), err)
				if err != nil {
					mu.Lock()
					failed = append(failed, err)
					mu.Unlock()
				}
			})
		}
	}
	_, err := within(ctx, sendBound, p.Flush)
	Expect(err).NotTo(HaveOccurred())
	all := make(chan struct{})
	go func() { wg.Wait(); close(all) }()
	Eventually(all).WithTimeout(sendBound).Should(BeClosed(), "every message of %s has its outcome", name)
	Expect(failed).To(BeEmpty())
}

// keysOf returns the keys of keys that topo routes to cluster.
func keysOf(topo map[string]string, keys []string, cluster string) []string {
	var out []string
	for _, k := range keys {
		if topo[k] == cluster {
			out = append(out, k)
		}
	}
	return out
}

var _ = Describe("a process SIGKILLed during a change", func() {
	It("the consumer, while it holds moved messages: a new consumer on the subscription gets every acknowledged message, each key's in order", func(sctx SpecContext) {
		ctx := specCtx(sctx, 4*updateBound)
		a, b, c := clusters()
		topic := newTopic(ctx, "ckill", a, b, c)
		fullTopo, drainedTopo := topoOf(a.Name, b.Name, c.Name), topoOf(a.Name, c.Name)
		// b's keys: all move when b is drained. A backlog on b that the
		// consumer reads after the moved messages' first arrive makes it
		// hold them.
		keys := keysOf(owners(fullTopo, keysN("k", 300)), keysN("k", 300), b.Name)
		Expect(keys).NotTo(BeEmpty())
		p := openProducer(ctx, fullTopo, topic)
		l := ordercheck.NewLedger()
		burst(ctx, p, l, "p", keys, 100)
		_, err := within(ctx, updateBound, func(ctx context.Context) error { return p.Update(ctx, drainedTopo) })
		Expect(err).NotTo(HaveOccurred())
		burst(ctx, p, l, "p", keys, 5)
		Eventually(func() bool { ch, _ := p.LastChange(); return ch.Done }).WithTimeout(sendBound).Should(BeTrue())
		ch, _ := p.LastChange()
		GinkgoWriter.Printf("%d keys, %d messages acknowledged; change: %+v\n", len(keys), acked(l), ch)

		By("reading in a child process until it holds, then SIGKILLing it")
		kid := startChild(l, childEnv+"=consumer", childTopo+"="+writeTopo(fullTopo), childTopic+"="+topic, childSub+"=ckill")
		kid.await("ready", 2*startTimeout)
		holding := kid.await("holding", sendBound)
		kid.Kill()
		kid.mu.Lock()
		var first []ordercheck.Got // what the child took and the broker acknowledged, in order
		for _, pl := range kid.recv {
			if kid.acked[pl] {
				first = append(first, ordercheck.Got{Payload: []byte(pl)})
			}
		}
		took := len(kid.recv)
		kid.mu.Unlock()
		GinkgoWriter.Printf("child: %s, took %d, acknowledged %d\n", holding, took, len(first))

		By("reading the rest with a new consumer on the same subscription")
		cons := openConsumer(ctx, fullTopo, topic, "ckill")
		rd := startReader(ctx, cons)
		Eventually(func() int {
			return ordercheck.Check(l, append(append([]ordercheck.Got(nil), first...), rd.snapshot()...)).Lost
		}).WithTimeout(consumer.DefaultHoldTimeout+sendBound).WithPolling(200*time.Millisecond).Should(BeZero(),
			"acknowledged messages not delivered by the two consumers")
		rd.cancel()
		<-rd.done
		// What the child acknowledged can come again: Pulsar acknowledges
		// a batch's entry once all its messages are (unless batch index
		// acknowledgement is on), and the rest of the child's batches
		// were not. A new process counts no redelivery (Health).
		r := ordercheck.Check(l, append(first, rd.snapshot()...))
		GinkgoWriter.Printf("child then new consumer: %s\n", r)
		Expect(r.Lost).To(BeZero(), "%v", r.Examples)
		Expect(r.Unknown).To(BeZero(), "%v", r.Examples)
		Expect(r.Duplicated).To(BeNumerically("<=", len(first)), "duplicates beyond what the child acknowledged: %v", r.Examples)
		Expect(r.Reordered).To(BeZero(), "every cluster up: no break of order: %v", r.Examples)
		for _, h := range cons.Health(ctx) {
			GinkgoWriter.Printf("new consumer: %s: delivered %d, held %d, markers %d, forced %d, unordered %d\n",
				h.Cluster, h.Delivered, h.HeldTotal, h.Markers, h.ForcedReleases, h.Unordered)
			Expect(h.ForcedReleases).To(BeZero(), "%s: the markers the child held for were not acknowledged, so they come again", h.Cluster)
			Expect(h.Held).To(BeZero(), "%s: every hold ended", h.Cluster)
		}
	})

	It("the producer, after one old owner's marker was acknowledged and before the other's: a restarted producer and the consumer lose nothing acknowledged, keep each instance's order, and every hold ends", func(sctx SpecContext) {
		ctx := specCtx(sctx, 4*updateBound)
		a, b, c := clusters()
		topic := newTopic(ctx, "pkill", a, b, c)
		oldTopo, newTopo := topoOf(a.Name, b.Name), topoOf(a.Name, b.Name, c.Name)
		keys := keysN("k", 60)
		before, after := owners(oldTopo, keys), owners(newTopo, keys)
		var fromA []string // keys that move from a to c: released once a's marker is acknowledged
		for _, k := range keys {
			if before[k] == a.Name && after[k] == c.Name {
				fromA = append(fromA, k)
			}
		}
		Expect(fromA).NotTo(BeEmpty())
		l := ordercheck.NewLedger()
		cons := openConsumer(ctx, newTopo, topic, "pkill")
		rd := startReader(ctx, cons)

		kid := startChild(l, childEnv+"=producer", childTopo+"="+writeTopo(oldTopo), childNewTopo+"="+writeTopo(newTopo),
			childTopic+"="+topic, childName+"=dead", childKeys+"="+strings.Join(keys, ","))
		Eventually(kid.acks).WithTimeout(sendBound).Should(BeNumerically(">=", 2*len(keys)))

		By("stopping " + b.Name + "'s JVM, then having the child add " + c.Name + ": keys move from " + a.Name + " and " + b.Name)
		resume := pause(b)
		_, err := io.WriteString(kid.Stdin, "update\n")
		Expect(err).NotTo(HaveOccurred())
		updated := kid.await("updated", updateBound)
		updatedAt := time.Now()
		// A message of a key moved from a, sent after the change and
		// acknowledged, was released: a's marker was acknowledged. b's
		// cannot be (b is stopped): its keys' messages are held.
		Eventually(func() bool {
			for _, s := range l.All() {
				if slices.Contains(fromA, s.Key) && s.At.After(updatedAt) && !s.AckAt.IsZero() {
					return true
				}
			}
			return false
		}).WithTimeout(sendBound).Should(BeTrue(), "a key moved from %s released", a.Name)
		kid.Kill()
		GinkgoWriter.Printf("child: %s, then killed; %d of its messages acknowledged\n", updated, kid.acks())
		resume()

		By("a restarted producer on the new topology")
		p := openProducer(ctx, newTopo, topic)
		burst(ctx, p, l, "restarted", keys, 5)

		got := rd.waitAll(l, consumer.DefaultHoldTimeout+sendBound)
		r := checkRead(ctx, "consumer", l, got, cons)
		Expect(r.Reordered).To(BeZero(), "%v", r.Examples)
		for _, h := range cons.Health(ctx) {
			Expect(h.Held).To(BeZero(), "%s: every hold ended", h.Cluster)
			if h.Cluster == a.Name {
				Expect(h.Markers).To(BeNumerically(">", 0), "the dead producer's markers on %s", a.Name)
			}
			// The dead producer released only what waited for a's
			// markers, which are read; what waited for b's died with it.
			Expect(h.ForcedReleases).To(BeZero(), "%s", h.Cluster)
		}
	})
})
