package topology_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/topology"
)

func TestProducerSettingsPerCluster(t *testing.T) {
	topo, err := topology.Parse([]byte(`
clusters:
  - name: near
    serviceURL: pulsar://127.0.0.1:6650
  - name: far
    serviceURL: pulsar://10.0.0.1:6650
    producer:
      sendTimeout: 90s
      linger: 50ms
      batchMaxMessages: 5000
      batchMaxBytes: 1048576
      compression: zstd
`))
	require.NoError(t, err)
	assert.Equal(t, topology.ProducerSettings{}, topo.Clusters[0].Producer)
	assert.Equal(t, topology.ProducerSettings{
		SendTimeout: 90 * time.Second, Linger: 50 * time.Millisecond,
		BatchMaxMessages: 5000, BatchMaxBytes: 1 << 20, Compression: "zstd",
	}, topo.Clusters[1].Producer)
}

func TestProducerSettingsAreChecked(t *testing.T) {
	_, err := topology.Parse([]byte(`
clusters:
  - name: far
    serviceURL: pulsar://10.0.0.1:6650
    producer:
      sendTimeout: -1s
      batchMaxBytes: -5
      compression: snappy
`))
	require.ErrorIs(t, err, topology.ErrBadSetting)
	for _, field := range []string{"producer.sendTimeout", "producer.batchMaxBytes", "producer.compression", `"snappy"`, "far"} {
		assert.ErrorContains(t, err, field)
	}
}
