package consumer

import (
	"slices"
	"time"

	"github.com/keyroute/keyroute/router"
)

// The hand-over's bounds (router/HANDOVER.md, section 6.3): back-pressure
// at MaxHeld (press, apply), origins given up only without progress
// (stalled, force), and the fallback for a stream over every partition
// of a cluster (forceWhole).

// givenKey names a partition of a cluster by name, which outlives a
// subscription (an origin on a cluster not read names no *cluster).
type givenKey struct {
	cluster string
	p       int32
}

// progress is what the monitor last saw of a partition that holds wait
// on.
type progress struct {
	at    time.Time
	front router.Position
	ok    bool // something of the partition was taken
}

// waitHeap holds the queues that wait on one partition, the one waiting
// for the lowest position first: a frontier that advances looks only at
// the queues it passes, not at every queue waiting there.
type waitHeap []*queue

func (w waitHeap) Len() int           { return len(w) }
func (w waitHeap) Less(i, j int) bool { return w[i].waitPos.Compare(w[j].waitPos) < 0 }
func (w waitHeap) Swap(i, j int) {
	w[i], w[j] = w[j], w[i]
	w[i].waitIdx, w[j].waitIdx = i, j
}
func (w *waitHeap) Push(x any) {
	q := x.(*queue)
	q.waitIdx = len(*w)
	*w = append(*w, q)
}
func (w *waitHeap) Pop() any {
	old := *w
	q := old[len(old)-1]
	old[len(old)-1] = nil
	*w = old[:len(old)-1]
	return q
}

// press applies back-pressure at MaxHeld: every partition that holds
// messages is stopped, left out of the read set, so that its later
// messages wait in its receiver queue and on the broker, until it holds
// none (see release); every other partition, the origins the holds wait
// on among them, goes on being read. This cannot wait forever: a held
// message waits on an origin written before it, a stopped partition's
// unread messages on a held message written before them, so a chain of
// waits goes back in time and ends at a partition that is read (or at an
// origin that makes no progress, see stalled). A stream over every
// partition of its cluster (link.whole) cannot be stopped alone: its
// oldest holds are released instead while over the bound.
func (h *holder) press() {
	for pk, ps := range h.parts {
		if len(ps.held) > 0 && !ps.stopped && !pk.k.link.whole {
			ps.stopped = true
			h.flip = append(h.flip, pk)
		}
	}
	for h.held > h.max && h.forceWhole() {
	}
}

// apply makes the read set follow the partitions flipped (stopped or
// resumed) since the last call.
func (h *holder) apply() {
	var on, off []*part
	for _, pk := range h.flip {
		p := pk.k.part(pk.p)
		switch ps := h.parts[pk]; {
		case p == nil:
		case ps != nil && ps.stopped:
			on = append(on, p)
		default:
			off = append(off, p)
		}
	}
	clear(h.flip)
	h.flip = h.flip[:0]
	if on != nil {
		h.c.setStopped(on, true)
	}
	if off != nil {
		h.c.setStopped(off, false)
	}
}

