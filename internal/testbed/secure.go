package testbed

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// Roles of the tokens a secure Bed writes. Authorization is off, so any
// role the brokers can authenticate may produce and consume; AdminRole is
// also the brokers' superuser role.
const (
	// AdminRole is the superuser role: the brokers' own internal clients
	// and the test bed's readiness and admin calls use it.
	AdminRole = "testbed-admin"
	// ClientRole is the role of the token file in Bed.Topology.
	ClientRole = "testbed-client"
)

// certValidity is how long the generated certificates are valid. A bed
// lives for one test run; the margin covers clock skew and long suites.
const certValidity = 7 * 24 * time.Hour

// secrets is the TLS and token material of one secure Bed, generated at
// Start into a directory of its own that Bed.Stop removes. It is never
// modified after newSecrets returns.
type secrets struct {
	dir string

	caFile         string // PEM CA certificate: trusted by brokers and clients
	brokerCertFile string // PEM server certificate for 127.0.0.1 and localhost
	brokerKeyFile  string // PKCS#8 PEM key of brokerCertFile
	clientCertFile string // PEM client certificate (mutual TLS)
	clientKeyFile  string // PKCS#8 PEM key of clientCertFile

	keyFile         string // HS256 secret key, raw bytes (tokenSecretKey=file://...)
	key             []byte // the same key
	adminToken      string // superuser token; never logged
	adminTokenFile  string
	clientTokenFile string // ClientRole token

	caPool     *x509.CertPool
	clientPair tls.Certificate
}

// newSecrets generates a throwaway CA, a broker and a client certificate,
// an HS256 key and two tokens into a new directory under parent ("" means
// os.TempDir()). The directory is registered like a data dir so that an
// interrupted run still removes it.
func newSecrets(parent string) (*secrets, error) {
	dir, err := os.MkdirTemp(parent, dataDirPrefix+"secrets-")
	if err != nil {
		return nil, fmt.Errorf("testbed: secrets dir: %w", err)
	}
	reaper.addDir(dir)
	s := &secrets{dir: dir}
	if err := markOwner(dir); err != nil {
		s.remove()
		return nil, fmt.Errorf("testbed: secrets dir: %w", err)
	}
	if err := s.generate(); err != nil {
		s.remove()
		return nil, fmt.Errorf("testbed: generate secrets: %w", err)
	}
	return s, nil
}

// remove deletes the secrets directory.
func (s *secrets) remove() error {
	reaper.removeDir(s.dir)
	if err := os.RemoveAll(s.dir); err != nil {
		return fmt.Errorf("testbed: remove secrets: %w", err)
	}
	return nil
}

func (s *secrets) generate() error {
	path := func(name string) string { return filepath.Join(s.dir, name) }
	s.caFile = path("ca.pem")
	s.brokerCertFile, s.brokerKeyFile = path("broker.pem"), path("broker-key.pem")
	s.clientCertFile, s.clientKeyFile = path("client.pem"), path("client-key.pem")
	s.keyFile = path("token-secret.key")
	s.adminTokenFile, s.clientTokenFile = path("admin.token"), path("client.token")

	ca, caKey, err := newCA("keyroute testbed CA")
	if err != nil {
		return err
	}
	if err := writePEM(s.caFile, "CERTIFICATE", ca.Raw, 0o644); err != nil {
		return err
	}
	s.caPool = x509.NewCertPool()
	s.caPool.AddCert(ca)

	broker, brokerKey, err := newLeaf(ca, caKey, "127.0.0.1", x509.ExtKeyUsageServerAuth)
	if err != nil {
		return err
	}
	if err := writeCertAndKey(s.brokerCertFile, s.brokerKeyFile, broker, brokerKey); err != nil {
		return err
	}
	client, clientKey, err := newLeaf(ca, caKey, ClientRole, x509.ExtKeyUsageClientAuth)
	if err != nil {
		return err
	}
	if err := writeCertAndKey(s.clientCertFile, s.clientKeyFile, client, clientKey); err != nil {
		return err
	}
	s.clientPair = tls.Certificate{Certificate: [][]byte{client.Raw}, PrivateKey: clientKey, Leaf: client}

	s.key = make([]byte, 32) // 256 bits: the minimum jjwt accepts for HS256
	if _, err := rand.Read(s.key); err != nil {
		return err
	}
	if err := os.WriteFile(s.keyFile, s.key, 0o600); err != nil {
		return err
	}
	s.adminToken = SignToken(s.key, AdminRole)
	if err := os.WriteFile(s.adminTokenFile, []byte(s.adminToken+"\n"), 0o600); err != nil {
		return err
	}
	return os.WriteFile(s.clientTokenFile, []byte(SignToken(s.key, ClientRole)+"\n"), 0o600)
}

// newCA returns a self-signed CA certificate and its key.
func newCA(cn string) (*x509.Certificate, *rsa.PrivateKey, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, nil, err
	}
	tmpl, err := certTemplate(cn)
	if err != nil {
		return nil, nil, err
	}
	tmpl.IsCA = true
	tmpl.BasicConstraintsValid = true
	tmpl.MaxPathLenZero = true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return cert, key, err
}

// newLeaf returns a certificate signed by ca for 127.0.0.1 and localhost
// (IP and DNS SANs) with the given extended key usage, and its key. RSA
// keys in PKCS#8 are what every TLS provider of the broker (JDK, Conscrypt
// and netty-tcnative) loads from PEM.
func newLeaf(ca *x509.Certificate, caKey *rsa.PrivateKey, cn string, usage x509.ExtKeyUsage) (*x509.Certificate, *rsa.PrivateKey, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, nil, err
	}
	tmpl, err := certTemplate(cn)
	if err != nil {
		return nil, nil, err
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{usage}
	tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	tmpl.DNSNames = []string{"localhost"}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return cert, key, err
}

func certTemplate(cn string) (*x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn, Organization: []string{"keyroute testbed"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(certValidity),
	}, nil
}

func writeCertAndKey(certPath, keyPath string, cert *x509.Certificate, key *rsa.PrivateKey) error {
	if err := writePEM(certPath, "CERTIFICATE", cert.Raw, 0o644); err != nil {
		return err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	return writePEM(keyPath, "PRIVATE KEY", der, 0o600)
}

func writePEM(path, typ string, der []byte, perm os.FileMode) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), perm)
}

// tlsConfig returns a client TLS config that trusts the bed's CA and
// presents the client certificate.
func (s *secrets) tlsConfig() *tls.Config {
	return &tls.Config{
		RootCAs:      s.caPool,
		Certificates: []tls.Certificate{s.clientPair},
		MinVersion:   tls.VersionTLS12,
	}
}

// httpClient returns a client for the brokers' https admin API that
// authenticates as AdminRole.
func (s *secrets) httpClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = s.tlsConfig()
	return &http.Client{Transport: &bearer{token: s.adminToken, next: tr}, Timeout: time.Minute}
}

// bearer adds a token to every request. Its String hides the token so
// that printing the client or transport does not leak it.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b *bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

func (b *bearer) String() string { return "bearer(REDACTED)" }
