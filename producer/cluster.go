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

	bulkMu     sync.Mutex    // guards the fields below
	bulk       []*bulkWriter // writers reserved for SendTxnBulk, per partition; nil until its first use
	bulkClosed bool
	bulkNone   bool // the writers take no second producer (access mode)

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

	// A sender holds mu while it hands a message over: it numbers the
	// message (seq), so that the callback goroutine reports the
	// partition's outcomes in that order, appends it to track, so that
	// Close can give an outcome to any that pulsar-client-go dropped, and
	// calls the writer. Close sets closed under mu, so no writer is closed
	// in the middle of a hand-over. The goroutines that complete messages
	// never take mu, so this costs the hot path one uncontended lock (and
	// pulsar-client-go serialises a partition's sends anyway).
	mu     sync.Mutex // guards the fields below
	closed bool
	track  []tracked
	head   int         // track[:head] are trimmed (see trimLocked)
	seq    uint64      // the last number given to a reported message
	free   []*inflight // reported pooled inflights, ready for reuse
	slab   int         // the size of the last slab of inflights allocated (see minSlab)

	// maxFree bounds free: the partition's even share of its cluster's
	// MaxPendingMessages, at least minFree. Inflights beyond it go to
	// inflightPool, which the GC empties; a free list too short for the
	// messages a partition holds sent inflights through the pool, and some
	// to the GC, at every turn of its acknowledgements.
	maxFree int

	// Owned by the cluster's callback goroutine (the dispatcher), on a
	// cache line of their own: the dispatcher writes next at every
	// message, the senders the fields above.
	_    [64]byte
	next uint64               // the number of the next message to report
	held map[uint64]*inflight // outcomes that came before next's

	// reported is next-1 as the senders may see it, published by the
	// dispatcher after each run of reports: the messages numbered up to
	// it have been reported, so their inflights may be reused.
	reported atomic.Uint64
}

// tracked is an accepted message in its partition's track, with what
// trimming needs to know of it, so that trimming reads no inflight that
// another goroutine last wrote (with many partitions, an inflight seen
// again after thousands of others is no longer in any cache).
type tracked struct {
	f      *inflight
	seq    uint64 // f.seq when it was tracked
	pooled bool   // f.pooled
}

// States of an inflight.
const (
	pending   = iota // handed over, no outcome yet
	completed        // outcome fixed, not reported yet
	reported         // reported: its callback and observer have returned
)

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

	// accepted: the message holds budget and was handed to its writer
	// (and is tracked); false for a message that failed before, which
	// holds nothing.
	accepted bool

	// SendAsync's inflights are reused (pooled): an accepted one once its
	// partition's track drops it after it was reported, a refused one
	// once it is reported. Send's own are not: Send reads its inflight
	// after the outcome.
	pooled bool

	// slabEvent: f is the inflight of an observedInflight, whose Event
	// follows it (see eventFor). A flag rather than a pointer to the
	// Event keeps an inflight at 320 bytes, five cache lines (see
	// minSlab).
	slabEvent bool

	// state goes from pending to completed where the outcome is fixed.
	// A message reported in its partition's order (seq != 0) is reported
	// once the dispatcher's watermark (partition.reported) passes seq;
	// the others are marked reported here.
	state atomic.Uint32

	id  pulsar.MessageID
	err error
	ev  *Event // non-nil when observed

	barrier *barrier // non-nil for a Flush barrier (not a message)
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
// objects. End to end on one cluster (e2e/bench BenchmarkAsync), the
// process CPU per message went from 1.24x plain pulsar-client-go's to
// 1.14x-1.18x. Growing slabs keep a partition that holds few messages
// small.
//
// An inflight is 320 bytes and an observedInflight 512, whole cache lines
// (inflightBytes and observedBytes pin them; TestInflightsFillWholeLines).
// A slab of 32 KiB or more (128 inflights, 64 observed ones) is
// page-aligned, so each of its inflights starts a line and spans five
// (eight observed), where at 328 bytes one spanned six
// or seven; smaller slabs start 8 bytes into a line (the header Go puts in
// small objects that hold pointers), so a partition's first 112 inflights
// (48 observed) span six (nine).
const (
	minSlab = 16
	maxSlab = 256
)

// pooledInflight returns an inflight from inflightPool, or a new one.
func pooledInflight() *inflight {
	if f, ok := inflightPool.Get().(*inflight); ok {
		return f
	}
	return &inflight{pooled: true}
}

// reset makes a pooled f ready for reuse, keeping slabEvent: the Event
// after a slab's inflight stays its own.
func (f *inflight) reset() {
	*f = inflight{pooled: true, slabEvent: f.slabEvent}
}

