package consumer_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/consumer"
	"github.com/keyroute/keyroute/router"
)

// The reader's side of router/HANDOVER.md, section 6, with messages
// written by hand as a keyroute producer writes them.

const pid = 0x1b2c3d4e5f607182

// pushProps queues a message with key, value and props on partition part
// and returns its position.
func (s *fakeStream) pushProps(part int32, key, value string, props map[string]string) router.Position {
	cm := s.msg(part, key)
	fm := cm.Message.(*fakeMsg)
	fm.value, fm.props = []byte(value), props
	s.ch <- cm
	return router.Position{Ledger: 1, Entry: fm.id.entry, Batch: -1}
}

// pushMarker queues a marker of producer id and epoch on partition part.
func (s *fakeStream) pushMarker(part int32, id, epoch uint64) router.Position {
	return s.pushProps(part, "", "", router.Marker{Producer: id, Epoch: epoch, Moved: 1}.Properties())
}

// pushMoved queues a moved message of producer id placed under epoch,
// owing from.
func (s *fakeStream) pushMoved(part int32, key, value string, id, epoch uint64, from ...router.Origin) router.Position {
	props := map[string]string{"app": "x"}
	router.Tag{Producer: id, Epoch: epoch, From: from}.AddTo(props)
	return s.pushProps(part, key, value, props)
}

// at returns the position the message ahead messages after the next one
// of partition part will have.
func (s *fakeStream) at(part int32, ahead int64) router.Position {
	s.mu.Lock()
	defer s.mu.Unlock()
	return router.Position{Ledger: 1, Entry: s.next[part] + ahead, Batch: -1}
}

// skip moves partition part's next entry on by n (messages read elsewhere).
func (s *fakeStream) skip(part int32, n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next[part] += n
}

func origin(cluster string, part int32, pos router.Position) router.Origin {
	return router.Origin{Cluster: cluster, Partition: part, Pos: pos}
}

// recv takes n messages and returns their values; a message that never
// comes fails the test (the ctx guards against a hang, it is no bound).
func recv(t *testing.T, c *consumer.Consumer, n int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out []string
	for range n {
		m, err := c.Receive(ctx)
		require.NoError(t, err, "after %q", out)
		out = append(out, string(m.Value))
	}
	return out
}

// none checks that nothing can be delivered now: a Receive whose ctx has
// ended takes what is there, and returns the ctx's error when nothing is.
func none(t *testing.T, c *consumer.Consumer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	m, err := c.Receive(ctx)
	if err == nil {
		t.Fatalf("delivered %q (%s), want nothing", m.Value, m.ID)
	}
	require.ErrorIs(t, err, context.Canceled)
}

func health(c *consumer.Consumer, cluster string) consumer.ClusterHealth {
	for _, h := range c.Health(context.Background()) {
		if h.Cluster == cluster {
			return h
		}
	}
	panic(cluster)
}

// otherSlot returns a key whose slot differs from key's.
func otherSlot(key string) string {
	for i := 0; ; i++ {
		o := fmt.Sprint("o", i)
		if router.Slot(router.Hash(o)) != router.Slot(router.Hash(key)) {
			return o
		}
	}
}

// sameSlot returns a key other than key in key's slot.
func sameSlot(key string) string {
	want := router.Slot(router.Hash(key))
	for i := 0; ; i++ {
		o := fmt.Sprint("s", i)
		if router.Slot(router.Hash(o)) == want && o != key {
			return o
		}
	}
}

// events records an Observer's hand-over events.
type events struct {
	mu  sync.Mutex
	evs []consumer.HandoverEvent
}

func (e *events) OnReceive(*consumer.Message) {}
func (e *events) OnAck(consumer.ID, error)    {}
func (e *events) OnNack(consumer.ID)          {}
func (e *events) OnHandover(ev consumer.HandoverEvent) {
	e.mu.Lock()
	e.evs = append(e.evs, ev)
	e.mu.Unlock()
}

// all returns the events but HandoverReleased (see released).
func (e *events) all() []consumer.HandoverEvent {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.DeleteFunc(slices.Clone(e.evs), func(ev consumer.HandoverEvent) bool { return ev.Kind == consumer.HandoverReleased })
}

// released returns the HandoverReleased events.
func (e *events) released() []consumer.HandoverEvent {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.DeleteFunc(slices.Clone(e.evs), func(ev consumer.HandoverEvent) bool { return ev.Kind != consumer.HandoverReleased })
}

