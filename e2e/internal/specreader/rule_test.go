package specreader

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/router"
)

type fakeID struct {
	pulsar.MessageID
	ledger, entry int64
	batch, part   int32
}

func (i fakeID) LedgerID() int64     { return i.ledger }
func (i fakeID) EntryID() int64      { return i.entry }
func (i fakeID) BatchIdx() int32     { return i.batch }
func (i fakeID) PartitionIdx() int32 { return i.part }

type fakeMsg struct {
	pulsar.Message
	id    fakeID
	key   string
	props map[string]string
}

func (m fakeMsg) ID() pulsar.MessageID          { return m.id }
func (m fakeMsg) Key() string                   { return m.key }
func (m fakeMsg) Payload() []byte               { return []byte(m.key) }
func (m fakeMsg) Properties() map[string]string { return m.props }

// timeout is a bench's HoldTimeout: its tests call tick themselves.
const timeout = time.Minute

// bench is a Reader fed by hand, with no Pulsar behind it.
type bench struct {
	r        *Reader
	got      []string // "cluster/partition/entry key"
	released []Release
	entry    map[partKey]int64
}

// stopped reports whether the reader stopped reading (cluster, partition).
func (b *bench) stopped(cluster string, partition int32) bool {
	p := b.r.parts[partKey{cluster, partition}]
	return p != nil && p.resume != nil
}

func newBench(t *testing.T, limit int, clusters ...string) *bench {
	t.Helper()
	b := &bench{entry: map[partKey]int64{}}
	b.r = &Reader{
		opts: Options{HoldTimeout: timeout, HoldLimit: limit,
			Deliver: func(d Delivery) {
				b.got = append(b.got, fmt.Sprintf("%s/%d/%d %s", d.Cluster, d.Partition, d.Pos.Entry, d.Key))
			},
			Released: func(r Release) { b.released = append(b.released, r) }},
		known: map[string]bool{}, consumers: map[partKey]pulsar.Consumer{}, parts: map[partKey]*part{},
		queues: map[queueKey]*queue{}, waiting: map[partKey][]*queue{}, progress: map[partKey]progress{},
	}
	b.r.ctx, b.r.cancel = context.WithCancel(context.Background())
	for _, c := range clusters {
		b.r.known[c] = true
	}
	return b
}

// put receives a message on (cluster, partition) at the next entry and
// returns its position.
func (b *bench) put(cluster string, partition int32, key string, props map[string]string) router.Position {
	pk := partKey{cluster, partition}
	b.entry[pk]++
	id := fakeID{ledger: 7, entry: b.entry[pk], part: partition}
	b.r.receive(pk, fakeMsg{id: id, key: key, props: props})
	return router.Position{Ledger: 7, Entry: b.entry[pk]}
}

// at is the origin at entry of (cluster, partition).
func at(cluster string, partition int32, entry int64) router.Origin {
	return router.Origin{Cluster: cluster, Partition: partition, Pos: router.Position{Ledger: 7, Entry: entry}}
}

func marker() map[string]string {
	return router.Marker{Producer: 1, Epoch: 1, Moved: 1}.Properties()
}

func moved(from ...router.Origin) map[string]string {
	p := map[string]string{}
	router.Tag{Producer: 1, Epoch: 1, From: from}.AddTo(p)
	return p
}

// otherSlot returns a key whose slot differs from key's.
func otherSlot(key string) string {
	for i := 0; ; i++ {
		k := fmt.Sprintf("other-%d", i)
		if router.Slot(router.Hash(k)) != router.Slot(router.Hash(key)) {
			return k
		}
	}
}

func TestMovedMessageWaitsForItsOrigin(t *testing.T) {
	b := newBench(t, 100, "A", "B")
	other := otherSlot("k")
	// The marker will be at A/0 entry 3: the moved message comes first.
	origin := at("A", 0, 3)
	b.put("B", 0, "k", moved(origin))
	b.put("B", 0, "k", nil)   // same slot, untagged: behind it
	b.put("B", 0, other, nil) // another slot: not held
	require.Equal(t, []string{"B/0/3 " + other}, b.got)
	require.Equal(t, 2, b.r.HeldNow())

	b.put("A", 0, "k", nil)
	b.put("A", 0, "k", nil)
	require.Len(t, b.got, 3, "the frontier of A/0 is before the marker")
	b.put("A", 0, "", marker())
	require.Equal(t, []string{"B/0/3 " + other, "A/0/1 k", "A/0/2 k", "B/0/1 k", "B/0/2 k"}, b.got)
	require.Zero(t, b.r.HeldNow())
	require.Empty(t, b.released)
	require.Equal(t, int64(1), b.r.Stats().Markers)
}

