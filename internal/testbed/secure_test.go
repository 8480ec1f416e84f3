package testbed

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testSecrets generates secrets under a test temp dir.
func testSecrets(t *testing.T) *secrets {
	t.Helper()
	s, err := newSecrets(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { s.remove() })
	return s
}

// verifyToken checks token's HS256 signature under key and returns its
// subject, independently of SignToken.
func verifyToken(t *testing.T, key []byte, token string) string {
	t.Helper()
	parts := strings.Split(strings.TrimSpace(token), ".")
	require.Len(t, parts, 3)
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	require.NoError(t, err)
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(parts[0] + "." + parts[1]))
	require.True(t, hmac.Equal(sig, mac.Sum(nil)), "HMAC does not verify")

	var header map[string]any
	b, err := base64.RawURLEncoding.DecodeString(parts[0])
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &header))
	assert.Equal(t, map[string]any{"alg": "HS256"}, header)
	var claims map[string]any
	b, err = base64.RawURLEncoding.DecodeString(parts[1])
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &claims))
	require.Len(t, claims, 1, "only sub: no expiry")
	return claims["sub"].(string)
}

func TestSignTokenKnownAnswer(t *testing.T) {
	key := make([]byte, 32)
	for i := range key {
		key[i] = byte(i)
	}
	// Computed with Python's hmac and base64 modules.
	const want = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ0ZXN0YmVkLWNsaWVudCJ9.TMWDnX6PPkF6VGkZGc8p0ugW3RgJmeC1GrUAZF0-DHo"
	assert.Equal(t, want, SignToken(key, ClientRole))
	assert.Equal(t, ClientRole, verifyToken(t, key, want))
}

func TestSignTokenEscapesRole(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	role := `a"b\c`
	assert.Equal(t, role, verifyToken(t, key, SignToken(key, role)))
}

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	blk, rest := pem.Decode(b)
	require.NotNil(t, blk)
	require.Empty(t, rest)
	require.Equal(t, "CERTIFICATE", blk.Type)
	c, err := x509.ParseCertificate(blk.Bytes)
	require.NoError(t, err)
	return c
}

