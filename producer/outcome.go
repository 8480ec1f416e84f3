package producer

import (
	"context"
	"errors"

	"github.com/apache/pulsar-client-go/pulsar"
)

// sendError makes the *SendError for a message that failed with err, as a
// caller sees it: classified by sentinel, with the ctx's own error where
// pulsar-client-go reports an expired ctx, and NotWritten when the message
// failed before it was handed to a writer (refused) or pulsar-client-go
// says it never sent it.
func (c *cluster) sendError(ctx context.Context, key string, part int, err error, refused bool) *SendError {
	e := &SendError{Key: key, Cluster: c.name, Partition: part, Cause: err, notWritten: refused || notSent(err)}
	switch {
	case errors.Is(err, pulsar.ErrContextExpired):
		e.Cause = ctx.Err()
		if e.Cause == nil {
			e.Cause = err
		}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
	case errors.Is(err, ErrClosed), errors.Is(err, pulsar.ErrProducerClosed):
		e.Err = ErrClosed
	case errors.Is(err, ErrInCallback):
		e.Err = ErrInCallback
	case errors.Is(err, ErrBadMessage):
		e.Err = ErrBadMessage
	case errors.Is(err, ErrClusterDown):
		e.Err = ErrClusterDown
	case errors.Is(err, ErrBufferFull):
		e.Err = ErrBufferFull
	case errors.Is(err, pulsar.ErrSendTimeout):
		e.Err = ErrSendTimeout
	case errors.Is(err, pulsar.ErrMessageTooLarge):
		e.Err = ErrMessageTooLarge
	case encryptFailed(err):
		e.Err = ErrEncryption
	}
	if e.Err != nil && e.Cause == e.Err {
		e.Cause = nil
	}
	return e
}

// settle fixes the outcome of a message handed to a writer, whose state
// was found to be st, and passes it on to the callback goroutine, or
// reports it at once when it has no callback. Only the first call for a
// message counts: settle reports whether this one did. It runs on
// whatever goroutine pulsar-client-go reports on, or on Close's for
// messages it sweeps. The callback goroutine may report f, and a sender
// reuse it, as soon as its state says completed: nothing touches f after
// that.
func (c *cluster) settle(f *inflight, st uint64, id pulsar.MessageID, err error) bool {
	if st&phaseMask != pending || !f.state.CompareAndSwap(st, st|settling) {
		return false
	}
	f.id = id
	if err != nil { // else f.err is nil already (see clear): no store
		f.err = err
		c.health.failed.Add(1)
	} else {
		c.health.acked.Add(1)
	}
	if st == pending { // no callback (see holdLooseLocked): report here
		c.report(f)
		c.budget.release(1, f.cost)
		f.clear()
		f.state.Store(completed)
		return true
	}
	f.state.Store(st | completed)
	c.disp.settled(endsBurst(id, err))
	return true
}

// refuse gives err as the outcome of a message that failed before it was
// handed to a writer. f is already routed (to its key's own partition),
// so the outcome is reported after those of the key's earlier messages.
// A refusal without a callback has no order to keep (see holdLooseLocked),
// and after the callback goroutine has stopped (Close) none can wait for
// it: those are reported at once.
func (c *cluster) refuse(f *inflight, err error) {
	f.err = err
	pt := f.part
	if f.cb != nil {
		pt.mu.Lock()
		if !pt.stopped {
			pt.placeLocked(f, completed)
			pt.mu.Unlock()
			c.disp.wake()
			return
		}
		pt.mu.Unlock()
	}
	c.report(f)
	f.clear()
	inflightPool.Put(f)
}

// sweep completes every message of the cluster still pending with err. Close
// calls it after the writers are closed: pulsar-client-go drops messages
// still in a batch or in its send queue at close without a callback.
// It returns how many messages it completed.
func (c *cluster) sweep(err error) int {
	n := 0
	for _, pt := range c.parts {
		for _, f := range pt.unfinished() {
			if c.settle(f, f.state.Load(), nil, err) {
				n++
			}
		}
	}
	return n
}

// outcome turns f's result into an ID or error and tells the observer.
func (c *cluster) outcome(f *inflight) (ID, error) {
	var id ID
	var err error
	if f.err != nil {
		err = c.sendError(f.ctx, f.msg.Key, f.part.idx, f.err, !f.accepted)
	} else {
		id = ID{Cluster: c.name, Partition: f.part.idx, MessageID: f.id}
	}
	if ev := f.ev; ev != nil {
		// Field by field, as in observe: the Event's ID and Err are zero.
		if err != nil {
			ev.Err = err
		} else {
			ev.ID.Cluster, ev.ID.Partition, ev.ID.MessageID = id.Cluster, id.Partition, id.MessageID
		}
		if ev == f.own {
			c.obs.OnDone(ev)
			ev.reset()
		} else {
			c.end(f.ev)
		}
		f.ev = nil
	}
	return id, err
}

// report tells the observer and runs f's callback. An acknowledged,
// unobserved message, most of them, takes a shorter path that builds no
// Event outcome.
func (c *cluster) report(f *inflight) {
	if f.cb == nil {
		if f.ev != nil {
			c.outcome(f)
		}
		return
	}
	if f.err == nil && f.ev == nil {
		f.cb(ID{Cluster: c.name, Partition: f.part.idx, MessageID: f.id}, f.msg, nil)
		return
	}
	id, err := c.outcome(f)
	f.cb(id, f.msg, err)
}
