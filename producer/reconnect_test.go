package producer_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/producer"
	"github.com/keyroute/keyroute/producer/producertest"
	"github.com/keyroute/keyroute/router"
	"github.com/keyroute/keyroute/topology"
)

// withURL returns topo(n) with cluster name's service URL changed.
func withURL(n int, name string) *topology.Topology {
	tp := topo(n)
	for i := range tp.Clusters {
		if tp.Clusters[i].Name == name {
			tp.Clusters[i].ServiceURL = "pulsar://moved.producertest.invalid:6650"
		}
	}
	return tp
}

// assertConnHandover checks, in the fake's events, that nothing was
// written through cluster's connection conn on a partition before every
// message written there through an earlier connection had its outcome.
func assertConnHandover(t *testing.T, fake *producertest.Clusters, cluster string, conn int) {
	t.Helper()
	type count struct{ sent, done int }
	old := map[int]*count{}
	wrote := 0
	for _, e := range fake.Events() {
		if e.Cluster != cluster || e.Conn == 0 {
			continue
		}
		if e.Conn < conn {
			n := old[e.Partition]
			if n == nil {
				n = &count{}
				old[e.Partition] = n
			}
			switch e.Op {
			case producertest.OpSend:
				n.sent++
			case producertest.OpAck, producertest.OpFail:
				n.done++
			}
			continue
		}
		if e.Conn == conn && e.Op == producertest.OpSend {
			wrote++
			if n := old[e.Partition]; n != nil {
				require.Equal(t, n.sent, n.done, "%s/%d: %q written on connection %d before the old connection's messages had their outcomes",
					cluster, e.Partition, e.Key, conn)
			}
		}
	}
	require.NotZero(t, wrote, "nothing written on connection %d", conn)
}

// TestReconnectHandsOverInOrder changes c2's service URL while every
// cluster holds its acknowledgements: c2 connects again, its keys' new
// messages wait until the old connection's messages (and its markers)
// have their outcomes, then go through the new connection, tagged; the
// other clusters' keys are written at once, untagged; the old writers
// close after.
func TestReconnectHandsOverInOrder(t *testing.T) {
	fake := newFake(2)
	p := newProducer(t, fake, 3)
	keys := keyList(300)
	before := placements(p, keys)
	old := holdAll(t, fake, p)
	round1 := sendAll(p, keys, "1")

	require.NoError(t, p.Update(context.Background(), withURL(3, "c2")))
	assert.Equal(t, 2, fake.Cluster("c2").Connects())
	assert.Equal(t, before, placements(p, keys), "a reconnection moves no key")
	ch, ok := p.LastChange()
	require.True(t, ok)
	assert.Equal(t, []string{"c2"}, ch.Reconnected)
	assert.Empty(t, ch.Added)
	assert.Empty(t, ch.Removed)
	assert.Equal(t, 2, ch.Markers, "a marker on each partition of c2")
	round2 := sendAll(p, keys, "2")

	var onC2 []string
	for _, k := range keys {
		got := byValue(fake, before[k].cluster, k, "2")
		if before[k].cluster == "c2" {
			onC2 = append(onC2, k)
			assert.Empty(t, got, "%s: held while the old connection's messages have no outcome", k)
			continue
		}
		require.Len(t, got, 1, "%s: another cluster's key is not held", k)
		assert.Empty(t, reserved(got[0].Properties), "%s: another cluster's key is not tagged", k)
	}
	require.NotEmpty(t, onC2)
	assert.Equal(t, 4, fake.Cluster("c2").Writers(), "old and new writers open during the hand-over")

	releaseAll(fake, old)
	require.NoError(t, p.Flush(context.Background()))
	for k, err := range round1() {
		require.NoError(t, err, k)
	}
	for k, err := range round2() {
		require.NoError(t, err, k)
	}
	assertConnHandover(t, fake, "c2", 2)
	ms := markers(fake, "c2")
	for _, k := range onC2 {
		var vs []string
		for _, m := range fake.Cluster("c2").Partition(before[k].partition).Messages() {
			if m.Key == k {
				vs = append(vs, string(m.Value))
			}
		}
		assert.Equal(t, []string{"1", "2"}, vs, k)
		got := byValue(fake, "c2", k, "2")
		require.Len(t, got, 1, k)
		tag := tagOf(t, got[0])
		require.Len(t, tag.From, 1, k)
		assert.Equal(t, originOf(ms[before[k].partition][0]), tag.From[0].String(), k)
	}
	require.Eventually(t, func() bool { return fake.Cluster("c2").Writers() == 2 },
		30*time.Second, time.Millisecond, "the old connection's writers close")
	ch, _ = p.LastChange()
	assert.True(t, ch.Done)
	assert.Zero(t, ch.Forced)
	assert.Equal(t, []int{2, 2, 2}, p.Partitions())
}

