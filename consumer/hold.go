package consumer

import (
	"container/heap"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/keyroute/keyroute/router"
)

// The reader's side of the hand-over of moving keys (router/HANDOVER.md,
// section 6). Every message taken from a cluster's channel passes admit
// before it is handed to the caller:
//
//   - A message without keyroute-pid while nothing is held (the steady
//     path) costs one look-up in its properties when it has any, and a
//     store of its position as the highest taken from its partition (one
//     atomic word per partition: see front and partState).
//   - Anything else goes through the holder, under its lock: a marker is
//     taken (never delivered) and acknowledged once within its
//     partition's frontier; a moved message whose origin has not passed
//     is held, and so is every later message of its slot from its
//     partition (one queue per partition and slot); a frontier that
//     advances releases the queues waiting on it, their messages going to
//     ready, which takes serve before the clusters' channels.
//
// Memory is bounded by back-pressure, not by releasing holds: at MaxHeld
// messages held, each partition that holds messages is left unread (see
// press) until it holds none, and the others, the origins among them, go
// on being read. A hold is released before its origin has passed only
// when the origin's partition makes no progress for HoldTimeout (its
// cluster down, not read, or the origin behind what the subscription
// still has: see stalled), or when a stream over every partition of a
// cluster cannot be left unread alone; each such release is reported. A
// Shared subscription holds nothing: it only takes and acknowledges
// markers.
//
// The rule orders a partition's messages as one reader takes them: the
// frontier is exact for one goroutine taking (Receive, ReceiveBatch,
// ReceiveInto or Chan), as a partition's order is. Goroutines taking at
// the same time split a partition's messages with no order between them,
// hold or not; the holder still gives each message once and never leaves
// a hold waiting on a message taken out of order (see partState).

// holder is the Consumer's hand-over state.
type holder struct {
	c     *Consumer
	track bool // the subscription type follows the rule (all but Shared)
	max   int
	obs   HandoverObserver // nil: none
	// wake gets a token when released messages wait in ready, to end a
	// wait on the clusters' channels (see wait).
	wake chan struct{}

	// busy counts the messages held, those released but not yet taken,
	// and the takes in the holder: while it is 0, a message without
	// hand-over properties takes the steady path.
	busy atomic.Int64

	mu      sync.Mutex
	timeout time.Duration
	now     func() time.Time
	t       time.Time // now, read once per operation under the lock
	parts   map[partKey]*partState
	queues  map[slotKey]*queue
	waiting map[partKey]*waitHeap // queues whose head waits on the partition's frontier
	ready   []*entry              // released, in release order, taken from the front
	held    int                   // messages in queues
	seq     uint64
	// given is, per partition, the highest origin position given up
	// (HANDOVER.md, section 6.3): every origin there at or before it
	// counts as passed, until a seek.
	given map[givenKey]router.Position
	// progress is, for each partition a queue waits on, its frontier
	// when the monitor last saw it move, and when (see stalled).
	progress map[partKey]progress
	flip     []partKey // partitions stopped or read again, for unlock to apply to the read set
	// finished names the clusters a drain read to the end (backlog 0):
	// every origin there has passed (see forget).
	finished map[string]bool
	work     []partKey // partitions whose frontier advanced, to settle
	acks     []*entry  // markers to acknowledge once the lock is released
	events   []HandoverEvent
}

// partKey names a partition of a cluster.
type partKey struct {
	k *cluster
	p int32
}

// slotKey names a hold queue: a partition and a slot.
type slotKey struct {
	partKey
	slot uint16
}

// partState is what the holder keeps of one partition beyond its word.
//
// The delivered frontier (HANDOVER.md, section 6) is kept as two parts:
// the word holds the highest position taken from the partition, and held
// the messages taken but not delivered. An origin at pos has passed when
// the highest position taken is at or beyond pos and no message at or
// before pos is held: the same as the frontier at or beyond pos, since a
// partition's messages come in position order; and goroutines taking at
// the same time, which process a partition's messages out of that order,
// cannot make a held message wait on a marker taken before it.
type partState struct {
	// held are the partition's messages taken but not yet delivered, in
	// position order; the front is popped once released.
	held    []*entry
	full    router.Position // the highest position taken when the word is packOverflow
	markers []*entry        // taken markers outside the frontier, in receipt order
	stopped bool            // left unread by back-pressure until held is empty (see press)
}

