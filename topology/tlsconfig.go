package topology

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
)

// noHostnameTLSConfig returns the *tls.Config that ClientOptions hands to
// pulsar-client-go when TLS.SkipHostnameChecking is set and
// TLS.AllowInsecure is not.
//
// It exists because pulsar-client-go v0.21.0 cannot turn host-name
// checking off: with TLSValidateHostname false it leaves
// tls.Config.ServerName empty, and crypto/tls then fills it in from the
// dialed address, so the name is checked anyway. When ClientOptions.TLSConfig
// is set the client dials with it as is, for every broker connection.
//
// The config turns off crypto/tls's own verification (InsecureSkipVerify)
// and verifies in VerifyConnection instead: the broker's chain must lead
// to a root in CAFile (the system roots when CAFile is empty), be valid
// now and allow server authentication; only the host name is not checked.
// VerifyConnection also runs on resumed sessions.
//
// CAFile and the client certificate (CertFile and KeyFile) are read here,
// so a bad file is reported by ClientOptions, and again for every
// handshake, as pulsar-client-go does on its default path, so rotated
// files are picked up without a restart. The client certificate is sent
// whenever the broker asks for one, which also serves Pulsar TLS
// authentication (pulsar-client-go does not consult the auth provider for
// a certificate when TLSConfig is set).
//
// Errors are *FieldError values naming the cluster, the field and the
// path, never the contents.
func (c Cluster) noHostnameTLSConfig() (*tls.Config, error) {
	f := tlsFiles{cluster: c.Name, TLS: c.TLS}
	if _, err := f.roots(); err != nil {
		return nil, err
	}
	cfg := &tls.Config{
		// Verification is done by VerifyConnection, without the host name.
		InsecureSkipVerify: true,
		VerifyConnection:   f.verify,
	}
	return f.withClientCert(cfg)
}

// withClientCert makes cfg send the CertFile/KeyFile certificate when the
// server asks for one, read again for every handshake (so rotations are
// picked up); it checks the files now. Without CertFile, cfg is unchanged.
func (f tlsFiles) withClientCert(cfg *tls.Config) (*tls.Config, error) {
	if f.CertFile == "" {
		return cfg, nil
	}
	if _, err := f.clientCert(); err != nil {
		return nil, err
	}
	cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		return f.clientCert()
	}
	return cfg, nil
}

// tlsFiles reads the TLS material of one cluster. It holds no mutable
// state, so its methods are safe for concurrent handshakes.
type tlsFiles struct {
	cluster string
	TLS
}

// roots returns the pool of CAFile's certificates, or nil (the system
// roots) when CAFile is empty.
func (f tlsFiles) roots() (*x509.CertPool, error) {
	if f.CAFile == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(f.CAFile)
	if err != nil {
		return nil, f.fieldErr("tls.caFile", ErrUnreadableFile, "%q: %v", f.CAFile, pathCause(err))
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, f.fieldErr("tls.caFile", ErrBadTLSFile, "%q holds no PEM certificate", f.CAFile)
	}
	return pool, nil
}

// clientCert loads CertFile and KeyFile.
func (f tlsFiles) clientCert() (*tls.Certificate, error) {
	certPEM, err := os.ReadFile(f.CertFile)
	if err != nil {
		return nil, f.fieldErr("tls.certFile", ErrUnreadableFile, "%q: %v", f.CertFile, pathCause(err))
	}
	keyPEM, err := os.ReadFile(f.KeyFile)
	if err != nil {
		return nil, f.fieldErr("tls.keyFile", ErrUnreadableFile, "%q: %v", f.KeyFile, pathCause(err))
	}
	// X509KeyPair's errors name PEM block types at most, never contents.
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, f.fieldErr("tls.certFile", ErrBadTLSFile, "%q and %q: %v", f.CertFile, f.KeyFile, err)
	}
	return &cert, nil
}

// verify checks the broker's certificate chain against the roots, without
// a host name.
func (f tlsFiles) verify(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return fmt.Errorf("topology: cluster %q: broker sent no certificate", f.cluster)
	}
	roots, err := f.roots()
	if err != nil {
		return err
	}
	opts := x509.VerifyOptions{
		Roots:         roots, // nil: the system roots
		Intermediates: x509.NewCertPool(),
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		// DNSName is empty: the host name is not checked.
	}
	for _, ic := range cs.PeerCertificates[1:] {
		opts.Intermediates.AddCert(ic)
	}
	if _, err := cs.PeerCertificates[0].Verify(opts); err != nil {
		return fmt.Errorf("topology: cluster %q: broker certificate (host name not checked): %w", f.cluster, err)
	}
	return nil
}

func (f tlsFiles) fieldErr(field string, sentinel error, format string, args ...any) error {
	return &FieldError{Cluster: f.cluster, Index: -1, Field: field, Reason: fmt.Sprintf(format, args...), Err: sentinel}
}
