package producer

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

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
	disp   *dispatcher
	link   *link
}

// partition is one partition of the topic in a cluster. Its writer (a
// pulsar-client-go producer with one event loop) is the single writer that
// owns the partition.
type partition struct {
	idx int
	w   writer

	mu         sync.Mutex // guards head and tail
	head, tail *inflight  // async messages accepted and not yet completed, in hand-over order
}

// inflight is one message given to SendAsync, from acceptance until its
// callback has run.
type inflight struct {
	pm   pulsar.ProducerMessage
	ctx  context.Context
	msg  *Message
	cb   Callback
	c    *cluster
	part *partition
	cost int64

	state      atomic.Uint32 // 0 pending, 1 completed (outcome fixed)
	prev, next *inflight     // guarded by part.mu

	id  pulsar.MessageID
	err error
	ev  *Event // non-nil when observed

	barrier chan struct{} // non-nil for a dispatcher barrier (not a message)
}

func (pt *partition) link(f *inflight) {
	pt.mu.Lock()
	f.prev = pt.tail
	if pt.tail == nil {
		pt.head = f
	} else {
		pt.tail.next = f
	}
	pt.tail = f
	pt.mu.Unlock()
}

func (pt *partition) unlink(f *inflight) {
	pt.mu.Lock()
	if f.prev == nil {
		pt.head = f.next
	} else {
		f.prev.next = f.next
	}
	if f.next == nil {
		pt.tail = f.prev
	} else {
		f.next.prev = f.prev
	}
	f.prev, f.next = nil, nil
	pt.mu.Unlock()
}

// complete fixes f's outcome (once; later calls are ignored) and queues its
// callback. It runs on whatever goroutine pulsar-client-go reports on, or on
// the caller's for messages that fail before they are accepted.
func (c *cluster) complete(f *inflight, id pulsar.MessageID, err error) {
	if !f.state.CompareAndSwap(0, 1) {
		return
	}
	f.part.unlink(f)
	f.id, f.err = id, err
	if f.cb == nil {
		if f.ev != nil {
			c.outcome(f)
		}
		c.budget.release(1, f.cost)
		return
	}
	c.disp.push(f)
}

// sweep completes every message of the cluster still pending with err. Close
// calls it after the writers are closed: pulsar-client-go drops messages
// still in a batch or in its send queue at close without a callback.
// It returns how many messages it completed.
func (c *cluster) sweep(err error) int {
	n := 0
	for _, pt := range c.parts {
		for {
			pt.mu.Lock()
			f := pt.head
			pt.mu.Unlock()
			if f == nil {
				break
			}
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
		c.obs.OnDone(f.ev)
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
	case errors.Is(err, pulsar.ErrSendTimeout):
		e.Err = ErrSendTimeout
	case errors.Is(err, pulsar.ErrMessageTooLarge):
		e.Err = ErrMessageTooLarge
	}
	return e
}