// TestReconnectUnderConcurrentSends reconnects c2 (alone, and with a
// weight change of c1) while senders send: every message gets exactly
// one outcome, success; every key's messages are written once each, in
// the order it sent them; none is written through c2's new connection
// before the old one's have their outcomes, nor on a new cluster before
// its earlier ones elsewhere have theirs; the old writers close.
func TestReconnectUnderConcurrentSends(t *testing.T) {
	for name, weight := range map[string]float64{"url": 1, "url and weight": 3} {
		t.Run(name, func(t *testing.T) {
			fake := producertest.New(producertest.Partitions(3), producertest.AsyncAcks(8))
			p := newProducer(t, fake, 3)
			next := withURL(3, "c2")
			next.Clusters[0].Weight = weight
			const senders, perKey = 4, 40
			keys := keyList(200)
			sendDuring(t, p, keys, senders, perKey, func() error { return p.Update(context.Background(), next) })
			assertConnHandover(t, fake, "c2", 2)
			assertKeyOrder(t, fake, p, keys, perKey)
			require.Eventually(t, func() bool { return fake.Cluster("c2").Writers() == 3 },
				30*time.Second, time.Millisecond, "the old connection's writers close")
			ch, _ := p.LastChange()
			assert.Equal(t, []string{"c2"}, ch.Reconnected)
			assert.True(t, ch.Done)
		})
	}
}

// sendDuring sends perKey messages (values 0, 1, ...) on each key, from
// senders goroutines that share the keys out, while change runs; then it
// flushes and checks that every message had exactly one outcome, a
// success. The first half of each key's messages races the change; the
// second half waits until it has returned, so that some are always
// placed after it, however fast the senders run.
func sendDuring(t *testing.T, p *producer.Producer, keys []string, senders, perKey int, change func() error) {
	t.Helper()
	var mu sync.Mutex
	outcomes := map[string]int{}
	var wg, sent sync.WaitGroup
	start, changed := make(chan struct{}), make(chan struct{})
	for s := range senders {
		sent.Add(1)
		go func() {
			defer sent.Done()
			<-start
			mine := keys[s*len(keys)/senders : (s+1)*len(keys)/senders]
			for i := range perKey {
				if i == perKey/2 {
					<-changed
				}
				for _, k := range mine {
					wg.Add(1)
					v := strconv.Itoa(i)
					p.SendAsync(context.Background(), &producer.Message{Key: k, Value: []byte(v)},
						func(_ producer.ID, _ *producer.Message, err error) {
							assert.NoError(t, err, k)
							mu.Lock()
							outcomes[k+"/"+v]++
							mu.Unlock()
							wg.Done()
						})
				}
			}
		}()
	}
	close(start)
	err := change()
	close(changed)
	require.NoError(t, err)
	sent.Wait()
	require.NoError(t, p.Flush(context.Background()))
	wg.Wait()
	for _, k := range keys {
		for i := range perKey {
			require.Equal(t, 1, outcomes[fmt.Sprintf("%s/%d", k, i)], "%s/%d: outcomes", k, i)
		}
	}
}

