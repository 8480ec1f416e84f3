package producer

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/keyroute/keyroute/router"
)

// The hand-over of moving keys (router/HANDOVER.md section 5). A change
// (Update) that moves slots puts, in the snapshot it installs, a slotMove
// for each moved slot, and a handover for each old owner partition that
// keys leave. In the same instant each such partition is marked (put
// refuses it messages placed before the change: hand places them again)
// and, if it was ever written, given a marker behind everything handed to
// it before. A message of a moved key whose old owner partition's
// hand-over is still holding is kept in memory (held), with the budget
// of its new owner taken; it goes on when the marker's callback runs,
// which the old owner's callback goroutine does in partition order: so
// the marker is acknowledged (with its position) and every message
// handed to the partition before it has its outcome. The held messages
// are then handed to their new owners in order, tagged with the slot's
// open origins, and the hand-over lets later ones through as they come.
// Keys that do not move meet a nil slotMove, or one settled on their
// partition (a growth's keys on the old partitions), and nothing else.

// held is a message of a moved key, between its hand-over and its writer.
type held struct {
	ctx   context.Context
	op    Op
	msg   *Message
	cb    Callback
	c     *cluster // its new owner, where it holds budget
	pt    *partition
	f     *inflight // non-nil when observed
	ev    *Event
	props map[string]string
	n     int64
	at    time.Time // of the hand-over: the send deadline runs from it
	epoch uint64    // it was placed under
	sm    *slotMove
	// released: it waited and is handed on by its hand-over's release or
	// decision, which holds the hand-over's lock.
	released bool
}

// Hand-over states.
const (
	holding  = iota // the marker's acknowledgement is awaited: messages wait
	released        // the marker was acknowledged: messages go on, tagged
	failing         // decided by FailFast or WaitUp (7.1): messages fail
	spilling        // decided by Spill (7.1): messages go on, unordered
)

// handover is one old owner partition's hand-over in one change.
type handover struct {
	ch    *change
	from  *partition
	moved uint64 // slots leaving the partition (the marker's keyroute-moved)
	props map[string]string
	msg   *Message // the marker, as the outcome path sees it

	// gate, for a partition change, holds the reports of the partition's
	// successor (see partition.gate) until the marker's callback, which
	// comes after every earlier report of the partition, or at once when
	// the partition was never written; wake wakes the successor's
	// callback goroutine then. nil for a cluster change.
	gate     chan struct{}
	gateOnce sync.Once
	wake     func()

	// sameSpot: a reconnection's hand-over whose keys keep their
	// partition (the new connection found the same count). Its marker's
	// callback releases it also when the marker failed: every message
	// handed to the old writer has its outcome then, and what the new
	// connection writes on the partition comes after (see reconnect.go).
	sameSpot bool

	mu      sync.Mutex // guards the fields below
	state   int
	waiting []*held // in hand-over order
	settled bool    // released or decided (counted in change.left)
	err     error   // the failure of a failing hand-over
	origin  router.Origin
}

// slotMove is a slot that a change moved: where its keys' earlier
// messages are owed (from), and the origins its messages carry at their
// new owner until a tagged one is acknowledged there (HANDOVER.md 5.3).
type slotMove struct {
	epoch uint64
	fromN int      // the old owner's partition count
	toN   int      // a partition change's new count; 0 for a cluster change
	to    *cluster // the new owner; its partitions are where the slot's messages go

	// settled holds q once every hand-over of from has released and
	// partition q of to has acknowledged a message tagged with every
	// origin: the slot's messages to q then owe nothing, and take the
	// plain path (see owes).
	settled partSet
	from    []*handover // by old partition; nil when the old owner owes nothing

	mu      sync.Mutex // guards the fields below
	origins []origin   // carried over first, then this change's as markers are acknowledged
	// acked maps a new owner partition to how many origins (a prefix of
	// origins) a tagged message acknowledged there carried.
	acked map[*partition]int
}

