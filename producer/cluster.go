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
	pool   *txnPool // nil without Transactions(true)
	join   *joinState

	// retired: a partition change replaced the cluster by one with more
	// partitions over the same writers (see grow), which close with that
	// one; set under the Producer's joinMu before the swap.
	retired bool
	// prev is the cluster this one succeeded (see grow), whose messages
	// count in the shared health; nil for a cluster that joined.
	prev *cluster

	bulkMu     sync.Mutex    // guards the fields below
	bulk       []*bulkWriter // writers reserved for SendTxnBulk, per partition; nil until its first use
	bulkClosed bool
	bulkNone   bool // the writers take no second producer (access mode)
}

// partition is one partition of the topic in a cluster. Its writer (a
// pulsar-client-go producer with one event loop) is the single writer that
// owns the partition.
type partition struct {
	idx int
	c   *cluster
	w   writer

	// A sender holds mu while it hands a message over: it numbers the
	// message (placed) and puts it in the ring at that number, so that the
	// callback goroutine reports the partition's outcomes in that order
	// and Close can give an outcome to any that pulsar-client-go dropped,
	// and calls the writer. Close sets closed under mu, so no writer is
	// closed in the middle of a hand-over. The goroutines that complete
	// messages never take mu, so this costs the hot path one uncontended
	// lock (and pulsar-client-go serialises a partition's sends anyway).
	mu        sync.Mutex // guards the fields below
	closed    bool
	markEpoch uint64      // the last change that took keys from the partition (see put)
	stopped   bool        // the callback goroutine has stopped: refusals are reported at once
	reclaimed uint64      // the messages numbered up to it have left the ring (see reclaimLocked)
	loose     []*inflight // handed-over messages without a callback (see holdLooseLocked)
	looseHead int         // loose[:looseHead] are pruned
	free      []*inflight // reported inflights, ready for reuse
	slab      int         // the size of the last slab of inflights allocated (see minSlab)

	// maxFree bounds free: the partition's even share of its cluster's
	// MaxPendingMessages, at least minFree. Inflights beyond it go to
	// inflightPool, which the GC empties; a free list too short for the
	// messages a partition holds sent inflights through the pool, and some
	// to the GC, at every turn of its acknowledgements.
	maxFree int

	// handed counts the messages handed to the writer, ever, for the
	// health monitor, which reads it without mu: a monitor that took mu
	// would wait behind a hand-over.
	handed atomic.Uint64

	// placed is the number of the last message put in the ring. Senders
	// write it under mu once the message is in its slot; the callback
	// goroutine reads the ring up to it without mu, so it reads no slot a
	// sender may be writing.
	placed atomic.Uint64

	// ring is written under mu, and read by the callback goroutine
	// without: a grown ring is published before any message is placed in
	// it alone.
	ring atomic.Pointer[ring]

	// Owned by the cluster's callback goroutine (the dispatcher), on a
	// cache line of their own: the dispatcher writes next at every
	// message, the senders the fields above.
	_    [64]byte
	next uint64 // the number of the next message to report

	// gate, when not nil, holds the partition's reports until it is
	// closed: a partition change's new partition object over the writer
	// of an old one reports nothing before the old one has reported what
	// was handed to it before the change, so that a key's callbacks stay
	// in call order (see grow). Set before the dispatcher starts; the
	// dispatcher clears it once closed.
	gate chan struct{}

	// reported is next-1 as the senders may see it, published by the
	// dispatcher after each run of reports: the messages numbered up to
	// it have been reported, so their inflights may be reused.
	reported atomic.Uint64
}

// An inflight's state is its number (seq) shifted left by phaseBits, with
// its phase in the low bits: pending (handed over, no outcome yet),
// settling (its outcome is being written) and completed (its outcome is
// fixed, not reported yet). A message is reported once its partition's
// watermark (partition.reported) passes its number. The callback
// goroutine reports the message numbered next when its inflight's state
// is next's number, completed: the number makes the check its own proof.
const (
	pending   = 0
	settling  = 1
	completed = 2

	phaseBits = 2
	phaseMask = 1<<phaseBits - 1
)

// inflight is one message handed to Send or SendAsync, from the hand-over
// until its outcome has been reported. Inflights are reused (see minSlab),
// so what is made once per inflight (onAck) costs a message nothing.
type inflight struct {
	pm   pulsar.ProducerMessage
	ctx  context.Context
	msg  *Message
	cb   Callback // Send's own, or the caller's; nil: only the observer is told
	part *partition
	cost int64

	// accepted: the message holds budget and was handed to its writer;
	// false for a message that failed before, which holds nothing.
	accepted bool

	// userCB: cb is a SendAsync caller's, so reporting f runs user code
	// (see dispatcher.inside).
	userCB bool

	// onAck is the callback f is handed to pulsar-client-go with: made
	// once with f, it settles f, so a send allocates no closure.
	onAck func(pulsar.MessageID, *pulsar.ProducerMessage, error)

	// own is the Event of an observed slab's inflight, kept with it and
	// used for each of its messages; nil for other inflights, whose
	// messages take an Event from eventPool (see eventFor).
	own *Event

	// state is the message's number and phase (see pending). The sender
	// sets it when it numbers the message, the goroutine that
	// fixes the outcome moves it from pending to completed (once), and
	// the callback goroutine reads it.
	state atomic.Uint64

	id  pulsar.MessageID
	err error
	ev  *Event // non-nil when observed
}

