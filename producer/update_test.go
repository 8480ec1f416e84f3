package producer_test

import (
	"context"
	"fmt"
	"log"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/producer"
	"github.com/keyroute/keyroute/producer/producertest"
	"github.com/keyroute/keyroute/router"
)

// place is where a key went: cluster and partition.
type place struct {
	cluster   string
	partition int
}

// placements returns where each of keys goes under p's topology now.
func placements(p *producer.Producer, keys []string) map[string]place {
	out := map[string]place{}
	for _, k := range keys {
		c, pt := p.Placement(k)
		out[k] = place{c, pt}
	}
	return out
}

func keyList(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "k" + strconv.Itoa(i)
	}
	return keys
}

// sendAll sends one message per key with value v, asynchronously, and
// returns a func that waits for their outcomes and returns their errors.
func sendAll(p *producer.Producer, keys []string, v string) func() map[string]error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	errs := map[string]error{}
	for _, k := range keys {
		wg.Add(1)
		p.SendAsync(context.Background(), &producer.Message{Key: k, Value: []byte(v)}, func(_ producer.ID, _ *producer.Message, err error) {
			mu.Lock()
			errs[k] = err
			mu.Unlock()
			wg.Done()
		})
	}
	return func() map[string]error {
		wg.Wait()
		return errs
	}
}

// markers returns the marker messages written on cluster, by partition.
func markers(fake *producertest.Clusters, cluster string) map[int][]producertest.Message {
	out := map[int][]producertest.Message{}
	for _, m := range fake.Cluster(cluster).Messages() {
		if _, ok := m.Properties[router.PropMarker]; ok {
			out[m.Partition] = append(out[m.Partition], m)
		}
	}
	return out
}

// byValue returns cluster's messages of key with value v.
func byValue(fake *producertest.Clusters, cluster, key, v string) []producertest.Message {
	var out []producertest.Message
	for _, m := range fake.Cluster(cluster).Messages() {
		if m.Key == key && string(m.Value) == v {
			out = append(out, m)
		}
	}
	return out
}

// originOf returns the origin entry a marker's ID makes.
func originOf(m producertest.Message) string {
	return fmt.Sprintf("%d:%d:%d:%d:%s", m.Partition, m.ID.LedgerID(), m.ID.EntryID(), m.ID.BatchIdx(), m.Cluster)
}

// TestUpdateAddsAClusterInOrder adds a sixth cluster to five whose
// acknowledgements are held: the keys that move to it wait until their
// old partition's marker and every message before it are acknowledged,
// then are written there tagged with the marker's position; the keys
// that stay are written at once and carry nothing.
func TestUpdateAddsAClusterInOrder(t *testing.T) {
	fake := newFake(2)
	p := newProducer(t, fake, 5)
	keys := keyList(600)
	before := placements(p, keys)
	old := holdAll(t, fake, p)
	round1 := sendAll(p, keys, "1")

	require.NoError(t, p.Update(context.Background(), topo(6)))
	assert.Equal(t, uint64(1), p.Epoch())
	after := placements(p, keys)
	var moved, stayed []string
	for _, k := range keys {
		if before[k] != after[k] {
			require.Equal(t, "c6", after[k].cluster, "a key moves only to the new cluster")
			moved = append(moved, k)
		} else {
			stayed = append(stayed, k)
		}
	}
	require.NotEmpty(t, moved)
	require.NotEmpty(t, stayed)
	round2 := sendAll(p, keys, "2")

	// Held: nothing reached c6; the keys that stay are written behind
	// nothing but their partition's traffic.
	assert.Empty(t, fake.Cluster("c6").Messages(), "moved keys wait for their old partition's marker")
	for _, k := range stayed {
		ms := byValue(fake, after[k].cluster, k, "2")
		require.Len(t, ms, 1, k)
		assert.Empty(t, reserved(ms[0].Properties), "a key that stays is not tagged")
	}
	for _, k := range moved {
		assert.True(t, p.Owes(k), k)
	}
	ch, ok := p.LastChange()
	require.True(t, ok)
	assert.Equal(t, 10, ch.Markers, "one marker per partition that keys leave")
	assert.Equal(t, int64(len(moved)), ch.Held)
	assert.False(t, ch.Done)

	releaseAll(fake, old)
	require.NoError(t, p.Flush(context.Background()))
	for k, err := range round1() {
		require.NoError(t, err, k)
	}
	for k, err := range round2() {
		require.NoError(t, err, k)
	}

	// One marker per old partition, as HANDOVER.md encodes it.
	origin := map[place]string{}
	for _, c := range old {
		ms := markers(fake, c)
		require.Len(t, ms, 2, c)
		for part, list := range ms {
			require.Len(t, list, 1)
			m := list[0]
			assert.Equal(t, "", m.Key)
			assert.Equal(t, []byte{}, m.Value)
			mk, ok, err := router.ParseMarker(m.Properties)
			require.NoError(t, err)
			require.True(t, ok)
			assert.Equal(t, router.Marker{Producer: p.ProducerID(), Epoch: 1, Moved: mk.Moved}, mk)
			assert.NotZero(t, mk.Moved)
			origin[place{c, part}] = originOf(m)
		}
	}

	// Each moved key's message is tagged with its old partition's marker
	// and was written after that marker and the key's earlier message were
	// acknowledged.
	events := fake.Events()
	at := func(op producertest.Op, cluster string, part int, key string) int {
		for i, e := range events {
			if e.Op == op && e.Cluster == cluster && e.Partition == part && e.Key == key {
				return i
			}
		}
		return -1
	}
	for _, k := range moved {
		ms := byValue(fake, "c6", k, "2")
		require.Len(t, ms, 1, k)
		tag := tagOf(t, ms[0])
		assert.Equal(t, p.ProducerID(), tag.Producer)
		assert.Equal(t, uint64(1), tag.Epoch)
		assert.False(t, tag.Unordered)
		var from []string
		for _, o := range tag.From {
			from = append(from, o.String())
		}
		assert.Contains(t, from, origin[before[k]], k)
		written := at(producertest.OpSend, "c6", after[k].partition, k)
		markerAck := at(producertest.OpAck, before[k].cluster, before[k].partition, "")
		earlierAck := at(producertest.OpAck, before[k].cluster, before[k].partition, k)
		require.GreaterOrEqual(t, markerAck, 0)
		assert.Greater(t, written, markerAck, "%s written before its old partition's marker was acknowledged", k)
		assert.Greater(t, written, earlierAck, "%s written before its earlier message's outcome", k)
	}

	ch, _ = p.LastChange()
	assert.True(t, ch.Done)
	assert.Zero(t, ch.Forced)

	// Every tagged (slot, partition) had an acknowledgement: later
	// messages carry nothing (HANDOVER.md 5.3), and from the next on they
	// take the plain path.
	round3 := sendAll(p, moved, "3")
	require.NoError(t, p.Flush(context.Background()))
	for k, err := range round3() {
		require.NoError(t, err, k)
		ms := byValue(fake, "c6", k, "3")
		require.Len(t, ms, 1)
		assert.Empty(t, reserved(ms[0].Properties), k)
		assert.False(t, p.Owes(k), k)
	}
}

