package keyroute_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute"
	"github.com/keyroute/keyroute/topology"
)

// retiredCloses records the clients Update retires as they are closed.
func retiredCloses(t *testing.T) func() []pulsar.Client {
	var mu sync.Mutex
	var closed []pulsar.Client
	t.Cleanup(keyroute.WatchRetiredCloses(func(c pulsar.Client) {
		mu.Lock()
		defer mu.Unlock()
		closed = append(closed, c)
	}))
	return func() []pulsar.Client {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(closed)
	}
}

func client(t *testing.T, cs *keyroute.Clients, name string) pulsar.Client {
	t.Helper()
	c, err := cs.Client(name)
	require.NoError(t, err)
	return c
}

func TestClientsUpdateAddsRemovesAndReplacesClients(t *testing.T) {
	closed := retiredCloses(t)
	cs, err := keyroute.NewClients(topo(3))
	require.NoError(t, err)
	defer cs.Close(context.Background())
	c1, c2, c3 := client(t, cs, "c1"), client(t, cs, "c2"), client(t, cs, "c3")

	next := topo(4)
	next.Clusters = slices.Delete(next.Clusters, 1, 2) // c1, c3, c4: c2 drained
	next.Clusters[0].Weight = 3                        // c1 reweighted
	next.Clusters[1].ServiceURL = "pulsar://127.0.0.1:7000"
	require.NoError(t, cs.Update(context.Background(), next))

	assert.Same(t, next, cs.Topology())
	assert.NoError(t, cs.Check(next))
	assert.Same(t, c1, client(t, cs, "c1"), "a reweighted cluster keeps its client")
	assert.NotSame(t, c3, client(t, cs, "c3"), "a cluster whose URL changed gets a new client")
	client(t, cs, "c4")
	_, err = cs.Client("c2")
	assert.ErrorIs(t, err, keyroute.ErrUnknownCluster)
	assert.ElementsMatch(t, []pulsar.Client{c2, c3}, closed(), "the drained cluster's and the replaced client are closed")
}

func TestClientsUpdateAddsForConsumersFirstAndRemovesForThemLast(t *testing.T) {
	cs, err := keyroute.NewClients(topo(3))
	require.NoError(t, err)
	defer cs.Close(context.Background())
	var mu sync.Mutex
	var steps []string
	attach := func(name string, reader bool) {
		_, err := cs.AttachUser(keyroute.User{Close: func(context.Context) error { return nil }, Reader: reader,
			Update: func(_ context.Context, got *topology.Topology) error {
				var names []string
				for _, c := range got.Clusters {
					names = append(names, c.Name)
				}
				mu.Lock()
				defer mu.Unlock()
				steps = append(steps, fmt.Sprint(name, names))
				return nil
			}})
		require.NoError(t, err)
	}
	attach("producer", false)
	attach("consumer", true)
	next := topo(4)
	next.Clusters = slices.Delete(next.Clusters, 0, 1) // c1 drained, c4 added
	require.NoError(t, cs.Update(context.Background(), next))
	assert.Equal(t, []string{
		"consumer[c2 c3 c4 c1]", // reads the added cluster, still reads the drained one
		"producer[c2 c3 c4]",
		"consumer[c2 c3 c4]", // drops the drained cluster once producers left it
	}, steps)
}

func TestClientsUpdateAppliesToConsumersBeforeProducers(t *testing.T) {
	cs, err := keyroute.NewClients(topo(2))
	require.NoError(t, err)
	defer cs.Close(context.Background())
	var mu sync.Mutex
	var order []string
	attach := func(name string, reader bool) {
		_, err := cs.AttachUser(keyroute.User{Close: func(context.Context) error { return nil }, Reader: reader,
			Update: func(_ context.Context, got *topology.Topology) error {
				// Each sees the Clients already on the new topology.
				if err := cs.Check(got); err != nil {
					return err
				}
				if _, err := cs.Client("c3"); err != nil {
					return err
				}
				mu.Lock()
				defer mu.Unlock()
				order = append(order, name)
				return nil
			}})
		require.NoError(t, err)
	}
	attach("producer-1", false)
	attach("consumer-1", true)
	attach("producer-2", false)
	attach("consumer-2", true)
	require.NoError(t, cs.Update(context.Background(), topo(3)))
	require.Len(t, order, 4)
	assert.ElementsMatch(t, []string{"consumer-1", "consumer-2"}, order[:2], "readers first (HANDOVER.md section 9)")
	assert.ElementsMatch(t, []string{"producer-1", "producer-2"}, order[2:])
}

