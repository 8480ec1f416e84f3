package specreader

import (
	"context"
	"fmt"
	"testing"

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

// bench is a Reader fed by hand, with no Pulsar behind it.
type bench struct {
	r        *Reader
	got      []string // "cluster/partition/entry key"
	released []Release
	entry    map[partKey]int64
}

func newBench(t *testing.T, limit int, clusters ...string) *bench {
	t.Helper()
	b := &bench{entry: map[partKey]int64{}}
	b.r = &Reader{
		opts: Options{HoldTimeout: 1, HoldLimit: limit,
			Deliver: func(d Delivery) {
				b.got = append(b.got, fmt.Sprintf("%s/%d/%d %s", d.Cluster, d.Partition, d.Pos.Entry, d.Key))
			},
			Released: func(r Release) { b.released = append(b.released, r) }},
		known: map[string]bool{}, consumers: map[partKey]pulsar.Consumer{}, parts: map[partKey]*part{},
		queues: map[queueKey]*queue{}, waiting: map[partKey][]*queue{},
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
	origin := router.Origin{Cluster: "A", Partition: 0, Pos: router.Position{Ledger: 7, Entry: 3}}
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
	origin := router.Origin{Cluster: "A", Partition: 0, Pos: router.Position{Ledger: 7, Entry: 2}}
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
	a := router.Origin{Cluster: "A", Partition: 0, Pos: router.Position{Ledger: 7, Entry: 2}}
	bo := router.Origin{Cluster: "B", Partition: 0, Pos: router.Position{Ledger: 7, Entry: 2}}
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

func TestHoldLimitReleasesTheOldest(t *testing.T) {
	b := newBench(t, 2, "A", "B")
	o := router.Origin{Cluster: "A", Partition: 0, Pos: router.Position{Ledger: 7, Entry: 9}}
	b.put("B", 0, "k", moved(o))
	b.put("B", 0, "k", nil)
	require.Empty(t, b.got)
	b.put("B", 1, "k", moved(o)) // a third held message: over the limit
	require.Equal(t, []string{"B/0/1 k", "B/0/2 k"}, b.got, "the oldest queue, in its order")
	require.Len(t, b.released, 1)
	require.Equal(t, "memory", b.released[0].Reason)
	require.Equal(t, int64(2), b.r.Stats().Forced)
	require.Equal(t, 1, b.r.HeldNow())
}

func TestMarkerAckedOnlyWithinTheFrontier(t *testing.T) {
	b := newBench(t, 100, "A", "B")
	b.put("A", 0, "k", moved(router.Origin{Cluster: "B", Partition: 0, Pos: router.Position{Ledger: 7, Entry: 1}}))
	b.put("A", 0, "", marker())
	p := b.r.parts[partKey{"A", 0}]
	require.Len(t, p.pending, 2, "the marker waits behind the held message")
	b.put("B", 0, "x", nil)
	require.Empty(t, p.pending)
	require.Equal(t, router.Position{Ledger: 7, Entry: 2}, p.frontier)
}
