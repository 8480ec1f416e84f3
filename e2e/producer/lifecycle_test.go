//go:build e2e

package producer

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.uber.org/goleak"

	"github.com/keyroute/keyroute/producer"
)

// failTimeoutMessages is pulsar-client-go v0.21.0's per-partition-producer
// send timeout goroutine. It does not watch for Close: it sleeps on a timer
// of at most SendTimeout and returns at its next tick once the producer is
// closed (producer_partition.go:940-951, `for range t.C { if
// p.isClosingOrClosed() { return } ...`), so it outlives Close by up to
// SendTimeout.
const failTimeoutMessages = "github.com/apache/pulsar-client-go/pulsar.(*partitionProducer).failTimeoutMessages"

// goroutine is one goroutine of a runtime.Stack dump.
type goroutine struct {
	id    string
	state string // e.g. "chan receive", "select", "running"
	top   string // the function it is in
	stack string
}

// goroutines returns the running goroutines by id.
func goroutines() map[string]goroutine {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	out := map[string]goroutine{}
	for _, g := range strings.Split(string(buf), "\n\n") {
		lines := strings.SplitN(g, "\n", 3)
		if len(lines) < 2 {
			continue
		}
		id, state, _ := strings.Cut(strings.TrimPrefix(lines[0], "goroutine "), " ")
		state = strings.TrimSuffix(strings.TrimPrefix(state, "["), "]:")
		state, _, _ = strings.Cut(state, ",") // "select, 2 minutes"
		top := lines[1]
		if i := strings.LastIndex(top, "("); i > 0 {
			top = top[:i]
		}
		out[id] = goroutine{id: id, state: state, top: top, stack: g}
	}
	return out
}

// newSince returns the top functions of the goroutines not in before,
// with how many run each, sorted.
func newSince(before map[string]goroutine) []string {
	count := map[string]int{}
	for _, g := range newIn(before, goroutines()) {
		count[g.top]++
	}
	var out []string
	for top, n := range count {
		out = append(out, fmt.Sprintf("%d x %s", n, top))
	}
	slices.Sort(out)
	return out
}

// newIn returns the goroutines of now that are not in before.
func newIn(before, now map[string]goroutine) []goroutine {
	var out []goroutine
	for id, g := range now {
		if _, ok := before[id]; !ok {
			out = append(out, g)
		}
	}
	return out
}

// oursBlocked returns the goroutines started since before that run the
// SDK's code and are blocked (waiting on a channel, a lock, a timer...).
// Right after Close there must be none: a goroutine of ours still there
// can only be running its last instructions, having signalled that it is
// done.
func oursBlocked(before map[string]goroutine) []string {
	var out []string
	for id, g := range goroutines() {
		if _, ok := before[id]; ok || g.state == "running" || g.state == "runnable" {
			continue
		}
		if strings.Contains(g.stack, "github.com/keyroute/keyroute/") && !strings.Contains(g.stack, "github.com/keyroute/keyroute/e2e/") {
			out = append(out, g.stack)
		}
	}
	return out
}

// endedIn returns the top functions (as they were) of the goroutines of
// before that are not in now, sorted.
func endedIn(before, now map[string]goroutine) []string {
	var out []string
	for id, g := range before {
		if _, ok := now[id]; !ok {
			out = append(out, g.top)
		}
	}
	slices.Sort(out)
	return out
}

// keepAlives counts net/http's keep-alive connection goroutines.
func keepAlives() int {
	n := 0
	for _, g := range goroutines() {
		if strings.Contains(g.stack, "net/http.(*persistConn)") {
			n++
		}
	}
	return n
}

var _ = Describe("the producer's goroutines", func() {
	It("do not outlive Close: the SDK's end with it, pulsar-client-go's within SendTimeout, and the count is back to what it was before New", func(sctx SpecContext) {
		ctx, cancel := context.WithTimeout(sctx, 3*time.Minute)
		defer cancel()
		topic := newTopic(ctx, "lifecycle")
		const sendTimeout = 2 * time.Second
		// Polling interval, and the time allowed past SendTimeout for a
		// goroutine whose timer fired to be scheduled and return.
		poll := sendTimeout / 10

		// The admin calls' keep-alive connections would end while this
		// spec counts; close them first.
		http.DefaultTransport.(*http.Transport).CloseIdleConnections()
		Eventually(keepAlives).WithTimeout(sendTimeout).WithPolling(poll).Should(BeZero())

		beforeIDs := goroutines()
		before := goleak.IgnoreCurrent()

		p, err := producer.New(ctx, bed.Topology(), producer.Topic(topic), producer.SendTimeout(sendTimeout))
		Expect(err).NotTo(HaveOccurred())
		GinkgoWriter.Printf("goroutines while open: %v\n", newSince(beforeIDs))
		const async, sync = 2000, 50
		failed := make(chan error, async)
		for i := range async {
			p.SendAsync(ctx, msg(fmt.Sprintf("life-%d", i%500), "async"), func(_ producer.ID, _ *producer.Message, err error) {
				if err != nil {
					failed <- err
				}
			})
		}
		for i := range sync {
			_, err := p.Send(ctx, msg(fmt.Sprintf("life-%d", i), "sync"))
			Expect(err).NotTo(HaveOccurred())
		}
		Expect(p.Close(ctx)).To(Succeed())
		closed := time.Now()
		Expect(failed).To(BeEmpty())

		Expect(oursBlocked(beforeIDs)).To(BeEmpty(), "no goroutine of the SDK's waits on after Close")
		GinkgoWriter.Printf("goroutines right after Close: %v\n", newSince(beforeIDs))
		// Within goleak's own few retries (well under a second), every
		// goroutine is gone but pulsar-client-go's failTimeoutMessages.
		Expect(goleak.Find(before, goleak.IgnoreTopFunction(failTimeoutMessages))).To(Succeed())
		// And within SendTimeout, those too (their timer was last reset
		// before Close): then nothing is left.
		Eventually(func() error { return goleak.Find(before) }).WithTimeout(sendTimeout + poll).WithPolling(poll).Should(Succeed())
		GinkgoWriter.Printf("the last goroutine ended within %s of Close (SendTimeout %s)\n", time.Since(closed).Round(time.Millisecond), sendTimeout)

		// Goroutines older than New may end meanwhile on their own: the
		// failTimeoutMessages of earlier specs' producers (up to their
		// SendTimeout after their Close), the timers of earlier
		// transactions, the test bed's readiness probes' included
		// (newTransaction.func1, at their transaction timeout). They are
		// not this producer's and are left out of the count: then it is
		// what it was before New. Both counts come from one snapshot each
		// (runtime.NumGoroutine read apart from the snapshot would count a
		// goroutine that ends in between once and miss it once).
		after := goroutines()
		started := newIn(beforeIDs, after)
		ended := endedIn(beforeIDs, after)
		GinkgoWriter.Printf("goroutines: %d before New, %d after Close; %d older ones ended meanwhile on their own: %v\n",
			len(beforeIDs), len(after), len(ended), ended)
		Expect(started).To(BeEmpty(), "goroutines started since New and still there")
		Expect(len(after)).To(Equal(len(beforeIDs) - len(ended)))
	})
})