// origin is an origin a slot's messages may carry. Of this change: the
// marker of old owner partition p of fromN, which messages carry on the
// new partitions that take keys of p; grown marks a partition change's,
// whose keys stay on the same cluster. Carried over from an earlier
// change (open is not nil): open holds the partitions (of fromN, the
// slot's owner when this change moved it) where it was still owed, and
// messages carry it on the new partitions that take keys of one of them.
type origin struct {
	o     router.Origin
	grown bool
	p     int
	fromN int
	open  partSet
}

// concerns reports whether a message on partition q of n carries o: when
// keys of o's old partition (or of one where it is open) can land on q.
// SPEC.md step 3 (jump hashing) puts a key on partition p of fromN on
// partition q of n only if p == q, q >= fromN or p >= n; at a growth
// p == q is a key that did not move, so only the new partitions
// (q >= fromN) take keys of p.
func (o *origin) concerns(q, n int) bool {
	switch {
	case q >= o.fromN || o.wide(n):
		return true
	case o.open != nil:
		return o.open.has(q)
	}
	return !o.grown && o.p == q
}

// wide reports whether o names an old partition at or beyond n, whose
// keys can land on every partition of n.
func (o *origin) wide(n int) bool {
	if o.open == nil {
		return !o.grown && o.p >= n
	}
	for p := n; p < o.fromN; p++ {
		if o.open.has(p) {
			return true
		}
	}
	return false
}

// partitions yields each partition of n that o concerns, once.
func (o *origin) partitions(n int) iter.Seq[int] {
	return func(yield func(int) bool) {
		lo := min(o.fromN, n)
		if o.wide(n) {
			lo = 0
		}
		for q := lo; q < n; q++ {
			if !yield(q) {
				return
			}
		}
		switch {
		case o.open != nil:
			for q := range lo {
				if o.open.has(q) && !yield(q) {
					return
				}
			}
		case !o.grown && o.p < lo:
			yield(o.p)
		}
	}
}

// carried returns the origins a slot moved again carries over from its
// previous move prev (HANDOVER.md 5.4): those still open on a partition
// of from, the slot's owner now, where they concern it and no tagged
// message of the slot acknowledged there carried them. Of two on one
// partition it keeps the later, open where either was. A stand-in never
// wrote the slot's messages: what prev owes is owed on every partition.
func carried(prev *slotMove, from *cluster) []origin {
	prev.mu.Lock()
	defer prev.mu.Unlock()
	type place struct {
		cluster string
		part    int32
	}
	last := map[place]int{}
	n := len(from.parts)
	var out []origin
	for j := range prev.origins {
		o := &prev.origins[j]
		c := origin{o: o.o, fromN: n, open: newPartSet(max(n, 1))}
		if from.parts[0].idx < 0 {
			c.fromN = 0 // concerns every partition
		} else {
			owed := false
			for q := range o.partitions(n) {
				if pt := from.parts[q]; j >= prev.acked[pt] && prev.owes(pt) {
					c.open.add(q)
					owed = true
				}
			}
			if !owed {
				continue
			}
		}
		k := place{o.o.Cluster, o.o.Partition}
		if i, ok := last[k]; ok {
			for w := range c.open {
				c.open[w].Or(out[i].open[w].Load())
			}
			out[i] = c
			continue
		}
		last[k] = len(out)
		out = append(out, c)
	}
	return out
}

// settleOld settles the old partitions (the first fromN) of sm.to, a
// partition change's successor, that no carried origin concerns: a key
// there stays and owes nothing.
func (sm *slotMove) settleOld(fromN int) {
	for q := range fromN {
		owed := false
		for i := range sm.origins {
			owed = owed || sm.origins[i].concerns(q, len(sm.to.parts))
		}
		if !owed {
			sm.settled.add(q)
		}
	}
}

// owner returns the hand-over that h's messages wait for, or nil.
func (sm *slotMove) owner(h uint64) *handover {
	if sm.from == nil {
		return nil
	}
	return sm.from[router.Partition(h, sm.fromN)]
}