// minFree is the least bound of a partition's free list (see
// partition.maxFree).
const minFree = 1024

// inflightPool holds pooled inflights that no partition's free list took,
// so that a message costs the SDK no allocation of its own (the inflight
// carries pulsar-client-go's ProducerMessage, the largest part of a
// message's cost). It has no New: see takeLocked and pooledInflight.
var inflightPool sync.Pool

// A partition that has no inflight to reuse allocates a slab of them,
// adjacent in memory: minSlab at first, twice as many each time after, up
// to maxSlab. A partition cycles through the inflights of the messages it
// holds (thousands under load), so each is out of every cache by the time
// it is reused: adjacent ones are read and written in runs that the CPU's
// prefetchers follow, where inflights allocated one by one lay among other
// objects (PERF.md has the end-to-end figures). Growing slabs keep a
// partition that holds few messages small.
const (
	minSlab = 16
	maxSlab = 256
)

// pooledInflight returns an inflight from inflightPool, or a new one.
func pooledInflight() *inflight {
	if f, ok := inflightPool.Get().(*inflight); ok {
		return f
	}
	return newInflight(new(inflight))
}

// newInflight readies f, a new inflight, for use: it makes f's onAck.
func newInflight(f *inflight) *inflight {
	f.onAck = func(id pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
		f.part.c.settle(f, f.state.Load(), id, err)
	}
	return f
}

// clear drops what a reported f holds of its message at once (an idle
// partition would keep it until its next send), and leaves state as it is:
// f stays in its partition's ring until the ring is reclaimed past it, and
// the sender that reuses f numbers it again. It runs where f was just
// reported, while f is in that goroutine's cache, rather than on the
// sender that reuses f.
//
// Of pm it drops what may be large (the value, the key and the other
// caller's slices) but not Properties: pulsar-client-go may still read a
// failed chunked message's Properties after its callback (for a log
// field, as it fails the message's other chunks); toPulsar sets it again.
// pm.Value stays nil throughout: toPulsar never sets it, nor does
// pulsar-client-go, whose one write to a ProducerMessage is
// ReplicationClusters, for a message that disables replication
// (producer_partition.go, updateMetaData, v0.21.0).
//
// It keeps part, which outlives every message: the partition's own
// inflights go back to it, and onAck and own, made once with f. The
// fields most messages leave unset are stored only when set (storeIfNew):
// f is in this goroutine's cache here, so the loads cost little.
func (f *inflight) clear() {
	f.pm.Payload, f.pm.Key = nil, ""
	f.ctx, f.msg, f.cb, f.id = nil, nil, nil, nil
	f.cost, f.accepted, f.userCB = 0, false, false
	if f.pm.ReplicationClusters != nil {
		f.pm.ReplicationClusters = nil
	}
	storeIfNew(&f.pm.OrderingKey, "")
	storeIfNew(&f.pm.SequenceID, nil)
	if f.err != nil {
		f.err = nil
	}
	storeIfNew(&f.ev, nil)
}

// take is takeLocked for a caller that does not hold mu.
func (pt *partition) take() *inflight {
	pt.mu.Lock()
	f := pt.takeLocked()
	pt.mu.Unlock()
	return f
}

// takeLocked returns an inflight to reuse: from the free list, refilled
// first from the reported messages of the ring and of loose
// (reclaimLocked, pruneLooseLocked) when it is empty, else from
// inflightPool, else the first of a new slab whose others go to the free
// list. Called with mu held.
func (pt *partition) takeLocked() *inflight {
	if len(pt.free) == 0 {
		pt.reclaimLocked()
		pt.pruneLooseLocked()
	}
	if len(pt.free) == 0 {
		if f, ok := inflightPool.Get().(*inflight); ok {
			return f
		}
		pt.slab = min(max(pt.slab*2, minSlab), maxSlab)
		pt.free = appendSlab(pt.free, pt.slab, pt.c.obs != nil)
	}
	n := len(pt.free)
	f := pt.free[n-1]
	pt.free[n-1] = nil
	pt.free = pt.free[:n-1]
	return f
}

// appendSlab allocates n inflights, adjacent in memory, and appends them
// to free last first, so that they are taken (from the end) first first.
// An observed cluster's each come with their Event (inflight.own) beside
// them, so that observing takes no Event from eventPool.
func appendSlab(free []*inflight, n int, observed bool) []*inflight {
	if observed {
		slab := make([]observedInflight, n)
		for i := n - 1; i >= 0; i-- {
			f := newInflight(&slab[i].f)
			f.own = &slab[i].ev
			free = append(free, f)
		}
		return free
	}
	slab := make([]inflight, n)
	for i := n - 1; i >= 0; i-- {
		free = append(free, newInflight(&slab[i]))
	}
	return free
}

// observedInflight is an inflight of an observed cluster's slab and its
// Event, allocated together.
type observedInflight struct {
	f  inflight
	ev Event
}

// close refuses every later hand-over; it waits for one in progress.
func (pt *partition) close() {
	pt.mu.Lock()
	pt.closed = true
	pt.mu.Unlock()
}