func TestClientsUpdateRefusesWhatItCannotApply(t *testing.T) {
	closed := retiredCloses(t)
	cs, err := keyroute.NewClients(topo(2))
	require.NoError(t, err)
	defer cs.Close(context.Background())
	before := cs.Topology()

	bad := topo(2)
	bad.Clusters[1].Weight = -1
	err = cs.Update(context.Background(), bad)
	assert.ErrorIs(t, err, keyroute.ErrBadTopology)
	assert.ErrorContains(t, err, "c2")
	assert.ErrorIs(t, cs.Update(context.Background(), nil), keyroute.ErrBadTopology)

	detach, err := cs.AttachUser(keyroute.User{Close: func(context.Context) error { return nil }})
	require.NoError(t, err)
	assert.ErrorIs(t, cs.Update(context.Background(), topo(3)), keyroute.ErrCannotFollow,
		"a user attached without Update cannot follow")
	detach()

	assert.Same(t, before, cs.Topology(), "the old topology keeps running")
	_, err = cs.Client("c3")
	assert.ErrorIs(t, err, keyroute.ErrUnknownCluster)
	assert.Empty(t, closed())
}

func TestClientsUpdateKeepsAcquiredClientsUntilReleased(t *testing.T) {
	closed := retiredCloses(t)
	cs, err := keyroute.NewClients(topo(2))
	require.NoError(t, err)
	defer cs.Close(context.Background())
	c2, release, err := cs.Acquire("c2")
	require.NoError(t, err)
	require.NoError(t, cs.Update(context.Background(), topo(1)))
	assert.Empty(t, closed(), "a drained cluster's client stays open while acquired")
	release()
	release() // once only
	assert.Equal(t, []pulsar.Client{c2}, closed())
}

func TestClientsUpdateReportsAUserThatFails(t *testing.T) {
	closed := retiredCloses(t)
	cs, err := keyroute.NewClients(topo(2))
	require.NoError(t, err)
	failed := errors.New("cannot reach the new cluster")
	_, err = cs.AttachUser(keyroute.User{Close: func(context.Context) error { return nil }, Update: func(context.Context, *topology.Topology) error { return failed }})
	require.NoError(t, err)
	err = cs.Update(context.Background(), topo(1))
	assert.ErrorIs(t, err, failed)
	assert.Empty(t, closed(), "a user that failed may still use the drained cluster's client")
	require.NoError(t, cs.Close(context.Background()), "Close closes it")
}

// With transactions a new cluster's client is a round trip, as at
// NewClients: Update waits for it at most until its ctx ends, and then
// changes nothing.
func TestClientsUpdateHonoursItsContext(t *testing.T) {
	short := keyroute.ConfigureClient(func(_ string, o *pulsar.ClientOptions) { o.KeepAliveInterval = 500 * time.Millisecond })
	quick := topology.ClientSettings{OperationTimeout: time.Second, ConnectionTimeout: 500 * time.Millisecond}
	first := topo(1)
	first.Clusters[0].Client = quick
	cs, err := keyroute.NewClients(first, keyroute.Transactions(true), keyroute.StartTimeout(time.Hour), short)
	require.NoError(t, err, "nothing listens at c1's address: refused, it is made in the background")
	defer cs.Close(context.Background())
	next := topo(1)
	next.Clusters[0].Client = quick
	next.Clusters = append(next.Clusters, topology.Cluster{Name: "silent", ServiceURL: blackHole(t), Weight: 1, Client: quick})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = cs.Update(ctx, next)
	require.ErrorIs(t, err, context.Canceled)
	_, err = cs.Client("silent")
	assert.ErrorIs(t, err, keyroute.ErrUnknownCluster, "the old topology keeps running")
}

// recorder attaches users that record the clusters of each topology they
// are given, and fail where fail says.
type recorder struct {
	t     *testing.T
	cs    *keyroute.Clients
	mu    sync.Mutex
	steps []string
}

func (r *recorder) attach(name string, reader bool, fail func(*topology.Topology) error) {
	r.t.Helper()
	_, err := r.cs.AttachUser(keyroute.User{Name: name, Close: func(context.Context) error { return nil }, Reader: reader,
		Update: func(_ context.Context, got *topology.Topology) error {
			var names []string
			for _, c := range got.Clusters {
				names = append(names, c.Name)
			}
			r.mu.Lock()
			r.steps = append(r.steps, fmt.Sprint(name, names))
			r.mu.Unlock()
			if fail != nil {
				return fail(got)
			}
			return nil
		}})
	require.NoError(r.t, err)
}

func (r *recorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.steps)
}

// A kept cluster whose client settings change gets a new client; its
// readers and producers are given it once, under its one name.
func TestClientsUpdateReconnectsAClusterWhoseSettingsChanged(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*topology.Cluster)
	}{
		{"client block", func(c *topology.Cluster) { c.Client.OperationTimeout = 20 * time.Second }},
		{"service URL", func(c *topology.Cluster) { c.ServiceURL = "pulsar://127.0.0.1:7000" }},
		{"token", func(c *topology.Cluster) { c.Auth.Token = "another" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			closed := retiredCloses(t)
			cs, err := keyroute.NewClients(topo(2))
			require.NoError(t, err)
			defer cs.Close(context.Background())
			c1 := client(t, cs, "c1")
			r := &recorder{t: t, cs: cs}
			r.attach("producer", false, nil)
			r.attach("consumer", true, nil)
			next := topo(2)
			tc.set(&next.Clusters[0])
			require.NoError(t, cs.Update(context.Background(), next))
			assert.Equal(t, []string{"consumer[c1 c2]", "producer[c1 c2]"}, r.got())
			assert.NotSame(t, c1, client(t, cs, "c1"))
			assert.Equal(t, []pulsar.Client{c1}, closed(), "the replaced client is closed once every user moved")
		})
	}
}

