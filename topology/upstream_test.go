package topology_test

import (
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests pin pulsar-client-go behaviour that ClientOptions works
// around. They run a real pulsar-client-go client against the in-process
// TLS server, which completes or refuses the TLS handshake and then hangs
// up; no broker is needed, so producer creation always fails and only the
// handshakes the server saw matter.

// tryCreateProducer makes o's client connect to its broker once or more.
func tryCreateProducer(t *testing.T, o pulsar.ClientOptions) {
	t.Helper()
	o.Logger = plog.DefaultNopLogger()
	o.OperationTimeout = time.Second
	o.ConnectionTimeout = 2 * time.Second
	client, err := pulsar.NewClient(o)
	require.NoError(t, err)
	defer client.Close()
	_, err = client.CreateProducer(pulsar.ProducerOptions{Topic: "persistent://public/default/pin"})
	require.Error(t, err, "there is no broker")
}

// In pulsar-client-go v0.21.0, TLSValidateHostname=false does not turn
// host-name checking off: the client leaves tls.Config.ServerName empty
// and crypto/tls fills it in from the dialed address. If this test fails,
// the upstream behaviour has changed and Cluster.ClientOptions may be able
// to drop its own TLSConfig.
func TestPulsarClientChecksHostnameEvenWithTLSValidateHostnameFalse(t *testing.T) {
	ca := newCA(t, "keyroute test CA")
	caFile := writeFile(t, t.TempDir(), "ca.pem", ca.pem)
	for _, tt := range []struct {
		name string
		spec certSpec
		ok   bool
	}{
		{"certificate names 127.0.0.1", certSpec{cn: "127.0.0.1", ips: localhost}, true},
		{"certificate names another host", certSpec{cn: wrongName, dnsNames: []string{wrongName}}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cert, _, _ := ca.issue(t, tt.spec)
			srv := startTLSServer(t, cert, nil)
			tryCreateProducer(t, pulsar.ClientOptions{
				URL:                   "pulsar+ssl://" + srv.addr,
				TLSTrustCertsFilePath: caFile,
				TLSValidateHostname:   false,
			})
			hs := srv.waitHandshakes(t, 1)
			assert.Equal(t, tt.ok, hs[0].err == nil, "handshake error: %v", hs[0].err)
		})
	}
}

// pulsar-client-go v0.21.0 dials brokers with ClientOptions.TLSConfig as
// is when it is set, and does not add the TLS authentication provider's
// certificate to it: the client certificate comes from the TLSConfig
// that Cluster.ClientOptions builds.
func TestPulsarClientDialsWithClientOptionsTLSConfig(t *testing.T) {
	m := newMutualTLS(t)
	o, err := m.cluster.ClientOptions()
	require.NoError(t, err)
	tryCreateProducer(t, o)
	hs := m.srv.waitHandshakes(t, 1)
	require.NoError(t, hs[0].err)
	require.NotNil(t, hs[0].clientCert)
	assert.Equal(t, "client-1", hs[0].clientCert.Subject.CommonName)
}
