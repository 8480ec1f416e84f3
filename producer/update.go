package producer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/keyroute/keyroute/router"
	"github.com/keyroute/keyroute/topology"
)

// Update applies topo, a new topology of the Producer's topic, while it
// runs: clusters added, removed (drained), reweighted or reconnected
// (below). Only the keys whose owner changes move (rendezvous routing),
// and they move in order: for every partition that keys leave, the
// Producer writes one marker behind what it already handed there, holds
// the moved keys' new messages in memory (against their new cluster's
// buffer share, with the usual back-pressure; their send deadline runs
// from the hand-over) until the marker is acknowledged and every earlier
// message there has its outcome, then writes them to their new owners
// tagged with where their key's earlier messages lie (router/HANDOVER.md
// section 5), so that a reader that follows HANDOVER.md (the keyroute
// consumer) delivers a key's messages from this Producer in the order
// they were sent. Keys that do not move are neither held nor tagged;
// keyless messages never are. An old owner that does not acknowledge its
// marker within HandoverTimeout is decided by OnClusterDown (HANDOVER.md
// 7.1). A removed cluster's writers close once its markers are
// acknowledged and all its messages have their outcomes.
//
// A kept cluster (same Name) whose connection settings change
// (ServiceURL, Auth, TLS, Client: topology.SameClient; or Producer), with or without
// its Weight, is reconnected without losing, duplicating or reordering a
// message: its new connection is opened first (with shared
// keyroute.Clients, on the client Clients.Client now returns), then its
// keys are handed over from the old connection to the new one as from an
// old owner: a marker on each partition written, the cluster's keyed
// messages held until every message handed to the old connection has its
// outcome, then written through the new one (tagged until the first
// acknowledgement); the other clusters' keys are not held. The old
// writers and connection close after (a shared client is left to
// Clients). When the old connection's messages fail (it stopped
// answering: they end at their send timeout), the held ones go on once
// every one has its outcome, failed marker or not, when the new
// connection finds the same partition count; only an old connection that
// gives no outcome within HandoverTimeout leaves them to OnClusterDown.
//
// A bad topology, or an added or reconnected cluster that answers with an
// error (its topic missing, its credentials refused, say), is refused
// with an error naming what is wrong (ErrBadTopology, ErrConnect), and
// the topology in use goes on, over the old connections. An added cluster
// that has not answered within StartTimeout is added down, like a
// cluster that did not answer New: its keys follow OnClusterDown until it
// joins. A reconnection that has not answered within StartTimeout is
// refused (ErrConnect) while the cluster is connected, so that a working
// connection is never traded for a silent one; a cluster that never
// connected takes its new settings down, and joins when they answer. A
// topology none of whose clusters is connected then is refused
// (ErrConnect, naming each), as New refuses one: apply it once one of
// them answers.
//
// Changes apply one at a time, in call order: Update first waits until
// the previous change's hand-overs have ended (every marker acknowledged,
// or decided at HandoverTimeout). ctx bounds that wait and the added
// clusters' connection; when it ends first, nothing is applied and the
// error matches ctx.Err(). Each change is the Producer's next epoch
// (Epoch); LastChange reports it (slots moved, markers, messages held,
// the release's stall, forced decisions), the log says it, and an
// Observer that implements ChangeObserver is told. Flush and Close wait
// for a change's hand-overs (bounded by their ctx) before they flush;
// messages still held when Close goes on fail with ErrClosed.
// Transactions (Txn, RunInTxn, SendTxnBulk) route by the topology in use
// when they send but are not held: a change while
// a moved key's messages are in a transaction gives them no order with
// that key's other messages. With WithClients, topo must be the shared
// clients' topology (keyroute.ErrOtherTopology otherwise): call
// Clients.Update, which updates every producer and consumer attached.
// Called from a Callback, Update returns ErrInCallback.
func (p *Producer) Update(ctx context.Context, topo *topology.Topology) error {
	if p == nil {
		return ErrNilProducer
	}
	if p.onCallbackGoroutine() {
		return ErrInCallback
	}
	r, err := newRouter(topo)
	if err != nil {
		return err
	}
	if p.cfg.clients != nil {
		if err := p.cfg.clients.Check(topo); err != nil {
			return err
		}
	}
	if err := p.beginChange(ctx); err != nil {
		return err
	}
	defer p.endChange()
	cur := p.snap.Load()
	kept := map[string]*cluster{}
	for _, c := range cur.clusters {
		kept[c.name] = c
	}
	var added []*joinState
	for _, cl := range topo.Clusters {
		c, ok := kept[cl.Name]
		if !ok {
			maxMsgs, maxBytes := p.cfg.share(topo, cl.Weight)
			added = append(added, p.newJoinState(cl, maxMsgs, maxBytes))
			continue
		}
		if js := p.reconnection(c, cl, topo); js != nil {
			added = append(added, js)
		}
	}
	if err := p.connectAdded(ctx, added); err != nil {
		p.abandon(added)
		return err
	}
	if err := noneAnswers(topo, kept, added); err != nil {
		p.abandon(added)
		return err
	}
	return p.apply(cur, r, topo, added)
}

