//go:build e2e

package consumerfaults

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"

	"github.com/keyroute/keyroute/consumer"
)

// delivery is one message taken from the consumer's merged stream and
// what became of its acknowledgement.
type delivery struct {
	payload string
	key     string
	seq     int
	id      consumer.ID
	at      time.Time // taken from the stream
	msg     *consumer.Message

	// Set by the ack worker. With AckWithResponse a nil error means the
	// broker answered: the acknowledgement was recorded.
	ackEnded time.Time // zero while the Ack call has not returned
	ackErr   error
}

// recorded reports whether the broker had answered the acknowledgement
// by t.
func (d *delivery) recorded(t time.Time) bool {
	return !d.ackEnded.IsZero() && d.ackErr == nil && !d.ackEnded.After(t)
}

// reader takes the merged stream in one goroutine and acknowledges each
// message on an ack worker of its cluster. With AckWithResponse an Ack
// of a message of a dead cluster blocks until pulsar-client-go has
// reconnected to it (its acks wait behind the reconnection), so acking in
// the receive loop would hold up every cluster behind the dead one; the
// workers keep that wait off the stream.
type reader struct {
	c *consumer.Consumer

	mu  sync.Mutex // guards got and the deliveries' ack fields
	got []*delivery

	queues map[string]*ackQueue
	done   chan struct{} // the receive loop has ended
	acks   sync.WaitGroup
}

// ackWorkers per cluster: with AckWithResponse each Ack waits for its
// broker's answer, one at a time per partition.
const ackWorkers = 8

func startReader(ctx context.Context, c *consumer.Consumer, clusters []string) *reader {
	r := &reader{c: c, queues: map[string]*ackQueue{}, done: make(chan struct{})}
	for _, name := range clusters {
		q := newAckQueue()
		r.queues[name] = q
		for range ackWorkers {
			r.acks.Add(1)
			go r.ackLoop(q)
		}
	}
	go r.receive(ctx)
	return r
}

func (r *reader) receive(ctx context.Context) {
	defer close(r.done)
	for {
		m, err := r.c.Receive(ctx)
		if err != nil {
			if !errors.Is(err, consumer.ErrClosed) && ctx.Err() == nil {
				GinkgoWriter.Printf("receive: %v\n", err)
			}
			return
		}
		d := &delivery{payload: string(m.Value), id: m.ID, at: time.Now(), msg: m}
		key, seq, _ := strings.Cut(d.payload, "|")
		d.key, d.seq = key, atoi(seq)
		r.mu.Lock()
		r.got = append(r.got, d)
		r.mu.Unlock()
		r.queues[m.ID.Cluster].push(d)
	}
}

func (r *reader) ackLoop(q *ackQueue) {
	defer r.acks.Done()
	for {
		d, ok := q.pop()
		if !ok {
			return
		}
		err := r.c.Ack(context.Background(), d.msg) // waits for the broker (AckWithResponse), however long
		r.mu.Lock()
		d.ackEnded, d.ackErr = time.Now(), err
		r.mu.Unlock()
	}
}

// rate is the messages a second of cluster taken in [from, to).
func (r *reader) rate(cluster string, from, to time.Time) float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, d := range r.got {
		if d.id.Cluster == cluster && !d.at.Before(from) && d.at.Before(to) {
			n++
		}
	}
	return float64(n) / to.Sub(from).Seconds()
}

// has reports whether every payload in want has been taken.
func (r *reader) has(want map[string]bool) (missing int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := make(map[string]bool, len(r.got))
	for _, d := range r.got {
		seen[d.payload] = true
	}
	for p := range want {
		if !seen[p] {
			missing++
		}
	}
	return missing
}

// takenOnAfter reports whether a message of cluster sent after t (by the
// producer's record) has been taken.
func (r *reader) takenOnAfter(cluster string, msgs map[string]sent, t time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, d := range r.got {
		if s, ok := msgs[d.payload]; ok && d.id.Cluster == cluster && s.at.After(t) {
			return true
		}
	}
	return false
}

// idle reports whether every Ack has returned.
func (r *reader) idle() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, d := range r.got {
		if d.ackEnded.IsZero() {
			return false
		}
	}
	return true
}

// stop closes the consumer, waits for the receive loop and the ack
// workers, and returns every delivery.
func (r *reader) stop() []*delivery {
	if err := r.c.Close(context.Background()); err != nil {
		GinkgoWriter.Printf("consumer close: %v\n", err)
	}
	<-r.done
	for _, q := range r.queues {
		q.close()
	}
	r.acks.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*delivery(nil), r.got...)
}

// ackQueue is an unbounded FIFO: a dead cluster's blocked acks never hold
// up the receive loop.
type ackQueue struct {
	mu     sync.Mutex
	cond   *sync.Cond
	items  []*delivery
	closed bool
}

func newAckQueue() *ackQueue {
	q := &ackQueue{}
	q.cond = sync.NewCond(&q.mu)
	return q
}

func (q *ackQueue) push(d *delivery) {
	q.mu.Lock()
	q.items = append(q.items, d)
	q.mu.Unlock()
	q.cond.Signal()
}

func (q *ackQueue) pop() (*delivery, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.items) == 0 && !q.closed {
		q.cond.Wait()
	}
	if len(q.items) == 0 {
		return nil, false
	}
	d := q.items[0]
	q.items = q.items[1:]
	return d, true
}

func (q *ackQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.cond.Broadcast()
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return n
}
