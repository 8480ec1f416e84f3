package reload_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/keyroute/keyroute/internal/reload"
	"github.com/keyroute/keyroute/topology"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const five = `clusters:
  - {name: a, serviceURL: "pulsar://127.0.0.1:6650", weight: 1}
  - {name: b, serviceURL: "pulsar://127.0.0.1:6651", weight: 1}
  - {name: c, serviceURL: "pulsar://127.0.0.1:6652", weight: 1}
  - {name: d, serviceURL: "pulsar://127.0.0.1:6653", weight: 1}
  - {name: e, serviceURL: "pulsar://127.0.0.1:6654", weight: 1}
`

const six = five + `  - {name: f, serviceURL: "pulsar://127.0.0.1:6655", weight: 1}
`

func TestOnHangupAppliesTheFileAgain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "topology.yaml")
	require.NoError(t, os.WriteFile(path, []byte(five), 0o600))
	from, err := topology.Load(path)
	require.NoError(t, err)
	applied := make(chan *topology.Topology, 1)
	changes := make(chan reload.Change, 1)
	stop := reload.OnHangup(path, from, func(_ context.Context, to *topology.Topology) error {
		applied <- to
		return nil
	}, func(c reload.Change) { changes <- c })
	defer stop()

	require.NoError(t, os.WriteFile(path, []byte(six), 0o600))
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGHUP))
	to := <-applied
	assert.Len(t, to.Clusters, 6)
	c := <-changes
	require.NoError(t, c.Err)
	assert.Contains(t, c.String(), "+f")
	assert.Contains(t, c.String(), "of routing slots move")

	require.NoError(t, os.WriteFile(path, []byte("clusters: [{name: a}]"), 0o600))
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGHUP))
	c = <-changes
	require.Error(t, c.Err, "a bad file is reported, not applied")
	assert.Contains(t, c.String(), "not reloaded")
	assert.Empty(t, applied)
}

func TestMovedIsTheNewClustersShare(t *testing.T) {
	a, err := topology.Parse([]byte(five))
	require.NoError(t, err)
	b, err := topology.Parse([]byte(six))
	require.NoError(t, err)
	moved, err := reload.Moved(a, b)
	require.NoError(t, err)
	assert.InDelta(t, 1.0/6, moved, 0.01, "rendezvous moves only the new cluster's share")
	same, err := reload.Moved(a, a)
	require.NoError(t, err)
	assert.Zero(t, same)
	assert.Contains(t, reload.Describe(b, a), "-f")
}
