//go:build e2e

package faults

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/e2e/internal/consume"
	"github.com/keyroute/keyroute/e2e/internal/standalone"
	"github.com/keyroute/keyroute/producer"
)

// doneWatch is an Observer that records the real outcome of the messages
// of one key (named by their "v" property), in the order they are
// reported. Outcomes of one key are reported on one goroutine.
type doneWatch struct {
	mu    sync.Mutex
	key   string
	order []string
	errs  map[string]error
	ids   map[string]producer.ID
}

func newDoneWatch() *doneWatch {
	return &doneWatch{errs: map[string]error{}, ids: map[string]producer.ID{}}
}

func (w *doneWatch) watch(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.key = key
}

func (w *doneWatch) OnStart(context.Context, *producer.Event) map[string]string { return nil }

func (w *doneWatch) OnDone(ev *producer.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if ev.Key != w.key {
		return
	}
	v := ev.Properties["v"]
	w.order = append(w.order, v)
	w.errs[v], w.ids[v] = ev.Err, ev.ID
}

// outcome returns the outcome of the message with property v, and whether
// it has been reported.
func (w *doneWatch) outcome(v string) (producer.ID, error, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	err, ok := w.errs[v]
	return w.ids[v], err, ok
}

func (w *doneWatch) reported() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.order...)
}