// queue is the hold queue of one partition and slot.
type queue struct {
	key     slotKey
	items   []*entry
	waitOn  partKey         // the partition its head waits on; zero when none
	waitPos router.Position // the position there its head waits for
	waitIdx int             // its index in waiting[waitOn]
}

// entry is a message the holder took: a held message or a marker.
type entry struct {
	raw      pulsar.Message
	k        *cluster
	pk       partKey
	pos      router.Position
	slot     int
	tag      router.Tag // its origins shrink as they pass
	since    time.Time
	seq      uint64
	released bool
}

// clusterHold is a cluster's part of the hand-over state: its partitions'
// frontiers and its counters for Health.
type clusterHold struct {
	front atomic.Pointer[frontTable]

	held      atomic.Int64 // messages held now
	heldTotal atomic.Uint64
	heldFor   atomic.Int64 // ns, summed over the messages released
	markers   atomic.Uint64
	forced    atomic.Uint64
	unordered atomic.Uint64
	bad       atomic.Uint64
}

func (h *holder) init(c *Consumer) {
	h.c = c
	h.track = c.cfg.subType != Shared
	h.timeout, h.max = c.cfg.holdTimeout, c.cfg.maxHeld
	h.obs, _ = c.cfg.observer.(HandoverObserver)
	h.now = time.Now
	h.wake = make(chan struct{}, 1)
	h.reset()
}

// reset forgets every hold, frontier and marker, and reads again the
// partitions it stopped: a seek moves the subscription, and what was taken
// before comes again.
func (h *holder) reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	var stopped []*part
	for pk, ps := range h.parts {
		pk.k.hold.held.Store(0)
		pk.k.hold.front.Store(nil)
		if p := pk.k.part(pk.p); p != nil && ps.stopped {
			stopped = append(stopped, p)
		}
	}
	if stopped != nil {
		h.c.setStopped(stopped, false)
	}
	h.parts = map[partKey]*partState{}
	h.queues = map[slotKey]*queue{}
	h.waiting = map[partKey]*waitHeap{}
	h.given = map[givenKey]router.Position{}
	h.progress = map[partKey]progress{}
	if h.finished == nil {
		h.finished = map[string]bool{}
	}
	h.ready, h.held, h.work, h.acks, h.events, h.flip = nil, 0, nil, nil, nil, nil
	h.busy.Store(0)
}

// admit says whether raw, taken from p, is handed to the caller now; when
// false the holder took it (a marker, or a held message).
func (c *Consumer) admit(raw pulsar.Message, p *part) bool {
	if c.cfg.skip.n.Load() != 0 && c.skipped(raw, p) { // a batch split by a position (position.go), a growth's redeliveries (grow.go)
		return false
	}
	h := &c.hold
	if props := raw.Properties(); len(props) != 0 {
		if c.retried(props) { // from the retry topic, whose positions are not the topic's
			return true
		}
		if _, ok := props[router.PropProducer]; ok { // markers have it too
			return h.admit(raw, p)
		}
		if _, ok := props[router.PropMarker]; ok { // a marker without one
			return h.admit(raw, p)
		}
	}
	if !h.track {
		return true
	}
	if h.busy.Load() != 0 {
		return h.admit(raw, p)
	}
	id, k := raw.ID(), p.k
	pi := p.partition(raw)
	t := k.hold.front.Load()
	if t == nil || uint32(pi) >= uint32(len(t.p)) {
		return h.admit(raw, p)
	}
	f := &t.p[pi]
	for { // only up, against other takers
		cur := f.word.Load() // before the base: see raise
		v, ok := pack(id.LedgerID()-f.base.Load(), id.EntryID(), id.BatchIdx())
		if !ok || cur == packOverflow {
			return h.admit(raw, p)
		}
		if v <= cur || f.word.CompareAndSwap(cur, v) {
			break
		}
	}
	if h.busy.Load() != 0 { // a hold began on another goroutine meanwhile
		h.advanced(partKey{k, pi})
	}
	return true
}