func TestFrontierPassesWithoutTheMarker(t *testing.T) {
	b := newBench(t, 100, "A", "B")
	origin := at("A", 0, 2)
	b.put("B", 0, "k", moved(origin))
	b.put("A", 0, "k", nil)
	require.Len(t, b.got, 1)
	b.put("A", 0, otherSlot("k"), nil) // entry 2: past the origin, the marker went elsewhere
	require.Equal(t, "B/0/1 k", b.got[2])
}

func TestHeldOriginHoldsTheFrontier(t *testing.T) {
	// Two changes: A -> B (epoch 1), then B -> C before B's message was
	// read. C's message waits for B's frontier, which waits for B's held
	// message, which waits for A.
	b := newBench(t, 100, "A", "B", "C")
	a := at("A", 0, 2)
	bo := at("B", 0, 2)
	b.put("C", 0, "k", moved(bo))
	b.put("B", 0, "k", moved(a))
	b.put("B", 0, "", marker())
	require.Empty(t, b.got, "B's marker is behind B's held message")
	b.put("A", 0, "k", nil)
	b.put("A", 0, "", marker())
	require.Equal(t, []string{"A/0/1 k", "B/0/1 k", "C/0/1 k"}, b.got)
}

func TestOriginOnUnknownClusterReleasesAtOnce(t *testing.T) {
	b := newBench(t, 100, "B")
	b.put("B", 0, "k", moved(router.Origin{Cluster: "gone", Partition: 1, Pos: router.Position{Ledger: 1}}))
	require.Equal(t, []string{"B/0/1 k"}, b.got)
	require.Len(t, b.released, 1)
	require.Equal(t, "unknown cluster", b.released[0].Reason)
	require.Equal(t, "gone", b.released[0].Origin.Cluster)
}

func TestHoldLimitStopsThePartitionsThatHold(t *testing.T) {
	b := newBench(t, 2, "A", "B")
	o := at("A", 0, 2)
	b.put("B", 0, "k", moved(o))
	require.False(t, b.stopped("B", 0), "under the bound")
	b.put("B", 0, "k", nil) // the bound: B/0 holds, so it is stopped
	require.True(t, b.stopped("B", 0))
	require.False(t, b.stopped("A", 0))
	b.put("B", 1, "x", nil) // B/1 holds nothing: read on
	require.False(t, b.stopped("B", 1))
	b.put("B", 1, "k", moved(o)) // over the bound: B/1 holds now
	require.True(t, b.stopped("B", 1))
	require.Equal(t, []string{"B/1/1 x"}, b.got)
	require.Empty(t, b.released, "nothing is released by force at the bound")

	b.put("A", 0, "k", nil)
	require.True(t, b.stopped("B", 0), "a partition is read again once it holds nothing")
	b.put("A", 0, "", marker())
	require.Equal(t, []string{"B/1/1 x", "A/0/1 k", "B/0/1 k", "B/0/2 k", "B/1/2 k"}, b.got)
	require.False(t, b.stopped("B", 0))
	require.False(t, b.stopped("B", 1))
	st := b.r.Stats()
	require.Zero(t, st.Forced)
	require.Equal(t, 3, st.MaxHeld)
	require.Equal(t, int64(2), st.Stops)
}

func TestReadOriginIsNeverForced(t *testing.T) {
	b := newBench(t, 100, "A", "B", "C")
	// C/0 waits on B/0, whose head waits on A/0; A/0 is read slowly, and
	// B/0 has nothing more to read: its frontier stays while it holds.
	a := at("A", 0, 10)
	bo := at("B", 0, 2)
	b.put("B", 0, "j", moved(a))
	b.put("B", 0, "", marker())
	b.put("C", 0, "j", moved(bo))
	t0 := time.Unix(0, 0)
	for i := range 9 {
		b.r.tick(t0.Add(time.Duration(i) * timeout))
		b.put("A", 0, "j", nil)
	}
	b.r.tick(t0.Add(9 * timeout))
	require.Empty(t, b.released)
	require.Len(t, b.got, 9)
	b.put("A", 0, "", marker())
	require.Equal(t, "B/0/1 j", b.got[9])
	require.Equal(t, "C/0/1 j", b.got[10])
	require.Empty(t, b.released)
	require.Zero(t, b.r.Stats().Forced)
}