// assertKeyOrder checks that each key's values 0 to perKey-1 were
// written once each, in order, and that a key was never written on one
// (cluster, connection) before its messages on another had their
// outcomes.
func assertKeyOrder(t *testing.T, fake *producertest.Clusters, p *producer.Producer, keys []string, perKey int) {
	t.Helper()
	// Values per key and partition in write order, consumed in event
	// order.
	values := map[string]map[place][]int{}
	for _, c := range p.Clusters() {
		for _, m := range fake.Cluster(c).Messages() {
			if m.Key == "" {
				continue
			}
			v, err := strconv.Atoi(string(m.Value))
			require.NoError(t, err)
			if values[m.Key] == nil {
				values[m.Key] = map[place][]int{}
			}
			at := place{c, m.Partition}
			values[m.Key][at] = append(values[m.Key][at], v)
		}
	}
	type where struct {
		cluster string
		conn    int
	}
	type count struct{ sent, done int }
	seen := map[string]int{}
	per := map[string]map[where]*count{}
	for _, e := range fake.Events() {
		if e.Key == "" {
			continue
		}
		if per[e.Key] == nil {
			per[e.Key] = map[where]*count{}
		}
		w := where{e.Cluster, e.Conn}
		n := per[e.Key][w]
		if n == nil {
			n = &count{}
			per[e.Key][w] = n
		}
		switch e.Op {
		case producertest.OpAck, producertest.OpFail:
			n.done++
		case producertest.OpSend:
			n.sent++
			for other, m := range per[e.Key] {
				if other != w {
					require.Equal(t, m.sent, m.done, "%s written on %v before its messages on %v had their outcomes", e.Key, w, other)
				}
			}
			at := place{e.Cluster, e.Partition}
			vs := values[e.Key][at]
			require.NotEmpty(t, vs, e.Key)
			require.Equal(t, seen[e.Key], vs[0], "%s: value %d written at position %d", e.Key, vs[0], seen[e.Key])
			values[e.Key][at] = vs[1:]
			seen[e.Key]++
		}
	}
	for _, k := range keys {
		assert.Equal(t, perKey, seen[k], k)
	}
}

// TestReconnectRefused: a new connection that answers with an error, or
// does not answer within StartTimeout, refuses the change, naming the
// cluster; the old connection goes on.
func TestReconnectRefused(t *testing.T) {
	for name, fail := range map[string]func(*producertest.Cluster){
		"answered": func(c *producertest.Cluster) { c.FailConnect(errors.New("authentication refused")) },
		"silent":   func(c *producertest.Cluster) { c.BlackHole(true) },
	} {
		t.Run(name, func(t *testing.T) {
			fake := newFake(2)
			p := newProducer(t, fake, 1, producer.StartTimeout(time.Millisecond))
			k := keyList(1)[0]
			_, err := p.Send(context.Background(), &producer.Message{Key: k, Value: []byte("1")})
			require.NoError(t, err)
			c1 := fake.Cluster("c1")
			fail(c1)
			err = p.Update(context.Background(), withURL(1, "c1"))
			require.ErrorIs(t, err, producer.ErrConnect)
			var ce *producer.ClusterError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, "c1", ce.Cluster)
			assert.Equal(t, uint64(0), p.Epoch())
			_, err = p.Send(context.Background(), &producer.Message{Key: k, Value: []byte("2")})
			require.NoError(t, err, "the old connection goes on")
			got := byValue(fake, "c1", k, "2")
			require.Len(t, got, 1)
			assert.Empty(t, reserved(got[0].Properties))
			c1.BlackHole(false) // a silent attempt answers now: what it opened closes
			require.Eventually(t, func() bool { return c1.Writers() == 2 }, 30*time.Second, time.Millisecond)
			for _, e := range fake.Events() {
				if e.Op == producertest.OpSend {
					assert.Equal(t, 1, e.Conn, "written on the old connection")
				}
			}
		})
	}
}

// TestReconnectNeverConnected: a cluster that never connected takes its
// new settings down, as an added cluster is added down, and joins when
// they answer.
func TestReconnectNeverConnected(t *testing.T) {
	fake := newFake(1)
	fake.Cluster("c2").BlackHole(true)
	p := newProducer(t, fake, 2, producer.StartTimeout(time.Millisecond), producer.DownProbeInterval(time.Millisecond))
	require.Equal(t, []int{1, 0}, p.Partitions())
	require.NoError(t, p.Update(context.Background(), withURL(2, "c2")))
	ch, _ := p.LastChange()
	assert.Equal(t, []string{"c2"}, ch.Reconnected)
	assert.Zero(t, ch.Markers, "a cluster never written owes nothing")
	k := txnKeysOn(p, "c2", 1)[0]
	_, err := p.Send(context.Background(), &producer.Message{Key: k})
	require.ErrorIs(t, err, producer.ErrClusterDown)
	fake.Cluster("c2").BlackHole(false)
	require.Eventually(t, func() bool { return p.Partitions()[1] == 1 }, 30*time.Second, time.Millisecond)
	_, err = p.Send(context.Background(), &producer.Message{Key: k})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return fake.Cluster("c2").Writers() == 1 }, 30*time.Second, time.Millisecond,
		"the old settings' attempt closes what it opened")
}