// advanced settles the queues waiting on pk after a store of the steady
// path.
func (h *holder) advanced(pk partKey) {
	h.mu.Lock()
	h.t = h.now()
	h.work = append(h.work, pk)
	h.settle()
	h.unlock()
}

// admit is the holder's part of Consumer.admit. busy counts it while it
// runs, before it reads any frontier: a steady-path store on another
// goroutine is then either seen here or sees busy and settles its
// partition under the lock after this (see Consumer.admit), so no hold
// misses a frontier that passed it.
func (h *holder) admit(raw pulsar.Message, p *part) bool {
	h.busy.Add(1)
	h.mu.Lock()
	pass := h.take(raw, p)
	h.settle()
	h.unlock()
	h.busy.Add(-1)
	return pass
}

// unlock applies the stops and resumes to the read set, releases the
// lock, then acknowledges the markers that came within their frontier,
// reports the events and wakes a waiting take when released messages
// wait.
func (h *holder) unlock() {
	if len(h.flip) > 0 {
		h.apply()
	}
	acks, events, ready := h.acks, h.events, len(h.ready) > 0
	h.acks, h.events = nil, nil
	h.mu.Unlock()
	for _, e := range acks {
		h.c.ackMarker(e.k.part(e.pk.p), e.raw)
	}
	if h.obs != nil {
		for _, ev := range events {
			h.obs.OnHandover(ev)
		}
	}
	if ready {
		h.signal()
	}
}

func (h *holder) signal() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// take applies the rule to raw, taken from p, under the lock.
func (h *holder) take(raw pulsar.Message, p *part) bool {
	id, k := raw.ID(), p.k
	pk := partKey{k, p.partition(raw)}
	// e stays on the stack unless the holder keeps it (a marker, a held
	// message): a copy goes to the heap then.
	e := entry{raw: raw, k: k, pk: pk, pos: router.Position{Ledger: id.LedgerID(), Entry: id.EntryID(), Batch: id.BatchIdx()}, slot: -1}
	h.t = h.now()
	props := raw.Properties()
	if key := raw.Key(); key != "" {
		e.slot = router.Slot(router.Hash(key))
	}
	if _, ok := props[router.PropMarker]; ok {
		// A marker is known by its property alone (HANDOVER.md, section
		// 4): one that does not parse, or of another version, is taken
		// as a marker all the same, and reported.
		m := new(entry)
		*m = e
		if _, _, err := router.ParseMarker(props); err != nil {
			h.report(m, HandoverBad, err)
		}
		h.marker(m)
		return false
	} else if _, ok := props[router.PropProducer]; ok {
		tag, _, err := router.ParseTag(props)
		switch {
		case err != nil:
			h.report(&e, HandoverBad, err)
		default:
			e.tag = tag
			if tag.Unordered {
				k.hold.unordered.Add(1)
				h.report(&e, HandoverUnordered, nil)
			}
		}
	}
	if !h.track {
		return true
	}
	ps := h.part(pk)
	if e.slot >= 0 {
		e.tag.From = h.readable(&e)
		sk := slotKey{pk, uint16(e.slot)}
		q := h.queues[sk]
		if q == nil {
			if _, held := h.blocking(&e); !held {
				h.deliver(ps, pk, e.pos)
				return true
			}
		}
		e.since, e.seq = h.t, h.seq
		h.seq++
		held := new(entry)
		*held = e
		h.hold(ps, sk, q, held)
		return false
	}
	h.deliver(ps, pk, e.pos)
	return true
}

// readable returns e's origins but those on clusters the Consumer does
// not read, which cannot pass: e is not held for them, and each is
// reported (HANDOVER.md, section 6.4).
func (h *holder) readable(e *entry) []router.Origin {
	if len(e.tag.From) == 0 {
		return nil
	}
	var from []router.Origin
	for _, o := range e.tag.From {
		if h.cluster(o.Cluster) == nil {
			if h.finished[o.Cluster] {
				continue // read to the end: passed
			}
			e.k.hold.forced.Add(1)
			h.event(e, HandoverUnread, o, 1, 0)
			continue
		}
		if !h.givenUp(o) {
			from = append(from, o)
		}
	}
	return from
}