// handMoved hands over m, a message of a moved key under sm, which holds
// its budget: it waits behind its hand-over while that holds, fails when
// it was decided so, and else goes to its new owner, tagged as it must.
func (p *Producer) handMoved(sm *slotMove, h uint64, m *held) error {
	m.sm = sm
	if sm.toN > 0 && m.pt.idx < sm.fromN {
		// A partition change that leaves the key where it was (jump
		// hashing moves keys only to the new partitions): it owes only
		// what an earlier change left open there (see concerns).
		return p.sendMoved(m, false)
	}
	ho := sm.owner(h)
	if ho == nil {
		return p.sendMoved(m, false)
	}
	ho.mu.Lock()
	switch ho.state {
	case holding:
		ho.waiting = append(ho.waiting, m)
		ho.mu.Unlock()
		ho.ch.held.Add(1)
		return nil
	case failing:
		err := ho.err
		ho.mu.Unlock()
		p.refuseHeld(m, err)
		return err
	}
	unordered := ho.state == spilling
	ho.mu.Unlock()
	return p.sendMoved(m, unordered)
}

// sendMoved hands m to its new owner's writer, tagged with the slot's
// open origins that concern its partition, if any, or marked unordered
// (HANDOVER.md 7.1). A message placed before a later change is placed
// again (see put).
func (p *Producer) sendMoved(m *held, unordered bool) error {
	sm, pt := m.sm, m.pt
	var from []router.Origin
	sm.mu.Lock()
	upTo := len(sm.origins)
	owed := false
	for i := range sm.origins {
		if o := &sm.origins[i]; o.concerns(pt.idx, len(pt.c.parts)) {
			from = append(from, o.o)
			owed = owed || i >= sm.acked[pt]
		}
	}
	sm.mu.Unlock()
	props, cb := m.props, m.cb
	if !owed && !unordered && !m.released {
		sm.settle(pt) // not while a hand-over's lock is held (release)
	}
	if owed || unordered {
		props = make(map[string]string, len(m.props)+4)
		for k, v := range m.props {
			props[k] = v
		}
		router.Tag{Producer: p.id, Epoch: sm.epoch, From: from, Unordered: unordered}.AddTo(props)
		if owed {
			cb = sm.onTagged(pt, upTo, m.cb)
		}
	}
	err := p.put(m.ctx, m.op, m.msg, cb, pt, m.f, m.ev, props, m.n, m.epoch)
	if err == errPlacedBefore {
		m.c.budget.release(1, m.n)
		p.again(m)
		return nil
	}
	if err != nil {
		m.c.budget.release(1, m.n)
		p.refuse(m, err)
	}
	return err
}

// again hands m over again from the start, placed under the current
// snapshot: a change marked its partition after it was placed. An
// observed message keeps its Event and the properties its observer gave.
func (p *Producer) again(m *held) {
	_, _ = p.handWith(m.ctx, m.op, m.msg, m.cb, m.f, m.ev, m.props)
}

// onTagged returns the callback of a tagged message to pt that carried
// origins[:upTo]: its acknowledgement ends their tagging there.
func (sm *slotMove) onTagged(pt *partition, upTo int, cb Callback) Callback {
	return func(id ID, msg *Message, err error) {
		if err == nil {
			sm.mu.Lock()
			if sm.acked == nil {
				sm.acked = map[*partition]int{}
			}
			if sm.acked[pt] < upTo {
				sm.acked[pt] = upTo
			}
			sm.mu.Unlock()
			sm.settle(pt)
		}
		if cb != nil {
			cb(id, msg, err)
		}
	}
}

// settle marks pt settled (see settled) if every hand-over has released
// (so no origin is added any more) and no origin concerning pt is left
// unacknowledged there.
func (sm *slotMove) settle(pt *partition) {
	if pt.c != sm.to || pt.idx < 0 || !sm.released() {
		return
	}
	sm.mu.Lock()
	for i := sm.acked[pt]; i < len(sm.origins); i++ {
		if sm.origins[i].concerns(pt.idx, len(pt.c.parts)) {
			sm.mu.Unlock()
			return
		}
	}
	sm.mu.Unlock()
	sm.settled.add(pt.idx)
}

// owes reports whether the slot's messages to pt may still be held or
// tagged (see settled).
func (sm *slotMove) owes(pt *partition) bool {
	return pt.c != sm.to || pt.idx < 0 || !sm.settled.has(pt.idx)
}

// partSet is a set of partition indexes, one bit each, safe for
// concurrent use.
type partSet []atomic.Uint64

