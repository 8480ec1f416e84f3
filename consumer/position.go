package consumer

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/keyroute/keyroute/router"
	"github.com/keyroute/keyroute/topology"
)

// Positions. A message's position is its ID: the cluster it was read from
// and its Pulsar message ID there (which holds the partition). A reader
// that saves, per cluster and partition, the ID of the last message it
// processed resumes just after each: StartAfter at New, SeekByID on a
// running Consumer.
//
// Both move the subscription's cursor over the cluster's admin API, one
// partition at a time (POST .../resetcursor, excluded, with the batch
// index), while no consumer of this Consumer is attached there:
// pulsar-client-go v0.21.0 cannot seek a consumer of a partitioned topic
// by message ID (Consumer.Seek refuses more than one partition), and a
// cursor reset under an attached consumer disconnects it, after which
// pulsar-client-go may still hand out messages it had queued from before
// the reset. So StartAfter positions a cluster before its first
// subscription, and SeekByID closes the cluster's subscription, moves the
// cursors, and subscribes again. The fakes of package consumertest move
// their own cursors, in place of the admin API (see positionerFor).

// ParseID reads back the text of an ID (ID.String, MarshalText):
// "cluster/partition/ledger:entry:batch", after "topic " when the ID has
// a Topic. The ID it returns is a position (for StartAfter and SeekByID),
// not one to acknowledge. A text that does not parse is an
// ErrBadPosition.
func ParseID(text string) (ID, error) {
	bad := func() (ID, error) {
		return ID{}, fmt.Errorf("%w: %q is not [topic ]cluster/partition/ledger:entry:batch", ErrBadPosition, text)
	}
	topic, s, spaced := strings.Cut(text, " ")
	if !spaced {
		topic, s = "", text
	} else if topic == "" {
		return bad()
	}
	i := strings.LastIndexByte(s, '/')
	if i < 0 {
		return bad()
	}
	j := strings.LastIndexByte(s[:i], '/')
	if j <= 0 {
		return bad()
	}
	part, err := strconv.ParseInt(s[j+1:i], 10, 32)
	f := strings.Split(s[i+1:], ":")
	if err != nil || len(f) != 3 {
		return bad()
	}
	ledger, err1 := strconv.ParseInt(f[0], 10, 64)
	entry, err2 := strconv.ParseInt(f[1], 10, 64)
	batch, err3 := strconv.ParseInt(f[2], 10, 32)
	if err1 != nil || err2 != nil || err3 != nil {
		return bad()
	}
	return ID{Topic: topic, Cluster: s[:j], Partition: int(part), Pulsar: pulsar.NewMessageID(ledger, entry, int32(batch), int32(part))}, nil
}

// MarshalText returns ID.String, which ParseID reads back; an ID without
// a Pulsar message ID is an ErrBadPosition.
func (id ID) MarshalText() ([]byte, error) {
	if id.Pulsar == nil {
		return nil, fmt.Errorf("%w: %s has no Pulsar message ID", ErrBadPosition, id)
	}
	return []byte(id.String()), nil
}

// UnmarshalText sets id from the text ParseID reads.
func (id *ID) UnmarshalText(b []byte) error {
	v, err := ParseID(string(b))
	if err != nil {
		return err
	}
	*id = v
	return nil
}

