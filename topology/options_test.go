package topology_test

import (
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar/auth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/topology"
)

func provider(t *testing.T, a any) auth.Provider {
	t.Helper()
	p, ok := a.(auth.Provider)
	require.True(t, ok, "Authentication %T is not an auth.Provider", a)
	return p
}

func TestClientOptionsTLSAndToken(t *testing.T) {
	topo, f := validTopology(t)
	c := topo.Clusters[0]
	c.Client = topology.ClientSettings{OperationTimeout: 7 * time.Second, ConnectionTimeout: 3 * time.Second, ConnectionsPerBroker: 4}

	o, err := c.ClientOptions()
	require.NoError(t, err)
	assert.Equal(t, c.ServiceURL, o.URL)
	assert.Equal(t, 7*time.Second, o.OperationTimeout)
	assert.Equal(t, 3*time.Second, o.ConnectionTimeout)
	assert.Equal(t, 4, o.MaxConnectionsPerBroker)
	assert.Equal(t, f.ca, o.TLSTrustCertsFilePath)
	assert.Equal(t, f.cert, o.TLSCertificateFile)
	assert.Equal(t, f.key, o.TLSKeyFilePath)
	assert.True(t, o.TLSValidateHostname, "host names are checked by default")
	assert.False(t, o.TLSAllowInsecureConnection)

	p := provider(t, o.Authentication)
	assert.Equal(t, "token", p.Name())
	data, err := p.GetData()
	require.NoError(t, err)
	assert.Equal(t, secret, string(data))
}

func TestClientOptionsTLSFlags(t *testing.T) {
	topo, _ := validTopology(t)
	c := topo.Clusters[0]
	c.TLS.AllowInsecure = true
	c.TLS.SkipHostnameChecking = true
	o, err := c.ClientOptions()
	require.NoError(t, err)
	assert.True(t, o.TLSAllowInsecureConnection)
	assert.False(t, o.TLSValidateHostname)
}

func TestClientOptionsTokenFile(t *testing.T) {
	topo, _ := validTopology(t)
	o, err := topo.Clusters[1].ClientOptions()
	require.NoError(t, err)
	assert.Equal(t, "pulsar://b.west.example:6650", o.URL)
	assert.Empty(t, o.TLSTrustCertsFilePath)
	assert.False(t, o.TLSValidateHostname, "no TLS on pulsar://")
	assert.Zero(t, o.OperationTimeout, "zero keeps the client default")
	assert.Zero(t, o.MaxConnectionsPerBroker)

	p := provider(t, o.Authentication)
	assert.Equal(t, "token", p.Name())
	data, err := p.GetData()
	require.NoError(t, err)
	assert.Equal(t, secret, string(data), "the trailing newline is trimmed")
}

func TestClientOptionsTLSAuth(t *testing.T) {
	topo, _ := validTopology(t)
	c := topo.Clusters[0]
	c.Auth = topology.Auth{}
	o, err := c.ClientOptions()
	require.NoError(t, err)
	assert.Equal(t, "tls", provider(t, o.Authentication).Name())
}

func TestClientOptionsNoAuth(t *testing.T) {
	c := topology.Cluster{Name: "plain", ServiceURL: "pulsar://localhost:6650", Weight: 1}
	o, err := c.ClientOptions()
	require.NoError(t, err)
	assert.Nil(t, o.Authentication)
}

func TestClientOptionsErrorsNameCluster(t *testing.T) {
	c := topology.Cluster{Name: "east", ServiceURL: "http://east", Weight: 1, Client: topology.ClientSettings{ConnectionsPerBroker: -1}}
	_, err := c.ClientOptions()
	require.ErrorIs(t, err, topology.ErrBadURL)
	require.ErrorIs(t, err, topology.ErrBadSetting)
	fes := fieldErrors(t, err)
	require.Len(t, fes, 2)
	for _, fe := range fes {
		assert.Equal(t, "east", fe.Cluster)
		assert.Equal(t, -1, fe.Index)
	}
	assert.Equal(t, `topology: cluster "east": serviceURL: scheme "http" is not pulsar:// or pulsar+ssl://: bad URL`, fes[0].Error())
}