// noneAnswers returns an error naming the clusters of topo when none of
// them is connected once the added and reconnected ones (added) had
// their StartTimeout: New refuses such a topology, and an Update that
// applied it would leave every send failing. The topology in use goes
// on; an operator who means to move to clusters that are down now
// applies the change once one of them answers.
func noneAnswers(topo *topology.Topology, kept map[string]*cluster, added []*joinState) error {
	byName := make(map[string]*joinState, len(added))
	for _, js := range added {
		byName[js.cl.Name] = js
	}
	var errs []error
	for _, cl := range topo.Clusters {
		js := byName[cl.Name]
		if js == nil {
			js = kept[cl.Name].join
		}
		if js.joined.Load() {
			return nil
		}
		why := js.lastErr()
		if why == nil {
			why = errNoAnswer
		}
		errs = append(errs, connectError(js, why))
	}
	return fmt.Errorf("update: no cluster of the new topology is connected: %w", errors.Join(errs...))
}

// beginChange waits until no other change is being applied and the last
// one's hand-overs have ended (HANDOVER.md 7.5), or ctx ends, or Close
// begins. On success the caller applies its change and then calls
// endChange.
func (p *Producer) beginChange(ctx context.Context) error {
	select {
	case p.updating <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("update: waiting for another change: %w", ctx.Err())
	case <-p.done:
		return ErrClosed
	}
	if prev := p.lastChange.Load(); prev != nil {
		select {
		case <-prev.done:
		case <-ctx.Done():
			p.endChange()
			return fmt.Errorf("update: waiting for the hand-over of epoch %d: %w", prev.epoch, ctx.Err())
		case <-p.done:
			p.endChange()
			return ErrClosed
		}
	}
	return nil
}

func (p *Producer) endChange() { <-p.updating }

// changedField names what of a kept cluster's settings b changes so
// that it reconnects (its client settings, topology.SameClient, or its
// Producer settings), or returns "".
func changedField(a, b topology.Cluster) string {
	switch {
	case !topology.SameClient(a, b):
		return "client settings"
	case a.Producer != b.Producer:
		return "producer settings"
	}
	return ""
}

