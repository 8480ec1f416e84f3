package topology_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/topology"
)

func TestWriteFileLoadRoundTrip(t *testing.T) {
	topo, _ := validTopology(t)
	topo.Clusters[0].Client = topology.ClientSettings{
		OperationTimeout:     90 * time.Second,
		ConnectionTimeout:    1500 * time.Millisecond,
		ConnectionsPerBroker: 3,
	}
	topo.Clusters[0].TLS.SkipHostnameChecking = true
	topo.Clusters[1].Weight = 0.25

	path := filepath.Join(t.TempDir(), "topology.yaml")
	require.NoError(t, topo.WriteFile(path))

	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "the file may hold tokens")

	back, err := topology.Load(path)
	require.NoError(t, err)
	assert.Equal(t, topo, back)
}

// Durations are written in Go syntax ("1m30s"), which Load reads back.
func TestWriteFileDurationsAreStrings(t *testing.T) {
	topo := &topology.Topology{Clusters: []topology.Cluster{{
		Name: "a", ServiceURL: "pulsar://a", Weight: 1,
		Client: topology.ClientSettings{OperationTimeout: 90 * time.Second},
	}}}
	path := filepath.Join(t.TempDir(), "topology.yaml")
	require.NoError(t, topo.WriteFile(path))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Contains(t, string(b), "operationTimeout: 1m30s")
}
