package keyroute_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute"
	"github.com/keyroute/keyroute/topology"
)

func topo(n int) *topology.Topology {
	t := &topology.Topology{}
	for i := 1; i <= n; i++ {
		t.Clusters = append(t.Clusters, topology.Cluster{
			Name: fmt.Sprintf("c%d", i), ServiceURL: fmt.Sprintf("pulsar://127.0.0.1:%d", 6650+i), Weight: 1,
		})
	}
	return t
}

func TestClientsGivesOneClientPerCluster(t *testing.T) {
	var configured []string
	cs, err := keyroute.NewClients(topo(3), keyroute.ConfigureClient(func(cluster string, o *pulsar.ClientOptions) {
		configured = append(configured, cluster+" "+o.URL+" "+o.CustomMetricsLabels["cluster"])
	}))
	require.NoError(t, err)
	assert.Equal(t, []string{
		"c1 pulsar://127.0.0.1:6651 c1", "c2 pulsar://127.0.0.1:6652 c2", "c3 pulsar://127.0.0.1:6653 c3",
	}, configured)
	a, err := cs.Client("c2")
	require.NoError(t, err)
	b, err := cs.Client("c2")
	require.NoError(t, err)
	assert.Same(t, a, b, "one client per cluster, however often asked")
	_, err = cs.Client("west")
	assert.ErrorIs(t, err, keyroute.ErrUnknownCluster)
	assert.ErrorContains(t, err, `"west"`)

	require.NoError(t, cs.Close(context.Background()))
	require.NoError(t, cs.Close(context.Background()), "twice")
	_, err = cs.Client("c2")
	assert.ErrorIs(t, err, keyroute.ErrClosed)
}

func TestClientsCloseClosesWhatIsAttached(t *testing.T) {
	cs, err := keyroute.NewClients(topo(1))
	require.NoError(t, err)
	var mu sync.Mutex
	closed := map[string]int{}
	closer := func(name string) keyroute.User {
		return keyroute.User{Name: name, Close: func(context.Context) error {
			mu.Lock()
			defer mu.Unlock()
			closed[name]++
			return nil
		}}
	}
	_, err = cs.AttachUser(closer("kept"))
	require.NoError(t, err)
	detach, err := cs.AttachUser(closer("gone"))
	require.NoError(t, err)
	detach()
	require.NoError(t, cs.Close(context.Background()))
	assert.Equal(t, map[string]int{"kept": 1}, closed, "only users still attached are closed, once")
	_, err = cs.AttachUser(closer("late"))
	assert.ErrorIs(t, err, keyroute.ErrClosed)
}

// Close returns when its ctx ends, whatever a user's Close does, with the
// users' errors and the ctx's; a later Close returns at once.
func TestClientsCloseReturnsWithinItsContext(t *testing.T) {
	cs, err := keyroute.NewClients(topo(2))
	require.NoError(t, err)
	stuck, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	_, err = cs.AttachUser(keyroute.User{Name: "stuck", Close: func(context.Context) error {
		close(stuck)
		<-release // a producer waiting on an unreachable cluster, say
		return nil
	}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-stuck
		cancel()
	}()
	err = cs.Close(ctx)
	require.ErrorIs(t, err, context.Canceled)
	assert.NoError(t, cs.Close(context.Background()), "closed already")
	_, err = cs.Client("c1")
	assert.ErrorIs(t, err, keyroute.ErrClosed)
}

// A user's Close gets Close's ctx and its error comes back.
func TestClientsCloseReturnsTheUsersErrors(t *testing.T) {
	cs, err := keyroute.NewClients(topo(1))
	require.NoError(t, err)
	failed := errors.New("flush failed")
	type key struct{}
	ctx := context.WithValue(context.Background(), key{}, "mine")
	_, err = cs.AttachUser(keyroute.User{Name: "p", Close: func(got context.Context) error {
		if got.Value(key{}) != "mine" {
			return errors.New("not Close's ctx")
		}
		return failed
	}})
	require.NoError(t, err)
	assert.ErrorIs(t, cs.Close(ctx), failed)
}

func TestClientsCheckNamesTheClusterThatDiffers(t *testing.T) {
	cs, err := keyroute.NewClients(topo(3))
	require.NoError(t, err)
	defer cs.Close(context.Background())
	require.NoError(t, cs.Check(cs.Topology()))
	require.NoError(t, cs.Check(topo(3)), "an equal topology")

	other := topo(3)
	other.Clusters[1].ServiceURL = "pulsar://10.0.0.1:6650"
	err = cs.Check(other)
	assert.ErrorIs(t, err, keyroute.ErrOtherTopology)
	assert.ErrorContains(t, err, `"c2"`)
	assert.ErrorContains(t, cs.Check(topo(2)), `"c3" is missing`)
	assert.ErrorContains(t, cs.Check(topo(4)), `"c4"`)
	assert.ErrorIs(t, cs.Check(nil), keyroute.ErrOtherTopology)
}

func TestNewClientsRejectsBadInput(t *testing.T) {
	_, err := keyroute.NewClients(nil)
	assert.ErrorIs(t, err, keyroute.ErrBadTopology)
	bad := topo(2)
	bad.Clusters[1].ServiceURL = "http://nope"
	_, err = keyroute.NewClients(bad)
	assert.ErrorIs(t, err, keyroute.ErrBadTopology)
	assert.ErrorContains(t, err, "c2")
	_, err = keyroute.NewClients(topo(1), keyroute.MemoryLimit(0))
	assert.ErrorIs(t, err, keyroute.ErrBadOption)
}