// connectAdded starts an attempt for each added cluster and waits until
// each has answered, StartTimeout has passed, or ctx ended. It returns an
// error naming each cluster that answered with an error.
func (p *Producer) connectAdded(ctx context.Context, added []*joinState) error {
	if len(added) == 0 {
		return nil
	}
	for _, js := range added {
		js.adding = true // no other goroutine knows js yet
		p.startAttempt(js)
	}
	timer := time.NewTimer(p.cfg.startBound())
	defer timer.Stop()
	for _, js := range added {
		select {
		case <-js.firstEnd:
		case <-timer.C:
		case <-ctx.Done():
			return fmt.Errorf("update: connecting cluster %q: %w", js.cl.Name, ctx.Err())
		case <-p.done:
			return ErrClosed
		}
	}
	var errs []error
	for _, js := range added {
		select {
		case <-js.firstEnd:
		default:
			if js.replaces != nil && js.replaces.join.joined.Load() {
				errs = append(errs, errNotAnswered(js, p.cfg.startBound().String()))
			}
			continue // not answered: added down
		}
		if js.joined.Load() {
			continue
		}
		p.joinMu.Lock()
		ready := js.ready != nil
		p.joinMu.Unlock()
		if err := js.lastErr(); !ready && err != nil && !errors.Is(err, errNoAnswer) {
			errs = append(errs, connectError(js, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrBadTopology, errors.Join(errs...))
	}
	return nil
}

// abandon drops added clusters of a refused change: what their attempts
// opened, or open later, is closed.
func (p *Producer) abandon(added []*joinState) {
	p.joinMu.Lock()
	defer p.joinMu.Unlock()
	for _, js := range added {
		js.gone = true
		if l := js.ready; l != nil {
			js.ready = nil
			closeWriters(l.writers)
			l.close()
		}
	}
}

// apply installs the new topology as the next epoch, with its hand-overs.
func (p *Producer) apply(cur *snapshot, r *router.Router, topo *topology.Topology, added []*joinState) error {
	p.joinMu.Lock()
	if p.joinsStopped {
		p.joinMu.Unlock()
		p.abandon(added)
		return ErrClosed
	}
	cur = p.snap.Load() // joins may have replaced stand-ins since
	byName := map[string]*cluster{}
	for _, c := range cur.clusters {
		byName[c.name] = c
	}
	var replaced []*cluster
	for _, js := range added {
		js.adding = false
		if js.replaces != nil {
			replaced = append(replaced, p.replace(js, byName))
		}
		if l := js.ready; l != nil {
			js.ready = nil
			byName[js.cl.Name] = p.joinedCluster(js, l)
			js.joined.Store(true)
			markUp(js.health)
		} else {
			byName[js.cl.Name] = p.standIn(js)
		}
	}
	next := &snapshot{router: r, epoch: cur.epoch + 1, clusters: make([]*cluster, len(topo.Clusters))}
	inNext := map[string]bool{}
	for i, cl := range topo.Clusters {
		c := byName[cl.Name]
		next.clusters[i] = c
		inNext[cl.Name] = true
		c.budget.setLimits(p.cfg.share(topo, cl.Weight))
	}
	ch := p.planChange(cur, next, nil)
	for _, c := range cur.clusters {
		if !inNext[c.name] {
			c.join.gone = true
			ch.removed = append(ch.removed, c)
			p.draining[c] = struct{}{}
		}
	}
	for _, c := range replaced {
		ch.replaced = append(ch.replaced, c)
		p.draining[c] = struct{}{}
	}
	sameSpots(ch, byName)
	for _, js := range added {
		if js.replaces == nil {
			ch.added = append(ch.added, js.cl.Name)
		}
	}
	p.snap.Store(next)
	unwritten := p.mark(ch)
	p.lastChange.Store(ch)
	p.joinMu.Unlock()
	p.start(ch, unwritten)
	return nil
}

// mark marks the partitions of ch's hand-overs as of epoch (see put) and
// hands each that was ever written its marker; it returns the others,
// which owe nothing. Called with joinMu held, after the snapshot of epoch
// is in place.
func (p *Producer) mark(ch *change) (unwritten []*handover) {
	for _, ho := range ch.handovers {
		pt := ho.from
		pt.mu.Lock()
		pt.markEpoch = ch.epoch
		written := pt.handed.Load() > 0 && !pt.closed
		if written {
			p.placeMarkerLocked(ho)
			ch.markers++
		}
		pt.mu.Unlock()
		if !written {
			unwritten = append(unwritten, ho)
		}
	}
	return unwritten
}

// start releases ch's hand-overs that owe nothing, reports ch and
// watches it.
func (p *Producer) start(ch *change, unwritten []*handover) {
	for _, ho := range unwritten {
		p.release(ho, nil)
	}
	p.report(ch, false)
	p.goBG(func() { p.watch(ch) })
}

// markUp marks a cluster's health up, as retire does for a joined one.
func markUp(h *health) {
	now := time.Now()
	h.mu.Lock()
	if h.down.Load() {
		h.down.Store(false)
		close(h.upCh)
		h.since = now
	}
	h.lastMoved = now
	h.mu.Unlock()
}

// planChange compares the slots' owners under cur and next and returns the
// change: a slotMove in next.moves for each moved slot (the others keep
// cur's), and a hand-over for every partition of each old owner that
// slots leave, if that owner ever joined (a stand-in was never written:
// it owes nothing, HANDOVER.md 7.6). grown, when not nil, is a cluster
// whose partition count the change grows (next has its successor): each
// of its slots gets a slotMove (slotMove.toN) whose keys on a new
// partition move, and whose keys on an old one stay (jump hashing,
// router/SPEC.md step 3) and owe only what an earlier change left open
// there (carried, settleOld).
func (p *Producer) planChange(cur, next *snapshot, grown *cluster) *change {
	ch := &change{p: p, epoch: next.epoch, slotsFrom: map[*cluster][]*slotMove{}, done: make(chan struct{}), applied: time.Now()}
	hos := map[*cluster][]*handover{}
	moves := make([]*slotMove, 1<<router.SlotBits)
	if cur.moves != nil {
		copy(moves, cur.moves)
	}
	for s := range moves {
		h := uint64(s) << (64 - router.SlotBits)
		from, to := cur.clusters[cur.router.Cluster(h)], next.clusters[next.router.Cluster(h)]
		partChange := grown != nil && from == grown
		if from == to { // a cluster reconnected (or grown) is a new *cluster
			continue
		}
		sm := &slotMove{epoch: next.epoch, to: to, settled: newPartSet(len(to.parts))}
		if prev := moves[s]; prev != nil {
			sm.origins = carried(prev, from)
		}
		if partChange {
			sm.toN = len(to.parts)
			ch.grownSlots++
			sm.settleOld(len(from.parts))
		} else {
			ch.slots++
		}
		if from.parts[0].idx >= 0 {
			if hos[from] == nil {
				hos[from] = make([]*handover, len(from.parts))
				for i, pt := range from.parts {
					hos[from][i] = &handover{ch: ch, from: pt, msg: &Message{}}
				}
			}
			sm.from, sm.fromN = hos[from], len(from.parts)
			ch.slotsFrom[from] = append(ch.slotsFrom[from], sm)
		} else if len(sm.origins) == 0 {
			sm.settled.fill() // it owes nothing anywhere
		}
		moves[s] = sm
	}
	if ch.slots+ch.grownSlots > 0 || cur.moves != nil {
		next.moves = moves
	}
	for c, list := range hos {
		for _, ho := range list {
			ho.moved = uint64(len(ch.slotsFrom[c]))
			ho.props = router.Marker{Producer: p.id, Epoch: ch.epoch, Moved: ho.moved}.Properties()
			ch.handovers = append(ch.handovers, ho)
		}
	}
	ch.left.Store(int64(len(ch.handovers)))
	if len(ch.handovers) == 0 {
		ch.ended.Store(time.Now().UnixNano())
		close(ch.done)
	}
	return ch
}

// Change describes a topology change the Producer applied (Update).
type Change struct {
	// Epoch is the change's number: 1 for the first (HANDOVER.md).
	Epoch uint64
	// SlotsMoved is how many of the 65536 slots changed cluster (or
	// connection, for a reconnection); 0 for a partition change, which
	// moves part of each slot's keys and no slot.
	SlotsMoved int
	// KeysMoved is the share of the key space (0 to 1) that the change
	// moved: SlotsMoved/65536, plus for a partition change the grown
	// cluster's share of slots times (PartitionsAfter -
	// PartitionsBefore)/PartitionsAfter, the share of their keys that
	// jump hashing moves to the new partitions (router/SPEC.md step 3;
	// that part is exact in expectation, not counted per key).
	KeysMoved float64
	// Markers is how many old owner partitions got a marker.
	Markers int
	// Added and Removed name the clusters the change added and drained;
	// Reconnected those whose connection settings it changed (their
	// keys were handed over from the old connection to the new one).
	Added, Removed, Reconnected []string
	// Held counts the moved keys' messages held so far.
	Held int64
	// Done is set once every hand-over has ended; Stall is then how long
	// the last one held (from the change to its release or decision).
	Done  bool
	Stall time.Duration
	// Forced counts the old owner partitions whose marker was not
	// acknowledged within HandoverTimeout, so that OnClusterDown decided
	// for their moved keys (under Spill: a possible reorder).
	Forced int
	// Grown names the cluster of a partition change (found by
	// PartitionsAutoDiscoveryInterval), and PartitionsBefore and
	// PartitionsAfter its partition counts; "" for a topology change.
	Grown                             string
	PartitionsBefore, PartitionsAfter int
}

// ChangeObserver is an Observer that also hears of topology changes:
// OnChange runs when a change is applied, when OnClusterDown decides for
// a hand-over (Forced grows), and when its hand-overs end (Done, told
// once per change). It runs
// on the goroutine that applied the change, or on one of the Producer's
// own, must not block, and may not call the Producer.
type ChangeObserver interface {
	Observer
	OnChange(Change)
}

// Epoch returns how many topology changes the Producer applied.
func (p *Producer) Epoch() uint64 {
	if p == nil {
		return 0
	}
	return p.snap.Load().epoch
}

// LastChange returns the last topology change applied, and false when
// none was.
func (p *Producer) LastChange() (Change, bool) {
	if p == nil {
		return Change{}, false
	}
	ch := p.lastChange.Load()
	if ch == nil {
		return Change{}, false
	}
	return ch.describe(), true
}

func (ch *change) describe() Change {
	c := Change{Epoch: ch.epoch, SlotsMoved: ch.slots, Markers: ch.markers, Held: ch.held.Load(), Forced: int(ch.forced.Load())}
	c.KeysMoved = float64(ch.slots) / (1 << router.SlotBits)
	if ch.partsAfter > 0 {
		c.KeysMoved += float64(ch.grownSlots) / (1 << router.SlotBits) * float64(ch.partsAfter-ch.partsBefore) / float64(ch.partsAfter)
	}
	for _, c2 := range ch.removed {
		c.Removed = append(c.Removed, c2.name)
	}
	c.Added = ch.added
	for _, c2 := range ch.replaced {
		c.Reconnected = append(c.Reconnected, c2.name)
	}
	c.Grown, c.PartitionsBefore, c.PartitionsAfter = ch.grown, ch.partsBefore, ch.partsAfter
	if end := ch.ended.Load(); end != 0 {
		c.Done = true
		c.Stall = time.Unix(0, end).Sub(ch.applied)
	}
	return c
}

// report logs ch and tells a ChangeObserver.
func (p *Producer) report(ch *change, done bool) {
	c := ch.describe()
	if done {
		p.log().Info("keyroute: topology change handed over", "epoch", c.Epoch, "slots_moved", c.SlotsMoved, "keys_moved", c.KeysMoved,
			"held", c.Held, "stall", c.Stall.String(), "forced", c.Forced)
	} else {
		p.log().Info("keyroute: topology change applied", "epoch", c.Epoch, "slots_moved", c.SlotsMoved, "keys_moved", c.KeysMoved,
			"markers", len(ch.handovers), "added", c.Added, "removed", c.Removed, "reconnected", c.Reconnected)
	}
	p.tell(ch, c)
}

// tell tells a ChangeObserver of c, ch's state: a change that is done is
// told so once, whichever report sees it done first.
func (p *Producer) tell(ch *change, c Change) {
	o, ok := p.cfg.observer.(ChangeObserver)
	if !ok || c.Done && ch.told.Swap(true) {
		return
	}
	o.OnChange(c)
}

// observeForced tells a ChangeObserver of a hand-over decided without its
// marker.
func (p *Producer) observeForced(ch *change, _ *handover) {
	p.tell(ch, ch.describe())
}

// discover reads every connected cluster's partition count each
// PartitionsAutoDiscoveryInterval and applies growth (grow) until Close.
func (p *Producer) discover() {
	t := time.NewTicker(p.cfg.discoverEvery)
	defer t.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-t.C:
			p.discoverOnce()
		}
	}
}

