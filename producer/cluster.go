package producer

import (
	"context"
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
	health *health
	disp   *dispatcher
	link   *link

	// onAck is the one callback every message of the cluster is handed to
	// pulsar-client-go with, so that a send allocates no closure per
	// message (see inflightOf).
	onAck func(pulsar.MessageID, *pulsar.ProducerMessage, error)
}

// partition is one partition of the topic in a cluster. Its writer (a
// pulsar-client-go producer with one event loop) is the single writer that
// owns the partition.
type partition struct {
	idx int
	c   *cluster
	w   writer

	// Senders append to track the messages handed to w, oldest first, so
	// that Close can give an outcome to any that pulsar-client-go dropped,
	// and number the messages whose outcome is reported (seq), so that the
	// callback goroutine reports them in that order. The goroutines that
	// complete messages never take mu, so this costs the hot path one
	// uncontended lock.
	mu    sync.Mutex // guards track, head and seq
	track []*inflight
	head  int    // track[:head] are trimmed (nil)
	seq   uint64 // the last number given to a reported message

	// Owned by the cluster's callback goroutine (the dispatcher).
	next uint64               // the number of the next message to report
	held map[uint64]*inflight // outcomes that came before next's
}

// inflight is one message handed to Send or SendAsync, from the hand-over
// until its outcome has been reported. pm must stay the first field: see
// inflightOf.
type inflight struct {
	pm   pulsar.ProducerMessage
	ctx  context.Context
	msg  *Message
	cb   Callback // Send's own, or the caller's; nil: nothing to report
	part *partition
	cost int64
	seq  uint64 // its number among the partition's reported messages; 0 when cb is nil

	// accepted: the message holds budget and was handed to its writer;
	// false for a message that failed before, which holds nothing.
	accepted bool

	state atomic.Uint32 // 0 pending, 1 completed (outcome fixed)

	id  pulsar.MessageID
	err error
	ev  *Event // non-nil when observed

	barrier *barrier // non-nil for a Flush barrier (not a message)
}

// enqueue numbers f when it has an outcome to report and, when it was
// handed to the writer, tracks it; it first trims completed messages from
// the front of track.
func (pt *partition) enqueue(f *inflight) {
	pt.mu.Lock()
	if f.cb != nil {
		pt.seq++
		f.seq = pt.seq
	}
	if f.accepted {
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
	}
	pt.mu.Unlock()
}

// lastSeq returns the number of the last message to report handed over.
func (pt *partition) lastSeq() uint64 {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	return pt.seq
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

// ack is the cluster's callback for pulsar-client-go.
func (c *cluster) ack(id pulsar.MessageID, pm *pulsar.ProducerMessage, err error) {
	c.complete(inflightOf(pm), id, err)
}

// complete fixes the outcome of a message handed to a writer (once; later
// calls are ignored) and passes it on. It runs on whatever goroutine
// pulsar-client-go reports on, or on Close's for messages it sweeps.
func (c *cluster) complete(f *inflight, id pulsar.MessageID, err error) {
	if !f.state.CompareAndSwap(0, 1) {
		return
	}
	f.id, f.err = id, err
	c.health.completed.Add(1)
	if err == nil {
		c.health.acks.Add(1)
	}
	c.finish(f, endsBurst(id, err))
}

// refuse gives err as the outcome of a message that failed before it was
// handed to a writer. f is already routed (to its key's own partition),
// so the outcome is reported after those of the key's earlier messages.
func (c *cluster) refuse(f *inflight, err error) {
	f.err = err
	f.state.Store(1)
	f.part.enqueue(f)
	c.finish(f, true)
}

// finish passes a completed message on: to the callback goroutine, or,
// when there is no callback to run, straight to the observer.
func (c *cluster) finish(f *inflight, last bool) {
	if f.seq != 0 {
		c.disp.push(f, last)
		return
	}
	if f.ev != nil {
		c.outcome(f)
	}
	if f.accepted {
		c.budget.release(1, f.cost)
	}
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
		err = c.sendError(f.ctx, f.msg.Key, f.part.idx, f.err, !f.accepted)
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
