package producer_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/producer"
	"github.com/keyroute/keyroute/producer/producertest"
	"github.com/keyroute/keyroute/router"
	"github.com/keyroute/keyroute/topology"
)

// movedKeys returns the keys of keys whose placement differs between
// before and after.
func movedKeys(keys []string, before, after map[string]place) []string {
	var out []string
	for _, k := range keys {
		if before[k] != after[k] {
			out = append(out, k)
		}
	}
	return out
}

// sendAndUpdate sends a message "1" on each of 300 keys, then applies tp;
// it returns the keys, their placements before and after, and those that
// moved (at least one).
func sendAndUpdate(t *testing.T, p *producer.Producer, tp *topology.Topology) (keys []string, before, after map[string]place, moved []string) {
	t.Helper()
	keys = keyList(300)
	before = placements(p, keys)
	for k, err := range sendAll(p, keys, "1")() {
		require.NoError(t, err, k)
	}
	require.NoError(t, p.Update(context.Background(), tp))
	after = placements(p, keys)
	moved = movedKeys(keys, before, after)
	require.NotEmpty(t, moved)
	return keys, before, after, moved
}

// changes records what a ChangeObserver hears.
type changes struct {
	ch chan producer.Change
}

func (c *changes) OnStart(context.Context, *producer.Event) map[string]string { return nil }
func (c *changes) OnDone(*producer.Event)                                     {}
func (c *changes) OnChange(ch producer.Change) {
	select {
	case c.ch <- ch:
	default:
	}
}

// TestUpdateOldOwnerDown holds every acknowledgement of the old clusters
// (a broker that stopped answering), so that no marker is acknowledged:
// at HandoverTimeout the down policy decides for the moved keys' held
// messages (HANDOVER.md 7.1).
func TestUpdateOldOwnerDown(t *testing.T) {
	for _, tc := range []struct {
		policy producer.DownPolicy
		spill  bool
	}{{producer.FailFast, false}, {producer.WaitUp, false}, {producer.Spill, true}} {
		t.Run(tc.policy.String(), func(t *testing.T) {
			fake := newFake(2)
			obs := &changes{ch: make(chan producer.Change, 16)}
			p := newProducer(t, fake, 3, producer.OnClusterDown(tc.policy), producer.HandoverTimeout(time.Millisecond),
				producer.DownWait(time.Millisecond), producer.Observe(obs))
			keys := keyList(300)
			before := placements(p, keys)
			old := holdAll(t, fake, p)
			round1 := sendAll(p, keys, "1")
			require.NoError(t, p.Update(context.Background(), topo(4)))
			moved := movedKeys(keys, before, placements(p, keys))
			require.NotEmpty(t, moved)
			errs := sendAll(p, moved, "2")()
			for _, k := range moved {
				if tc.spill {
					require.NoError(t, errs[k], k)
					ms := byValue(fake, "c4", k, "2")
					require.Len(t, ms, 1, k)
					tag := tagOf(t, ms[0])
					assert.True(t, tag.Unordered, k)
					assert.Empty(t, tag.From, "the origin it owed is missing: none other is open")
					continue
				}
				require.ErrorIs(t, errs[k], producer.ErrClusterDown, k)
				assert.True(t, producer.NotWritten(errs[k]))
			}
			if !tc.spill {
				assert.Empty(t, fake.Cluster("c4").Messages())
			}
			// A decision fails its held messages before it counts the
			// hand-over ended: wait for that count (the bound only keeps a
			// failing run from hanging).
			require.Eventually(t, func() bool { ch, _ := p.LastChange(); return ch.Done }, 30*time.Second, time.Millisecond)
			ch, _ := p.LastChange()
			assert.Equal(t, 6, ch.Forced, "every old partition decided")
			forced := false
			for !forced {
				forced = (<-obs.ch).Forced > 0
			}

			// The old clusters answer again: their markers are
			// acknowledged, and the moved keys' later messages go on,
			// tagged with them.
			releaseAll(fake, old)
			require.NoError(t, p.Flush(context.Background()))
			for k, err := range round1() {
				require.NoError(t, err, k)
			}
		})
	}
}

