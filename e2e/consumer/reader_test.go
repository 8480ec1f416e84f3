//go:build e2e

package consumer

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/consumer"
)

// delivery is one message taken from a keyroute consumer.
type delivery struct {
	payload    string
	key        string
	seq        int
	id         consumer.ID
	redelivery uint32
	at         time.Time
}

// reader takes messages from one keyroute consumer on a goroutine of its
// own, in the order Receive returns them, and acknowledges each (grouped,
// as the consumer's AckGrouping says: Ack returns at once).
type reader struct {
	c *consumer.Consumer

	mu      sync.Mutex // guards the fields below
	got     []delivery
	seen    map[string]int // payload -> copies taken
	recvErr error          // a Receive error other than the reader's stop
	badPay  []string       // payloads that are not key|seq
	ackErrs []error

	cancel context.CancelFunc
	done   chan struct{}
}

func startReader(ctx context.Context, c *consumer.Consumer) *reader {
	rctx, cancel := context.WithCancel(ctx)
	r := &reader{c: c, seen: map[string]int{}, cancel: cancel, done: make(chan struct{})}
	go r.run(rctx)
	DeferCleanup(r.halt) // a failed spec still stops it
	return r
}

func (r *reader) run(ctx context.Context) {
	defer close(r.done)
	for {
		m, err := r.c.Receive(ctx)
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, consumer.ErrClosed) {
				r.mu.Lock()
				r.recvErr = err
				r.mu.Unlock()
			}
			return
		}
		d := delivery{payload: string(m.Value), id: m.ID, redelivery: m.RedeliveryCount, at: time.Now()}
		var perr error
		d.key, d.seq, perr = parsePayload(d.payload)
		aerr := r.c.Ack(ctx, m)
		r.mu.Lock()
		if perr != nil || d.key != m.Key {
			r.badPay = append(r.badPay, d.payload+" (key "+m.Key+")")
		}
		r.got = append(r.got, d)
		r.seen[d.payload]++
		if aerr != nil {
			r.ackErrs = append(r.ackErrs, aerr)
		}
		r.mu.Unlock()
	}
}

// count returns how many messages have been taken.
func (r *reader) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}

// halt stops the reader and waits for it; the consumer stays open.
func (r *reader) halt() {
	r.cancel()
	<-r.done
}

// stop halts the reader, checks that it met no error, and returns what it
// took, in the order taken.
func (r *reader) stop() []delivery {
	GinkgoHelper()
	r.halt()
	r.mu.Lock()
	defer r.mu.Unlock()
	Expect(r.recvErr).NotTo(HaveOccurred(), "Receive")
	Expect(r.badPay).To(BeEmpty(), "payloads that are not their key's key|seq")
	Expect(r.ackErrs).To(BeEmpty(), "Ack errors")
	return r.got
}

// taken reports whether payload p has been taken.
func (r *reader) taken(p string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen[p] > 0
}

// drain waits until every payload of want has been taken by one of rs,
// notes when, then reads on for the quiet period to see late copies, and
// stops the readers; got[i] is what rs[i] took. The wait is bounded by
// ctx only (the spec's guard against a hang): how long it took is a
// figure the specs report, not a bound.
func drain(ctx context.Context, want written, rs ...*reader) (got [][]delivery, allTaken time.Time) {
	GinkgoHelper()
	pending := make([]string, 0, len(want))
	for p := range want {
		pending = append(pending, p)
	}
	Eventually(ctx, func() int {
		pending = slices.DeleteFunc(pending, func(p string) bool {
			return slices.ContainsFunc(rs, func(r *reader) bool { return r.taken(p) })
		})
		return len(pending)
	}).WithPolling(quiet/20).Should(BeZero(), "every message the producer acknowledged is taken")
	allTaken = time.Now()
	time.Sleep(quiet)
	for _, r := range rs {
		got = append(got, r.stop())
	}
	return got, allTaken
}
