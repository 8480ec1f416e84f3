package producer

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/apache/pulsar-client-go/pulsar"
)

// cluster is one Pulsar cluster: its partition writers, its share of the
// buffer limits and its callback goroutine.
type cluster struct {
	name   string
	url    string   // service URL, for observers
	obs    Observer // nil when not observed
	parts  []*partition
	budget *budget
	health *health
	disp   *dispatcher
	link   *link

	// onAck is the one callback every async message of the cluster is
	// handed to pulsar-client-go with, so that SendAsync allocates no
	// closure per message (see inflightOf).
	onAck func(pulsar.MessageID, *pulsar.ProducerMessage, error)
}

// partition is one partition of the topic in a cluster. Its writer (a
// pulsar-client-go producer with one event loop) is the single writer that
// owns the partition.
type partition struct {
	idx int
	w   writer

	// track holds the async messages handed to w, oldest first, so that
	// Close can give an outcome to any that pulsar-client-go dropped.
	// Senders append and trim completed ones from the front; the goroutines
	// that complete messages never take mu, so tracking costs the hot path
	// one uncontended lock.
	mu    sync.Mutex // guards track
	track []*inflight
	head  int // track[:head] are trimmed (nil)
}

// inflight is one message given to SendAsync, from acceptance until its
// callback has run. pm must stay the first field: see inflightOf.
type inflight struct {
	pm   pulsar.ProducerMessage
	ctx  context.Context
	msg  *Message
	cb   Callback
	part *partition
	cost int64

	state atomic.Uint32 // 0 pending, 1 completed (outcome fixed)

	id  pulsar.MessageID
	err error
	ev  *Event // non-nil when observed

	barrier chan struct{} // non-nil for a dispatcher barrier (not a message)
}

// add tracks f, first trimming completed messages from the front.
func (pt *partition) add(f *inflight) {
	pt.mu.Lock()
	for pt.head < len(pt.track) && pt.track[pt.head].state.Load() != 0 {
		pt.track[pt.head] = nil
		pt.head++
	}
	if pt.head == len(pt.track) {
		pt.track, pt.head = pt.track[:0], 0
	} else if pt.head > 1024 && pt.head > len(pt.track)/2 {
		n := copy(pt.track, pt.track[pt.head:])
		clear(pt.track[n:])
		pt.track, pt.head = pt.track[:n], 0
	}
	pt.track = append(pt.track, f)
	pt.mu.Unlock()
}

// pending returns the tracked messages that have no outcome yet.
func (pt *partition) pending() []*inflight {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	var out []*inflight
	for _, f := range pt.track[pt.head:] {
		if f.state.Load() == 0 {
			out = append(out, f)
		}
	}
	return out
}

// inflightOf returns the inflight whose pm field pm is. pulsar-client-go
// hands every callback the *ProducerMessage it was given (v0.21.0: the
// sendRequest keeps the caller's pointer, for validation failures, batches
// and chunks alike), and SendAsync only ever gives it &f.pm, where pm is
// the first field of f: so the pointer is also a pointer to f, inside the
// same allocation.
func inflightOf(pm *pulsar.ProducerMessage) *inflight {
	return (*inflight)(unsafe.Pointer(pm))
}

// ack is the cluster's callback for pulsar-client-go.
func (c *cluster) ack(id pulsar.MessageID, pm *pulsar.ProducerMessage, err error) {
	c.complete(inflightOf(pm), id, err)
}

// complete fixes f's outcome (once; later calls are ignored) and queues its
// callback. It runs on whatever goroutine pulsar-client-go reports on, or on
// the caller's for messages that fail before they are accepted.
func (c *cluster) complete(f *inflight, id pulsar.MessageID, err error) {
	if !f.state.CompareAndSwap(0, 1) {
		return
	}
	f.id, f.err = id, err
	c.health.completed.Add(1)
	if err == nil {
		c.health.acks.Add(1)
	}
	if f.cb == nil {
		if f.ev != nil {
			c.outcome(f)
		}
		c.budget.release(1, f.cost)
		return
	}
	c.disp.push(f, endsBurst(id, err))
}

// sweep completes every message of the cluster still pending with err. Close
// calls it after the writers are closed: pulsar-client-go drops messages
// still in a batch or in its send queue at close without a callback.
// It returns how many messages it completed.
func (c *cluster) sweep(err error) int {
	n := 0
	for _, pt := range c.parts {
		for _, f := range pt.pending() {
			if f.state.Load() == 0 {
				n++
			}
			c.complete(f, nil, err)
		}
	}
	return n
}

// outcome turns f's result into an ID or error and tells the observer.
func (c *cluster) outcome(f *inflight) (ID, error) {
	var id ID
	var err error
	if f.err != nil {
		err = c.sendError(f.ctx, f.msg.Key, f.part.idx, f.err)
	} else {
		id = ID{Cluster: c.name, Partition: f.part.idx, MessageID: f.id}
	}
	if f.ev != nil {
		f.ev.ID, f.ev.Err = id, err
		c.end(f.ev)
		f.ev = nil
	}
	return id, err
}

// report tells the observer and runs f's callback.
func (c *cluster) report(f *inflight) {
	id, err := c.outcome(f)
	f.cb(id, f.msg, err)
}

// sendError classifies err from pulsar-client-go (or the SDK) for a message.
func (c *cluster) sendError(ctx context.Context, key string, part int, err error) error {
	e := &SendError{Key: key, Cluster: c.name, Partition: part, Cause: err}
	switch {
	case errors.Is(err, pulsar.ErrContextExpired):
		e.Cause = ctx.Err()
		if e.Cause == nil {
			e.Cause = err
		}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
	case errors.Is(err, ErrClosed), errors.Is(err, pulsar.ErrProducerClosed):
		e.Err = ErrClosed
	case errors.Is(err, ErrClusterDown):
		e.Err = ErrClusterDown
	case errors.Is(err, ErrBufferFull):
		e.Err = ErrBufferFull
	case errors.Is(err, pulsar.ErrSendTimeout):
		e.Err = ErrSendTimeout
	case errors.Is(err, pulsar.ErrMessageTooLarge):
		e.Err = ErrMessageTooLarge
	}
	return e
}