// TestUpdateDrainsACluster removes a cluster: its keys move to the others
// after its markers, and its writers close once every outcome is in.
func TestUpdateDrainsACluster(t *testing.T) {
	fake := newFake(2)
	p := newProducer(t, fake, 3)
	keys, before, after, moved := sendAndUpdate(t, p, topo(2))
	assert.Equal(t, []string{"c1", "c2"}, p.Clusters())
	for _, k := range moved {
		require.Equal(t, "c3", before[k].cluster, "only the drained cluster's keys move")
	}
	for k, err := range sendAll(p, keys, "2")() {
		require.NoError(t, err, k)
	}
	require.NoError(t, p.Flush(context.Background()))
	assert.Len(t, markers(fake, "c3"), 2, "a marker on each partition of the drained cluster")
	for _, k := range moved {
		ms := byValue(fake, after[k].cluster, k, "2")
		require.Len(t, ms, 1, k)
		tag := tagOf(t, ms[0])
		require.Len(t, tag.From, 1)
		assert.Equal(t, "c3", tag.From[0].Cluster)
	}
	require.Eventually(t, func() bool { return fake.Cluster("c3").Writers() == 0 },
		30*time.Second, time.Millisecond, "the drained cluster's writers close")
	ch, _ := p.LastChange()
	assert.Equal(t, []string{"c3"}, ch.Removed)
}

// TestUpdateReweights gives c1 three times the weight: keys move to it
// only, after their markers.
func TestUpdateReweights(t *testing.T) {
	fake := newFake(1)
	p := newProducer(t, fake, 3)
	tp := topo(3)
	tp.Clusters[0].Weight = 3
	keys, before, after, moved := sendAndUpdate(t, p, tp)
	for _, k := range moved {
		require.Equal(t, "c1", after[k].cluster)
	}
	for k, err := range sendAll(p, keys, "2")() {
		require.NoError(t, err, k)
	}
	for _, k := range moved {
		ms := byValue(fake, "c1", k, "2")
		require.Len(t, ms, 1)
		assert.Contains(t, ms[0].Properties[router.PropFrom], ":"+before[k].cluster, k)
	}
	assert.Empty(t, markers(fake, "c1"), "c1 loses no key")
	msgs, _ := p.Held()
	assert.Equal(t, []int64{0, 0, 0}, msgs)
}

// TestUpdateTwiceInARow: the second change waits for the first's
// hand-overs (HANDOVER.md 7.5), bounded by its ctx, and a slot moved
// A -> c4 -> A carries over no origin acknowledged at c4 (5.4).
func TestUpdateTwiceInARow(t *testing.T) {
	fake := newFake(1)
	p := newProducer(t, fake, 3)
	keys := keyList(300)
	before := placements(p, keys)
	require.NoError(t, sendAll(p, keys, "1")()["k0"])
	fake.Cluster("c1").Hold()
	t.Cleanup(fake.Cluster("c1").Release)
	require.NoError(t, p.Update(context.Background(), topo(4)))
	moved := movedKeys(keys, before, placements(p, keys))
	round2 := sendAll(p, moved, "2")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := p.Update(ctx, topo(3))
	require.ErrorIs(t, err, context.Canceled, "c1's marker is not acknowledged: the first change is not over")
	assert.Equal(t, uint64(1), p.Epoch())

	fake.Cluster("c1").Release()
	for k, err := range round2() {
		require.NoError(t, err, k)
	}
	// c4's acknowledgements are immediate: each moved key's partition of
	// c4 has an acknowledged tag carrying epoch 1's origin, so epoch 2's
	// messages carry c4's marker alone (TestCarriedOriginsAreTheOpenOnes
	// has an origin left open).
	require.NoError(t, p.Update(context.Background(), topo(3)))
	assert.Equal(t, uint64(2), p.Epoch())
	for k, err := range sendAll(p, moved, "3")() {
		require.NoError(t, err, k)
	}
	require.NoError(t, p.Flush(context.Background()))
	for _, k := range moved {
		ms := byValue(fake, before[k].cluster, k, "3")
		require.Len(t, ms, 1, k)
		tag := tagOf(t, ms[0])
		assert.Equal(t, uint64(2), tag.Epoch)
		var clusters []string
		for _, o := range tag.From {
			clusters = append(clusters, o.Cluster)
		}
		assert.Equal(t, []string{"c4"}, clusters, "%s: epoch 1's origin was acknowledged at c4", k)
	}
}