// byCluster groups positions by cluster, in the order their clusters
// first come; it refuses an ID without a Pulsar ID, one whose Partition
// is not its Pulsar ID's, and two IDs of one partition.
func byCluster(ids []ID) (names []string, by map[string][]ID, err error) {
	by = map[string][]ID{}
	for _, id := range ids {
		switch {
		case id.Pulsar == nil:
			return nil, nil, fmt.Errorf("%w: %s has no Pulsar message ID", ErrBadPosition, id)
		case int32(id.Partition) != id.Pulsar.PartitionIdx() && id.Pulsar.PartitionIdx() != 0: // a partition's own consumer numbers it 0
			return nil, nil, fmt.Errorf("%w: %s: Partition %d, but its Pulsar ID is of partition %d", ErrBadPosition, id, id.Partition, id.Pulsar.PartitionIdx())
		}
		for _, o := range by[id.Cluster] {
			if o.Partition == id.Partition {
				return nil, nil, fmt.Errorf("%w: %s and %s: two positions for one partition", ErrBadPosition, o, id)
			}
		}
		if by[id.Cluster] == nil {
			names = append(names, id.Cluster)
		}
		by[id.Cluster] = append(by[id.Cluster], id)
	}
	return names, by, nil
}

// positioner moves a subscription's cursors on one cluster: its admin
// API (*admin), or a fake's Position (hook.go).
type positioner interface {
	partitions(ctx context.Context, topic string) (int, error)
	resetAfter(ctx context.Context, topic, sub string, parts int, id ID) error
}

// fakePositions is a connector of fakes that position their own
// subscriptions (hook.go).
type fakePositions interface {
	positioner(cluster string) positioner // nil: none
}

// positionerFor returns what moves the subscription's cursors on the
// named cluster, whose admin API is a (nil: none): the connector's fake
// when it has one, else a; nil when neither exists (ErrNoAdmin).
func (c *cfg) positionerFor(cluster string, a *admin) positioner {
	if f, ok := c.connect.(fakePositions); ok {
		if p := f.positioner(cluster); p != nil {
			return p
		}
	}
	if a == nil {
		return nil // not a non-nil interface holding a nil *admin
	}
	return a
}

// partsFor returns how many partitions topic has on a's cluster (0: not
// partitioned) after checking that every one of ids is a partition
// there.
func partsFor(ctx context.Context, a positioner, topic string, ids []ID) (int, error) {
	n, err := a.partitions(ctx, topic)
	if err != nil {
		return 0, err
	}
	for _, id := range ids {
		if (n > 0 && (id.Partition < 0 || id.Partition >= n)) || (n == 0 && id.Partition > 0) {
			return 0, fmt.Errorf("%w: partition %d: %q has %d partitions there", ErrBadPosition, id.Partition, topic, n)
		}
	}
	return n, nil
}

// moveAfter moves the subscription on the partition of each of ids just
// after it, and returns those moved; the error names each partition not
// moved.
func moveAfter(ctx context.Context, a positioner, c *cfg, parts int, ids []ID) (moved []ID, err error) {
	var errs []error
	for _, id := range ids {
		if err := a.resetAfter(ctx, c.topic, c.subscription, parts, id); err != nil {
			errs = append(errs, fmt.Errorf("partition %d not moved: %w", id.Partition, err))
			continue
		}
		moved = append(moved, id)
	}
	return moved, errors.Join(errs...)
}

