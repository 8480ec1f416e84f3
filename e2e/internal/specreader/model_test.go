package specreader

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/router"
)

// written is a message of a model backlog: its key and its rank among the
// key's messages.
type written struct {
	msg fakeMsg
	seq int
}

// backlog writes a model of a topic's backlog: keys over clusters' parts
// partitions, rounds messages of every key, then changes times a change
// that moves each key with probability 0.3 (a marker on each partition
// that loses keys, the moved keys' later messages tagged with it) and
// rounds messages more.
func backlog(rng *rand.Rand, clusters []string, parts, keys, changes, rounds int) (map[partKey][]written, []partKey) {
	var pks []partKey
	for _, c := range clusters {
		for p := range parts {
			pks = append(pks, partKey{c, int32(p)})
		}
	}
	logs := map[partKey][]written{}
	write := func(pk partKey, key string, seq int, props map[string]string) router.Position {
		id := fakeID{ledger: 7, entry: int64(len(logs[pk]) + 1), part: pk.partition}
		logs[pk] = append(logs[pk], written{fakeMsg{id: id, key: key, props: props}, seq})
		return router.Position{Ledger: 7, Entry: id.entry}
	}
	owner, origin, seq := map[string]partKey{}, map[string]router.Origin{}, map[string]int{}
	names := make([]string, keys)
	for i := range names {
		names[i] = fmt.Sprintf("k%d", i)
		owner[names[i]] = pks[rng.IntN(len(pks))]
	}
	for c := range changes + 1 {
		if c > 0 {
			markers := map[partKey]router.Origin{}
			for _, k := range names {
				if rng.Float64() >= 0.3 {
					continue
				}
				old := owner[k]
				m, ok := markers[old]
				if !ok {
					m = router.Origin{Cluster: old.cluster, Partition: old.partition, Pos: write(old, "", 0, marker())}
					markers[old] = m
				}
				for owner[k] == old {
					owner[k] = pks[rng.IntN(len(pks))]
				}
				origin[k] = m
			}
		}
		for range rounds {
			for _, i := range rng.Perm(keys) {
				k := names[i]
				var props map[string]string
				if o, ok := origin[k]; ok {
					props = moved(o)
				}
				seq[k]++
				write(owner[k], k, seq[k], props)
			}
		}
	}
	return logs, pks
}

// TestBackPressureKeepsOrderOfABacklog reads model backlogs of three
// changes in random interleavings, each partition at its own pace, with a
// bound far below the messages moved: every key in order, nothing
// released by force, never a partition left that can be read, and the
// messages held at most the bound plus one per partition.
func TestBackPressureKeepsOrderOfABacklog(t *testing.T) {
	const limit = 4
	stops := int64(0)
	for seed := range uint64(100) {
		rng := rand.New(rand.NewPCG(seed, 42))
		logs, pks := backlog(rng, []string{"A", "B", "C"}, 2, 40, 3, 5)
		b := newBench(t, limit, "A", "B", "C")
		last := map[string]int{}
		var bad []string
		b.r.opts.Deliver = func(d Delivery) {
			w := logs[partKey{d.Cluster, d.Partition}][d.Pos.Entry-1]
			if w.seq != last[d.Key]+1 {
				bad = append(bad, fmt.Sprintf("%s #%d after #%d", d.Key, w.seq, last[d.Key]))
			}
			last[d.Key] = w.seq
		}
		pace := map[partKey]int{}
		for _, pk := range pks {
			pace[pk] = 1 + rng.IntN(20)
		}
		next := map[partKey]int{}
		for {
			var can []partKey
			total, left := 0, 0
			for _, pk := range pks {
				if n := len(logs[pk]) - next[pk]; n > 0 {
					left += n
					if !b.stopped(pk.cluster, pk.partition) {
						can = append(can, pk)
						total += pace[pk]
					}
				}
			}
			if left == 0 {
				break
			}
			require.NotEmpty(t, can, "seed %d: %d messages left, every partition that has some is stopped", seed, left)
			i := rng.IntN(total)
			for _, pk := range can {
				if i -= pace[pk]; i < 0 {
					b.r.receive(pk, logs[pk][next[pk]].msg)
					next[pk]++
					break
				}
			}
		}
		st := b.r.Stats()
		require.Empty(t, bad, "seed %d", seed)
		require.Empty(t, b.released, "seed %d", seed)
		require.Zero(t, st.Forced, "seed %d", seed)
		require.Zero(t, b.r.HeldNow(), "seed %d", seed)
		require.LessOrEqual(t, st.MaxHeld, limit+len(pks), "seed %d", seed)
		require.Equal(t, st.Delivered+st.Markers, st.Received, "seed %d", seed)
		stops += st.Stops
	}
	require.Positive(t, stops, "the bound is reached")
}