// outcomeUnknownSpec: a Send whose ctx ends after its message was handed to
// a hung cluster, and sends to a cluster already marked down.
func outcomeUnknownSpec() {
	It("outcome unknown: a Send whose ctx ends after hand-over to a hung cluster returns outcome unknown and keeps its budget until the real outcome; sends to a cluster marked down are not written", func(sctx SpecContext) {
		ctx, cancel := context.WithTimeout(sctx, 5*time.Minute)
		defer cancel()
		const victimIdx = 4
		victim := bed.Clusters()[victimIdx]
		topic := newTopic(ctx, "unknown")
		// The Send's ctx ends long before the cluster can count as down
		// (DownAfter), and the message outlives the hang (SendTimeout).
		const (
			uDownAfter   = 4 * time.Second
			short        = uDownAfter / 4
			uTick        = uDownAfter / 8
			uSendTimeout = producer.DefaultSendTimeout
		)
		w := newDoneWatch()
		var p *producer.Producer
		err := standalone.Retry(ctx, func() (err error) {
			p, err = producer.New(ctx, bed.Topology(), producer.Topic(topic), producer.DownAfter(uDownAfter),
				producer.SendTimeout(uSendTimeout), producer.Observe(w))
			return err
		})
		Expect(err).NotTo(HaveOccurred())
		defer p.Close(ctx)

		// key is the victim's; others are victim keys on its other
		// partitions, where nothing is in flight.
		var key string
		var part int
		others := map[int]string{}
		for i := 0; key == "" || len(others) < p.Partitions()[victimIdx]-1; i++ {
			k := fmt.Sprint("u-", i)
			c, pt := p.Placement(k)
			switch {
			case c != victim.Name:
			case key == "":
				key, part = k, pt
			case pt != part && others[pt] == "":
				others[pt] = k
			}
		}
		w.watch(key)
		msg := func(k, v string) *producer.Message {
			return &producer.Message{Key: k, Value: []byte(v), Properties: map[string]string{"v": v}}
		}
		cost := func(m *producer.Message) int64 {
			return int64(len(m.Key) + len(m.Value) + len("v") + len(m.Properties["v"]))
		}

		// Healthy: every key is written to the victim.
		written := []string{}
		for _, k := range append([]string{key}, valuesOf(others)...) {
			v := "warm|" + k
			id, err := p.Send(ctx, msg(k, v))
			Expect(err).NotTo(HaveOccurred())
			Expect(id.Cluster).To(Equal(victim.Name))
			written = append(written, v)
		}
		Expect(health(p, victim.Name).PendingMessages).To(BeZero())

		Expect(victim.Pause()).To(Succeed())
		resumed := false
		defer func() {
			if !resumed {
				_ = victim.Resume()
			}
		}()

		// The Send's ctx ends while its message is with the hung cluster.
		unknown := msg(key, "unknown|"+key)
		uctx, ucancel := context.WithTimeout(ctx, short)
		start := time.Now()
		_, err = p.Send(uctx, unknown)
		took := time.Since(start)
		ucancel()
		h := health(p, victim.Name)
		GinkgoWriter.Printf("Send with a %s ctx to hung %s returned after %s: %v\n", short, victim.Name, took, err)
		Expect(err).To(HaveOccurred())
		Expect(errors.Is(err, context.DeadlineExceeded)).To(BeTrue(), "%v", err)
		Expect(producer.NotWritten(err)).To(BeFalse(), "handed over: the outcome is unknown")
		Expect(producer.Reason(err)).To(Equal(producer.ReasonDeadlineExceeded))
		se, ok := errors.AsType[*producer.SendError](err)
		Expect(ok).To(BeTrue())
		Expect(se.Cluster).To(Equal(victim.Name))
		Expect(se.Key).To(Equal(key))
		Expect(took).To(BeNumerically(">=", short), "Send waited for its ctx")
		Expect(took).To(BeNumerically("<", uDownAfter), "and returned when it ended, before anything could mark the cluster down")
		Expect(h.Up).To(BeTrue(), "the message was handed over to a cluster that counted as up")
		Expect(h.PendingMessages).To(Equal(int64(1)), "the message keeps its share of the buffer")
		Expect(h.PendingBytes).To(Equal(cost(unknown)))

		// Holding it without an ack, the cluster is marked down: DownAfter
		// from the hand-over, a tick to see it held, one late, one poll.
		Eventually(func() bool { return !health(p, victim.Name).Up }).
			WithTimeout(time.Until(start.Add(uDownAfter + 3*uTick + poll))).WithPolling(poll).Should(BeTrue())
		Expect(health(p, victim.Name).PendingMessages).To(Equal(int64(1)), "still held while the cluster is down")

		// FailFast: sends to the down cluster are refused, not written.
		checkDown := func(err error) {
			GinkgoHelper()
			Expect(err).To(MatchError(producer.ErrClusterDown))
			Expect(producer.NotWritten(err)).To(BeTrue(), "%v", err)
			Expect(producer.Reason(err)).To(Equal(producer.ReasonClusterDown))
			se, ok := errors.AsType[*producer.SendError](err)
			Expect(ok).To(BeTrue())
			Expect(se.Cluster).To(Equal(victim.Name))
		}
		var refused []string
		for _, k := range valuesOf(others) {
			v := "down|" + k
			res := make(chan error, 1)
			go func() {
				_, err := p.Send(ctx, msg(k, v))
				res <- err
			}()
			// Nothing of its partition is in flight: its turn is now. Any
			// wait would be for an earlier outcome, which the send
			// timeout bounds.
			var err error
			Eventually(res).WithTimeout(uSendTimeout).Should(Receive(&err))
			checkDown(err)
			refused = append(refused, v)
		}
		// SendAsync of key itself: refused now, reported after the
		// message handed over before them, so not while it is held.
		async := make(chan error, 3)
		for i := 0; i < 3; i++ {
			v := fmt.Sprintf("down|%s|%d", key, i)
			p.SendAsync(ctx, msg(key, v), func(_ producer.ID, _ *producer.Message, err error) { async <- err })
			refused = append(refused, v)
		}
		Consistently(async).WithTimeout(uTick).WithPolling(poll).ShouldNot(Receive(), "reported after the held message")
		Expect(w.reported()).To(Equal([]string{"warm|" + key}))
		Expect(health(p, victim.Name).PendingMessages).To(Equal(int64(1)), "refused messages hold nothing")

		// Back: the held message gets its real outcome (by its send timeout
		// at the latest, as pulsar-client-go sweeps them: sendTimeoutSweep)
		// and gives its budget back.
		Expect(victim.Resume()).To(Succeed())
		resumed = true
		Eventually(func() bool { _, _, ok := w.outcome(string(unknown.Value)); return ok }).
			WithTimeout(time.Until(start.Add(sendTimeoutSweep(uSendTimeout) + uTick + poll))).WithPolling(poll).Should(BeTrue())
		Eventually(func() int64 { return health(p, victim.Name).PendingMessages }).
			WithTimeout(uTick).WithPolling(poll).Should(BeZero(), "the budget is released once the outcome is reported")
		id, uerr, _ := w.outcome(string(unknown.Value))
		GinkgoWriter.Printf("its real outcome, %s after the Send began: %s %v\n", time.Since(start).Round(time.Millisecond), id, uerr)
		for i := 0; i < 3; i++ {
			var err error
			Eventually(async).WithTimeout(uSendTimeout).Should(Receive(&err))
			checkDown(err)
		}
		Expect(w.reported()).To(Equal([]string{"warm|" + key, "unknown|" + key,
			"down|" + key + "|0", "down|" + key + "|1", "down|" + key + "|2"}), "one key's outcomes in call order")
		if uerr == nil {
			Expect(id.Cluster).To(Equal(victim.Name))
			written = append(written, string(unknown.Value))
			Eventually(func() bool { return health(p, victim.Name).Up }).WithTimeout(2*uTick+poll).WithPolling(poll).Should(BeTrue(), "up at its ack")
		}
		Expect(p.Close(ctx)).To(Succeed())

		// Read back: what was acknowledged, once, on the victim; nothing
		// that was refused.
		cctx, ccancel := context.WithTimeout(ctx, 90*time.Second)
		defer ccancel()
		got, err := consume.All(cctx, bed.Clusters(), topic, "verify", len(written), 3*time.Second)
		if err != nil {
			GinkgoWriter.Printf("consume: %v (checking what arrived)\n", err)
		}
		seen := map[string]int{}
		for _, m := range got {
			seen[m.Payload]++
			Expect(m.Cluster).To(Equal(victim.Name), m.Payload)
		}
		for _, v := range written {
			Expect(seen[v]).To(Equal(1), "%s written once", v)
		}
		for _, v := range refused {
			Expect(seen[v]).To(BeZero(), "%s was refused (not written) but was read back", v)
		}
		if uerr != nil {
			GinkgoWriter.Printf("the outcome-unknown message failed (%v); read back %d times\n", uerr, seen[string(unknown.Value)])
			Expect(seen[string(unknown.Value)]).To(BeNumerically("<=", 1))
		}
		extra := 0
		if uerr != nil {
			extra = seen[string(unknown.Value)]
		}
		Expect(got).To(HaveLen(len(written)+extra), "nothing else was written")
	})
}

func valuesOf(m map[int]string) []string {
	out := make([]string, 0, len(m))
	for i := 0; len(out) < len(m); i++ {
		if v, ok := m[i]; ok {
			out = append(out, v)
		}
	}
	return out
}