// stalled releases the holds whose origin makes no progress: the
// partition a queue waits on has not moved its frontier for HoldTimeout,
// as the monitor sees it, nor has the queue's head come since, and the
// partition holds nothing (one that holds, stopped by press or not, waits
// on origins of its own, and its holds are judged by theirs). That is a cluster down
// or not read, or an origin behind what the subscription still has (read
// and acknowledged before a restart, say): never an origin that is being
// read. A queue waiting on a cluster not read is released HoldTimeout
// after its head came.
func (h *holder) stalled(now time.Time) {
	for pk := range h.progress {
		if _, ok := h.waiting[pk]; !ok {
			delete(h.progress, pk)
		}
	}
	for pk, w := range h.waiting {
		ps := h.parts[pk]
		f, ok := h.frontier(pk, ps)
		pr, seen := h.progress[pk]
		// A partition past those subscribed is being looked up (see
		// drain): progress too (HANDOVER.md, section 6.4).
		// A partition that holds messages waits on origins of its own:
		// its holds are judged by theirs (a stopped one holds too).
		if !seen || (ps != nil && len(ps.held) > 0) || pr.ok != ok || pr.front != f || h.unknown(pk) {
			h.progress[pk] = progress{at: now, front: f, ok: ok}
			continue
		}
		if now.Sub(pr.at) < h.timeout {
			continue
		}
		// Each queue gives up the origin its head waits for: the highest
		// of them is given up last, and covers the others.
		qs := slices.SortedFunc(slices.Values(*w), func(a, b *queue) int { return a.waitPos.Compare(b.waitPos) })
		for _, q := range qs { // each measured from its head's receipt too
			if len(q.items) > 0 && q.waitOn == pk && now.Sub(q.items[0].since) >= h.timeout {
				h.force(q, HandoverTimeout, now)
			}
		}
	}
	for _, q := range h.queues {
		if q.waitOn.k == nil && now.Sub(q.items[0].since) >= h.timeout {
			h.force(q, HandoverTimeout, now)
		}
	}
}

// forceWhole releases the oldest queue of a stream over every partition
// of its cluster (see press); false when there is none.
func (h *holder) forceWhole() bool {
	var old *queue
	for _, q := range h.queues {
		if q.key.k.link.whole && (old == nil || q.items[0].seq < old.items[0].seq) {
			old = q
		}
	}
	if old == nil {
		return false
	}
	h.force(old, HandoverLimit, h.t)
	return true
}

// unknown reports whether pk is past the partitions subscribed on its
// cluster: the count the Consumer knows is stale.
func (h *holder) unknown(pk partKey) bool {
	return !pk.k.link.whole && pk.k.part(pk.p) == nil
}

// force gives up the origin q's head waits for (HANDOVER.md, section
// 6.3): every origin on its partition at or before it counts as passed
// from now on, and q drains by the rule, reported as kind naming that
// origin; a message behind that waits for another origin stays held.
// Queues waiting on that partition are looked at again.
func (h *holder) force(q *queue, kind HandoverKind, now time.Time) {
	head := q.items[0]
	o, ok := h.blocking(head)
	if ok {
		gk := givenKey{o.Cluster, o.Partition}
		if g, had := h.given[gk]; !had || g.Compare(o.Pos) < 0 {
			h.given[gk] = o.Pos
		}
		if k := h.cluster(o.Cluster); k != nil {
			h.work = append(h.work, partKey{k, o.Partition})
		}
	}
	first, n := h.deliverHead(q)
	if n == 0 {
		return
	}
	h.event(first, kind, o, n, now.Sub(first.since))
	first.k.hold.forced.Add(uint64(n))
}

// givenUp reports whether o was given up (see force).
func (h *holder) givenUp(o router.Origin) bool {
	g, ok := h.given[givenKey{o.Cluster, o.Partition}]
	return ok && o.Pos.Compare(g) <= 0
}

// releaseAll delivers q whole, in order, and reports it as kind naming
// its head's origin that had not passed: forget's, for a cluster that
// leaves.
func (h *holder) releaseAll(q *queue, kind HandoverKind, now time.Time) {
	h.unwait(q)
	head := q.items[0]
	o, _ := h.blocking(head)
	h.event(head, kind, o, len(q.items), now.Sub(head.since))
	for i, e := range q.items {
		e.k.hold.forced.Add(1)
		h.release(e)
		q.items[i] = nil
	}
	q.items = nil
	delete(h.queues, q.key)
}

// tick releases the holds whose origin stalled; the monitor calls it.
func (h *holder) tick() {
	if h.busy.Load() == 0 {
		return
	}
	h.mu.Lock()
	h.t = h.now()
	h.stalled(h.t)
	h.settle()
	h.unlock()
}
