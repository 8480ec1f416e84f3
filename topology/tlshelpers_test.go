package topology_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// testCA is a certificate authority made up for one test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

// certSpec describes a certificate to issue.
type certSpec struct {
	cn        string
	dnsNames  []string
	ips       []net.IP
	client    bool // client auth instead of server auth
	notBefore time.Time
	notAfter  time.Time
}

func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	return key
}

func serial(t *testing.T) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	require.NoError(t, err)
	return n
}

func newCA(t *testing.T, cn string) *testCA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

func (ca *testCA) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// issue signs a leaf for s with ca, or self-signs it when ca is nil. It
// returns the certificate and its PEM certificate and key.
func (ca *testCA) issue(t *testing.T, s certSpec) (tls.Certificate, []byte, []byte) {
	t.Helper()
	key := newKey(t)
	if s.notBefore.IsZero() {
		s.notBefore = time.Now().Add(-time.Hour)
	}
	if s.notAfter.IsZero() {
		s.notAfter = time.Now().Add(time.Hour)
	}
	usage := x509.ExtKeyUsageServerAuth
	if s.client {
		usage = x509.ExtKeyUsageClientAuth
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(t),
		Subject:      pkix.Name{CommonName: s.cn},
		DNSNames:     s.dnsNames,
		IPAddresses:  s.ips,
		NotBefore:    s.notBefore,
		NotAfter:     s.notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
	}
	parent, signer := tmpl, key
	if ca != nil {
		parent, signer = ca.cert, ca.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	require.NoError(t, err)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	require.NoError(t, err)
	return cert, certPEM, keyPEM
}

// writeFile writes data to name in dir and returns the path.
func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, data, 0o600))
	return p
}

// handshake is what the test server saw of one TLS handshake.
type handshake struct {
	err        error
	clientCert *x509.Certificate // nil when the client sent none
}

// tlsServer accepts TCP connections on 127.0.0.1, runs the TLS handshake,
// records it and closes the connection. It speaks no Pulsar.
type tlsServer struct {
	addr string

	mu   sync.Mutex // guards seen
	seen []handshake
}

// startTLSServer serves cert. When clientCAs is non-nil it requires a
// client certificate signed by them. The server stops when the test ends.
func startTLSServer(t *testing.T, cert tls.Certificate, clientCAs *x509.CertPool) *tlsServer {
	t.Helper()
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}}
	if clientCAs != nil {
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
		cfg.ClientCAs = clientCAs
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	require.NoError(t, err)
	s := &tlsServer{addr: ln.Addr().String()}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { s.serve(conn.(*tls.Conn)) })
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		wg.Wait()
	})
	return s
}

func (s *tlsServer) serve(conn *tls.Conn) {
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	h := handshake{err: conn.HandshakeContext(ctx)}
	if h.err == nil {
		if pc := conn.ConnectionState().PeerCertificates; len(pc) > 0 {
			h.clientCert = pc[0]
		}
	}
	s.mu.Lock()
	s.seen = append(s.seen, h)
	s.mu.Unlock()
}

// handshakes returns the handshakes seen so far.
func (s *tlsServer) handshakes() []handshake {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]handshake(nil), s.seen...)
}

// waitHandshakes waits until the server has seen n handshakes and returns
// all it has seen.
func (s *tlsServer) waitHandshakes(t *testing.T, n int) []handshake {
	t.Helper()
	require.Eventually(t, func() bool { return len(s.handshakes()) >= n }, 5*time.Second, 5*time.Millisecond,
		"server saw fewer than %d handshakes", n)
	return s.handshakes()
}

// dial connects to s the way pulsar-client-go v0.21.0 does: with
// tls.DialWithDialer and the host:port of the broker, so crypto/tls fills
// in an empty ServerName from the address. The handshake completes on
// both sides before dial returns.
func (s *tlsServer) dial(cfg *tls.Config) error {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", s.addr, cfg)
	if err != nil {
		return err
	}
	defer conn.Close()
	// With TLS 1.3 the server checks the client certificate after the
	// client's handshake is done; wait for its verdict (it closes the
	// connection either way).
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, _ = conn.Read(make([]byte, 1))
	return nil
}