// discoverOnce looks at each connected cluster's partition count once.
func (p *Producer) discoverOnce() {
	for _, c := range p.all() {
		if !c.join.joined.Load() || c.link.partitions == nil {
			continue
		}
		n, err := c.link.partitions()
		switch {
		case err != nil:
			p.log().Debug("keyroute: partition discovery failed", "cluster", c.name, "error", err)
			continue
		case n < len(c.parts):
			err = fmt.Errorf("%w: cluster %q: the topic has %d partitions, fewer than the %d written; not applied",
				errShrunk, c.name, n, len(c.parts))
		case n > len(c.parts):
			err = p.grow(c, n)
		}
		c.join.setPartErr(err)
		if err != nil && !errors.Is(err, ErrClosed) {
			p.log().Error("keyroute: partition change not applied", "cluster", c.name, "error", err)
		}
	}
}

// grow applies c's partition count grown to n as a change of its own
// epoch (HANDOVER.md 5.5): it opens the new partitions' writers, then
// replaces c by a successor over all of them (c is retired: its
// partitions keep what was handed to them, and are closed once the
// change's hand-overs end) and hands over the keys that move, as Update
// does. Only keys placed on a new partition (n > it >= the old count)
// move; a key on an old partition stayed there (jump hashing) and is
// neither held nor tagged for this change; its callbacks wait
// (partition.gate) for those of its messages on c.
func (p *Producer) grow(c *cluster, n int) error {
	if err := p.beginChange(p.closing); err != nil {
		return err
	}
	defer p.endChange()
	if p.snap.Load().indexOf(c) < 0 {
		return nil // replaced or removed meanwhile
	}
	from := len(c.parts)
	if c.link.openFrom == nil {
		return fmt.Errorf("cluster %q: the connection cannot open partitions", c.name)
	}
	ws, err := c.link.openFrom(p.closing, from)
	switch {
	case err != nil:
		return fmt.Errorf("cluster %q: opening partitions from %d: %w", c.name, from, err)
	case len(ws) != n-from:
		closeWriters(ws)
		return fmt.Errorf("cluster %q: %d writers opened for partitions %d to %d", c.name, len(ws), from, n-1)
	}
	p.joinMu.Lock()
	cur := p.snap.Load()
	i := cur.indexOf(c)
	if p.joinsStopped || i < 0 {
		p.joinMu.Unlock()
		closeWriters(ws)
		return ErrClosed
	}
	gates := make([]chan struct{}, from)
	for j := range gates {
		gates[j] = make(chan struct{})
	}
	succ := p.successor(c, ws, gates)
	next := &snapshot{router: cur.router, epoch: cur.epoch + 1, clusters: slices.Clone(cur.clusters)}
	next.clusters[i] = succ
	ch := p.planChange(cur, next, c)
	ch.grown, ch.partsBefore, ch.partsAfter = c.name, from, n
	for _, ho := range ch.handovers {
		ho.gate, ho.wake = gates[ho.from.idx], succ.disp.wake
	}
	c.retired = true
	ch.retired = c
	p.draining[c] = struct{}{}
	p.snap.Store(next)
	unwritten := p.mark(ch)
	p.lastChange.Store(ch)
	p.joinMu.Unlock()
	p.log().Info("keyroute: partitions grown", "cluster", c.name, "from", from, "to", n, "epoch", ch.epoch)
	p.start(ch, unwritten)
	return nil
}

// indexOf returns c's index in s, or -1.
func (s *snapshot) indexOf(c *cluster) int { return slices.Index(s.clusters, c) }

// successor returns the cluster that replaces c after a partition change:
// the same connection, budget and health, c's writers and then ws, and
// partitions (and a callback goroutine) of its own; the partition over
// c's writer j reports nothing before gates[j] is closed.
func (p *Producer) successor(c *cluster, ws []writer, gates []chan struct{}) *cluster {
	l := *c.link
	l.writers = append(slices.Clone(c.link.writers), ws...)
	s := &cluster{name: c.name, url: c.url, obs: c.obs, budget: c.budget, health: c.health, link: &l, join: c.join, prev: c}
	s.parts = make([]*partition, len(l.writers))
	maxFree := max(minFree, int(s.budget.maxMsgs.Load())/len(s.parts))
	for j, w := range l.writers {
		s.parts[j] = newPartition(j, s, w, maxFree)
		if j < len(gates) {
			s.parts[j].gate = gates[j]
		}
	}
	s.disp = newDispatcher(s)
	if p.cfg.transactions {
		s.pool = &txnPool{size: p.cfg.txnPrebegin}
	}
	return s
}