// A change of a cluster's producer settings (or admin URL, or weight)
// alone keeps its client: a consumer that reads through it must not lose
// it.
func TestClientsUpdateKeepsTheClientWhenOnlyOtherSettingsChange(t *testing.T) {
	closed := retiredCloses(t)
	cs, err := keyroute.NewClients(topo(2))
	require.NoError(t, err)
	defer cs.Close(context.Background())
	c1 := client(t, cs, "c1")
	next := topo(2)
	next.Clusters[0].Producer.SendTimeout = 45 * time.Second
	next.Clusters[0].AdminURL = "http://127.0.0.1:8080"
	next.Clusters[0].Weight = 2
	require.NoError(t, cs.Update(context.Background(), next))
	assert.Same(t, c1, client(t, cs, "c1"))
	assert.Same(t, next, cs.Topology())
	assert.Empty(t, closed())
}

// A reader that cannot take an added cluster stops the change before any
// producer moves, and the readers that took it are moved back.
func TestClientsUpdateUndoesStepOneWhenAReaderFails(t *testing.T) {
	closed := retiredCloses(t)
	cs, err := keyroute.NewClients(topo(2))
	require.NoError(t, err)
	defer cs.Close(context.Background())
	before := cs.Topology()
	refused := errors.New("cannot subscribe on c3")
	r := &recorder{t: t, cs: cs}
	r.attach("producer", false, nil)
	r.attach("reader-ok", true, nil)
	r.attach("reader-bad", true, func(got *topology.Topology) error {
		if len(got.Clusters) == 3 {
			return refused
		}
		return nil
	})
	err = cs.Update(context.Background(), topo(3))
	require.ErrorIs(t, err, refused)
	assert.ErrorContains(t, err, "reader-bad")
	var ue *keyroute.UpdateError
	require.ErrorAs(t, err, &ue)
	assert.Equal(t, 1, ue.Step)
	assert.True(t, ue.Undone, "every reader is back on the old topology")

	steps := r.got()
	assert.NotContains(t, steps, "producer[c1 c2 c3]", "no producer moves")
	assert.Contains(t, steps, "reader-ok[c1 c2 c3]")
	assert.Contains(t, steps, "reader-ok[c1 c2]", "the reader that took c3 is moved back")
	assert.Contains(t, steps, "reader-bad[c1 c2]", "and so is the one that failed, which may have taken part of it")
	assert.Same(t, before, cs.Topology(), "the Clients stay on the old topology")
	_, err = cs.Client("c3")
	assert.ErrorIs(t, err, keyroute.ErrUnknownCluster)
	assert.Len(t, closed(), 1, "the added cluster's client is closed")
}

// A producer that cannot move keeps writing to the clusters the change
// removes: readers keep reading them (step 3 is not applied) and their
// clients stay open.
func TestClientsUpdateKeepsRemovedClustersReadWhenAProducerFails(t *testing.T) {
	closed := retiredCloses(t)
	cs, err := keyroute.NewClients(topo(3))
	require.NoError(t, err)
	defer cs.Close(context.Background())
	failed := errors.New("cannot reach the new cluster")
	r := &recorder{t: t, cs: cs}
	r.attach("producer-ok", false, nil)
	var tries int
	r.attach("producer-bad", false, func(*topology.Topology) error {
		if tries++; tries == 1 { // one call at a time: step 2 runs once per Update
			return failed
		}
		return nil
	})
	r.attach("consumer", true, nil)
	next := topo(3)
	next.Clusters = next.Clusters[:2] // c3 drained
	err = cs.Update(context.Background(), next)
	require.ErrorIs(t, err, failed)
	assert.ErrorContains(t, err, "producer-bad")
	var ue *keyroute.UpdateError
	require.ErrorAs(t, err, &ue)
	assert.Equal(t, 2, ue.Step)
	assert.Equal(t, []string{"producer-bad"}, ue.Failed)
	assert.Equal(t, []string{"producer-ok"}, ue.Moved)
	assert.Equal(t, []string{"c3"}, ue.StillRead)

	assert.NotContains(t, r.got(), "consumer[c1 c2]", "readers do not drop c3")
	assert.Empty(t, closed(), "c3's client stays open while a producer may write there")
	require.NoError(t, cs.Update(context.Background(), next), "applying it again finishes the change")
	assert.Contains(t, r.got(), "consumer[c1 c2]")
	assert.Len(t, closed(), 1)
}