// report records an event of one message without an origin.
func (h *holder) report(e *entry, kind HandoverKind, err error) {
	if kind == HandoverBad {
		e.k.hold.bad.Add(1)
	}
	h.event(e, kind, router.Origin{}, 1, 0)
	h.events[len(h.events)-1].Err = err
}

func (h *holder) event(e *entry, kind HandoverKind, o router.Origin, n int, held time.Duration) {
	ev := HandoverEvent{Kind: kind, Cluster: e.k.name, Partition: int(e.pk.p), Slot: e.slot, Producer: e.tag.Producer,
		Epoch: e.tag.Epoch, Origin: o, Messages: n, Held: held}
	if o.Cluster != "" {
		if k := h.cluster(o.Cluster); k != nil {
			ps := h.parts[partKey{k, o.Partition}]
			_, ev.OriginSeen = h.frontier(partKey{k, o.Partition}, ps)
		}
	}
	h.events = append(h.events, ev)
}

// deliver records a message of pk taken (handed over, held, or a marker).
func (h *holder) deliver(ps *partState, pk partKey, pos router.Position) {
	h.raise(pk, ps, pos)
}

// within reports whether every message of ps taken at or before pos has
// been delivered.
func within(ps *partState, pos router.Position) bool {
	return ps == nil || len(ps.held) == 0 || ps.held[0].pos.Compare(pos) > 0
}

// marker takes a marker: it counts as delivered, and is acknowledged once
// within the frontier (at once on a Shared subscription).
func (h *holder) marker(e *entry) {
	e.k.hold.markers.Add(1)
	if !h.track {
		h.acks = append(h.acks, e)
		return
	}
	ps := h.part(e.pk)
	h.deliver(ps, e.pk, e.pos)
	ps.markers = append(ps.markers, e)
	h.ackWithin(e.pk, ps)
}

// ackWithin queues the acknowledgement of pk's markers within its
// frontier: taken, and no message before them held.
func (h *holder) ackWithin(pk partKey, ps *partState) {
	keep := ps.markers[:0]
	for _, m := range ps.markers {
		if within(ps, m.pos) {
			h.acks = append(h.acks, m)
		} else {
			keep = append(keep, m)
		}
	}
	clear(ps.markers[len(keep):])
	ps.markers = keep
}

// hold queues e behind q (a new queue when q is nil).
func (h *holder) hold(ps *partState, sk slotKey, q *queue, e *entry) {
	i := len(ps.held) // in position order: at the end but for a redelivery
	for i > 0 && ps.held[i-1].pos.Compare(e.pos) > 0 {
		i--
	}
	ps.held = slices.Insert(ps.held, i, e)
	h.deliver(ps, sk.partKey, e.pos)
	h.held++
	h.busy.Add(1)
	e.k.hold.held.Add(1)
	e.k.hold.heldTotal.Add(1)
	if q != nil {
		// In position order too: goroutines taking at the same time can
		// bring an earlier message after a later one is held.
		i := len(q.items)
		for i > 0 && q.items[i-1].pos.Compare(e.pos) > 0 {
			i--
		}
		if q.items = slices.Insert(q.items, i, e); i == 0 {
			h.drain(q)
		}
	} else {
		q = &queue{key: sk, items: []*entry{e}}
		h.queues[sk] = q
		h.drain(q)
	}
	if h.held >= h.max {
		h.press()
	}
}

// drain delivers q's messages from its head while their origins have
// passed, and leaves q waiting on the first that has not.
// The messages released so are reported as one HandoverReleased.
func (h *holder) drain(q *queue) {
	if first, n := h.deliverHead(q); n > 0 {
		h.event(first, HandoverReleased, router.Origin{}, n, h.t.Sub(first.since))
	}
}

