package consumer

import (
	"sync/atomic"

	"github.com/keyroute/keyroute/router"
)

// The delivered frontier of each partition (HANDOVER.md, section 6): one
// packed word per partition on the steady path, the holder's state past
// it.

// frontTable holds one frontier per partition index; it only grows (a
// copy replaces it, under the holder's lock).
type frontTable struct{ p []front }

// front is the highest position taken from a partition (with
// partState.held, its delivered frontier): word packs a position as a
// valid bit, 8 bits of ledger above base, 41 bits of entry and 14 of
// batch index + 1, so that words of one base compare as positions do. A
// new ledger past base+255 (ledger ids are drawn cluster-wide, so a
// partition's next ledger can be far) goes to the holder, which moves
// base. 0 is none taken yet; a position that does not fit otherwise is kept
// in partState.full with the word packOverflow.
type front struct {
	word atomic.Uint64
	base atomic.Int64
}

const (
	packValid    = 1 << 63
	packOverflow = ^uint64(0)
)

// pack packs a position whose ledger is delta above its base.
func pack(delta, entry int64, batch int32) (uint64, bool) {
	if uint64(delta) >= 1<<8 || uint64(entry) >= 1<<41 || batch < -1 || batch >= 1<<14-1 {
		return 0, false
	}
	return packValid | uint64(delta)<<55 | uint64(entry)<<14 | uint64(batch+1), true
}

func unpack(v uint64, base int64) router.Position {
	return router.Position{Ledger: base + int64(v>>55&(1<<8-1)), Entry: int64(v >> 14 & (1<<41 - 1)), Batch: int32(v&(1<<14-1)) - 1}
}

// part returns pk's state, making it (and room in the cluster's frontier
// table) the first time.
func (h *holder) part(pk partKey) *partState {
	ps := h.parts[pk]
	if ps != nil {
		return ps
	}
	ps = &partState{}
	h.parts[pk] = ps
	t := pk.k.hold.front.Load()
	if t == nil || int(pk.p) >= len(t.p) {
		n := max(8, int(pk.p)+1)
		if t != nil {
			n = max(n, 2*len(t.p))
		}
		nt := &frontTable{p: make([]front, n)}
		if t != nil {
			// Each old word is retired as packOverflow as it is copied:
			// a steady-path take on another goroutine either stored
			// before (and the copy has it) or finds the overflow and
			// comes here, to the new table.
			for i := range t.p {
				nt.p[i].base.Store(t.p[i].base.Load())
				nt.p[i].word.Store(t.p[i].word.Swap(packOverflow))
			}
		}
		pk.k.hold.front.Store(nt)
	}
	return ps
}

// frontier returns the highest position taken from pk; ok is false while
// nothing of pk was taken. ps may be nil.
func (h *holder) frontier(pk partKey, ps *partState) (router.Position, bool) {
	t := pk.k.hold.front.Load()
	if t == nil || int(pk.p) >= len(t.p) {
		return router.Position{}, false
	}
	f := &t.p[pk.p]
	switch v := f.word.Load(); {
	case v == 0:
		return router.Position{}, false
	case v == packOverflow && ps != nil:
		return ps.full, true
	default:
		return unpack(v, f.base.Load()), true
	}
}

// raise moves the highest position taken from pk up to pos (never down:
// a redelivery comes below it) and queues pk to settle when it moved. Steady-path takes on
// other goroutines compare-and-swap the word (never down either); a base
// moves only here, with the word at packOverflow meanwhile, so that none
// of them packs against the wrong base.
func (h *holder) raise(pk partKey, ps *partState, pos router.Position) {
	f := &pk.k.hold.front.Load().p[pk.p]
	for {
		w := f.word.Load()
		if cur, ok := h.frontier(pk, ps); ok && pos.Compare(cur) <= 0 {
			return
		}
		if v, fits := pack(pos.Ledger-f.base.Load(), pos.Entry, pos.Batch); fits {
			if !f.word.CompareAndSwap(w, v) {
				continue
			}
		} else if !f.word.CompareAndSwap(w, packOverflow) {
			continue
		} else if v, fits := pack(0, pos.Entry, pos.Batch); fits {
			f.base.Store(pos.Ledger)
			f.word.Store(v)
		} else {
			ps.full = pos
		}
		h.work = append(h.work, pk)
		return
	}
}

// frontiers returns the highest position taken from each of m's first
// parts partitions, nil for one with none taken.
func (h *holder) frontiers(m *member, parts int) []*router.Position {
	h.mu.Lock()
	defer h.mu.Unlock()
	t := m.hold.front.Load()
	out := make([]*router.Position, parts)
	if t == nil {
		return out
	}
	for p := range min(parts, len(t.p)) {
		f := &t.p[p]
		if v := f.word.Load(); v != 0 && v != packOverflow {
			pos := unpack(v, f.base.Load())
			out[p] = &pos
		}
	}
	return out
}
