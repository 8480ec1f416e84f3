package producer_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/producer"
	"github.com/keyroute/keyroute/producer/producertest"
	"github.com/keyroute/keyroute/router"
)

// TestPartitionGrowthHandsOver grows c1's topic from 2 to 5 partitions
// while c1 holds its acknowledgements: the keys whose partition changes
// wait for their old partition's marker and go to the new one tagged;
// the others are written at once, and every key's callbacks keep call
// order (HANDOVER.md 5.5).
func TestPartitionGrowthHandsOver(t *testing.T) {
	fake := newFake(2)
	p := newProducer(t, fake, 2, producer.PartitionsAutoDiscoveryInterval(0))
	keys := txnKeysOn(p, "c1", 200)
	before := placements(p, keys)
	holdAll(t, fake, p)

	var mu sync.Mutex
	order := map[string][]string{}
	var wg sync.WaitGroup
	send := func(v string) {
		for _, k := range keys {
			wg.Add(1)
			p.SendAsync(context.Background(), &producer.Message{Key: k, Value: []byte(v)}, func(_ producer.ID, _ *producer.Message, err error) {
				assert.NoError(t, err, k)
				mu.Lock()
				order[k] = append(order[k], v)
				mu.Unlock()
				wg.Done()
			})
		}
	}
	send("1")
	fake.Cluster("c1").Grow(5)
	p.Discover()
	assert.Equal(t, uint64(1), p.Epoch())
	assert.Equal(t, []int{5, 2}, p.Partitions())
	after := placements(p, keys)
	moved := movedKeys(keys, before, after)
	require.NotEmpty(t, moved)
	require.Less(t, len(moved), len(keys), "some keys keep their partition")
	send("2")
	for _, k := range keys {
		n := len(byValue(fake, "c1", k, "2"))
		if before[k] == after[k] {
			assert.Equal(t, 1, n, "%s stays: written at once", k)
		} else {
			assert.Zero(t, n, "%s moves: held", k)
		}
	}

	releaseAll(fake, []string{"c1", "c2"})
	require.NoError(t, p.Flush(context.Background()))
	wg.Wait()
	for _, k := range keys {
		assert.Equal(t, []string{"1", "2"}, order[k], "%s: callbacks in call order", k)
	}
	ms := markers(fake, "c1")
	assert.Len(t, ms, 2, "a marker on each old partition")
	for _, k := range keys {
		got := byValue(fake, "c1", k, "2")
		require.Len(t, got, 1, k)
		if before[k] == after[k] {
			assert.Empty(t, reserved(got[0].Properties), "%s stays: not tagged", k)
			continue
		}
		tag := tagOf(t, got[0])
		require.NotEmpty(t, tag.From)
		var from []string
		for _, o := range tag.From {
			from = append(from, o.String())
		}
		assert.Contains(t, from, originOf(ms[before[k].partition][0]), k)
	}
	ch, ok := p.LastChange()
	require.True(t, ok)
	assert.Equal(t, "c1", ch.Grown)
	assert.Equal(t, [2]int{2, 5}, [2]int{ch.PartitionsBefore, ch.PartitionsAfter})
	assert.True(t, ch.Done)
	_, isMarker, err := router.ParseMarker(ms[0][0].Properties)
	assert.True(t, isMarker)
	assert.NoError(t, err)
}

// TestPartitionShrinkIsReported: a topic found with fewer partitions is
// not applied; Health says so.
func TestPartitionShrinkIsReported(t *testing.T) {
	fake := newFake(3)
	p := newProducer(t, fake, 2, producer.PartitionsAutoDiscoveryInterval(0))
	fake.Cluster("c2").Shrink(1)
	p.Discover()
	h := p.Health()
	require.Error(t, h[1].PartitionsErr)
	assert.Contains(t, h[1].PartitionsErr.Error(), `cluster "c2": the topic has 1 partitions, fewer than the 3 written`)
	assert.NoError(t, h[0].PartitionsErr)
	assert.Equal(t, []int{3, 3}, p.Partitions())
	assert.Equal(t, uint64(0), p.Epoch())
	_, err := p.Send(context.Background(), &producer.Message{Key: txnKeysOn(p, "c2", 1)[0]})
	require.NoError(t, err)
	fake.Cluster("c2").Shrink(0)
	p.Discover()
	assert.NoError(t, p.Health()[1].PartitionsErr)
}

