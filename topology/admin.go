package topology

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
)

// ErrNoAdminURL is returned by AdminClient for a cluster without an
// AdminURL.
var ErrNoAdminURL = errors.New("topology: the cluster has no adminURL")

// AdminClient returns an HTTP client for the cluster's admin API
// (AdminURL) that trusts and authenticates as ClientOptions does for the
// service URL: over https, CAFile's roots (the system roots without one),
// the CertFile/KeyFile client certificate when set, AllowInsecure and
// SkipHostnameChecking; and the token (Auth.Token, or Auth.TokenFile read
// again for every request, so rotations are picked up) as a Bearer
// Authorization header. Files are checked now: a missing or unparsable one
// is a *FieldError naming the cluster and the field.
func (c Cluster) AdminClient() (*http.Client, error) {
	if c.AdminURL == "" {
		return nil, fmt.Errorf("%w (cluster %q)", ErrNoAdminURL, c.Name)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if strings.HasPrefix(c.AdminURL, "https://") {
		cfg, err := c.adminTLSConfig()
		if err != nil {
			return nil, err
		}
		tr.TLSClientConfig = cfg
	}
	return &http.Client{Transport: tokenTransport{c: c, next: tr}}, nil
}

func (c Cluster) adminTLSConfig() (*tls.Config, error) {
	if c.TLS.SkipHostnameChecking && !c.TLS.AllowInsecure {
		return c.noHostnameTLSConfig()
	}
	f := tlsFiles{cluster: c.Name, TLS: c.TLS}
	roots, err := f.roots()
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{RootCAs: roots, InsecureSkipVerify: c.TLS.AllowInsecure}
	return f.withClientCert(cfg)
}

// tokenTransport adds the cluster's token to every request.
type tokenTransport struct {
	c    Cluster
	next *http.Transport
}

// CloseIdleConnections closes the transport's idle connections, for
// http.Client.CloseIdleConnections (which looks for this method).
func (t tokenTransport) CloseIdleConnections() { t.next.CloseIdleConnections() }

func (t tokenTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	token := t.c.Auth.Token
	if t.c.Auth.TokenFile != "" {
		b, err := os.ReadFile(t.c.Auth.TokenFile)
		if err != nil {
			return nil, &FieldError{Cluster: t.c.Name, Index: -1, Field: "auth.tokenFile",
				Reason: fmt.Sprintf("%q: %v", t.c.Auth.TokenFile, pathCause(err)), Err: ErrUnreadableFile}
		}
		token = strings.TrimSpace(string(b))
	}
	if token == "" {
		return t.next.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+token)
	return t.next.RoundTrip(r)
}