// TestUpdateRefusesBadTopologies: the topology in use goes on.
func TestUpdateRefusesBadTopologies(t *testing.T) {
	fake := newFake(1)
	fake.Cluster("c4").FailConnect(errors.New("topic not found"))
	p := newProducer(t, fake, 3)
	fake.Cluster("c2").FailConnect(errors.New("authentication refused"))
	moved := topo(3)
	moved.Clusters[1].ServiceURL = "pulsar://elsewhere.invalid:6650"
	dup := topo(3)
	dup.Clusters[2].Name = "c1"
	for name, tc := range map[string]struct {
		topo *topology.Topology
		is   error
		says string
	}{
		"nil":                         {nil, producer.ErrBadTopology, ""},
		"empty":                       {&topology.Topology{}, producer.ErrBadTopology, ""},
		"duplicate":                   {dup, producer.ErrBadTopology, "c1"},
		"kept cluster's URL, refused": {moved, producer.ErrConnect, `"c2"`},
		"topic missing":               {topo(4), producer.ErrConnect, `"c4"`},
	} {
		t.Run(name, func(t *testing.T) {
			err := p.Update(context.Background(), tc.topo)
			require.ErrorIs(t, err, tc.is)
			assert.Contains(t, err.Error(), tc.says)
			assert.Equal(t, uint64(0), p.Epoch())
			assert.Equal(t, []string{"c1", "c2", "c3"}, p.Clusters())
			_, err = p.Send(context.Background(), &producer.Message{Key: "k"})
			require.NoError(t, err)
		})
	}
	assert.Zero(t, fake.Cluster("c4").Writers(), "nothing of the refused cluster stays open")
}

// TestUpdateAddsAClusterThatDoesNotAnswer: it is added down, its keys
// follow the down policy, and it joins when it answers.
func TestUpdateAddsAClusterThatDoesNotAnswer(t *testing.T) {
	fake := newFake(1)
	fake.Cluster("c3").BlackHole(true)
	p := newProducer(t, fake, 2, producer.StartTimeout(time.Millisecond), producer.DownProbeInterval(time.Millisecond))
	require.NoError(t, p.Update(context.Background(), topo(3)))
	assert.Equal(t, []int{1, 1, 0}, p.Partitions())
	k := txnKeysOn(p, "c3", 1)[0]
	_, err := p.Send(context.Background(), &producer.Message{Key: k})
	require.ErrorIs(t, err, producer.ErrClusterDown)
	fake.Cluster("c3").BlackHole(false)
	require.Eventually(t, func() bool { return p.Partitions()[2] == 1 }, 30*time.Second, time.Millisecond)
	_, err = p.Send(context.Background(), &producer.Message{Key: k})
	require.NoError(t, err)
}

// TestCloseDuringHandover: messages held by a hand-over whose marker is
// not acknowledged get exactly one outcome, ErrClosed, when Close does
// not wait for it.
func TestCloseDuringHandover(t *testing.T) {
	fake := newFake(1)
	p, err := producer.New(context.Background(), topo(2), producer.Topic("t"), fake.Opt(), producer.HandoverTimeout(time.Hour))
	require.NoError(t, err)
	keys := keyList(200)
	before := placements(p, keys)
	holdAll(t, fake, p)
	round1 := sendAll(p, keys, "1")
	require.NoError(t, p.Update(context.Background(), topo(3)))
	moved := movedKeys(keys, before, placements(p, keys))
	require.NotEmpty(t, moved)
	calls := make(chan error, 2*len(moved))
	for _, k := range moved {
		p.SendAsync(context.Background(), &producer.Message{Key: k}, func(_ producer.ID, _ *producer.Message, err error) { calls <- err })
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = p.Close(ctx) // an error: the flush was cut short
	for range moved {
		err := <-calls
		require.ErrorIs(t, err, producer.ErrClosed)
	}
	for k, err := range round1() {
		require.ErrorIs(t, err, producer.ErrClosed, k)
	}
	select {
	case err := <-calls:
		t.Fatalf("a second outcome: %v", err)
	default:
	}
	assert.Empty(t, fake.Cluster("c3").Messages())
}

// TestFailedMarkerIsHandedOverAgain: a marker the partition refuses is
// handed over again, same epoch and properties, until one is
// acknowledged; only then do the moved keys go on.
func TestFailedMarkerIsHandedOverAgain(t *testing.T) {
	fake := newFake(1)
	p := newProducer(t, fake, 2, producer.DownProbeInterval(time.Millisecond), producer.HandoverTimeout(time.Hour))
	keys := keyList(200)
	before := placements(p, keys)
	for k, err := range sendAll(p, keys, "1")() {
		require.NoError(t, err, k)
	}
	refused := errors.New("refused")
	fake.Cluster("c1").FailSends(refused)
	require.NoError(t, p.Update(context.Background(), topo(3)))
	var fromC1 []string
	for _, k := range movedKeys(keys, before, placements(p, keys)) {
		if before[k].cluster == "c1" {
			fromC1 = append(fromC1, k)
		}
	}
	require.NotEmpty(t, fromC1)
	round2 := sendAll(p, fromC1, "2")
	require.Eventually(t, func() bool {
		n := 0
		for _, e := range fake.Events() {
			if e.Op == producertest.OpSendFail && e.Cluster == "c1" && e.Key == "" {
				n++
			}
		}
		return n >= 2
	}, 30*time.Second, time.Millisecond, "the marker is handed over again")
	assert.Empty(t, fake.Cluster("c3").Messages(), "held while no marker is acknowledged")
	fake.Cluster("c1").FailSends(nil)
	for k, err := range round2() {
		require.NoError(t, err, k)
	}
	ms := markers(fake, "c1")
	require.Len(t, ms[0], 1, "one marker written")
	mk, _, err := router.ParseMarker(ms[0][0].Properties)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), mk.Epoch)
	for _, k := range fromC1 {
		got := byValue(fake, "c3", k, "2")
		require.Len(t, got, 1, k)
		assert.Equal(t, originOf(ms[0][0]), got[0].Properties[router.PropFrom], k)
	}
}