// deliverHead is drain but for the report: it returns the first message
// released and how many were.
func (h *holder) deliverHead(q *queue) (first *entry, n int) {
	h.unwait(q)
	for len(q.items) > 0 {
		e := q.items[0]
		if o, ok := h.blocking(e); ok {
			// A cluster not read has no frontier to wait on: q waits for
			// forget or stalled.
			if k := h.cluster(o.Cluster); k != nil {
				pk := partKey{k, o.Partition}
				q.waitOn, q.waitPos = pk, o.Pos
				w := h.waiting[pk]
				if w == nil {
					if h.unknown(pk) {
						k.lookNow.Store(true)
					}
					w = &waitHeap{}
					h.waiting[pk] = w
					// Progress counts from the first wait (see stalled).
					f, ok := h.frontier(pk, h.parts[pk])
					h.progress[pk] = progress{at: h.t, front: f, ok: ok}
				}
				heap.Push(w, q)
			}
			return
		}
		q.items[0] = nil
		q.items = q.items[1:]
		h.release(e)
		if n++; first == nil {
			first = e
		}
	}
	delete(h.queues, q.key)
	return first, n
}

func (h *holder) unwait(q *queue) {
	if q.waitOn.k == nil {
		return
	}
	if w := h.waiting[q.waitOn]; w != nil {
		heap.Remove(w, q.waitIdx)
		if w.Len() == 0 {
			delete(h.waiting, q.waitOn)
		}
	}
	q.waitOn = partKey{}
}

// blocking returns e's first origin that has not passed, dropping those
// that have.
func (h *holder) blocking(e *entry) (router.Origin, bool) {
	for len(e.tag.From) > 0 {
		o := e.tag.From[0]
		k := h.cluster(o.Cluster)
		switch {
		case h.givenUp(o) || h.finished[o.Cluster]:
			// passed
		case k == nil:
			// Its cluster left the Consumer (forget ends the wait,
			// reported, or a bound does).
			return o, true
		case !h.passed(partKey{k, o.Partition}, o.Pos):
			return o, true
		}
		e.tag.From = e.tag.From[1:]
	}
	return router.Origin{}, false
}

// passed reports whether the frontier of pk has passed pos: taken at or
// beyond it, with no message at or before it held.
func (h *holder) passed(pk partKey, pos router.Position) bool {
	ps := h.parts[pk]
	f, ok := h.frontier(pk, ps)
	return ok && f.Compare(pos) >= 0 && within(ps, pos)
}

// release moves a held message to ready; when it was its partition's
// first held, the partition's frontier moves up to the next.
func (h *holder) release(e *entry) {
	e.released = true
	h.ready = append(h.ready, e)
	h.held--
	e.k.hold.held.Add(-1)
	e.k.hold.heldFor.Add(int64(h.t.Sub(e.since)))
	ps := h.parts[e.pk]
	i := 0
	for i < len(ps.held) && ps.held[i].released {
		i++
	}
	if i == 0 {
		return
	}
	clear(ps.held[:i])
	if ps.held = ps.held[i:]; len(ps.held) == 0 {
		ps.held = nil
		if ps.stopped {
			ps.stopped = false
			h.flip = append(h.flip, e.pk)
		}
	}
	h.work = append(h.work, e.pk)
}

// settle drains the queues waiting on every partition whose frontier
// advanced, until no frontier moves.
func (h *holder) settle() {
	for len(h.work) > 0 {
		pk := h.work[len(h.work)-1]
		h.work = h.work[:len(h.work)-1]
		if ps := h.parts[pk]; ps != nil {
			h.ackWithin(pk, ps)
		}
		// The queues whose position passed, lowest first: a drain may
		// wait again on pk, further on.
		for w := h.waiting[pk]; w != nil && w.Len() > 0; w = h.waiting[pk] {
			q := (*w)[0]
			if !h.givenUp(router.Origin{Cluster: pk.k.name, Partition: pk.p, Pos: q.waitPos}) &&
				!h.finished[pk.k.name] && !h.passed(pk, q.waitPos) {
				break
			}
			h.drain(q)
		}
	}
}