// A moved message read before its origin's marker is held, and delivered
// after the key's earlier message on the old owner; the marker is never
// delivered, and is acknowledged.
func TestHoldMovedUntilItsMarker(t *testing.T) {
	bed := newFakeBed(16)
	c := newConsumer(t, bed, 2)
	s1, s2 := bed.stream("c1"), bed.stream("c2")
	mpos := s1.at(0, 1) // after one old message
	s2.pushMoved(0, "k", "new", pid, 1, origin("c1", 0, mpos))
	none(t, c)
	assert.Equal(t, int64(1), health(c, "c2").Held)

	s1.push(0, "k", "old")
	require.Equal(t, mpos, s1.pushMarker(0, pid, 1))
	assert.Equal(t, []string{"old", "new"}, recv(t, c, 2))
	none(t, c)

	h1, h2 := health(c, "c1"), health(c, "c2")
	assert.Equal(t, uint64(1), h1.Delivered, "the marker is not delivered")
	assert.Equal(t, uint64(1), h1.Markers)
	assert.Equal(t, []string{fmt.Sprintf("ack 0:%d", mpos.Entry)}, s1.log(), "the marker is acknowledged, once")
	assert.Equal(t, int64(0), h2.Held)
	assert.Equal(t, uint64(1), h2.HeldTotal)
	assert.Zero(t, h2.ForcedReleases)
}

// A hold that ends as planned is reported once per release: the messages
// its queue delivered, and how long the first was held.
func TestHoldReleasedIsReported(t *testing.T) {
	bed := newFakeBed(16)
	ev := &events{}
	c := newConsumer(t, bed, 2, consumer.Observe(ev))
	s1, s2 := bed.stream("c1"), bed.stream("c2")
	mpos := s1.at(0, 0)
	s2.pushMoved(0, "k", "new", pid, 1, origin("c1", 0, mpos))
	s2.push(0, "k", "newer")
	none(t, c)
	assert.Empty(t, ev.released())
	s1.pushMarker(0, pid, 1)
	assert.Equal(t, []string{"new", "newer"}, recv(t, c, 2))
	rel := ev.released()
	require.Len(t, rel, 1)
	assert.Equal(t, consumer.HandoverReleased, rel[0].Kind)
	assert.Equal(t, "c2", rel[0].Cluster)
	assert.Equal(t, 2, rel[0].Messages)
	assert.Equal(t, uint64(pid), rel[0].Producer)
	assert.Positive(t, rel[0].Held)
	assert.LessOrEqual(t, rel[0].Held, health(c, "c2").HoldTime, "the first held is the longest")
	assert.Empty(t, ev.all(), "nothing else")
}

// The frontier passes an origin without its marker: any message of the
// origin's partition at or after the marker's position, everything before
// it delivered, releases the hold (the marker went to another KeyShared
// consumer, or was acknowledged before a restart). Messages before it,
// and messages of other partitions, do not.
func TestHoldReleasedByALaterMessageOfTheOrigin(t *testing.T) {
	bed := newFakeBed(16)
	c := newConsumer(t, bed, 2, consumer.Type(consumer.KeyShared))
	s1, s2 := bed.stream("c1"), bed.stream("c2")
	s1.skip(0, 3)
	mpos := s1.at(0, 1) // entry 4
	s2.pushMoved(0, "k", "new", pid, 1, origin("c1", 0, mpos))
	none(t, c)
	s1.push(0, "x", "before") // entry 3
	s1.push(1, "y", "other partition")
	assert.ElementsMatch(t, []string{"before", "other partition"}, recv(t, c, 2))
	none(t, c)
	s1.skip(0, 1)            // the marker, entry 4, read elsewhere
	s1.push(0, "z", "after") // entry 5
	assert.Equal(t, []string{"after", "new"}, recv(t, c, 2))
	assert.Empty(t, s1.log(), "no marker here to acknowledge")
}