// startAt checks StartAfter's positions against topo, and has the
// connector position each cluster they name before its first
// subscription (see startConnector).
func (c *cfg) startAt(topo *topology.Topology) error {
	if len(c.startAfter) == 0 {
		return nil
	}
	names, by, err := byCluster(c.startAfter)
	if err != nil {
		return fmt.Errorf("%w: StartAfter: %w", ErrBadOption, err)
	}
	var errs []error
	for _, name := range names {
		i := slices.IndexFunc(topo.Clusters, func(cl topology.Cluster) bool { return cl.Name == name })
		switch {
		case i < 0:
			errs = append(errs, clusterErr(name, "start", ErrUnknownCluster))
		case topo.Clusters[i].AdminURL == "" && c.positionerFor(name, nil) == nil:
			errs = append(errs, clusterErr(name, "start", ErrNoAdmin))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	c.connect = &startConnector{inner: c.connect, pending: by}
	return nil
}

// startConnector positions a cluster's subscription (StartAfter) before
// its first subscription there, then subscribes with inner. A cluster is
// positioned once: a later subscription (a reconnect, a join after an
// outage) resumes from the cursor. A positioning that fails is tried
// again at the cluster's next attempt; one whose admin API does not
// answer leaves the cluster down, not answering, as a subscription that
// does not answer would.
type startConnector struct {
	inner connector

	mu      sync.Mutex
	pending map[string][]ID // by cluster, until positioned
}

// positioner is inner's, so that a fake positions its clusters.
func (s *startConnector) positioner(cluster string) positioner {
	if f, ok := s.inner.(fakePositions); ok {
		return f.positioner(cluster)
	}
	return nil
}

func (s *startConnector) connect(ctx context.Context, cl topology.Cluster, sc subConfig) (*link, error) {
	s.mu.Lock()
	ids, ok := s.pending[cl.Name]
	s.mu.Unlock()
	if ok {
		if err := position(ctx, cl, sc.admin, &sc.cfg, ids); err != nil {
			return nil, clusterErr(cl.Name, "start", err)
		}
		s.mu.Lock()
		delete(s.pending, cl.Name)
		s.mu.Unlock()
	}
	return s.inner.connect(ctx, cl, sc)
}

// position moves the subscription on cl to just after each of ids over
// its admin API adm (or the connector's fake, see positionerFor), bounded
// by cl's operation timeout, and has the partitions moved inside a batch
// skip its start (see skipper).
func position(ctx context.Context, cl topology.Cluster, adm *admin, c *cfg, ids []ID) error {
	a := c.positionerFor(cl.Name, adm)
	if a == nil {
		return ErrNoAdmin
	}
	op := cl.Client.OperationTimeout
	if op <= 0 {
		op = defaultOperationTimeout
	}
	actx, cancel := context.WithTimeout(ctx, op)
	defer cancel()
	parts, err := partsFor(actx, a, c.topic, ids)
	if err != nil {
		return err
	}
	moved, err := moveAfter(actx, a, c, parts, ids)
	c.skip.expect(cl.Name, moved)
	return err
}

// The broker moves a cursor by entry: without its
// acknowledgmentAtBatchIndexLevelEnabled (off by default in Pulsar 4.0)
// a position inside a batch starts the subscription at the whole batch.
// skipper drops, on each partition so positioned, the messages of that
// batch at or before the position, and acknowledges them (they count as
// processed, as everything before a position does, and the batch is
// acknowledged only whole), until the partition's first message after
// it: takes check it before the hand-over (admit), at the cost of one
// atomic load while no partition waits.
type skipper struct {
	n  atomic.Int32 // partitions waiting
	mu sync.Mutex
	at map[skipKey]skipAt // the positions, by partition
}

func newSkipper() *skipper { return &skipper{at: map[skipKey]skipAt{}} }

type skipKey struct {
	cluster string
	part    int32
}

// skipAt is a partition's position to skip to; until, when not zero,
// ends the wait (see grow.go).
type skipAt struct {
	pos   router.Position
	until time.Time
}

// expect makes the positions of ids on cluster, those inside a batch,
// wait for their partition's first message.
func (s *skipper) expect(cluster string, ids []ID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		key := skipKey{cluster, int32(id.Partition)}
		if id.Pulsar.BatchIdx() >= 0 {
			s.set(key, skipAt{pos: router.Position{Ledger: id.Pulsar.LedgerID(), Entry: id.Pulsar.EntryID(), Batch: id.Pulsar.BatchIdx()}})
		} else {
			s.drop(key)
		}
	}
}

func (s *skipper) set(key skipKey, at skipAt) {
	if _, had := s.at[key]; !had {
		s.n.Add(1)
	}
	s.at[key] = at
}

func (s *skipper) drop(key skipKey) {
	if _, had := s.at[key]; had {
		delete(s.at, key)
		s.n.Add(-1)
	}
}

// expire ends the waits whose until has passed; the monitor calls it.
func (s *skipper) expire(now time.Time) {
	if s.n.Load() == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for key, at := range s.at {
		if !at.until.IsZero() && now.After(at.until) {
			s.drop(key)
		}
	}
}

// skipped reports whether raw, taken from p, is at or before its
// partition's position: it is then acknowledged and not delivered. The
// partition's first message past it ends the wait.
func (c *Consumer) skipped(raw pulsar.Message, p *part) bool {
	if c.retried(raw.Properties()) { // the retry topic's positions are not the topic's
		return false
	}
	s := c.cfg.skip
	id := raw.ID()
	key := skipKey{p.k.name, p.partition(raw)}
	s.mu.Lock()
	at, ok := s.at[key]
	if !ok {
		s.mu.Unlock()
		return false
	}
	if (router.Position{Ledger: id.LedgerID(), Entry: id.EntryID(), Batch: id.BatchIdx()}).Compare(at.pos) <= 0 {
		s.mu.Unlock()
		c.ackMarker(p, raw)
		return true
	}
	s.drop(key)
	s.mu.Unlock()
	return false
}

// SeekByID moves the subscription, on the cluster and partition of each
// of ids, to just after that message: the next message delivered from
// that partition is the one after it (earlier ones come again when the
// ID is behind, later ones are skipped when it is ahead). Pass the IDs
// (Message.ID, or ParseID of a saved ID.String) of the last messages
// processed to resume after them. Partitions not named keep their
// cursor.
//
// Each cluster named has its subscription closed, its cursors moved over
// its admin API, and is subscribed again, in parallel; the other clusters
// are not touched and their messages flow meanwhile. Closing a
// subscription sends its pending acknowledgements; its messages
// delivered and not acknowledged come again, also on the partitions not
// named (acknowledge what you processed before calling SeekByID, and do
// not acknowledge after it a message delivered before it: that
// acknowledgement goes to the new subscription). No message of a cluster
// named that was read before SeekByID is taken after it, but a Receive
// running across the call may return one taken before it, and so may
// the hand-over of a moved key (router/HANDOVER.md): its holds on a
// cluster named are released as on a reconnect (HandoverUnread). Any
// other consumer attached to the subscription on those partitions is
// disconnected by the broker and resumes from the new position too.
//
// Every ID is checked before anything moves: a cluster not in the
// topology (ErrUnknownCluster), one without an AdminURL (ErrNoAdmin), one
// not subscribed now (ErrConnect), a partition the topic does not have
// there or an ID that is not a position (ErrBadPosition) fail the call,
// naming the cluster (*ClusterError) and partition, and nothing moves.
// A cluster whose cursors could not all be moved (the admin API failed)
// is subscribed again all the same, and the error names each partition
// not moved; one that cannot subscribe again joins later by itself, from
// its new cursors. SeekByID waits for an Update in progress and for a
// seek in progress. ctx bounds the checks, the moves and the new
// subscriptions (each also bounded by its cluster's operation timeout);
// it returns once every cluster named is subscribed again or failed.
func (c *Consumer) SeekByID(ctx context.Context, ids ...ID) error {
	if c == nil || c.closed.Load() {
		return ErrClosed
	}
	if c.subs != nil {
		return c.seekByIDTopics(ctx, ids)
	}
	names, by, err := byCluster(ids)
	if err != nil || len(ids) == 0 {
		return err
	}
	c.updateMu.Lock()
	defer c.updateMu.Unlock()
	c.seekMu.Lock()
	defer c.seekMu.Unlock()
	moves, err := c.checkMoves(ctx, names, by)
	if err != nil {
		return err
	}
	c.mu.Lock()
	if c.closed.Load() {
		c.mu.Unlock()
		return ErrClosed
	}
	c.attempts.Add(1) // Close waits for the new subscriptions
	c.mu.Unlock()
	defer c.attempts.Done()
	release := func(mvs []*move) {
		for _, mv := range mvs {
			mv.m.trying.Store(false)
		}
	}
	for i, mv := range moves { // own the clusters' join attempts
		for !mv.m.trying.CompareAndSwap(false, true) {
			// An attempt that has just joined is ending.
			if err := ctx.Err(); err != nil {
				release(moves[:i])
				return err
			}
			runtime.Gosched()
		}
	}
	if err := c.takeOut(moves); err != nil {
		release(moves)
		return err
	}
	errs := make([]error, len(moves))
	var wg sync.WaitGroup
	for i, mv := range moves {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.reopen(ctx, mv)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// move is one cluster of a SeekByID: its positions and the
// subscription it is moved from.
type move struct {
	m   *member
	ids []ID
	k   *cluster
}

// checkMoves checks the positions of every cluster named (in names'
// order) before anything moves.
func (c *Consumer) checkMoves(ctx context.Context, names []string, by map[string][]ID) ([]*move, error) {
	set := c.set.Load()
	var moves []*move
	var errs []error
	for _, name := range names {
		i := slices.IndexFunc(set.members, func(m *member) bool { return m.name == name && !m.removed.Load() })
		if i < 0 {
			errs = append(errs, clusterErr(name, "seek", ErrUnknownCluster))
			continue
		}
		m := set.members[i]
		switch a := c.cfg.positionerFor(name, m.admin()); {
		case a == nil:
			errs = append(errs, clusterErr(name, "seek", ErrNoAdmin))
		case m.cur.Load() == nil:
			errs = append(errs, clusterErr(name, "seek", errNotConnected))
		default:
			actx, cancel := context.WithTimeout(ctx, operationTimeout(m))
			_, err := partsFor(actx, a, c.cfg.topic, by[name])
			cancel()
			if err != nil {
				errs = append(errs, clusterErr(name, "seek", err))
				continue
			}
			moves = append(moves, &move{m: m, ids: by[name]})
		}
	}
	return moves, errors.Join(errs...)
}

// takeOut takes the subscriptions of moves out of the read set, with the
// takes paused: none is in progress, so no message of theirs read before
// the seek is taken after it (Chan's goroutine drops one it holds, see
// offer); the hand-over forgets them as it does on a reconnect.
func (c *Consumer) takeOut(moves []*move) error {
	names := make(map[*member]bool, len(moves))
	for _, mv := range moves {
		names[mv.m] = true
	}
	resume := c.pauseTakes(names)
	defer resume()
	c.setMu.Lock()
	if c.joinsStopped { // Close closes the subscriptions
		c.setMu.Unlock()
		return ErrClosed
	}
	for _, mv := range moves {
		if mv.k = mv.m.cur.Swap(nil); mv.k != nil {
			mv.k.gone.Store(true)
		}
	}
	c.publish(c.set.Load().members)
	c.setMu.Unlock()
	for _, mv := range moves {
		if mv.k != nil {
			c.hold.forget(mv.k, forgetClosed)
		}
	}
	return nil
}

// reopen closes mv's old subscription, moves its cursors and subscribes
// again; the join attempt is mv's (its trying flag is released here).
func (c *Consumer) reopen(ctx context.Context, mv *move) error {
	m := mv.m
	defer m.trying.Store(false)
	if mv.k != nil {
		mv.k.close()
	}
	m.jmu.Lock()
	cl := m.cl
	m.jmu.Unlock()
	err := position(ctx, cl, m.admin(), &c.cfg, mv.ids)
	// Subscribe again even when not every cursor moved: the cluster is
	// read from where its cursors are. An attempt that fails leaves it to
	// the monitor, which subscribes it again every ProbeInterval.
	jctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(c.joinCtx, cancel) // Close
	c.joinAttempt(jctx, m)
	stop()
	cancel()
	if m.cur.Load() == nil {
		err = errors.Join(err, ErrConnect, m.lastErr())
	}
	return clusterErr(m.name, "seek", err)
}
