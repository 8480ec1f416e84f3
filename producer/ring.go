package producer

import "unsafe"

// ring holds a partition's messages from the hand-over until their
// inflights are reclaimed: the inflight of the message numbered seq is at
// slots[seq&mask]. Senders write it under the partition's mu; the
// callback goroutine reads the slots up to partition.placed without mu.
//
// The ring is how a partition's outcomes reach its callbacks in order: the
// goroutine that fixes an outcome only marks the inflight completed (and
// wakes the callback goroutine at the end of a burst), and the callback
// goroutine walks the ring from the next message to report while the
// messages there are completed. No outcome is queued, and none that comes
// early is held anywhere but in its slot.
type ring struct {
	slots []*inflight
	mask  uint64
}

// minRing is a partition's first ring size. A ring grows (doubling) when it
// would hold more messages than it has slots: a partition's messages in
// flight, and the reported ones not yet reclaimed, up to the free list's
// room.
const minRing = 1024

// newPartition returns partition idx of c, written by w, with an empty
// ring.
func newPartition(idx int, c *cluster, w writer, maxFree int) *partition {
	pt := &partition{idx: idx, c: c, w: w, maxFree: maxFree, r: newRing(minRing)}
	pt.ring.Store(pt.r)
	return pt
}

func newRing(n int) *ring {
	return &ring{slots: make([]*inflight, n), mask: uint64(n - 1)}
}

// at returns the inflight in seq's slot.
func (r *ring) at(seq uint64) *inflight { return r.slots[seq&r.mask] }

// setState sets f's state with a plain store, where f.state.Store would
// be an exchange, a full barrier that waits for the stores before it (on
// amd64). Only the sender that numbers f may call it, under mu: no other
// goroutine reads f until a later atomic publishes it (partition.placed,
// or the writer's callback), and the goroutines that used f before
// handed it back through atomics (partition.reported, or a completed
// state that pruneLooseLocked read).
func (f *inflight) setState(v uint64) {
	*(*uint64)(unsafe.Pointer(&f.state)) = v
}

// placeLocked numbers f, sets its state to that number in the given phase
// (pending for a message handed to the writer, completed for a refused
// one), puts it in the ring and publishes it (placed). f's other fields
// must be set before. Called with mu held.
func (pt *partition) placeLocked(f *inflight, phase uint64) {
	pt.seq++
	r := pt.r
	if pt.seq-pt.reclaimed > uint64(len(r.slots)) {
		pt.reclaimLocked()
		if pt.seq-pt.reclaimed > uint64(len(r.slots)) {
			r = pt.growLocked()
		}
	}
	f.setState(pt.seq<<phaseBits | phase)
	r.slots[pt.seq&r.mask] = f
	pt.placed.Store(pt.seq)
}

// growLocked doubles the ring, copying the messages placed in it, and
// publishes the new one before any message is placed in it alone. The
// callback goroutine may still read the old ring, which is never written
// again, up to the placed it read before it. Called with mu held.
func (pt *partition) growLocked() *ring {
	old := pt.r
	r := newRing(2 * len(old.slots))
	for s := pt.reclaimed + 1; s < pt.seq; s++ {
		r.slots[s&r.mask] = old.at(s)
	}
	pt.r = r
	pt.ring.Store(r)
	return r
}

// reclaimLocked moves the inflights of the reported messages still in the
// ring to the free list, oldest first, up to its room; the others go to
// inflightPool. It runs when the free list is empty and before the ring
// would grow, so messages leave the ring in runs rather than one at each
// send (make bench-ir, with the track this replaced: 163 instructions a
// message to take, track and trim one at a time, 123 in runs). A slot
// keeps its pointer until the ring comes round to it again: the inflight
// was cleared when it was reported. Called with mu held.
func (pt *partition) reclaimLocked() {
	upTo := pt.reported.Load()
	if upTo <= pt.reclaimed {
		return
	}
	r, free, room := pt.r, pt.free, pt.maxFree-len(pt.free)
	for s := pt.reclaimed + 1; s <= upTo; s++ {
		f := r.at(s)
		if room > 0 {
			free = append(free, f)
			room--
		} else {
			inflightPool.Put(f)
		}
	}
	pt.free, pt.reclaimed = free, upTo
}

// holdLooseLocked keeps f, a message without a callback handed to the
// writer, in loose until its outcome has been reported. Such a message
// takes no number: it has no callback to order, so a later message's
// outcome never waits for its own (a refusal reports at once behind a
// message the broker holds). Its outcome is reported where it is fixed
// (settle), and then its state is completed, with number 0. Reported
// messages leave loose in runs, as they leave the ring. Called with mu
// held.
func (pt *partition) holdLooseLocked(f *inflight) {
	if len(pt.loose) == cap(pt.loose) {
		pt.pruneLooseLocked()
	}
	f.setState(pending)
	pt.loose = append(pt.loose, f)
}

// pruneLooseLocked moves the reported messages at the front of loose to the
// free list (up to its room; the others to inflightPool), and moves what is
// left to the front when that frees more than half of loose. Called with
// mu held.
func (pt *partition) pruneLooseLocked() {
	loose, i := pt.loose, pt.looseHead
	free, room := pt.free, pt.maxFree-len(pt.free)
	for ; i < len(loose) && loose[i].state.Load() == completed; i++ {
		if room > 0 {
			free = append(free, loose[i])
			room--
		} else {
			inflightPool.Put(loose[i])
		}
	}
	pt.free = free
	switch {
	case i == len(loose):
		clear(loose)
		pt.loose, pt.looseHead = loose[:0], 0
	case i > len(loose)/2:
		n := copy(loose, loose[i:])
		clear(loose[n:])
		pt.loose, pt.looseHead = loose[:n], 0
	default:
		pt.looseHead = i
	}
}

// unfinished returns the messages handed to the writer that have no outcome
// yet, each with the state it was found in. Once the partition is closed no
// message is handed over, so none of them is numbered again.
func (pt *partition) unfinished() (fs []*inflight, states []uint64) {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	for s := pt.reclaimed + 1; s <= pt.seq; s++ {
		f := pt.r.at(s)
		if st := f.state.Load(); st == s<<phaseBits|pending {
			fs, states = append(fs, f), append(states, st)
		}
	}
	for _, f := range pt.loose[pt.looseHead:] {
		if f.state.Load() == pending {
			fs, states = append(fs, f), append(states, pending)
		}
	}
	return fs, states
}

// stop tells later refusals that the callback goroutine has stopped, and
// returns the number of the last message in the ring.
func (pt *partition) stop() uint64 {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	pt.stopped = true
	return pt.seq
}