// TestGrowthMovesOnlyNewPartitionKeys drains c2 into c1 (its keys then
// carry c2's origins until a tagged message is acknowledged on their
// partition of c1), then grows c1 from 5 to 8 partitions while c1 holds
// its acknowledgements. Jump hashing (SPEC.md step 3) moves only the keys
// whose new partition is 5 or more: exactly those are held and tagged;
// a key on an old partition is written at once and carries nothing, not
// even the drain's origins, which were acknowledged there; a moved key
// does not carry its old partition's drain origin either (HANDOVER.md
// 5.4), only those still open on other old partitions.
func TestGrowthMovesOnlyNewPartitionKeys(t *testing.T) {
	fake := newFake(5)
	p := newProducer(t, fake, 2, producer.PartitionsAutoDiscoveryInterval(0))
	keys := keyList(400)
	for k, err := range sendAll(p, keys, "0")() {
		require.NoError(t, err, k)
	}
	require.NoError(t, p.Update(context.Background(), topo(1)))
	for k, err := range sendAll(p, keys, "1")() {
		require.NoError(t, err, k)
	}
	require.NoError(t, p.Flush(context.Background()))
	before := placements(p, keys)

	holdAll(t, fake, p)
	fake.Cluster("c1").Grow(8)
	p.Discover()
	require.Equal(t, uint64(2), p.Epoch())
	after := placements(p, keys)
	var moved []string
	for _, k := range keys {
		b, a := before[k].partition, after[k].partition
		require.True(t, a == b || a >= 5, "%s moved from partition %d to %d, an old one", k, b, a)
		if a != b {
			moved = append(moved, k)
		}
	}
	require.NotEmpty(t, moved)
	t.Logf("%d of %d keys moved to the new partitions", len(moved), len(keys))
	assert.InDelta(t, 3.0/8, float64(len(moved))/float64(len(keys)), 0.1)

	round2 := sendAll(p, keys, "2")
	for _, k := range keys {
		got := byValue(fake, "c1", k, "2")
		if before[k] == after[k] {
			require.Len(t, got, 1, "%s stays: written at once", k)
			assert.Empty(t, reserved(got[0].Properties), "%s stays: not tagged", k)
		} else {
			assert.Empty(t, got, "%s moves: held", k)
		}
	}
	ch, ok := p.LastChange()
	require.True(t, ok)
	assert.Equal(t, int64(len(moved)), ch.Held, "only the moved keys are held")
	assert.Zero(t, ch.SlotsMoved, "a growth moves no slot")
	assert.InDelta(t, 3.0/8, ch.KeysMoved, 1e-12, "c1 owns every slot; jump hashing moves 3/8 of its keys")

	releaseAll(fake, []string{"c1"})
	for k, err := range round2() {
		require.NoError(t, err, k)
	}
	require.NoError(t, p.Flush(context.Background()))
	ms := markers(fake, "c1")
	require.Len(t, ms, 5, "a marker on each old partition")
	for _, k := range moved {
		got := byValue(fake, "c1", k, "2")
		require.Len(t, got, 1, k)
		var from []string
		for _, o := range tagOf(t, got[0]).From {
			from = append(from, o.String())
			assert.False(t, o.Cluster == "c2" && int(o.Partition) == before[k].partition,
				"%s carries the drain's origin %s, acknowledged on its old partition", k, o)
		}
		assert.Contains(t, from, originOf(ms[before[k].partition][0]), k)
	}
}

// TestMovesBetweenPartitionCounts drains a cluster into one with another
// partition count, in both directions (3 -> 7 and 7 -> 3): every moved
// key's message is tagged with its own old partition's marker, which
// origin.concerns must find from jump hashing's rule (a key on partition
// p of m lands on q of n only if p == q, q >= m or p >= n).
func TestMovesBetweenPartitionCounts(t *testing.T) {
	for _, tc := range []struct{ c1, c2 int }{{7, 3}, {3, 7}} {
		t.Run(fmt.Sprintf("%d->%d", tc.c2, tc.c1), func(t *testing.T) {
			fake := producertest.New(producertest.Partitions(tc.c1, "c1"), producertest.Partitions(tc.c2, "c2"))
			p := newProducer(t, fake, 2)
			keys := keyList(400)
			before := placements(p, keys)
			old := holdAll(t, fake, p)
			round1 := sendAll(p, keys, "1")
			require.NoError(t, p.Update(context.Background(), topo(1)))
			after := placements(p, keys)
			round2 := sendAll(p, keys, "2")
			releaseAll(fake, old)
			require.NoError(t, p.Flush(context.Background()))
			for _, round := range []func() map[string]error{round1, round2} {
				for k, err := range round() {
					require.NoError(t, err, k)
				}
			}
			ms := markers(fake, "c2")
			require.Len(t, ms, tc.c2)
			moved := 0
			for _, k := range keys {
				if before[k].cluster != "c2" {
					continue
				}
				moved++
				got := byValue(fake, "c1", k, "2")
				require.Len(t, got, 1, k)
				var from []string
				for _, o := range tagOf(t, got[0]).From {
					from = append(from, o.String())
				}
				assert.Contains(t, from, originOf(ms[before[k].partition][0]), "%s: c2/%d -> c1/%d", k, before[k].partition, after[k].partition)
			}
			require.NotZero(t, moved)
		})
	}
}
