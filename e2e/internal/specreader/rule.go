package specreader

import (
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/keyroute/keyroute/router"
)

// receive applies HANDOVER.md section 6 to one received message.
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
	p := r.parts[pk]
	if p == nil {
		p = &part{}
		r.parts[pk] = p
	}
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
	if q := r.queues[qk]; q != nil { // behind the slot's held messages
		q.items = append(q.items, h)
		r.hold(1)
		return
	}
	if o, ok := r.unpassed(h); ok {
		if !r.known[o.Cluster] { // 6.4: cannot pass; release at once
			r.report(qk, h, o, "unknown cluster", 1)
			r.deliver(h, true)
			r.advance(pk)
			return
		}
		q := &queue{key: qk, items: []*held{h}, since: time.Now()}
		r.queues[qk] = q
		r.hold(1)
		r.wait(q, o)
		return
	}
	r.deliver(h, false)
	r.advance(pk)
}

// unpassed returns h's first origin that is not passed, if any.
func (r *Reader) unpassed(h *held) (router.Origin, bool) {
	for _, o := range h.tag.From {
		if !r.passed(o) {
			return o, true
		}
	}
	return router.Origin{}, false
}

// passed reports whether o's partition's delivered frontier is at or
// beyond o's position (6.1). An origin on a cluster the reader does not
// know passes only by a release.
func (r *Reader) passed(o router.Origin) bool {
	p := r.parts[partKey{o.Cluster, o.Partition}]
	return p != nil && p.seen && p.frontier.Compare(o.Pos) >= 0
}

func (r *Reader) hold(n int) {
	r.nheld += n
	r.stats.Held += int64(n)
	r.stats.MaxHeld = max(r.stats.MaxHeld, r.nheld)
	for r.nheld > r.opts.HoldLimit { // 6.3: at the limit, the oldest goes
		var oldest *queue
		for _, q := range r.queues {
			if oldest == nil || q.since.Before(oldest.since) {
				oldest = q
			}
		}
		if oldest == nil {
			return
		}
		r.force(oldest, "memory")
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

// advance moves pk's frontier over its delivered head and looks again at
// the queues that wait on partitions whose frontier moved.
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
			p.frontier, p.seen, moved = e.pos, true, true
			if e.marker != nil {
				if c := r.consumers[k]; c != nil && c.AckID(e.marker) == nil {
					r.stats.MarkersAcked++
				}
			}
		}
		if !moved {
			continue
		}
		qs := r.waiting[k]
		delete(r.waiting, k)
		for _, q := range qs {
			q.waiting = false
			if r.release(q) {
				work = append(work, q.key.partKey)
			}
		}
	}
}

// release delivers q's head for as long as its origins have passed. It
// reports whether it delivered any.
func (r *Reader) release(q *queue) bool {
	if r.queues[q.key] != q { // released by force since it waited
		return false
	}
	n := 0
	for len(q.items) > 0 {
		h := q.items[0]
		if o, ok := r.unpassed(h); ok {
			if !r.known[o.Cluster] {
				r.report(q.key, h, o, "unknown cluster", len(q.items))
				r.drain(q, true)
				return true
			}
			r.wait(q, o)
			break
		}
		q.items[0] = nil
		q.items = q.items[1:]
		r.nheld--
		r.deliver(h, false)
		n++
		q.since = time.Now()
	}
	if len(q.items) == 0 {
		delete(r.queues, q.key)
	}
	return n > 0
}

// force releases q at a bound (6.3) and reports it.
func (r *Reader) force(q *queue, reason string) {
	if len(q.items) == 0 {
		delete(r.queues, q.key)
		return
	}
	if o, ok := r.unpassed(q.items[0]); ok {
		r.report(q.key, q.items[0], o, reason, len(q.items))
	}
	r.drain(q, true)
	r.advance(q.key.partKey)
}

// drain delivers every message of q in its order.
func (r *Reader) drain(q *queue, forced bool) {
	for _, h := range q.items {
		r.nheld--
		r.deliver(h, forced)
	}
	q.items = nil
	delete(r.queues, q.key)
}

func (r *Reader) report(qk queueKey, h *held, o router.Origin, reason string, n int) {
	if r.opts.Released == nil {
		return
	}
	r.opts.Released(Release{
		Cluster: qk.cluster, Partition: qk.partition, Slot: qk.slot,
		Producer: h.tag.Producer, Epoch: h.tag.Epoch, Origin: o, Reason: reason, Messages: n,
	})
}