// TestReconnectFromAConnectionThatFails: the old connection's messages
// and markers fail (it stopped answering, they timed out): once every one
// has its outcome the held messages go through the new connection,
// untagged, without waiting for HandoverTimeout.
func TestReconnectFromAConnectionThatFails(t *testing.T) {
	fake := newFake(2)
	p := newProducer(t, fake, 2, producer.HandoverTimeout(time.Hour))
	keys := txnKeysOn(p, "c2", 100)
	c2 := fake.Cluster("c2")
	c2.Hold()
	t.Cleanup(c2.Release)
	round1 := sendAll(p, keys, "1")
	require.NoError(t, p.Update(context.Background(), withURL(2, "c2")))
	round2 := sendAll(p, keys, "2")
	timedOut := errors.New("send timeout")
	for i := range 2 {
		c2.Partition(i).Fail(timedOut)
	}
	c2.Release()
	require.NoError(t, p.Flush(context.Background()))
	for k, err := range round1() {
		require.ErrorIs(t, err, timedOut, k)
	}
	for k, err := range round2() {
		require.NoError(t, err, k)
		got := byValue(fake, "c2", k, "2")
		require.Len(t, got, 1, k)
		tag, _, err := router.ParseTag(got[0].Properties)
		require.NoError(t, err)
		assert.Empty(t, tag.From, "%s: nothing is owed on another partition", k)
	}
	assertConnHandover(t, fake, "c2", 2)
	ch, _ := p.LastChange()
	assert.True(t, ch.Done)
	assert.Zero(t, ch.Forced, "released at the markers' callbacks, not decided")
	require.Eventually(t, func() bool { return c2.Writers() == 2 }, 30*time.Second, time.Millisecond)
}

// TestReconnectToAnotherPartitionCount: the new connection finds the
// topic with more partitions (grown meanwhile): the keys that change
// partition are handed over as in a partition change, tagged with their
// old partition's marker, and every key keeps its order.
func TestReconnectToAnotherPartitionCount(t *testing.T) {
	fake := newFake(2)
	p := newProducer(t, fake, 2, producer.PartitionsAutoDiscoveryInterval(0))
	keys := keyList(200)
	before := placements(p, keys)
	old := holdAll(t, fake, p)
	round0 := sendAll(p, keys, "0")
	fake.Cluster("c1").Grow(5)
	require.NoError(t, p.Update(context.Background(), withURL(2, "c1")))
	assert.Equal(t, []int{5, 2}, p.Partitions())
	round1 := sendAll(p, keys, "1")
	releaseAll(fake, old)
	require.NoError(t, p.Flush(context.Background()))
	for _, errs := range []map[string]error{round0(), round1()} {
		for k, err := range errs {
			require.NoError(t, err, k)
		}
	}
	assertKeyOrder(t, fake, p, keys, 2)
	after := placements(p, keys)
	moved := movedKeys(keys, before, after)
	require.NotEmpty(t, moved)
	ms := markers(fake, "c1")
	for _, k := range moved {
		require.Equal(t, "c1", after[k].cluster, k)
		var tagged bool
		for _, m := range fake.Cluster("c1").Partition(after[k].partition).Messages() {
			if m.Key != k {
				continue
			}
			if tag, ok, err := router.ParseTag(m.Properties); err == nil && ok {
				var from []string
				for _, o := range tag.From {
					from = append(from, o.String())
				}
				if len(ms[before[k].partition]) > 0 && slices.Contains(from, originOf(ms[before[k].partition][0])) {
					tagged = true
				}
			}
		}
		assert.True(t, tagged, "%s: a message at its new partition carries its old partition's marker", k)
	}
	require.Eventually(t, func() bool { return fake.Cluster("c1").Writers() == 5 }, 30*time.Second, time.Millisecond)
}