func TestNewSecretsCertificates(t *testing.T) {
	s := testSecrets(t)
	ca := readCert(t, s.caFile)
	assert.True(t, ca.IsCA)
	require.NoError(t, ca.CheckSignatureFrom(ca))
	roots := x509.NewCertPool()
	roots.AddCert(ca)

	broker := readCert(t, s.brokerCertFile)
	for _, host := range []string{"127.0.0.1", "localhost"} {
		_, err := broker.Verify(x509.VerifyOptions{Roots: roots, DNSName: host,
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
		assert.NoError(t, err, host)
	}
	_, err := broker.Verify(x509.VerifyOptions{Roots: roots, DNSName: "example.com"})
	assert.Error(t, err, "the broker certificate names only the loopback host")

	client := readCert(t, s.clientCertFile)
	_, err = client.Verify(x509.VerifyOptions{Roots: roots,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	assert.NoError(t, err)

	// Keys are PKCS#8 PEM ("PRIVATE KEY"), match their certificates and
	// are readable by the owner only.
	for _, pair := range [][2]string{{s.brokerCertFile, s.brokerKeyFile}, {s.clientCertFile, s.clientKeyFile}} {
		_, err := tls.LoadX509KeyPair(pair[0], pair[1])
		require.NoError(t, err, pair[1])
		b, err := os.ReadFile(pair[1])
		require.NoError(t, err)
		blk, _ := pem.Decode(b)
		require.NotNil(t, blk)
		assert.Equal(t, "PRIVATE KEY", blk.Type)
		_, err = x509.ParsePKCS8PrivateKey(blk.Bytes)
		assert.NoError(t, err)
		st, err := os.Stat(pair[1])
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	}
}

func TestNewSecretsTokens(t *testing.T) {
	s := testSecrets(t)
	key, err := os.ReadFile(s.keyFile)
	require.NoError(t, err)
	assert.Len(t, key, 32, "raw key bytes, as tokenSecretKey=file:// expects")
	assert.Equal(t, s.key, key)
	for file, role := range map[string]string{s.adminTokenFile: AdminRole, s.clientTokenFile: ClientRole} {
		b, err := os.ReadFile(file)
		require.NoError(t, err)
		assert.Equal(t, role, verifyToken(t, key, string(b)), file)
		st, err := os.Stat(file)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	}

	other := testSecrets(t)
	assert.NotEqual(t, s.key, other.key, "every bed has its own key")

	require.NoError(t, s.remove())
	assert.NoDirExists(t, s.dir)
}

func TestSecureBrokerConfig(t *testing.T) {
	s := testSecrets(t)
	kv := brokerConfig("local-1", 1111, 2222, s, map[string]string{"superUserRoles": "me"})
	for k, v := range map[string]string{
		"brokerServicePort":                    "",
		"webServicePort":                       "",
		"brokerServicePortTls":                 "1111",
		"webServicePortTls":                    "2222",
		"tlsCertificateFilePath":               s.brokerCertFile,
		"tlsKeyFilePath":                       s.brokerKeyFile,
		"tlsTrustCertsFilePath":                s.caFile,
		"tlsRequireTrustedClientCertOnConnect": "true",
		"authenticationEnabled":                "true",
		"authenticationProviders":              tokenProvider,
		"tokenSecretKey":                       "file://" + s.keyFile,
		"authorizationEnabled":                 "false",
		"brokerClientTlsEnabled":               "true",
		"brokerClientTrustCertsFilePath":       s.caFile,
		"brokerClientCertificateFilePath":      s.clientCertFile,
		"brokerClientKeyFilePath":              s.clientKeyFile,
		"brokerClientAuthenticationPlugin":     tokenPlugin,
		"brokerClientAuthenticationParameters": "file://" + s.adminTokenFile,
		"superUserRoles":                       "me", // ExtraConfig wins
		"transactionCoordinatorEnabled":        "true",
	} {
		assert.Equal(t, v, kv[k], k)
	}
	assert.True(t, strings.HasPrefix(kv["tokenSecretKey"], "file:///"))

	base := []byte("brokerServicePort=6650\nwebServicePort=8080\ntokenSecretKey=\n")
	out := string(renderConfig(base, kv))
	assert.True(t, strings.HasPrefix(out, "brokerServicePort=\nwebServicePort=\ntokenSecretKey=file:///"), out)
	assert.Contains(t, out, "\nbrokerServicePortTls=1111\n")
	assert.NotContains(t, out, s.adminToken, "the config names the token file, not the token")

	plain := brokerConfig("local-1", 1111, 2222, nil, nil)
	assert.Equal(t, "1111", plain["brokerServicePort"])
	assert.NotContains(t, plain, "authenticationEnabled")
	assert.NotContains(t, plain, "brokerServicePortTls")
}

func TestSecureBedTopologyAndToken(t *testing.T) {
	s := testSecrets(t)
	c := &Cluster{Name: "local-1", sec: s}
	st := &setup{sec: s}
	c.confPath = t.TempDir() + "/standalone.conf"
	require.NoError(t, c.configure(st, portSet{broker: 1111, web: 2222, bookie: 3333}))
	assert.Equal(t, "pulsar+ssl://127.0.0.1:1111", c.ServiceURL)
	assert.Equal(t, "https://127.0.0.1:2222", c.AdminURL)

	b := &Bed{clusters: []*Cluster{c}, sec: s}
	assert.True(t, b.Secure())
	topo := b.Topology()
	require.NoError(t, topo.Validate())
	tc := topo.Clusters[0]
	assert.Equal(t, s.caFile, tc.TLS.CAFile)
	assert.Equal(t, s.clientCertFile, tc.TLS.CertFile)
	assert.Equal(t, s.clientKeyFile, tc.TLS.KeyFile)
	assert.False(t, tc.TLS.SkipHostnameChecking)
	assert.Equal(t, s.clientTokenFile, tc.Auth.TokenFile)
	assert.Empty(t, tc.Auth.Token)
	opts, err := tc.ClientOptions()
	require.NoError(t, err)
	assert.True(t, opts.TLSValidateHostname)

	tok, err := b.Token("someone")
	require.NoError(t, err)
	assert.Equal(t, "someone", verifyToken(t, s.key, tok))
	_, err = b.Token("")
	assert.ErrorIs(t, err, ErrBadOptions)
	_, err = (&Bed{}).Token("someone")
	assert.ErrorIs(t, err, ErrNotSecure)
	assert.False(t, (&Bed{}).Secure())
}

// TestSecureHTTPClient serves the broker certificate, requires the client
// certificate, and checks that the bed's admin client sends the AdminRole
// token.
func TestSecureHTTPClient(t *testing.T) {
	s := testSecrets(t)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		token, ok := strings.CutPrefix(auth, "Bearer ")
		if !ok || verifySub(s.key, token) != AdminRole {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if len(r.TLS.PeerCertificates) == 0 {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		fmt.Fprint(w, r.TLS.PeerCertificates[0].Subject.CommonName)
	}))
	pair, err := tls.LoadX509KeyPair(s.brokerCertFile, s.brokerKeyFile)
	require.NoError(t, err)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: s.caPool}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the plain client's failed handshake
	srv.StartTLS()
	defer srv.Close()
	require.True(t, strings.HasPrefix(srv.URL, "https://127.0.0.1:"))

	b := &Bed{sec: s}
	client := b.HTTPClient()
	defer client.CloseIdleConnections()
	resp, err := client.Get(srv.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, ClientRole, string(body), "the server saw the client certificate")
	assert.NotContains(t, fmt.Sprintf("%v %+v", client.Transport, client.Transport), s.adminToken)

	// A plain client does not trust the bed's CA.
	_, err = (&Bed{}).HTTPClient().Get(srv.URL)
	assert.Error(t, err)
}

func verifySub(key []byte, token string) string {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return ""
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return ""
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(parts[0] + "." + parts[1]))
	if !hmac.Equal(sig, mac.Sum(nil)) {
		return ""
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return ""
	}
	var claims struct {
		Sub string `json:"sub"`
	}
	if json.Unmarshal(b, &claims) != nil {
		return ""
	}
	return claims.Sub
}