// clear is reset for a reported f that its partition may still track: it
// drops what f holds of the message at once (an idle partition would keep
// it until its next send), and it leaves state as it is (Close's sweep
// reads it; the sender that reuses a pooled f sets it). It runs where f
// was just reported, while f is in that goroutine's cache, rather than on
// the sender that reuses f.
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
// inflights go back to it. The fields most messages leave unset are
// stored only when set, as each pointer store costs a write barrier while
// the GC marks (see toPulsar).
func (f *inflight) clear() {
	f.pm.Payload, f.pm.Key = nil, ""
	f.ctx, f.msg, f.cb, f.id = nil, nil, nil, nil
	f.cost, f.seq, f.accepted = 0, 0, false
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

// done marks f reported; the caller touches f no more. A refused pooled f
// is not tracked, so it is reused at once; an accepted f is cleared, and a
// pooled one reused once its partition's track drops it. inOrder: the dispatcher
// reported f in its partition's order, and its watermark says so.
func (f *inflight) done(inOrder bool) {
	switch {
	case f.pooled && !f.accepted:
		f.reset()
		inflightPool.Put(f)
		return
	case f.accepted:
		f.clear()
	}
	if !inOrder {
		f.state.Store(reported)
	}
}

// take is takeLocked for a caller that does not hold mu.
// It unlocks without defer: takeLocked does not panic, and an observed
// message ran 20 instructions fewer without it (make bench-ir: 1,342 to
// 1,322 in keyroute's frames; the deferred call's wrapper was 15).
func (pt *partition) take() *inflight {
	pt.mu.Lock()
	f := pt.takeLocked()
	pt.mu.Unlock()
	return f
}

// takeLocked returns a pooled inflight: from the free list (and prefetches
// the one it will return next), refilled first from the reported messages
// of track (trimLocked) when it is empty, else from inflightPool, else the
// first of a new slab whose others go to the free list. Called with mu
// held.
func (pt *partition) takeLocked() *inflight {
	if len(pt.free) == 0 {
		pt.trimLocked()
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
	if n > 1 {
		pt.c.prefetch(pt.free[n-2]) // the next one taken
	}
	return f
}

// appendSlab allocates n pooled inflights, adjacent in memory, and appends
// them to free last first, so that they are taken (from the end) first
// first. An observed cluster's each come with their Event right after
// them, so that one prefetch brings both (cluster.prefetch).
func appendSlab(free []*inflight, n int, observed bool) []*inflight {
	if observed {
		slab := make([]observedInflight, n)
		for i := n - 1; i >= 0; i-- {
			slab[i].f.pooled, slab[i].f.slabEvent = true, true
			free = append(free, &slab[i].f)
		}
		return free
	}
	slab := make([]inflight, n)
	for i := n - 1; i >= 0; i-- {
		slab[i].pooled = true
		free = append(free, &slab[i])
	}
	return free
}

// observedInflight is an inflight of an observed cluster's slab, with its
// Event. f must stay the first field: eventFor turns a pointer to f into
// one to its observedInflight (TestObservedSlabsPairInflightAndEvent).
type observedInflight struct {
	f  inflight
	ev Event
}

// trackLocked numbers f when it has an outcome to report and, when it is
// accepted, tracks it. Reported messages leave track in runs (trimLocked):
// when the free list is empty, and before track would grow. Called with mu
// held.
func (pt *partition) trackLocked(f *inflight) {
	if f.cb != nil {
		pt.seq++
		f.seq = pt.seq
	}
	if !f.accepted {
		return
	}
	if len(pt.track) == cap(pt.track) {
		pt.trimLocked()
	}
	pt.track = append(pt.track, tracked{f: f, seq: f.seq, pooled: f.pooled})
}

// trimLocked drops the reported messages from the front of track, keeping
// the pooled ones (cleared when they were reported) for reuse, and moves
// what is left to the front when that frees more than half of track. A
// trimmed entry of Send's own inflight is zeroed, so that the GC may have
// it; one of a pooled inflight keeps its pointer until it is overwritten,
// as the inflight lives on anyway. Trimming in runs, rather than one
// message at each send, cut the instructions of tracking, trimming and
// taking an inflight from 163 a message to 123 (make bench-ir: 1,022 to
// 981 in keyroute's frames, 1 cluster). Called with mu held.
func (pt *partition) trimLocked() {
	upTo := pt.reported.Load()
	track, i := pt.track, pt.head
	free, room := pt.free, pt.maxFree-len(pt.free)
	for ; i < len(track); i++ {
		t := &track[i]
		if !t.isReported(upTo) {
			break
		}
		switch {
		case !t.pooled:
			t.f = nil // Send's own: the GC's once Send has returned
		case room > 0:
			free = append(free, t.f)
			room--
		default:
			inflightPool.Put(t.f)
		}
	}
	pt.free = free
	switch {
	case i == len(track):
		pt.track, pt.head = track[:0], 0
	case i > len(track)/2:
		n := copy(track, track[i:])
		clear(track[n:])
		pt.track, pt.head = track[:n], 0
	default:
		pt.head = i
	}
}

// isReported reports whether t has been reported, given its partition's
// watermark upTo. A message with a callback is reported in order while the
// Producer is open, so the watermark says it without a look at the
// inflight; one without is marked reported.
func (t tracked) isReported(upTo uint64) bool {
	if t.seq != 0 {
		return t.seq <= upTo
	}
	return t.f.state.Load() == reported
}

// number numbers a refused f (which is not tracked).
func (pt *partition) number(f *inflight) {
	pt.mu.Lock()
	pt.trackLocked(f)
	pt.mu.Unlock()
}

// close refuses every later hand-over; it waits for one in progress.
func (pt *partition) close() {
	pt.mu.Lock()
	pt.closed = true
	pt.mu.Unlock()
}

// lastSeq returns the number of the last message to report handed over.
func (pt *partition) lastSeq() uint64 {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	return pt.seq
}

// unfinished returns the tracked messages that have no outcome yet. Once
// the partition is closed nothing trims track, so they stay valid (not
// reused) for the caller.
func (pt *partition) unfinished() []*inflight {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	var out []*inflight
	for _, t := range pt.track[pt.head:] {
		if t.f.state.Load() == pending {
			out = append(out, t.f)
		}
	}
	return out
}