// A change that owes no marker (nothing was written yet) is done when it
// is applied: a ChangeObserver hears that it is done once, not again
// when its hand-overs are found ended.
func TestChangeDoneIsToldOnce(t *testing.T) {
	fake := newFake(2)
	obs := &changes{ch: make(chan producer.Change, 16)}
	p := newProducer(t, fake, 3, producer.Observe(obs))
	require.NoError(t, p.Update(context.Background(), topo(4)))
	require.NoError(t, p.Flush(context.Background())) // waits for the change's hand-overs
	require.NoError(t, p.Close(context.Background())) // and its watcher
	close(obs.ch)
	done := 0
	for c := range obs.ch {
		if c.Done {
			done++
		}
	}
	assert.Equal(t, 1, done)
}

// TestCarriedOriginsAreTheOpenOnes moves slots to c4 and back (epochs 1
// and 2, four partitions everywhere). An epoch 1 origin carries over to
// epoch 2's messages only where it is still open: on the partition of c4
// the key left, when no tagged message carrying it was acknowledged there
// (c4 holding its acknowledgements); acknowledged there, it is not
// carried at all (HANDOVER.md 5.4). Equal partition counts keep a key's
// partition index, so no origin names another index.
func TestCarriedOriginsAreTheOpenOnes(t *testing.T) {
	for _, open := range []bool{true, false} {
		t.Run(fmt.Sprintf("open=%v", open), func(t *testing.T) {
			fake := newFake(4)
			p := newProducer(t, fake, 3)
			keys := keyList(300)
			before := placements(p, keys)
			for k, err := range sendAll(p, keys, "0")() {
				require.NoError(t, err, k)
			}
			if open {
				fake.Cluster("c4").Hold()
				t.Cleanup(fake.Cluster("c4").Release)
			}
			require.NoError(t, p.Update(context.Background(), topo(4)))
			moved := movedKeys(keys, before, placements(p, keys))
			require.NotEmpty(t, moved)
			round1 := sendAll(p, moved, "1")
			if !open {
				for k, err := range round1() {
					require.NoError(t, err, k)
				}
			}
			require.NoError(t, p.Update(context.Background(), topo(3)))
			round2 := sendAll(p, moved, "2")
			fake.Cluster("c4").Release()
			for _, round := range []func() map[string]error{round1, round2} {
				for k, err := range round() {
					require.NoError(t, err, k)
				}
			}
			ms := markers(fake, "c4")
			for _, k := range moved {
				got := byValue(fake, before[k].cluster, k, "2")
				require.Len(t, got, 1, k)
				var from []string
				for _, o := range tagOf(t, got[0]).From {
					assert.Equal(t, int32(before[k].partition), o.Partition, "%s: %s names another partition index", k, o)
					from = append(from, o.String())
				}
				require.Len(t, ms[before[k].partition], 1)
				want := []string{originOf(ms[before[k].partition][0])}
				if open {
					old := markers(fake, before[k].cluster)[before[k].partition]
					require.Len(t, old, 1)
					want = []string{originOf(old[0]), want[0]}
				}
				assert.Equal(t, want, from, k)
			}
		})
	}
}
