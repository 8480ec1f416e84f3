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
