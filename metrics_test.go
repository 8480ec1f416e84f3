package keyroute_test

import (
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute"
	"github.com/keyroute/keyroute/topology"
)

// Two clusters' clients registered in one registry keep one series each,
// told apart by the cluster label (issue: the N clients used to share one
// set of series, summed with no cluster label).
func TestClientMetricsCarryTheCluster(t *testing.T) {
	reg := prometheus.NewRegistry()
	var clients []pulsar.Client
	for _, name := range []string{"east", "west"} {
		cl := topology.Cluster{Name: name, ServiceURL: "pulsar://127.0.0.1:1", Weight: 1}
		c, err := keyroute.Open(cl, false, 0, nil, func(cluster string, o *pulsar.ClientOptions) {
			assert.Equal(t, name, cluster)
			o.MetricsRegisterer = reg
		})
		require.NoError(t, err)
		clients = append(clients, c)
	}
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	families, err := reg.Gather()
	require.NoError(t, err)
	found := false
	for _, f := range families {
		if f.GetName() != "pulsar_client_connections_opened" {
			continue
		}
		found = true
		var clusters []string
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "cluster" {
					clusters = append(clusters, l.GetValue())
				}
			}
		}
		assert.ElementsMatch(t, []string{"east", "west"}, clusters, "one series per cluster")
	}
	assert.True(t, found, "pulsar_client_connections_opened is registered at NewClient")
}
