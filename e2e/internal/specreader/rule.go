package specreader

import (
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/keyroute/keyroute/router"
)

// receive applies HANDOVER.md section 6 to one message received from pk.
func (r *Reader) receive(pk partKey, m pulsar.Message) {
	id := m.ID()
	pos := router.Position{Ledger: id.LedgerID(), Entry: id.EntryID(), Batch: id.BatchIdx()}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.seq++
	r.stats.Received++
	p := r.part(pk)
	e := &entry{pos: pos}
	p.pending = append(p.pending, e)
	props := m.Properties()

	if _, isMarker, err := router.ParseMarker(props); isMarker {
		if err != nil {
			r.stats.BadTags++
		}
		// Processed at once; acknowledged once within the frontier (6.2).
		r.stats.Markers++
		e.done, e.marker = true, id
		r.advance(pk)
		return
	}
	h := &held{e: e, id: id, d: Delivery{
		Cluster: pk.cluster, Partition: pk.partition, Pos: pos, Key: m.Key(),
		Payload: m.Payload(), Properties: props, Seq: r.seq, ReceivedAt: time.Now(),
	}}
	if m.Key() == "" { // keyless: never held
		r.deliver(h, false)
		r.advance(pk)
		return
	}
	tag, tagged, err := router.ParseTag(props)
	if err != nil {
		r.stats.BadTags++
		tagged = false
	}
	if tagged {
		h.tag = tag
		if tag.Unordered {
			r.stats.Unordered++
		}
	}
	qk := queueKey{pk, router.Slot(router.Hash(m.Key()))}
	r.readable(qk, h)
	if q := r.queues[qk]; q != nil { // behind the slot's held messages
		q.items = append(q.items, h)
		r.hold()
		return
	}
	if o, ok := r.unpassed(h); ok {
		q := &queue{key: qk, items: []*held{h}}
		r.queues[qk] = q
		r.hold()
		r.wait(q, o)
		return
	}
	r.deliver(h, h.unread)
	r.advance(pk)
}

// readable drops h's origins on clusters the reader does not know, which
// cannot pass (6.4): h is not held for them, each is reported, and h
// counts as released by force.
func (r *Reader) readable(qk queueKey, h *held) {
	from := h.tag.From[:0:0]
	for _, o := range h.tag.From {
		if r.known[o.Cluster] {
			from = append(from, o)
			continue
		}
		r.report(qk, h, o, "unknown cluster", 1, 0)
		h.unread = true
	}
	h.tag.From = from
}

// part returns pk's state, made on first use: for a partition read, or
// one that origins name.
func (r *Reader) part(pk partKey) *part {
	p := r.parts[pk]
	if p == nil {
		p = &part{}
		r.parts[pk] = p
	}
	return p
}

// unpassed returns h's first origin that has not passed, if any.
func (r *Reader) unpassed(h *held) (router.Origin, bool) {
	for _, o := range h.tag.From {
		if !r.passed(o) {
			return o, true
		}
	}
	return router.Origin{}, false
}

// passed reports whether o's partition's delivered frontier is at or
// beyond o's position (6.1), or the reader gave up on o's partition up to
// there (see tick).
func (r *Reader) passed(o router.Origin) bool {
	p := r.parts[partKey{o.Cluster, o.Partition}]
	return p != nil && (p.seen && p.frontier.Compare(o.Pos) >= 0 || p.gaveUp && p.givenUp.Compare(o.Pos) >= 0)
}

// hold counts a message held. When the messages held reach HoldLimit,
// every partition that holds one is stopped (6.3): its reader takes no
// more of its messages until it holds none (see advance), and every other
// partition, the origins among them, goes on being read. Each wait goes
// back in time (a held message waits on an origin written before it, a
// stopped partition on a held message written before what it leaves
// unread), so a chain of waits ends at a partition that is read.
func (r *Reader) hold() {
	r.nheld++
	r.stats.Held++
	r.stats.MaxHeld = max(r.stats.MaxHeld, r.nheld)
	if r.nheld < r.opts.HoldLimit {
		return
	}
	for _, p := range r.parts {
		if len(p.pending) > 0 && p.resume == nil {
			p.resume = make(chan struct{})
			r.stats.Stops++
		}
	}
}

// wait registers q as waiting for o's partition.
func (r *Reader) wait(q *queue, o router.Origin) {
	if q.waiting {
		return
	}
	pk := partKey{o.Cluster, o.Partition}
	q.waiting = true
	r.waiting[pk] = append(r.waiting[pk], q)
}

// deliver hands h to the application and acknowledges it.
func (r *Reader) deliver(h *held, forced bool) {
	h.e.done = true
	h.d.At = time.Now()
	h.d.Forced = forced
	r.stats.Delivered++
	if forced {
		r.stats.Forced++
	}
	r.opts.Deliver(h.d)
	if c := r.consumers[partKey{h.d.Cluster, h.d.Partition}]; c != nil {
		_ = c.AckID(h.id) // a lost ack means a redelivery, which the checks count
	}
}