// holdAll holds the acknowledgements of p's clusters (see
// producertest.Cluster.Hold) until the test ends or releaseAll, and
// returns their names.
func holdAll(t *testing.T, fake *producertest.Clusters, p *producer.Producer) []string {
	t.Helper()
	old := p.Clusters()
	for _, c := range old {
		fake.Cluster(c).Hold()
	}
	t.Cleanup(func() { releaseAll(fake, old) })
	return old
}

func releaseAll(fake *producertest.Clusters, clusters []string) {
	for _, c := range clusters {
		fake.Cluster(c).Release()
	}
}

// tagOf returns m's tag; it fails the test when m has none.
func tagOf(t *testing.T, m producertest.Message) router.Tag {
	t.Helper()
	tag, ok, err := router.ParseTag(m.Properties)
	require.NoError(t, err)
	require.True(t, ok, "%s has no tag", m.Key)
	return tag
}

// reserved returns the hand-over properties of props.
func reserved(props map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range props {
		if strings.HasPrefix(k, router.PropPrefix) {
			out[k] = v
		}
	}
	return out
}

// TestUpdateUnderConcurrentSends changes 5 -> 6 clusters while senders
// send: every key's messages are written in the order it sent them, the
// moved keys' new ones after their marker was acknowledged.
func TestUpdateUnderConcurrentSends(t *testing.T) {
	fake := producertest.New(producertest.Partitions(3), producertest.AsyncAcks(8))
	p := newProducer(t, fake, 5)
	const senders, perKey = 4, 60
	keys := keyList(200)
	sendDuring(t, p, keys, senders, perKey, func() error { return p.Update(context.Background(), topo(6)) })

	// The fake's event log is in write order across clusters.
	assertKeyOrder(t, fake, p, keys, perKey)
	ch, ok := p.LastChange()
	require.True(t, ok)
	assert.True(t, ch.Done)
	assert.NotZero(t, ch.SlotsMoved)
}

