package producer_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/producer"
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