// advance moves pk's frontier over its delivered head, reads again a
// stopped partition that holds nothing any more, and looks again at the
// queues that wait on partitions whose frontier moved.
func (r *Reader) advance(pk partKey) {
	work := []partKey{pk}
	for len(work) > 0 {
		k := work[len(work)-1]
		work = work[:len(work)-1]
		p := r.parts[k]
		moved := false
		for len(p.pending) > 0 && p.pending[0].done {
			e := p.pending[0]
			p.pending[0] = nil
			p.pending = p.pending[1:]
			if !p.seen || e.pos.Compare(p.frontier) > 0 { // a redelivery does not lower it
				p.frontier, p.seen, moved = e.pos, true, true
			}
			if e.marker != nil {
				if c := r.consumers[k]; c != nil && c.AckID(e.marker) == nil {
					r.stats.MarkersAcked++
				}
			}
		}
		if len(p.pending) == 0 && p.resume != nil {
			close(p.resume)
			p.resume = nil
		}
		if !moved {
			continue
		}
		qs := r.waiting[k]
		delete(r.waiting, k)
		for _, q := range qs {
			q.waiting = false
			if r.release(q, false) > 0 {
				work = append(work, q.key.partKey)
			}
		}
	}
}

// release delivers q's head for as long as its origins have passed, and
// leaves q waiting on the first that has not. It returns how many it
// delivered; forced marks them as delivered by a forced release.
func (r *Reader) release(q *queue, forced bool) int {
	if r.queues[q.key] != q { // released since it waited
		return 0
	}
	n := 0
	for len(q.items) > 0 {
		h := q.items[0]
		if o, ok := r.unpassed(h); ok {
			r.wait(q, o)
			break
		}
		q.items[0] = nil
		q.items = q.items[1:]
		r.nheld--
		r.deliver(h, forced || h.unread)
		n++
	}
	if len(q.items) == 0 {
		delete(r.queues, q.key)
	}
	return n
}

// tick releases by force the holds whose origin makes no progress (6.3):
// the partition a queue waits on has held nothing and kept its delivered
// frontier for HoldTimeout, as seen by the calls to tick (every
// HoldTimeout/8, see bound). A partition that holds, stopped or not, is
// progressing: its frontier waits on a hold of its own, which is judged
// by that hold's origin. So an origin that is being read is never given
// up on; one on a cluster not read yet, or on a partition with nothing
// left to read before it, is. The reader gives up on the origin's
// partition up to the origin: each queue waiting on it is delivered from
// its head, in order, until a message whose other origin has not passed,
// and later origins there up to that position pass.
func (r *Reader) tick(now time.Time) {
	for pk := range r.progress {
		if r.waiting[pk] == nil {
			delete(r.progress, pk)
		}
	}
	var stalled []partKey
	for pk := range r.waiting {
		p := r.part(pk)
		pr, ok := r.progress[pk]
		if !ok || len(p.pending) > 0 || pr.seen != p.seen || pr.frontier != p.frontier {
			r.progress[pk] = progress{at: now, seen: p.seen, frontier: p.frontier}
			continue
		}
		if now.Sub(pr.at) >= r.opts.HoldTimeout {
			stalled = append(stalled, pk)
		}
	}
	for _, pk := range stalled {
		delete(r.progress, pk)
		var qs []*queue
		for _, q := range r.waiting[pk] {
			q.waiting = false
			if r.queues[q.key] == q {
				qs = append(qs, q)
			}
		}
		delete(r.waiting, pk)
		p := r.part(pk)
		heads := make([]*held, len(qs))
		origins := make([]router.Origin, len(qs))
		for i, q := range qs {
			heads[i], origins[i] = q.items[0], router.Origin{}
			if o, ok := r.unpassed(q.items[0]); ok {
				origins[i] = o
				if !p.gaveUp || o.Pos.Compare(p.givenUp) > 0 {
					p.givenUp, p.gaveUp = o.Pos, true
				}
			}
		}
		for i, q := range qs {
			n := r.release(q, true)
			r.report(q.key, heads[i], origins[i], "no progress", n, now.Sub(heads[i].d.ReceivedAt))
			if n > 0 {
				r.advance(q.key.partKey)
			}
		}
	}
}

func (r *Reader) report(qk queueKey, h *held, o router.Origin, reason string, n int, age time.Duration) {
	if r.opts.Released == nil {
		return
	}
	r.opts.Released(Release{
		Cluster: qk.cluster, Partition: qk.partition, Slot: qk.slot,
		Producer: h.tag.Producer, Epoch: h.tag.Epoch, Origin: o, Reason: reason, Messages: n, Held: age,
	})
}