// A third cluster added while the producer runs: the keys that move to it
// are handed over in order, and the change is reported.
func ExampleProducer_Update() {
	ctx := context.Background()
	fake := producertest.New(producertest.Partitions(2))
	p, err := producer.New(ctx, producertest.Topology("east", "west"),
		producer.Topic("persistent://public/default/events"), fake.Opt())
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close(ctx)
	for i := range 1000 {
		p.SendAsync(ctx, &producer.Message{Key: fmt.Sprint("user-", i)}, nil)
	}

	// Against real clusters: topology.Load the new file, then Update.
	if err := p.Update(ctx, producertest.Topology("east", "west", "north")); err != nil {
		log.Fatal(err) // a bad topology is refused; the old one goes on
	}
	if err := p.Flush(ctx); err != nil { // waits for the hand-over too
		log.Fatal(err)
	}
	ch, _ := p.LastChange()
	fmt.Printf("epoch %d: %d markers, about %.0f%% of the slots moved, done: %v\n",
		ch.Epoch, ch.Markers, 100*float64(ch.SlotsMoved)/65536, ch.Done)
	// Output:
	// epoch 1: 4 markers, about 33% of the slots moved, done: true
}

// TestPartitionsAbove64Settle adds a cluster of 80 partitions: once a
// tagged message of each moved key is acknowledged on its new partition
// and the hand-overs have ended, the key owes nothing more there, on
// partitions 64 and up as below.
func TestPartitionsAbove64Settle(t *testing.T) {
	fake := producertest.New(producertest.Partitions(2), producertest.Partitions(80, "c3"))
	p := newProducer(t, fake, 2)
	_, _, after, moved := sendAndUpdate(t, p, topo(3))
	// "2" is tagged; "3", after every hand-over released (Flush), settles
	// its partition if "2" did not (see TestUpdateAddsAClusterInOrder).
	for _, v := range []string{"2", "3"} {
		for k, err := range sendAll(p, moved, v)() {
			require.NoError(t, err, k)
		}
		require.NoError(t, p.Flush(context.Background()))
	}
	high := 0
	for _, k := range moved {
		if after[k].partition >= 64 {
			high++
		}
		assert.False(t, p.Owes(k), "%s on partition %d", k, after[k].partition)
	}
	require.NotZero(t, high, "some moved keys are on partitions 64 and up")
}

// An Update to a topology none of whose clusters answers is refused, as
// New refuses one, naming them; the topology in use goes on. One that
// keeps a working cluster adds the silent one down.
func TestUpdateRefusesATopologyNoClusterAnswers(t *testing.T) {
	fake := newFake(2)
	fake.Cluster("c2").BlackHole(true)
	p := newProducer(t, fake, 1, producer.StartTimeout(time.Millisecond))
	only := producertest.Topology
	err := p.Update(context.Background(), only("c2"))
	require.ErrorIs(t, err, producer.ErrConnect)
	var ce *producer.ClusterError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "c2", ce.Cluster)
	assert.Equal(t, uint64(0), p.Epoch(), "nothing applied")
	_, err = p.Send(context.Background(), &producer.Message{Key: "k", Value: []byte("v")})
	require.NoError(t, err, "the topology in use goes on")

	require.NoError(t, p.Update(context.Background(), only("c1", "c2")), "a working cluster stays: c2 is added down")
	assert.Equal(t, uint64(1), p.Epoch())
	require.NoError(t, p.Update(context.Background(), only("c1")))
}

// writersAtChange is a ChangeObserver that records, at each change
// applied, how many writers are open on one cluster.
type writersAtChange struct {
	c  *producertest.Cluster
	at []int // appended by OnChange on the goroutine applying the change (Update's); read after Update returns
}

func (w *writersAtChange) OnStart(context.Context, *producer.Event) map[string]string { return nil }
func (w *writersAtChange) OnDone(*producer.Event)                                     {}
func (w *writersAtChange) OnChange(ch producer.Change) {
	if !ch.Done {
		w.at = append(w.at, w.c.Writers())
	}
}

// No key moves to an added cluster before its writers are open: Update
// waits for its connection (StartTimeout), with the topology in use and
// every key written where it was meanwhile, and applies the change, the
// moment keys move, once every partition's writer is open.
func TestUpdateMovesNoKeyBeforeTheAddedClusterIsOpen(t *testing.T) {
	fake := newFake(2)
	c6 := fake.Cluster("c6")
	obs := &writersAtChange{c: c6}
	p := newProducer(t, fake, 5, producer.StartTimeout(time.Hour), producer.Observe(obs))
	keys := keyList(600)
	before := placements(p, keys)
	c6.BlackHole(true)
	updated := make(chan error, 1)
	go func() { updated <- p.Update(context.Background(), topo(6)) }()
	for c6.Waiting() == 0 {
		runtime.Gosched()
	}

	for k, err := range sendAll(p, keys, "during")() {
		require.NoError(t, err, k)
	}
	assert.Empty(t, c6.Messages())

	c6.BlackHole(false)
	require.NoError(t, <-updated)
	assert.Equal(t, []int{c6.Partitions()}, obs.at, "every writer open when the change is applied")
	moved := 0
	for k, at := range placements(p, keys) {
		if at != before[k] {
			require.Equal(t, "c6", at.cluster, k)
			moved++
		}
	}
	assert.NotZero(t, moved)
}
