package topology_test

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/topology"
)

// wrongName is the only name in the broker certificates of these tests,
// which dial 127.0.0.1.
const wrongName = "not-this-host"

var localhost = []net.IP{net.IPv4(127, 0, 0, 1)}

// mutualTLS is a TLS server that asks for a client certificate, and a
// cluster that trusts the server's certificate (issued for another name:
// hostname checking is skipped) and presents "client-1" from clientCA, with
// its files in dir.
type mutualTLS struct {
	srv      *tlsServer
	cluster  topology.Cluster
	clientCA *testCA
	dir      string
}

func newMutualTLS(t *testing.T) mutualTLS {
	t.Helper()
	dir := t.TempDir()
	ca := newCA(t, "keyroute test CA")
	clientCA := newCA(t, "keyroute client CA")
	serverCert, _, _ := ca.issue(t, certSpec{cn: wrongName, dnsNames: []string{wrongName}})
	srv := startTLSServer(t, serverCert, clientCA.pool())
	_, certPEM, keyPEM := clientCA.issue(t, certSpec{cn: "client-1", client: true})
	c := skipHostnameCluster(srv.addr, writeFile(t, dir, "ca.pem", ca.pem))
	c.TLS.CertFile = writeFile(t, dir, "client.pem", certPEM)
	c.TLS.KeyFile = writeFile(t, dir, "client-key.pem", keyPEM)
	return mutualTLS{srv: srv, cluster: c, clientCA: clientCA, dir: dir}
}

// skipHostnameCluster is a cluster for the broker at addr that trusts
// caFile and skips host-name checks.
func skipHostnameCluster(addr, caFile string) topology.Cluster {
	return topology.Cluster{
		Name:       "east",
		ServiceURL: "pulsar+ssl://" + addr,
		Weight:     1,
		TLS:        topology.TLS{CAFile: caFile, SkipHostnameChecking: true},
	}
}

func clientTLSConfig(t *testing.T, c topology.Cluster) *tls.Config {
	t.Helper()
	o, err := c.ClientOptions()
	require.NoError(t, err)
	require.NotNil(t, o.TLSConfig, "SkipHostnameChecking needs a TLSConfig")
	return o.TLSConfig
}

func TestSkipHostnameCheckingAcceptsTrustedCertForAnotherName(t *testing.T) {
	ca := newCA(t, "keyroute test CA")
	cert, _, _ := ca.issue(t, certSpec{cn: wrongName, dnsNames: []string{wrongName}})
	srv := startTLSServer(t, cert, nil)
	caFile := writeFile(t, t.TempDir(), "ca.pem", ca.pem)

	// Control: the config pulsar-client-go builds (roots, no ServerName)
	// rejects the certificate for its name alone.
	err := srv.dial(&tls.Config{RootCAs: ca.pool()})
	var hostErr x509.HostnameError
	require.ErrorAs(t, err, &hostErr)
	// The client returns once it has sent its alert; the server records
	// the failed handshake when it reads it, which under load came after
	// the next connection's handshake. Wait for it before dialling again,
	// so that the server's records are in dial order.
	assert.Error(t, srv.waitHandshakes(t, 1)[0].err, "control")

	require.NoError(t, srv.dial(clientTLSConfig(t, skipHostnameCluster(srv.addr, caFile))))
	hs := srv.waitHandshakes(t, 2)
	assert.NoError(t, hs[1].err)
}

// Only the host name is skipped: trust, validity and key usage are still
// checked.
func TestSkipHostnameCheckingRejectsUntrustedCerts(t *testing.T) {
	ca := newCA(t, "keyroute test CA")
	caFile := writeFile(t, t.TempDir(), "ca.pem", ca.pem)
	var (
		noCA       *testCA
		unknownCA  x509.UnknownAuthorityError
		invalidErr x509.CertificateInvalidError
	)
	tests := []struct {
		name   string
		issuer *testCA
		spec   certSpec
		want   any
		reason x509.InvalidReason
	}{
		{"self-signed", noCA, certSpec{cn: wrongName, dnsNames: []string{wrongName}, ips: localhost}, &unknownCA, 0},
		{"other CA", newCA(t, "other CA"), certSpec{cn: wrongName, ips: localhost}, &unknownCA, 0},
		{"expired", ca, certSpec{cn: wrongName, ips: localhost, notBefore: time.Now().Add(-2 * time.Hour), notAfter: time.Now().Add(-time.Hour)}, &invalidErr, x509.Expired},
		{"client certificate", ca, certSpec{cn: wrongName, ips: localhost, client: true}, &invalidErr, x509.IncompatibleUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cert, _, _ := tt.issuer.issue(t, tt.spec)
			srv := startTLSServer(t, cert, nil)
			err := srv.dial(clientTLSConfig(t, skipHostnameCluster(srv.addr, caFile)))
			require.ErrorAs(t, err, tt.want)
			if tt.want == &invalidErr {
				assert.Equal(t, tt.reason, invalidErr.Reason)
			}
			assert.Error(t, srv.waitHandshakes(t, 1)[0].err)
		})
	}
}

// Without a CA file the chain must lead to a system root, which a
// made-up CA does not: skipping the host name does not mean trusting all.
func TestSkipHostnameCheckingWithoutCAFileUsesSystemRoots(t *testing.T) {
	ca := newCA(t, "keyroute test CA")
	cert, _, _ := ca.issue(t, certSpec{cn: wrongName, ips: localhost})
	srv := startTLSServer(t, cert, nil)
	require.Error(t, srv.dial(clientTLSConfig(t, skipHostnameCluster(srv.addr, ""))))
	assert.Error(t, srv.waitHandshakes(t, 1)[0].err)
}