// newPartSet returns an empty set of indexes below n.
func newPartSet(n int) partSet { return make(partSet, (n+63)/64) }

func (s partSet) has(q int) bool { return s[q/64].Load()&(1<<(q%64)) != 0 }

func (s partSet) add(q int) { s[q/64].Or(1 << (q % 64)) }

// fill adds every index.
func (s partSet) fill() {
	for i := range s {
		s[i].Store(^uint64(0))
	}
}

// released reports whether every hand-over the slot's keys owe to has
// released (not decided: its keys go on failing or unordered); then no
// origin is added to the slot any more.
func (sm *slotMove) released() bool {
	for _, ho := range sm.from {
		ho.mu.Lock()
		st := ho.state
		ho.mu.Unlock()
		if st != released {
			return false
		}
	}
	return true
}

// refuseHeld gives err to m, which holds budget, as its not-written outcome.
func (p *Producer) refuseHeld(m *held, err error) {
	m.c.budget.release(1, m.n)
	p.refuse(m, err)
}

// refuse gives err to m, which holds no budget, as its not-written
// outcome, in its new owner partition's order.
func (p *Producer) refuse(m *held, err error) {
	f := m.f
	if f == nil {
		f = pooledInflight()
	}
	f.ctx, f.msg, f.cb, f.part, f.cost, f.ev = m.ctx, m.msg, m.cb, m.pt, m.n, m.ev
	f.accepted = false
	f.userCB = m.op == OpSendAsync && m.cb != nil
	m.c.refuse(f, err)
}

// placeMarker hands ho's marker to its partition's writer, behind
// everything handed to it; a closed partition ends the hand-over.
func (p *Producer) placeMarker(ho *handover) {
	pt := ho.from
	pt.mu.Lock()
	if pt.closed {
		pt.mu.Unlock()
		p.decide(ho, failing, ErrClosed)
		return
	}
	p.placeMarkerLocked(ho)
	pt.mu.Unlock()
}

// placeMarkerLocked is placeMarker with the partition's lock held. The
// marker holds no budget and has a callback, so it is reported in the
// partition's order: after every message handed to it before.
func (p *Producer) placeMarkerLocked(ho *handover) {
	pt := ho.from
	f := pt.takeLocked()
	f.ctx, f.msg, f.cb, f.cost, f.accepted, f.userCB = context.Background(), ho.msg, ho.onMarker, 0, false, false
	f.part, f.ev = pt, nil
	toPulsar(&f.pm, ho.msg, ho.props)
	pt.placeLocked(f, pending)
	pt.handed.Add(1)
	pt.w.SendAsync(f.ctx, &f.pm, f.onAck)
	if p.cfg.batching {
		p.goBG(func() { p.flushMarker(pt) })
	}
}

// flushMarker sends the batch that holds a marker at once: the moved
// keys wait for its acknowledgement, and nothing else may come to fill
// the batch (a reconnected cluster's keys are all held), so it would
// wait for Linger, or for good with no linger. Close ends the flush.
func (p *Producer) flushMarker(pt *partition) {
	if !p.enter() {
		return
	}
	defer p.leave()
	fctx, stop := p.untilClose(context.Background())
	defer stop()
	_ = flushWriter(fctx, pt.w) // the marker's own outcome says what happened
}

// onMarker is the marker's callback, on the old owner's callback
// goroutine: every message handed to the partition before the marker has
// been reported. It must not block: what follows runs on a goroutine of
// its own. A failed marker is handed over again after DownProbeInterval,
// unless its hand-over is a reconnection's that keeps the keys' partition
// (sameSpot): that one is released, owing nothing.
func (ho *handover) onMarker(id ID, _ *Message, err error) {
	p := ho.ch.p
	ho.openGate()
	if err == nil {
		o := router.Origin{Cluster: ho.from.c.name, Partition: int32(ho.from.idx), Pos: position(id.MessageID)}
		p.goBG(func() { p.release(ho, &o) })
		return
	}
	if ho.sameSpot {
		p.log().Warn("keyroute: reconnection marker failed; the old connection's messages have their outcomes: moving on",
			"cluster", ho.from.c.name, "partition", ho.from.idx, "epoch", ho.ch.epoch, "error", err)
		p.goBG(func() { p.release(ho, nil) })
		return
	}
	p.log().Warn("keyroute: hand-over marker failed, handing it over again", "cluster", ho.from.c.name,
		"partition", ho.from.idx, "epoch", ho.ch.epoch, "error", err)
	p.goBG(func() {
		t := time.NewTimer(p.cfg.probeEvery)
		defer t.Stop()
		select {
		case <-t.C:
			p.placeMarker(ho)
		case <-p.done:
			p.decide(ho, failing, ErrClosed)
		}
	})
}

