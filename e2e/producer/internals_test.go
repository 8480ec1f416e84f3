//go:build e2e

package producer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The specs below check, against a real broker and with plain
// pulsar-client-go, the facts about pulsar-client-go v0.21.0 that
// producer/internals.go relies on beyond its documented API.

// called is one call of a SendAsync callback.
type called struct {
	id  pulsar.MessageID
	pm  *pulsar.ProducerMessage
	err error
}

// callbacks records SendAsync callbacks by the message they were given for.
type callbacks struct {
	mu    sync.Mutex
	wg    sync.WaitGroup
	calls map[*pulsar.ProducerMessage][]called // by the pointer given to SendAsync
}

// send hands pm to w.SendAsync with a callback that records what it got.
func (c *callbacks) send(ctx context.Context, w pulsar.Producer, pm *pulsar.ProducerMessage) {
	c.mu.Lock()
	if c.calls == nil {
		c.calls = map[*pulsar.ProducerMessage][]called{}
	}
	c.calls[pm] = nil
	c.mu.Unlock()
	c.wg.Add(1)
	w.SendAsync(ctx, pm, func(id pulsar.MessageID, got *pulsar.ProducerMessage, err error) {
		c.mu.Lock()
		c.calls[pm] = append(c.calls[pm], called{id, got, err})
		c.mu.Unlock()
		c.wg.Done()
	})
}

// wait waits until every callback has been called once, or ctx ends.
func (c *callbacks) wait(ctx context.Context) {
	GinkgoHelper()
	done := make(chan struct{})
	go func() { c.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		Fail("callbacks not called before the ctx ended")
	}
}

// of returns the one call of pm's callback.
func (c *callbacks) of(pm *pulsar.ProducerMessage) called {
	GinkgoHelper()
	c.mu.Lock()
	defer c.mu.Unlock()
	Expect(c.calls[pm]).To(HaveLen(1), "the callback is called exactly once")
	return c.calls[pm][0]
}