// Only the moved message's slot on its partition is held: other slots of
// the partition, and its slot on other partitions, flow; later messages
// of the slot on the partition queue behind it, whoever wrote them, and
// come out in receipt order.
func TestHoldQueuesOnlyItsSlotOnItsPartition(t *testing.T) {
	bed := newFakeBed(32)
	c := newConsumer(t, bed, 2)
	s1, s2 := bed.stream("c1"), bed.stream("c2")
	other, mate := otherSlot("k"), sameSlot("k")
	mpos := s1.at(0, 0)
	s2.pushMoved(0, "k", "m1", pid, 1, origin("c1", 0, mpos))
	s2.push(0, "k", "k2")
	s2.push(0, other, "other slot")
	s2.push(1, "k", "other partition")
	s2.push(0, mate, "mate") // the same slot, another key
	s2.pushMoved(0, "k", "m3", pid, 1, origin("c1", 0, mpos))
	assert.ElementsMatch(t, []string{"other slot", "other partition"}, recv(t, c, 2))
	none(t, c)
	assert.Equal(t, int64(4), health(c, "c2").Held)
	s1.pushMarker(0, pid, 1)
	assert.Equal(t, []string{"m1", "k2", "mate", "m3"}, recv(t, c, 4))
	none(t, c)
}

// A moved message owes every origin it lists (HANDOVER.md, section 5.4):
// one passed is not enough.
func TestHoldWaitsForEveryOrigin(t *testing.T) {
	bed := newFakeBed(16)
	c := newConsumer(t, bed, 3)
	s1, s2, s3 := bed.stream("c1"), bed.stream("c2"), bed.stream("c3")
	p1, p2 := s1.at(0, 1), s2.at(0, 1)
	s3.pushMoved(0, "k", "epoch 2", pid, 2, origin("c1", 0, p1), origin("c2", 0, p2))
	none(t, c)
	s2.push(0, "k", "epoch 1")
	s2.pushMarker(0, pid, 2)
	assert.Equal(t, []string{"epoch 1"}, recv(t, c, 1))
	none(t, c)
	s1.push(0, "k", "epoch 0")
	s1.pushMarker(0, pid, 1)
	assert.Equal(t, []string{"epoch 0", "epoch 2"}, recv(t, c, 2))
}

// A slot that moves A -> B -> A keeps its order (HANDOVER.md, section
// 7.5): B's epoch 1 messages wait for A's marker 1, and A's epoch 2
// messages for B's marker 2, which passes only once B's held messages
// are delivered.
func TestHoldMovesThereAndBack(t *testing.T) {
	bed := newFakeBed(16)
	c := newConsumer(t, bed, 2)
	a, b := bed.stream("c1"), bed.stream("c2")
	other := otherSlot("k")
	m1 := a.at(0, 1)
	b.pushMoved(0, "k", "b1", pid, 1, origin("c1", 0, m1))
	m2 := b.pushMarker(0, pid, 2)
	b.push(0, other, "z")
	assert.Equal(t, []string{"z"}, recv(t, c, 1), "b1 held, the marker taken")
	assert.Empty(t, b.log(), "marker 2 is behind the held b1: not within the frontier")

	a.push(0, "k", "a0")
	a.pushMarker(0, pid, 1)
	a.pushMoved(0, "k", "a2", pid, 2, origin("c2", 0, m2))
	assert.Equal(t, []string{"a0", "b1", "a2"}, recv(t, c, 3))
	assert.Contains(t, b.log(), fmt.Sprintf("ack 0:%d", m2.Entry), "marker 2 acknowledged once b1 was delivered")
}

