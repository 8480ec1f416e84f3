package producer

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
	pt := &partition{idx: idx, c: c, w: w, maxFree: maxFree}
	pt.ring.Store(newRing(minRing))
	return pt
}

func newRing(n int) *ring {
	return &ring{slots: make([]*inflight, n), mask: uint64(n - 1)}
}

// at returns the inflight in seq's slot.
func (r *ring) at(seq uint64) *inflight { return r.slots[seq&r.mask] }

// placeLocked numbers f (the number after placed), sets its state to that
// number in the given phase (pending for a message handed to the writer,
// completed for a refused one), puts it in the ring and publishes it
// (placed). f's other fields must be set before. Called with mu held.
func (pt *partition) placeLocked(f *inflight, phase uint64) {
	seq := pt.placed.Load() + 1
	r := pt.ring.Load()
	if seq-pt.reclaimed > uint64(len(r.slots)) {
		pt.reclaimLocked()
		if seq-pt.reclaimed > uint64(len(r.slots)) {
			r = pt.growLocked(seq)
		}
	}
	f.state.Store(seq<<phaseBits | phase)
	r.slots[seq&r.mask] = f
	pt.placed.Store(seq)
}

// growLocked doubles the ring, copying the messages placed in it before
// seq, and publishes the new one before any message is placed in it alone.
// The callback goroutine may still read the old ring, which is never
// written again, up to the placed it read before it. Called with mu held.
func (pt *partition) growLocked(seq uint64) *ring {
	old := pt.ring.Load()
	r := newRing(2 * len(old.slots))
	for s := pt.reclaimed + 1; s < seq; s++ {
		r.slots[s&r.mask] = old.at(s)
	}
	pt.ring.Store(r)
	return r
}

// reclaimLocked moves the inflights of the reported messages still in the
// ring to the free list, oldest first, up to its room; the others go to
// inflightPool. It runs when the free list is empty and before the ring
// would grow, so messages leave the ring in runs rather than one at each
// send. A slot
// keeps its pointer until the ring comes round to it again: the inflight
// was cleared when it was reported. Called with mu held.
func (pt *partition) reclaimLocked() {
	upTo := pt.reported.Load()
	if upTo <= pt.reclaimed {
		return
	}
	r := pt.ring.Load()
	for s := pt.reclaimed + 1; s <= upTo; s++ {
		pt.keepLocked(r.at(s))
	}
	pt.reclaimed = upTo
}

// keepLocked puts a reported f on the free list, or in inflightPool when
// the list is full (see maxFree). Called with mu held.
func (pt *partition) keepLocked(f *inflight) {
	if len(pt.free) < pt.maxFree {
		pt.free = append(pt.free, f)
	} else {
		inflightPool.Put(f)
	}
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
	f.state.Store(pending)
	pt.loose = append(pt.loose, f)
}

// pruneLooseLocked moves the reported messages at the front of loose to the
// free list (up to its room; the others to inflightPool), and moves what is
// left to the front when that frees more than half of loose. Called with
// mu held.
func (pt *partition) pruneLooseLocked() {
	loose, i := pt.loose, pt.looseHead
	for ; i < len(loose) && loose[i].state.Load() == completed; i++ {
		pt.keepLocked(loose[i])
	}
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
// yet. Once the partition is closed no message is handed over, so none of
// them is pending again once it has an outcome.
func (pt *partition) unfinished() []*inflight {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	var out []*inflight
	r := pt.ring.Load()
	for s, last := pt.reclaimed+1, pt.placed.Load(); s <= last; s++ {
		if f := r.at(s); f.state.Load() == s<<phaseBits|pending {
			out = append(out, f)
		}
	}
	for _, f := range pt.loose[pt.looseHead:] {
		if f.state.Load() == pending {
			out = append(out, f)
		}
	}
	return out
}

// stop tells later refusals that the callback goroutine has stopped, and
// returns the number of the last message in the ring.
func (pt *partition) stop() uint64 {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	pt.stopped = true
	return pt.placed.Load()
}
