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
	defer cs.Close()
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
	defer cs.Close()
	var mu sync.Mutex
	var steps []string
	attach := func(name string, reader bool) {
		_, err := cs.AttachUser(keyroute.User{Close: func() {}, Reader: reader,
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
	defer cs.Close()
	var mu sync.Mutex
	var order []string
	attach := func(name string, reader bool) {
		_, err := cs.AttachUser(keyroute.User{Close: func() {}, Reader: reader,
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
	defer cs.Close()
	before := cs.Topology()

	bad := topo(2)
	bad.Clusters[1].Weight = -1
	err = cs.Update(context.Background(), bad)
	assert.ErrorIs(t, err, keyroute.ErrBadTopology)
	assert.ErrorContains(t, err, "c2")
	assert.ErrorIs(t, cs.Update(context.Background(), nil), keyroute.ErrBadTopology)

	detach, err := cs.Attach(func() {})
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
	defer cs.Close()
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
	_, err = cs.AttachUser(keyroute.User{Close: func() {}, Update: func(context.Context, *topology.Topology) error { return failed }})
	require.NoError(t, err)
	err = cs.Update(context.Background(), topo(1))
	assert.ErrorIs(t, err, failed)
	assert.Empty(t, closed(), "a user that failed may still use the drained cluster's client")
	require.NoError(t, cs.Close(), "Close closes it")
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
	defer cs.Close()
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