// A hold older than HoldTimeout is released at the monitor's check (a
// clock stands in for time): its queue comes in order, a Receive waiting
// on empty clusters wakes for it, and the release is reported naming the
// cluster, partition, slot, producer, epoch and origin. A later message
// owing that origin is not held again.
func TestHoldTimeoutReleasesAndReports(t *testing.T) {
	obs := &events{}
	bed := newFakeBed(16)
	c := newConsumer(t, bed, 2, consumer.HoldTimeout(time.Minute), consumer.Observe(obs))
	var now atomic.Int64
	now.Store(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	consumer.SetHoldClock(c, func() time.Time { return time.Unix(0, now.Load()) })
	s2 := bed.stream("c2")
	o := origin("c1", 0, router.Position{Ledger: 1, Entry: 7, Batch: -1})
	s2.pushMoved(2, "k", "m1", pid, 3, o)
	s2.push(2, "k", "k2")
	none(t, c)

	got := make(chan []string, 1)
	go func() {
		ms, err := c.ReceiveBatch(context.Background(), 10)
		assert.NoError(t, err)
		var vs []string
		for _, m := range ms {
			vs = append(vs, string(m.Value))
		}
		got <- vs
	}()
	now.Add(int64(59 * time.Second))
	consumer.HoldTick(c)
	assert.Equal(t, int64(2), health(c, "c2").Held, "not yet")
	now.Add(int64(time.Second))
	consumer.HoldTick(c)
	assert.Equal(t, []string{"m1", "k2"}, <-got)

	h := health(c, "c2")
	assert.Equal(t, uint64(2), h.ForcedReleases)
	assert.Equal(t, int64(0), h.Held)
	assert.Equal(t, 2*time.Minute, h.HoldTime, "two messages held a minute each")
	evs := obs.all()
	require.Len(t, evs, 1)
	assert.Equal(t, consumer.HandoverEvent{Kind: consumer.HandoverTimeout, Cluster: "c2", Partition: 2,
		Slot: router.Slot(router.Hash("k")), Producer: pid, Epoch: 3, Origin: o, Messages: 2, Held: time.Minute}, evs[0])

	s2.pushMoved(2, "k", "m3", pid, 3, o)
	assert.Equal(t, []string{"m3"}, recv(t, c, 1), "the forced origin is not waited for again")
}

// At MaxHeld, on a subscription read through one stream per cluster
// (which cannot leave a partition unread), the origin the oldest hold
// waits for is given up: that hold comes in order, reported, and so does
// every other waiting only for that origin (HANDOVER.md, section 6.3).
func TestHoldLimitReleasesTheOldest(t *testing.T) {
	obs := &events{}
	bed := newFakeBed(16)
	c := newConsumer(t, bed, 2, consumer.MaxHeld(2), consumer.Observe(obs))
	s2 := bed.stream("c2")
	o := origin("c1", 0, router.Position{Ledger: 1, Entry: 0, Batch: -1})
	other := otherSlot("k")
	s2.pushMoved(0, "k", "k1", pid, 1, o)
	s2.push(0, "k", "k2")
	none(t, c)
	s2.pushMoved(0, other, "o1", pid, 1, o)
	assert.Equal(t, []string{"k1", "k2", "o1"}, recv(t, c, 3))
	none(t, c)
	assert.Equal(t, int64(0), health(c, "c2").Held)
	assert.Equal(t, uint64(2), health(c, "c2").ForcedReleases, "the oldest hold's")
	evs := obs.all()
	require.Len(t, evs, 1)
	assert.Equal(t, consumer.HandoverLimit, evs[0].Kind)
	assert.Equal(t, router.Slot(router.Hash("k")), evs[0].Slot)
	assert.Equal(t, o, evs[0].Origin)
	assert.Equal(t, 2, evs[0].Messages)
	assert.False(t, evs[0].OriginSeen, "nothing of c1/0 was ever read")
}

// An origin on a cluster the Consumer does not read cannot pass: the
// message is delivered at once, and reported (HANDOVER.md, section 6.4).
func TestHoldOriginOnAClusterNotRead(t *testing.T) {
	obs := &events{}
	bed := newFakeBed(16)
	c := newConsumer(t, bed, 2, consumer.Observe(obs))
	s2 := bed.stream("c2")
	o := origin("gone", 4, router.Position{Ledger: 9, Entry: 9, Batch: 2})
	s2.pushMoved(1, "k", "m", pid, 5, o)
	assert.Equal(t, []string{"m"}, recv(t, c, 1))
	assert.Equal(t, uint64(1), health(c, "c2").ForcedReleases)
	assert.Equal(t, []consumer.HandoverEvent{{Kind: consumer.HandoverUnread, Cluster: "c2", Partition: 1,
		Slot: router.Slot(router.Hash("k")), Producer: pid, Epoch: 5, Origin: o, Messages: 1}}, obs.all())
}

// keyroute-unordered messages are counted and reported; a message with
// bad hand-over properties is delivered as it is, counted and reported;
// a marker that does not parse (another version), or without
// keyroute-pid, is still a marker (HANDOVER.md, section 4): never
// delivered, acknowledged, reported.
func TestHoldUnorderedAndBadProperties(t *testing.T) {
	obs := &events{}
	bed := newFakeBed(16)
	c := newConsumer(t, bed, 1, consumer.Observe(obs))
	s1 := bed.stream("c1")
	props := map[string]string{}
	router.Tag{Producer: pid, Epoch: 2, Unordered: true}.AddTo(props)
	s1.pushProps(0, "k", "spilled", props)
	s1.pushProps(0, "k", "bad", map[string]string{router.PropProducer: "XYZ", router.PropEpoch: "1"})
	s1.pushProps(0, "", "bad marker", map[string]string{router.PropMarker: "2", router.PropProducer: "0000000000000001"})
	s1.pushProps(0, "", "marker without pid", map[string]string{router.PropMarker: "1"})
	s1.pushProps(0, "k", "after", nil)
	assert.Equal(t, []string{"spilled", "bad", "after"}, recv(t, c, 3))
	h := health(c, "c1")
	assert.Equal(t, uint64(1), h.Unordered)
	assert.Equal(t, uint64(3), h.BadHandover)
	assert.Equal(t, uint64(2), h.Markers)
	assert.Equal(t, []string{"ack 0:2", "ack 0:3"}, s1.log(), "the markers acknowledged")
	evs := obs.all()
	require.Len(t, evs, 4)
	assert.Equal(t, consumer.HandoverUnordered, evs[0].Kind)
	assert.Equal(t, uint64(pid), evs[0].Producer)
	for _, ev := range evs[1:] {
		assert.Equal(t, consumer.HandoverBad, ev.Kind)
		assert.ErrorIs(t, ev.Err, router.ErrBadHandover)
	}
}

// A Shared subscription holds nothing; it still takes markers (never
// delivered) and acknowledges them at once.
func TestHoldSharedHoldsNothing(t *testing.T) {
	bed := newFakeBed(16)
	c := newConsumer(t, bed, 2, consumer.Type(consumer.Shared))
	s1, s2 := bed.stream("c1"), bed.stream("c2")
	s2.pushMoved(0, "k", "new", pid, 1, origin("c1", 0, s1.at(0, 0)))
	assert.Equal(t, []string{"new"}, recv(t, c, 1))
	mp := s1.pushMarker(0, pid, 1)
	s1.push(0, "k", "after")
	assert.Equal(t, []string{"after"}, recv(t, c, 1))
	assert.Equal(t, []string{fmt.Sprintf("ack 0:%d", mp.Entry)}, s1.log())
	assert.Zero(t, health(c, "c2").HeldTotal)
}

// Holds live in memory (HANDOVER.md, section 7.4): a held message is
// never acknowledged, and neither is the marker it waits behind; after a
// restart both come again and the rule applies again.
func TestHoldRestartHoldsAgain(t *testing.T) {
	bed := newFakeBed(16)
	c, err := consumer.New(context.Background(), topo(2), consumer.Topic("t"), consumer.Subscription("s"), consumer.WithConnector(bed.connect))
	require.NoError(t, err)
	s1, s2 := bed.stream("c1"), bed.stream("c2")
	mpos := s1.at(0, 0)
	s2.pushMoved(0, "k", "new", pid, 1, origin("c1", 0, mpos))
	s2.push(0, "k", "newer")
	none(t, c)
	require.NoError(t, c.Close(context.Background()))
	assert.Empty(t, s2.log(), "nothing held was acknowledged")

	// The subscription gives the unacknowledged messages again.
	c = newConsumer(t, bed, 2)
	s1, s2 = bed.stream("c1"), bed.stream("c2")
	s2.pushMoved(0, "k", "new", pid, 1, origin("c1", 0, mpos))
	s2.push(0, "k", "newer")
	none(t, c)
	s1.push(0, "k", "old") // entry 0 again: the marker is entry 1 now
	s1.pushMarker(0, pid, 1)
	assert.Equal(t, []string{"old", "new", "newer"}, recv(t, c, 3))
}

// ReceiveInto hands released messages over in order with the others, and
// allocates nothing for messages that carry application properties only.
func TestHoldReceiveIntoAndTheSteadyPath(t *testing.T) {
	ctx := context.Background()
	bed := newFakeBed(4096)
	c := newConsumer(t, bed, 2)
	s1, s2 := bed.stream("c1"), bed.stream("c2")
	s2.pushMoved(0, "k", "m1", pid, 1, origin("c1", 0, s1.at(0, 0)))
	s2.push(0, "k", "m2")
	s1.pushMarker(0, pid, 1)
	buf := make([]consumer.Message, 8)
	var got []string
	for len(got) < 2 {
		n, err := c.ReceiveInto(ctx, buf)
		require.NoError(t, err)
		for _, m := range buf[:n] {
			got = append(got, string(m.Value))
		}
	}
	assert.Equal(t, []string{"m1", "m2"}, got)

	props := map[string]string{"trace": "abc", "tenant": "t1"}
	for _, s := range []*fakeStream{s1, s2} {
		s.quiet = true
		for range 1200 {
			s.pushProps(int32(len(s.ch)%3), "k", "v", props)
		}
	}
	allocs := testing.AllocsPerRun(100, func() {
		n, err := c.ReceiveInto(ctx, buf)
		if err != nil || n < 1 {
			panic(fmt.Sprint(n, err))
		}
		for i := range buf[:n] {
			if err := c.Ack(ctx, &buf[i]); err != nil {
				panic(err)
			}
		}
	})
	assert.Zero(t, allocs)
}

// A seek forgets the holds: what was held comes again from the new
// position.
func TestHoldSeekForgetsHolds(t *testing.T) {
	bed := newFakeBed(16)
	c := newConsumer(t, bed, 2)
	s1, s2 := bed.stream("c1"), bed.stream("c2")
	s2.pushMoved(0, "k", "held", pid, 1, origin("c1", 0, s1.at(0, 0)))
	none(t, c)
	require.NoError(t, c.SeekByTime(context.Background(), time.Now()))
	assert.Equal(t, int64(0), health(c, "c2").Held)
	s2.push(0, "k", "after seek")
	assert.Equal(t, []string{"after seek"}, recv(t, c, 1), "no queue left for the slot")
}

// The frontier word orders positions of one base as Position.Compare
// does, and keeps them exactly; a position too far from the base does
// not pack.
func TestHoldFrontierWord(t *testing.T) {
	const base = 1 << 40
	ps := []router.Position{{Ledger: base, Entry: 0, Batch: -1}, {Ledger: base, Entry: 0, Batch: 0}, {Ledger: base, Entry: 1, Batch: -1},
		{Ledger: base + 1, Entry: 0, Batch: 16382}, {Ledger: base + 1, Entry: 1<<41 - 1, Batch: 5}, {Ledger: base + 255, Entry: 0, Batch: -1}}
	for i, p := range ps {
		v, ok := consumer.Pack(p.Ledger-base, p.Entry, p.Batch)
		require.True(t, ok, p)
		assert.Equal(t, p, consumer.Unpack(v, base))
		for _, q := range ps[:i] {
			w, _ := consumer.Pack(q.Ledger-base, q.Entry, q.Batch)
			assert.Less(t, w, v, "%v before %v", q, p)
		}
	}
	for _, p := range []router.Position{{Ledger: 256}, {Entry: 1 << 41}, {Batch: 16383}, {Ledger: -1}, {Batch: -2}} {
		_, ok := consumer.Pack(p.Ledger, p.Entry, p.Batch)
		assert.False(t, ok, p)
	}
}

// idAt is a fake message id at any position.
type idAt struct {
	fakeID
	pos router.Position
}

func (i idAt) LedgerID() int64 { return i.pos.Ledger }
func (i idAt) EntryID() int64  { return i.pos.Entry }
func (i idAt) BatchIdx() int32 { return i.pos.Batch }

type msgAt struct {
	fakeMsg
	at idAt
}

func (m *msgAt) ID() pulsar.MessageID { return &m.at }

// pushAt queues a message at pos on partition part.
func (s *fakeStream) pushAt(part int32, pos router.Position, key, value string, props map[string]string) {
	s.ch <- pulsar.ConsumerMessage{Message: &msgAt{fakeMsg: fakeMsg{key: key, value: []byte(value), props: props, publish: time.Now()},
		at: idAt{fakeID: fakeID{part: part}, pos: pos}}}
}

// Frontiers follow a partition across ledgers far apart (ledger ids are
// drawn cluster-wide), entries and batch indexes beyond the packed word's
// range, and ignore a redelivery below them.
func TestHoldFrontierAcrossLedgers(t *testing.T) {
	bed := newFakeBed(32)
	c := newConsumer(t, bed, 2)
	s1, s2 := bed.stream("c1"), bed.stream("c2")
	other := otherSlot("k")
	for i, o := range []router.Position{{Ledger: 9_000_001, Entry: 3, Batch: 2}, {Ledger: 9_000_002, Entry: 1 << 45, Batch: -1}, {Ledger: 9_000_003, Entry: 0, Batch: 20000}} {
		s1.pushAt(0, router.Position{Ledger: 4_000_000, Entry: 7, Batch: -1}, other, "old", nil)
		s2.pushMoved(0, "k", fmt.Sprint("moved", i), pid, 1, origin("c1", 0, o))
		assert.Equal(t, []string{"old"}, recv(t, c, 1), "moved %d held", i)
		none(t, c)
		before := router.Position{Ledger: o.Ledger, Entry: o.Entry, Batch: o.Batch - 1}
		if o.Batch == -1 {
			before = router.Position{Ledger: o.Ledger, Entry: o.Entry - 1, Batch: -1}
		}
		s1.pushAt(0, before, other, "just before", nil)
		assert.Equal(t, []string{"just before"}, recv(t, c, 1))
		none(t, c)
		s1.pushAt(0, o, other, "at", nil)
		assert.Equal(t, []string{"at", fmt.Sprint("moved", i)}, recv(t, c, 2))
	}
}

// BenchmarkReceiveIntoQueued measures the Consumer's own CPU per message with
// nothing else running: rounds of messages already in the fake streams of
// n clusters (queued with the timer stopped, each at a new position, so
// that each moves its partition's frontier),
// taken with ReceiveInto and acknowledged. "props" messages carry two
// application properties, which the hand-over's check looks into.
func BenchmarkReceiveIntoQueued(b *testing.B) {
	for _, n := range []int{1, 5} {
		for _, withProps := range []bool{false, true} {
			name := clusters(n)
			if withProps {
				name += "/props"
			}
			b.Run(name, func(b *testing.B) {
				ctx := context.Background()
				const round = 4096
				bed := newFakeBed(round)
				c, err := consumer.New(ctx, topo(n), consumer.Topic("t"), consumer.Subscription("s"), consumer.WithConnector(bed.connect))
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close(ctx)
				var props map[string]string
				if withProps {
					props = map[string]string{"trace": "abc", "tenant": "t1"}
				}
				streams := make([]*fakeStream, n)
				for i, cl := range topo(n).Clusters {
					streams[i] = bed.stream(cl.Name)
					streams[i].quiet = true
				}
				msgs := make([]*fakeMsg, round)
				for i := range msgs {
					msgs[i] = &fakeMsg{id: fakeID{part: int32(i / n % 4)}, key: "k", value: []byte("v"), props: props}
				}
				buf := make([]consumer.Message, 64)
				entry := int64(0)
				b.ReportAllocs()
				b.ResetTimer()
				for left := b.N; left > 0; {
					b.StopTimer()
					k := min(left, round)
					for i, m := range msgs[:k] {
						entry++
						m.id.entry = entry
						streams[i%n].ch <- pulsar.ConsumerMessage{Message: m}
					}
					b.StartTimer()
					for got := 0; got < k; {
						nn, err := c.ReceiveInto(ctx, buf)
						if err != nil {
							b.Fatal(err)
						}
						for i := range buf[:nn] {
							if err := c.Ack(ctx, &buf[i]); err != nil {
								b.Fatal(err)
							}
						}
						got += nn
					}
					left -= k
				}
			})
		}
	}
}

// Chan follows the rule too, and a wait on more than four clusters (a
// reflect.Select) wakes for messages a hold timeout released.
func TestHoldChanAndManyClusters(t *testing.T) {
	bed := newFakeBed(16)
	c := newConsumer(t, bed, 6, consumer.HoldTimeout(time.Second))
	var now atomic.Int64
	consumer.SetHoldClock(c, func() time.Time { return time.Unix(0, now.Load()) })
	s1, s6 := bed.stream("c1"), bed.stream("c6")
	s6.pushMoved(0, "k", "new", pid, 1, origin("c1", 0, s1.at(0, 1)))
	s1.push(0, "k", "old")
	s1.pushMarker(0, pid, 1)
	ch := c.Chan()
	assert.Equal(t, "old", string((<-ch).Value))
	assert.Equal(t, "new", string((<-ch).Value))

	s6.pushMoved(3, "k", "late", pid, 2, origin("c1", 0, s1.at(0, 5)))
	got := make(chan string, 1)
	go func() { got <- string((<-ch).Value) }()
	for health(c, "c6").Held == 0 { // Chan's goroutine takes it
		runtime.Gosched()
	}
	now.Add(int64(time.Second))
	consumer.HoldTick(c)
	assert.Equal(t, "late", <-got)
	assert.Equal(t, uint64(1), health(c, "c6").ForcedReleases)
}

// The bounds must bound: New refuses a HoldTimeout or MaxHeld that
// would not, naming the option.
func TestHoldBadBounds(t *testing.T) {
	for _, o := range []struct {
		name string
		opt  consumer.Opt
	}{{"HoldTimeout", consumer.HoldTimeout(0)}, {"MaxHeld", consumer.MaxHeld(0)}} {
		_, err := consumer.New(context.Background(), topo(1), consumer.Topic("t"), consumer.Subscription("s"),
			consumer.WithConnector(newFakeBed(1).connect), o.opt)
		require.ErrorIs(t, err, consumer.ErrBadOption)
		assert.Contains(t, err.Error(), o.name)
	}
}

// Frontiers survive their table's growth: partitions first seen later
// make it grow, and an origin on any partition still passes.
func TestHoldFrontierTableGrows(t *testing.T) {
	bed := newFakeBed(64)
	c := newConsumer(t, bed, 2)
	s1, s2 := bed.stream("c1"), bed.stream("c2")
	other := otherSlot("k")
	for p := range int32(40) {
		s1.push(p, other, fmt.Sprint("p", p))
	}
	assert.Len(t, recv(t, c, 40), 40)
	for _, p := range []int32{3, 17, 39} {
		s2.pushMoved(0, "k", fmt.Sprint("moved", p), pid, 1, origin("c1", p, s1.at(p, 0)))
		none(t, c)
		s1.push(p, other, fmt.Sprint("again", p))
		assert.Equal(t, []string{fmt.Sprint("again", p), fmt.Sprint("moved", p)}, recv(t, c, 2))
	}
}

// A cluster a drain read to the end (its backlog empty once producers
// left it) holds nobody: every origin there has passed, so what waits on
// it goes on unreported, and so does a moved message that names it later.
func TestHoldForgetFinishedCluster(t *testing.T) {
	obs := &events{}
	bed := newFakeBed(16)
	c := newConsumer(t, bed, 2, consumer.Observe(obs))
	s1, s2 := bed.stream("c1"), bed.stream("c2")
	o1 := origin("c1", 0, s1.at(0, 0))
	s2.pushMoved(0, "k", "waits on c1", pid, 1, o1)
	none(t, c)
	consumer.ForgetCluster(c, "c1", true)
	assert.Equal(t, []string{"waits on c1"}, recv(t, c, 1))
	s2.pushMoved(1, "j", "names c1 later", pid, 1, origin("c1", 1, s1.at(1, 0)))
	assert.Equal(t, []string{"names c1 later"}, recv(t, c, 1))
	assert.Empty(t, obs.all(), "nothing forced")
	for _, h := range c.Health(context.Background()) {
		assert.Zero(t, h.ForcedReleases, h.Cluster)
	}
}

// A cluster the Consumer stops reading ends the holds it takes part in:
// queues waiting on it, and queues of its own messages, are delivered in
// order and reported; others wait on.
func TestHoldForgetCluster(t *testing.T) {
	obs := &events{}
	bed := newFakeBed(16)
	c := newConsumer(t, bed, 3, consumer.Observe(obs))
	s1, s2, s3 := bed.stream("c1"), bed.stream("c2"), bed.stream("c3")
	other := otherSlot("k")
	o1 := origin("c1", 0, s1.at(0, 0))
	s2.pushMoved(0, "k", "waits on c1", pid, 1, o1)
	s1.pushMoved(1, other, "on c1", pid, 1, origin("c3", 0, s3.at(0, 0)))
	s2.pushMoved(0, other, "waits on c3", pid, 1, origin("c3", 0, s3.at(0, 0)))
	none(t, c)
	consumer.ForgetCluster(c, "c1", false)
	assert.ElementsMatch(t, []string{"waits on c1", "on c1"}, recv(t, c, 2))
	none(t, c)
	evs := obs.all()
	require.Len(t, evs, 2)
	var origins []router.Origin
	for _, ev := range evs {
		assert.Equal(t, consumer.HandoverUnread, ev.Kind)
		origins = append(origins, ev.Origin)
	}
	assert.Contains(t, origins, o1)
	s3.push(0, "x", "c3")
	assert.Equal(t, []string{"c3", "waits on c3"}, recv(t, c, 2))
}
