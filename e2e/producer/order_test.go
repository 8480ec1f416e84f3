//go:build e2e

package producer

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/producer"
)

// orderLinger is the Linger of the order specs' producer: pulsar-client-go
// sends a batch at the next tick of a ticker of that period (or when
// flushed), so a message handed to SendAsync has no outcome for up to
// that long, and never before a broker round trip. A later message of its
// key refused at once (in microseconds) is therefore refused while the
// earlier one has no outcome yet: reporting the refusal first would show.
const orderLinger = 200 * time.Millisecond

// orderReps is how many fresh keys each ordering case is tried with.
const orderReps = 20

// outcome is one outcome as the caller saw it: a callback, or Send
// returning.
type outcome struct {
	name string
	err  error
	gid  uint64 // the goroutine it was seen on
}

// outcomes records outcomes in the order they are seen.
type outcomes struct {
	mu  sync.Mutex
	all []outcome
}

func (o *outcomes) add(name string, err error) {
	o.mu.Lock()
	o.all = append(o.all, outcome{name: name, err: err, gid: goid()})
	o.mu.Unlock()
}

// cb returns a callback that records name.
func (o *outcomes) cb(name string) producer.Callback {
	return func(_ producer.ID, _ *producer.Message, err error) { o.add(name, err) }
}

func (o *outcomes) names() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := make([]string, len(o.all))
	for i, e := range o.all {
		n[i] = e.name
	}
	return n
}

func (o *outcomes) get(name string) outcome {
	GinkgoHelper()
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, e := range o.all {
		if e.name == name {
			return e
		}
	}
	Fail("no outcome " + name)
	return outcome{}
}

func msg(key, value string) *producer.Message {
	return &producer.Message{Key: key, Value: []byte(value)}
}

// payloads returns the payloads of msgs.
func payloads(msgs []pulsar.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = string(m.Payload())
	}
	return out
}

// expectRefused checks the error of a message refused because its ctx had
// ended before the hand-over.
func expectRefused(err error, ctxErr error, key string) {
	GinkgoHelper()
	Expect(err).To(MatchError(ctxErr), key)
	Expect(producer.NotWritten(err)).To(BeTrue(), "%s: %v", key, err)
	want := producer.ReasonCanceled
	if ctxErr == context.DeadlineExceeded {
		want = producer.ReasonDeadlineExceeded
	}
	Expect(producer.Reason(err)).To(Equal(want), key)
	var se *producer.SendError
	Expect(err).To(BeAssignableToTypeOf(se))
	Expect(err.(*producer.SendError).Key).To(Equal(key))
}