// pop returns the first released message not yet taken.
func (h *holder) pop() (pulsar.Message, *part, bool) {
	h.mu.Lock()
	if len(h.ready) == 0 {
		h.mu.Unlock()
		return nil, nil, false
	}
	e := h.ready[0]
	h.ready[0] = nil
	h.ready = h.ready[1:]
	more := len(h.ready) > 0
	h.mu.Unlock()
	h.busy.Add(-1)
	if more {
		h.signal()
	}
	return e.raw, e.k.part(e.pk.p), true
}

// ackMarker acknowledges a marker on its cluster. Under AckWithResponse
// the acknowledgement is sent from a goroutine of its own, so that a
// take never waits for a broker.
func (c *Consumer) ackMarker(p *part, raw pulsar.Message) {
	if !c.cfg.ackWithResponse {
		_ = p.stream.Ack(raw) // one that fails comes again, and is taken again
		return
	}
	c.mu.Lock()
	if c.closed.Load() {
		c.mu.Unlock()
		return
	}
	c.acks.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.acks.Done()
		_ = p.stream.Ack(raw)
	}()
}

// cluster returns the cluster of the Consumer named name; nil when it
// reads none of that name.
func (h *holder) cluster(name string) *cluster { return h.c.set.Load().byName[name] }

// health fills h's hand-over counters.
func (ch *clusterHold) health(h *ClusterHealth) {
	h.Held, h.HeldTotal, h.Markers = ch.held.Load(), ch.heldTotal.Load(), ch.markers.Load()
	h.ForcedReleases, h.Unordered, h.BadHandover = ch.forced.Load(), ch.unordered.Load(), ch.bad.Load()
	h.HoldTime = time.Duration(ch.heldFor.Load())
}

// forget ends the holds that cluster k takes part in, for a live
// topology change that stops reading k: a queue waiting on one of k's
// partitions can no longer pass (HANDOVER.md, section 6.4), and a queue
// of k's messages would wait for nothing. Each is delivered in order and
// reported as HandoverUnread; k's frontiers are forgotten. When k was
// read to the end (finished: a drain that found its backlog empty after
// producers had left it), every origin on k has passed instead: queues
// waiting on it go on as their origins pass, unreported, and so does a
// moved message that names k later. Call it once nothing takes from k
// any more and k has left the Consumer's clusters. With
// forgetKeepFrontiers (k is replaced by a subscription of the same
// member over the same partitions and more), the member's frontiers stay:
// every message taken from k was delivered or is delivered here, so the
// highest position taken from each partition still tells what passed.
func (h *holder) forget(k *cluster, how forgetHow) {
	h.mu.Lock()
	h.t = h.now()
	finished := how == forgetFinished
	if finished {
		h.finished[k.name] = true
	}
	for _, q := range h.queues {
		switch {
		case q.key.k == k:
			h.releaseAll(q, HandoverUnread, h.t)
		case q.waitOn.k == k && finished:
			h.work = append(h.work, q.waitOn)
		case q.waitOn.k == k:
			h.releaseAll(q, HandoverUnread, h.t)
		}
	}
	t := k.hold.front.Load()
	for pk, ps := range h.parts {
		if pk.k == k {
			h.acks = append(h.acks, ps.markers...)
			delete(h.parts, pk)
			if ps.stopped {
				h.flip = append(h.flip, pk) // resumed: k may come back (forgetKeepFrontiers)
			}
			if t != nil && int(pk.p) < len(t.p) {
				// The position past the word went with ps: none taken.
				t.p[pk.p].word.CompareAndSwap(packOverflow, 0)
			}
		}
	}
	if how != forgetKeepFrontiers {
		k.hold.front.Store(nil)
	}
	h.settle()
	h.unlock()
}

// forgetHow is what holder.forget keeps of a cluster.
type forgetHow int

const (
	forgetClosed        forgetHow = iota // k's member reads no more, or from elsewhere (a reconnect)
	forgetFinished                       // k was read to the end
	forgetKeepFrontiers                  // the same partitions come again on the member's next subscription
)