// openGate opens ho's gate, if any, once.
func (ho *handover) openGate() {
	if ho.gate == nil {
		return
	}
	ho.gateOnce.Do(func() {
		close(ho.gate)
		ho.wake()
	})
}

// position returns id's position in its partition.
func position(id pulsar.MessageID) router.Position {
	if id == nil {
		return router.Position{Batch: -1}
	}
	return router.Position{Ledger: id.LedgerID(), Entry: id.EntryID(), Batch: id.BatchIdx()}
}

// release ends ho's hold: the marker was acknowledged at o (nil: the
// partition was never written, nothing is owed). Each slot leaving the
// partition gains the origin, and the waiting messages go to their new
// owners in order; later ones go straight there.
func (p *Producer) release(ho *handover, o *router.Origin) {
	ho.openGate()
	if o != nil {
		for _, sm := range ho.ch.slotsFrom[ho.from.c] {
			sm.mu.Lock()
			sm.origins = append(sm.origins, origin{o: *o, grown: sm.toN > 0, p: ho.from.idx, fromN: len(ho.from.c.parts)})
			sm.mu.Unlock()
		}
	}
	ho.mu.Lock()
	if o != nil {
		ho.origin = *o
	}
	waiting := ho.waiting
	ho.waiting = nil
	for _, m := range waiting {
		p.sendHeld(m, false)
	}
	ho.state = released
	first := !ho.settled
	ho.settled = true
	ho.mu.Unlock()
	if first {
		ho.ch.settle()
	}
}

// sendHeld hands a waiting message on, unless its ctx ended or its send
// deadline passed while it waited: those fail, not written.
func (p *Producer) sendHeld(m *held, unordered bool) {
	switch timeout := time.Duration(m.c.join.wc.sendTimeout); {
	case m.ctx.Err() != nil:
		p.refuseHeld(m, m.ctx.Err())
	case timeout > 0 && time.Since(m.at) > timeout:
		p.refuseHeld(m, fmt.Errorf("%w: held %s behind a topology change's hand-over", pulsar.ErrSendTimeout, timeout))
	default:
		m.epoch = ^uint64(0) // the next change waits for this one's releases
		m.released = true
		_ = p.sendMoved(m, unordered)
	}
}

// decide ends ho's hold without its marker's acknowledgement
// (HANDOVER.md 7.1), unless it ended already: failing fails the waiting
// messages, and later ones, with err; spilling sends them on unordered.
// A marker acknowledged later releases it as usual.
func (p *Producer) decide(ho *handover, state int, err error) {
	ho.mu.Lock()
	if ho.state != holding {
		ho.mu.Unlock()
		return
	}
	waiting := ho.waiting
	ho.waiting = nil
	ho.state, ho.err = state, err
	for _, m := range waiting {
		if state == failing {
			p.refuseHeld(m, err)
		} else {
			p.sendHeld(m, true)
		}
	}
	first := !ho.settled
	ho.settled = true
	ho.mu.Unlock()
	if first {
		ho.ch.settle()
	}
}

// awaitHandover waits until the last change's hand-overs have ended, so
// that every message they held is in its writer's hands, or until ctx
// ends or Close begins (then it returns an error).
func (p *Producer) awaitHandover(ctx context.Context) error {
	ch := p.lastChange.Load()
	if ch == nil {
		return nil
	}
	select {
	case <-ch.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("hand-over of epoch %d: %w", ch.epoch, ctx.Err())
	case <-p.done:
		return ErrClosed
	}
}