// The client certificate is sent when the broker asks (mutual TLS and
// Pulsar TLS authentication), and re-read for every handshake so that a
// rotated certificate is used without a restart.
func TestSkipHostnameCheckingSendsClientCertificate(t *testing.T) {
	m := newMutualTLS(t)
	srv, clientCA, dir := m.srv, m.clientCA, m.dir

	o, err := m.cluster.ClientOptions()
	require.NoError(t, err)
	require.NotNil(t, o.TLSConfig)
	assert.Equal(t, "tls", provider(t, o.Authentication).Name(), "no token: TLS authentication")

	require.NoError(t, srv.dial(o.TLSConfig))
	hs := srv.waitHandshakes(t, 1)
	require.NoError(t, hs[0].err)
	require.NotNil(t, hs[0].clientCert)
	assert.Equal(t, "client-1", hs[0].clientCert.Subject.CommonName)

	_, certPEM, keyPEM := clientCA.issue(t, certSpec{cn: "client-2", client: true})
	writeFile(t, dir, "client.pem", certPEM)
	writeFile(t, dir, "client-key.pem", keyPEM)
	require.NoError(t, srv.dial(o.TLSConfig))
	hs = srv.waitHandshakes(t, 2)
	require.NoError(t, hs[1].err)
	require.NotNil(t, hs[1].clientCert)
	assert.Equal(t, "client-2", hs[1].clientCert.Subject.CommonName, "rotated certificate")
}

// A CA file that stops parsing after ClientOptions fails the handshake
// with the same *FieldError.
func TestSkipHostnameCheckingRereadsCAFile(t *testing.T) {
	ca := newCA(t, "keyroute test CA")
	cert, _, _ := ca.issue(t, certSpec{cn: wrongName, dnsNames: []string{wrongName}})
	srv := startTLSServer(t, cert, nil)
	caFile := writeFile(t, t.TempDir(), "ca.pem", ca.pem)
	cfg := clientTLSConfig(t, skipHostnameCluster(srv.addr, caFile))

	require.NoError(t, os.WriteFile(caFile, []byte("not PEM\n"), 0o600))
	err := srv.dial(cfg)
	require.ErrorIs(t, err, topology.ErrBadTLSFile)
	var fe *topology.FieldError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "tls.caFile", fe.Field)
}

func TestSkipHostnameCheckingReportsBadFiles(t *testing.T) {
	const contents = "-----BEGIN CERTIFICATE-----\nc2VjcmV0LWxvb2tpbmc=\n-----END CERTIFICATE-----\n"
	ca := newCA(t, "keyroute test CA")
	clientCA := newCA(t, "keyroute client CA")
	_, certPEM, _ := clientCA.issue(t, certSpec{cn: "client", client: true})
	_, _, otherKeyPEM := clientCA.issue(t, certSpec{cn: "other", client: true})

	tests := []struct {
		name      string
		ca        []byte
		cert, key []byte // no client certificate when nil
		field     string
	}{
		{"CA file with a broken certificate", []byte(contents), nil, nil, "tls.caFile"},
		{"CA file not PEM", []byte("secret-looking\n"), nil, nil, "tls.caFile"},
		{"certificate file not PEM", ca.pem, []byte("secret-looking\n"), otherKeyPEM, "tls.certFile"},
		{"key does not match", ca.pem, certPEM, otherKeyPEM, "tls.certFile"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			c := skipHostnameCluster("127.0.0.1:6651", writeFile(t, dir, "ca.pem", tt.ca))
			if tt.cert != nil {
				c.TLS.CertFile = writeFile(t, dir, "client.pem", tt.cert)
				c.TLS.KeyFile = writeFile(t, dir, "client-key.pem", tt.key)
			}
			_, err := c.ClientOptions()
			require.ErrorIs(t, err, topology.ErrBadTLSFile)
			fes := fieldErrors(t, err)
			require.Len(t, fes, 1)
			assert.Equal(t, "east", fes[0].Cluster)
			assert.Equal(t, -1, fes[0].Index)
			assert.Equal(t, tt.field, fes[0].Field)
			assert.Contains(t, err.Error(), dir, "names the file")
			assert.NotContains(t, err.Error(), "secret-looking")
			assert.NotContains(t, err.Error(), "c2VjcmV0")
			assert.NotContains(t, err.Error(), "MII", "no PEM contents")
		})
	}
}

// Without SkipHostnameChecking, and with AllowInsecure, the file paths are
// handed to pulsar-client-go and it builds its own TLS configuration.
func TestClientOptionsUsesPulsarTLSUnlessSkippingHostnames(t *testing.T) {
	topo, f := validTopology(t) // placeholder files: they are not parsed here
	for name, tlsSettings := range map[string]topology.TLS{
		"default":        {CAFile: f.ca, CertFile: f.cert, KeyFile: f.key},
		"allow insecure": {CAFile: f.ca, AllowInsecure: true, SkipHostnameChecking: true},
	} {
		t.Run(name, func(t *testing.T) {
			c := topo.Clusters[0]
			c.TLS = tlsSettings
			o, err := c.ClientOptions()
			require.NoError(t, err)
			assert.Nil(t, o.TLSConfig)
			assert.Equal(t, f.ca, o.TLSTrustCertsFilePath)
			assert.Equal(t, tlsSettings.AllowInsecure, o.TLSAllowInsecureConnection)
			assert.Equal(t, !tlsSettings.SkipHostnameChecking, o.TLSValidateHostname)
		})
	}
}