var _ = Describe("pulsar-client-go v0.21.0 facts producer/internals.go relies on", func() {
	var (
		ctx    context.Context
		topic  string
		part   string // partition 0 of topic, as the SDK opens it
		client pulsar.Client
	)
	BeforeEach(func(sctx SpecContext) {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(sctx), 2*time.Minute)
		DeferCleanup(cancel)
		topic = newTopic(ctx, "internals")
		part = topic + "-partition-0"
		client = plainClient(bed.Clusters()[0])
	})

	newProducer := func(o pulsar.ProducerOptions) pulsar.Producer {
		GinkgoHelper()
		o.Topic = part
		w, err := client.CreateProducer(o)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(w.Close)
		return w
	}

	It("hands every SendAsync callback the very *ProducerMessage it was given: batched, unbatched, and failed inline (too large, ended ctx, invalid)", func() {
		ended, cancel := context.WithCancel(ctx)
		cancel()
		for _, batched := range []bool{true, false} {
			By(fmt.Sprintf("batching %v", batched))
			w := newProducer(pulsar.ProducerOptions{DisableBatching: !batched, BatchingMaxPublishDelay: time.Hour})
			var cbs callbacks
			var ok []*pulsar.ProducerMessage
			for i := range 20 {
				pm := &pulsar.ProducerMessage{Key: "k", Payload: []byte(fmt.Sprint(i))}
				ok = append(ok, pm)
				cbs.send(ctx, w, pm)
			}
			tooLarge := &pulsar.ProducerMessage{Key: "k", Payload: make([]byte, 6<<20)} // the broker's limit is 5 MiB
			canceled := &pulsar.ProducerMessage{Key: "k", Payload: []byte("ended ctx")}
			invalid := &pulsar.ProducerMessage{Key: "k", Payload: []byte("p"), Value: "v"}
			cbs.send(ctx, w, tooLarge)
			cbs.send(ended, w, canceled)
			cbs.send(ctx, w, invalid)
			Expect(w.FlushWithCtx(ctx)).To(Succeed())
			cbs.wait(ctx)

			batches := map[[2]int64]int{}
			for _, pm := range ok {
				c := cbs.of(pm)
				Expect(c.err).NotTo(HaveOccurred())
				Expect(c.pm).To(BeIdenticalTo(pm))
				batches[[2]int64{c.id.LedgerID(), c.id.EntryID()}]++
			}
			if batched {
				Expect(batches).To(HaveLen(1), "the 20 messages went in one batch")
			} else {
				Expect(batches).To(HaveLen(20), "each message went alone")
			}
			for pm, want := range map[*pulsar.ProducerMessage]error{tooLarge: pulsar.ErrMessageTooLarge, canceled: context.Canceled, invalid: pulsar.ErrInvalidMessage} {
				c := cbs.of(pm)
				Expect(c.pm).To(BeIdenticalTo(pm), "%v", want)
				Expect(errors.Is(c.err, want)).To(BeTrue(), "want %v, got %v", want, c.err)
				Expect(c.id).To(BeNil(), "%v", want)
			}
		}
	})

	It("sends a message whose DeliverAt is the Unix epoch alone and without a delivery time, while the messages around it are batched; it overtakes the open batch", func() {
		// A Linger of an hour: only the flush below sends the batch.
		w := newProducer(pulsar.ProducerOptions{BatchingMaxPublishDelay: time.Hour, BatchingMaxMessages: 1000})
		var cbs callbacks
		var batched []*pulsar.ProducerMessage
		for i := range 5 {
			pm := &pulsar.ProducerMessage{Key: "k", Payload: []byte(fmt.Sprint("a", i))}
			batched = append(batched, pm)
			cbs.send(ctx, w, pm)
		}
		alone := &pulsar.ProducerMessage{Key: "k", Payload: []byte("alone"), DeliverAt: time.Unix(0, 0)}
		cbs.send(ctx, w, alone)
		// The control: one nanosecond later, a delivery time is set.
		delayed := &pulsar.ProducerMessage{Key: "k", Payload: []byte("delayed"), DeliverAt: time.Unix(0, 1)}
		cbs.send(ctx, w, delayed)
		for i := range 5 {
			pm := &pulsar.ProducerMessage{Key: "k", Payload: []byte(fmt.Sprint("b", i))}
			batched = append(batched, pm)
			cbs.send(ctx, w, pm)
		}
		Expect(w.FlushWithCtx(ctx)).To(Succeed())
		cbs.wait(ctx)

		first := cbs.of(batched[0]).id
		for i, pm := range batched {
			c := cbs.of(pm)
			Expect(c.err).NotTo(HaveOccurred())
			Expect([2]int64{c.id.LedgerID(), c.id.EntryID()}).To(Equal([2]int64{first.LedgerID(), first.EntryID()}), "one batch")
			Expect(c.id.BatchSize()).To(BeEquivalentTo(len(batched)), "the batch holds all the others")
			Expect(c.id.BatchIdx()).To(BeEquivalentTo(i), "in order")
		}
		a := cbs.of(alone)
		Expect(a.err).NotTo(HaveOccurred())
		Expect(a.id.BatchSize()).To(BeNumerically("<=", 1), "sent alone")
		Expect(a.id.EntryID()).NotTo(Equal(first.EntryID()))
		Expect(a.id.EntryID()).To(BeNumerically("<", first.EntryID()),
			"the lone message is written at once, before the batch still open when it was handed over (why the SDK flushes before a transaction's messages)")

		stored := storedEntry(ctx, bed.Clusters()[0], topic, 0, a.id)
		Expect(string(stored.body)).To(Equal("alone"))
		Expect(stored.header.Get("X-Pulsar-Num-Batch-Message")).To(BeEmpty(), "not a batch")
		Expect(stored.header.Get("X-Pulsar-Deliver-At-Time")).To(BeEmpty(), "no delivery time")
		d := cbs.of(delayed)
		Expect(d.err).NotTo(HaveOccurred())
		Expect(d.id.BatchSize()).To(BeNumerically("<=", 1), "sent alone")
		control := storedEntry(ctx, bed.Clusters()[0], topic, 0, d.id)
		Expect(control.header.Get("X-Pulsar-Deliver-At-Time")).NotTo(BeEmpty(), "the control has a delivery time (the check above can fail)")
		batch := storedEntry(ctx, bed.Clusters()[0], topic, 0, first)
		Expect(batch.header.Get("X-Pulsar-Num-Batch-Message")).To(Equal(fmt.Sprint(len(batched))))
	})

	It("sends a nil Payload as a null value and []byte{} as an empty payload that is not one (batched and unbatched)", func() {
		t := newTap(ctx, part, "verify", bed.Clusters()[0])
		for _, batched := range []bool{true, false} {
			w := newProducer(pulsar.ProducerOptions{DisableBatching: !batched})
			for _, m := range []struct {
				name    string
				payload []byte
			}{{"nil", nil}, {"empty", []byte{}}} {
				key := fmt.Sprintf("batched=%v/%s", batched, m.name)
				_, err := w.Send(ctx, &pulsar.ProducerMessage{Key: key, Payload: m.payload})
				Expect(err).NotTo(HaveOccurred())
				_, err = w.Send(ctx, &pulsar.ProducerMessage{Key: key, Payload: []byte(trailer)})
				Expect(err).NotTo(HaveOccurred())
			}
		}
		got := t.untilTrailers(ctx, trailer, []string{"batched=true/nil", "batched=true/empty", "batched=false/nil", "batched=false/empty"})
		for _, key := range []string{"batched=true/nil", "batched=false/nil"} {
			Expect(got[key]).To(HaveLen(1), key)
			Expect(got[key][0].IsNullValue()).To(BeTrue(), "%s: a nil Payload is a null value", key)
			Expect(got[key][0].Payload()).To(BeEmpty(), key)
		}
		Expect(got["batched=true/empty"]).To(HaveLen(1))
		Expect(got["batched=true/empty"][0].IsNullValue()).To(BeFalse(), "[]byte{} is not a null value")
		Expect(got["batched=true/empty"][0].Payload()).To(BeEmpty())
		// Unbatched, []byte{} is discarded by the consumer: see the
		// pinned spec in null_test.go.
		Expect(got["batched=false/empty"]).To(BeEmpty(), "pulsar-client-go v0.21.0 discards an empty unbatched payload (consumer_partition.go:1385)")
		Expect(t.discards()).To(Equal(1))
	})
})