// change is one applied topology change and its hand-overs.
type change struct {
	p     *Producer
	epoch uint64
	slots int // slots moved to another cluster
	// grownSlots counts the slots of the cluster a partition change grew:
	// part of each one's keys moves to the new partitions.
	grownSlots int
	handovers  []*handover
	slotsFrom  map[*cluster][]*slotMove // the moved slots, by old owner
	removed    []*cluster               // drained by the change
	replaced   []*cluster               // reconnected: the old connections, closed like removed ones
	added      []string
	markers    int // hand-overs that got a marker
	// A partition change: the cluster it grew, and its counts; retired
	// is the cluster replaced (see grow), closed like a removed one.
	grown                   string
	partsBefore, partsAfter int
	retired                 *cluster
	applied                 time.Time

	left atomic.Int64  // hand-overs not settled
	done chan struct{} // closed when none is left
	held atomic.Int64  // messages held, ever
	// forced counts the hand-overs decided without their marker (7.1).
	forced atomic.Int64
	ended  atomic.Int64 // unix nanos when done closed
	told   atomic.Bool  // a ChangeObserver was told it is done (once)
}

// settle counts one hand-over released or decided.
func (ch *change) settle() {
	if ch.left.Add(-1) == 0 {
		ch.ended.Store(time.Now().UnixNano())
		close(ch.done)
	}
}

// watch waits for ch's hand-overs to settle; at HandoverTimeout (and
// DownWait more under WaitUp) the down policy decides for those still
// holding, and at Close they fail. Then it closes the clusters ch
// drained, once their outcomes are all reported.
func (p *Producer) watch(ch *change) {
	bound := p.cfg.handoverBound()
	if p.cfg.downPolicy == WaitUp {
		bound += p.cfg.downWait
	}
	t := time.NewTimer(bound)
	defer t.Stop()
	select {
	case <-ch.done:
	case <-t.C:
		p.force(ch)
	case <-p.done:
		for _, ho := range ch.handovers {
			p.decide(ho, failing, ErrClosed)
		}
	}
	<-ch.done
	p.report(ch, true)
	closing := append(slices.Clone(ch.removed), ch.replaced...)
	if ch.retired != nil {
		closing = append(closing, ch.retired)
	}
	for _, c := range closing {
		select {
		case <-c.disp.barrier():
		case <-p.done:
			return // Close closes it
		}
		p.closeDrained(c)
	}
}

// force decides for ch's hand-overs still holding at HandoverTimeout.
func (p *Producer) force(ch *change) {
	for _, ho := range ch.handovers {
		ho.mu.Lock()
		still := ho.state == holding
		ho.mu.Unlock()
		if !still {
			continue
		}
		ch.forced.Add(1)
		name, idx := ho.from.c.name, ho.from.idx
		if p.cfg.downPolicy == Spill {
			p.log().Warn("keyroute: hand-over marker not acknowledged in time: moved keys written unordered (possible reorder)",
				"cluster", name, "partition", idx, "slots", ho.moved, "epoch", ch.epoch)
			p.decide(ho, spilling, nil)
		} else {
			p.log().Warn("keyroute: hand-over marker not acknowledged in time: moved keys' messages fail",
				"cluster", name, "partition", idx, "slots", ho.moved, "epoch", ch.epoch, "policy", p.cfg.downPolicy.String())
			p.decide(ho, failing, fmt.Errorf("%w: cluster %q partition %d did not acknowledge the hand-over of epoch %d in time",
				ErrClusterDown, name, idx, ch.epoch))
		}
		p.observeForced(ch, ho)
	}
}

// closeDrained closes c, a cluster a change removed, unless Close has
// taken it.
func (p *Producer) closeDrained(c *cluster) {
	p.joinMu.Lock()
	_, mine := p.draining[c]
	if mine && !p.joinsStopped {
		delete(p.draining, c)
	} else {
		mine = false
	}
	p.joinMu.Unlock()
	if !mine {
		return
	}
	for _, pt := range c.parts {
		pt.close()
	}
	_ = flushWriters(context.Background(), []*cluster{c})
	p.shut(context.Background(), c)
	p.log().Info("keyroute: drained cluster closed", "cluster", c.name)
}