var _ = Describe("per-key outcome order on real clusters", func() {
	var (
		ctx   context.Context
		topic string
		p     *producer.Producer
		t     *tap
		ended [2]context.Context // one canceled, one past its deadline
	)
	BeforeEach(func(sctx SpecContext) {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(sctx), 2*time.Minute)
		DeferCleanup(cancel)
		topic = newTopic(ctx, "order")
		t = newTap(ctx, topic, "verify")
		var err error
		p, err = producer.New(ctx, bed.Topology(), producer.Topic(topic), producer.Linger(orderLinger))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(p.Close(context.Background())).To(Succeed()) })
		canceled, c := context.WithCancel(ctx)
		c()
		expired, c2 := context.WithDeadline(ctx, time.Now().Add(-time.Second))
		DeferCleanup(c2)
		ended = [2]context.Context{canceled, expired}
	})

	It("calls back SendAsync(k,m0), SendAsync(k,m1 whose ctx had ended), SendAsync(k,m2) as m0, m1, m2, on the cluster's callback goroutine (20 fresh keys)", func() {
		test := goid()
		onGoroutine := map[string]map[uint64]bool{} // cluster -> goroutines its callbacks ran on
		var keys []string
		for rep := range orderReps {
			key := fmt.Sprintf("async-%02d", rep)
			keys = append(keys, key)
			endedCtx := ended[rep%2]
			var o outcomes
			p.SendAsync(ctx, msg(key, "m0"), o.cb("m0"))
			p.SendAsync(endedCtx, msg(key, "m1"), o.cb("m1"))
			p.SendAsync(ctx, msg(key, trailer), o.cb("m2"))
			Expect(p.Flush(ctx)).To(Succeed())
			Expect(o.names()).To(Equal([]string{"m0", "m1", "m2"}), key)
			Expect(o.get("m0").err).NotTo(HaveOccurred(), key)
			expectRefused(o.get("m1").err, endedCtx.Err(), key)
			Expect(o.get("m2").err).NotTo(HaveOccurred(), key)
			cluster, _ := p.Placement(key)
			if onGoroutine[cluster] == nil {
				onGoroutine[cluster] = map[uint64]bool{}
			}
			for _, e := range o.all {
				Expect(e.gid).NotTo(Equal(test), "%s: callback %s ran on the caller's goroutine", key, e.name)
				onGoroutine[cluster][e.gid] = true
			}
		}
		GinkgoWriter.Printf("callback goroutines by cluster: %v\n", onGoroutine)
		all := map[uint64]bool{}
		for cluster, gids := range onGoroutine {
			Expect(gids).To(HaveLen(1), "the callbacks of cluster %s ran on one goroutine", cluster)
			for g := range gids {
				all[g] = true
			}
		}
		Expect(all).To(HaveLen(len(onGoroutine)), "each cluster has its own callback goroutine")

		// m1 was not written; m0 and m2 were, in order.
		got := t.untilTrailers(ctx, trailer, keys)
		for _, k := range keys {
			Expect(payloads(got[k])).To(Equal([]string{"m0"}), k)
		}
	})

	It("returns Send(k,m1) whose ctx had ended only after SendAsync(k,m0)'s callback, and before SendAsync(k,m2)'s (20 fresh keys)", func() {
		var keys []string
		var waited time.Duration
		for rep := range orderReps {
			key := fmt.Sprintf("sync-%02d", rep)
			keys = append(keys, key)
			endedCtx := ended[rep%2]
			var o outcomes
			p.SendAsync(ctx, msg(key, "m0"), o.cb("m0"))
			start := time.Now()
			_, err := p.Send(endedCtx, msg(key, "m1"))
			waited += time.Since(start)
			o.add("Send m1 returned", err)
			p.SendAsync(ctx, msg(key, trailer), o.cb("m2"))
			Expect(p.Flush(ctx)).To(Succeed())
			Expect(o.names()).To(Equal([]string{"m0", "Send m1 returned", "m2"}), key)
			Expect(o.get("m0").err).NotTo(HaveOccurred(), key)
			expectRefused(err, endedCtx.Err(), key)
			Expect(o.get("m2").err).NotTo(HaveOccurred(), key)
		}
		GinkgoWriter.Printf("a refused Send waited %s on average for its key's earlier message (Linger %s)\n",
			waited/orderReps, orderLinger)
		got := t.untilTrailers(ctx, trailer, keys)
		for _, k := range keys {
			Expect(payloads(got[k])).To(Equal([]string{"m0"}), k)
		}
	})

	It("returns ErrInCallback from Flush, Close and Send called in a callback, and the producer works on", func() {
		// A deadlock would keep the callback from returning; its
		// message's own outcome comes within the send timeout (the
		// default here) after Linger, and the calls in it return at once.
		bound := producer.DefaultSendTimeout + orderLinger
		var flushErr, closeErr, sendErr, firstErr error
		returned := make(chan struct{})
		p.SendAsync(ctx, msg("in-callback", "first"), func(_ producer.ID, _ *producer.Message, err error) {
			defer close(returned)
			firstErr = err
			flushErr = p.Flush(ctx)
			closeErr = p.Close(ctx)
			_, sendErr = p.Send(ctx, msg("in-callback/send", "from the callback"))
		})
		Eventually(returned).WithTimeout(bound).Should(BeClosed(), "the callback returned")
		Expect(firstErr).NotTo(HaveOccurred())
		for name, err := range map[string]error{"Flush": flushErr, "Close": closeErr, "Send": sendErr} {
			Expect(err).To(MatchError(producer.ErrInCallback), name)
			Expect(producer.Reason(err)).To(Equal(producer.ReasonInCallback), name)
		}
		Expect(producer.NotWritten(sendErr)).To(BeTrue(), "%v", sendErr)

		// Close from the callback did not close the producer.
		_, err := p.Send(ctx, msg("in-callback/send", trailer))
		Expect(err).NotTo(HaveOccurred())
		done := make(chan error, 1)
		p.SendAsync(ctx, msg("in-callback", trailer), func(_ producer.ID, _ *producer.Message, err error) { done <- err })
		Expect(p.Flush(ctx)).To(Succeed())
		Expect(done).To(Receive(BeNil()))

		got := t.untilTrailers(ctx, trailer, []string{"in-callback", "in-callback/send"})
		Expect(payloads(got["in-callback"])).To(Equal([]string{"first"}))
		Expect(got["in-callback/send"]).To(BeEmpty(), "the Send refused in the callback was not written")
	})
})