func TestStoppedOriginIsNeverForced(t *testing.T) {
	b := newBench(t, 1, "A", "B")
	// B/0 waits on A/0, stopped at the bound because it holds too.
	b.put("A", 0, "i", moved(at("B", 1, 1)))
	b.put("B", 0, "j", moved(at("A", 0, 1)))
	require.True(t, b.stopped("A", 0))
	require.True(t, b.stopped("B", 0))
	t0 := time.Unix(0, 0)
	for i := range 4 {
		b.r.tick(t0.Add(time.Duration(i) * timeout))
	}
	require.Len(t, b.released, 1, "only B/1, never read, is given up on")
	require.Equal(t, "B", b.released[0].Origin.Cluster)
	require.Equal(t, int32(1), b.released[0].Origin.Partition)
	require.Equal(t, []string{"A/0/1 i", "B/0/1 j"}, b.got)
	require.Equal(t, int64(1), b.r.Stats().Forced)
}

func TestSilentOriginIsForcedAfterHoldTimeout(t *testing.T) {
	b := newBench(t, 100, "A", "B", "D")
	silent := at("A", 0, 5)
	read := at("D", 0, 2)
	b.put("A", 0, "x", nil) // then nothing more of A/0
	b.put("B", 0, "k", moved(silent))
	b.put("B", 0, "k", nil)
	b.put("B", 0, "k", moved(read)) // behind, with an origin of its own
	b.put("D", 0, "y", nil)

	t0 := time.Now()
	b.r.tick(t0)
	b.r.tick(t0.Add(timeout - 1))
	require.Equal(t, []string{"A/0/1 x", "D/0/1 y"}, b.got)
	b.r.tick(t0.Add(timeout))
	require.Equal(t, []string{"A/0/1 x", "D/0/1 y", "B/0/1 k", "B/0/2 k"}, b.got,
		"the queue up to the message whose other origin has not passed")
	require.Len(t, b.released, 1)
	require.GreaterOrEqual(t, b.released[0].Held, timeout, "from the head's receipt, before t0")
	b.released[0].Held = 0
	require.Equal(t, Release{Cluster: "B", Partition: 0, Slot: router.Slot(router.Hash("k")), Producer: 1, Epoch: 1,
		Origin: silent, Reason: "no progress", Messages: 2}, b.released[0])
	require.Equal(t, int64(2), b.r.Stats().Forced)

	b.put("B", 1, "k", moved(silent)) // an origin given up on passes at once
	require.Equal(t, "B/1/1 k", b.got[4])
	b.put("D", 0, "y", nil)
	require.Equal(t, "B/0/3 k", b.got[6])
	require.Equal(t, int64(2), b.r.Stats().Forced, "its own origin passed")
	require.Len(t, b.released, 1)
	require.Zero(t, b.r.HeldNow())
}

func TestOriginOnAPartitionNotReadIsForcedAfterHoldTimeout(t *testing.T) {
	b := newBench(t, 100, "A", "B")
	b.put("B", 0, "k", moved(at("A", 3, 1)))
	t0 := time.Unix(0, 0)
	b.r.tick(t0)
	b.r.tick(t0.Add(timeout / 2))
	require.Empty(t, b.got)
	b.r.tick(t0.Add(timeout))
	require.Equal(t, []string{"B/0/1 k"}, b.got)
	require.Equal(t, "no progress", b.released[0].Reason)
}

func TestRedeliveryDoesNotLowerTheFrontier(t *testing.T) {
	b := newBench(t, 100, "A", "B")
	b.put("A", 0, "x", nil)
	b.put("A", 0, "x", nil)
	id := fakeID{ledger: 7, entry: 1}
	b.r.receive(partKey{"A", 0}, fakeMsg{id: id, key: "x"}) // entry 1 again
	require.Equal(t, router.Position{Ledger: 7, Entry: 2}, b.r.parts[partKey{"A", 0}].frontier)
	b.put("B", 0, "k", moved(at("A", 0, 2)))
	require.Equal(t, "B/0/1 k", b.got[3], "its origin has passed")
}

func TestMarkerAckedOnlyWithinTheFrontier(t *testing.T) {
	b := newBench(t, 100, "A", "B")
	b.put("A", 0, "k", moved(at("B", 0, 1)))
	b.put("A", 0, "", marker())
	p := b.r.parts[partKey{"A", 0}]
	require.Len(t, p.pending, 2, "the marker waits behind the held message")
	b.put("B", 0, "x", nil)
	require.Empty(t, p.pending)
	require.Equal(t, router.Position{Ledger: 7, Entry: 2}, p.frontier)
}
