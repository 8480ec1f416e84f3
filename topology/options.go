package topology

import (
	"errors"

	"github.com/apache/pulsar-client-go/pulsar"
)

// ClientOptions returns pulsar-client-go options for c. It first runs the
// checks of Validate that concern c alone (not the cross-cluster duplicate
// checks) and returns their *FieldError values, which name the cluster
// (Index is -1), joined with errors.Join.
//
// The mapping:
//
//   - URL: ServiceURL.
//   - Authentication: a token (Auth.Token) or a token file re-read on every
//     use (Auth.TokenFile, so rotated tokens are picked up); with neither,
//     TLS client-certificate authentication when TLS.CertFile is set;
//     otherwise none.
//   - TLS (pulsar+ssl:// only): TLSTrustCertsFilePath from TLS.CAFile,
//     TLSCertificateFile and TLSKeyFilePath from TLS.CertFile and
//     TLS.KeyFile (a client certificate for mutual TLS, also with token
//     auth), TLSAllowInsecureConnection from TLS.AllowInsecure, and
//     TLSValidateHostname true: unlike pulsar-client-go, whose default is
//     false, keyroute checks broker host names. TLSConfig is nil.
//   - TLS with TLS.SkipHostnameChecking (and not TLS.AllowInsecure):
//     TLSConfig is set instead, and pulsar-client-go then ignores the
//     other TLS fields. pulsar-client-go v0.21.0 cannot skip the host
//     name itself: with TLSValidateHostname false, crypto/tls still checks
//     the name it dialed. The TLSConfig verifies the broker's chain
//     against TLS.CAFile (the system roots without one), its validity
//     period and server-auth key usage, but not the host name; it sends
//     the TLS.CertFile/TLS.KeyFile certificate when the broker asks for
//     one (so TLS authentication keeps working). CAFile and the client
//     certificate are read now, so a missing or unparsable file is an
//     ErrUnreadableFile or ErrBadTLSFile *FieldError, and again on every
//     handshake, so rotated files are picked up as on the default path.
//     TLSValidateHostname is false and the file fields are still filled
//     in, for the record only.
//   - TLS with TLS.AllowInsecure: as the first case, with
//     TLSAllowInsecureConnection true; pulsar-client-go then checks
//     neither chain nor host name, whatever SkipHostnameChecking says.
//   - OperationTimeout, ConnectionTimeout and MaxConnectionsPerBroker from
//     Client; zero keeps the pulsar-client-go default.
//
// Other fields (Logger, metrics, ...) are left zero for the caller to set.
func (c Cluster) ClientOptions() (pulsar.ClientOptions, error) {
	k := checker{cluster: c.Name, index: -1}
	svc := c.check(&k)
	if len(k.errs) > 0 {
		return pulsar.ClientOptions{}, errors.Join(k.errs...)
	}
	o := pulsar.ClientOptions{
		URL:                     c.ServiceURL,
		OperationTimeout:        c.Client.OperationTimeout,
		ConnectionTimeout:       c.Client.ConnectionTimeout,
		MaxConnectionsPerBroker: c.Client.ConnectionsPerBroker,
	}
	if svc.tls {
		o.TLSTrustCertsFilePath = c.TLS.CAFile
		o.TLSCertificateFile = c.TLS.CertFile
		o.TLSKeyFilePath = c.TLS.KeyFile
		o.TLSAllowInsecureConnection = c.TLS.AllowInsecure
		o.TLSValidateHostname = !c.TLS.SkipHostnameChecking
		if c.TLS.SkipHostnameChecking && !c.TLS.AllowInsecure {
			cfg, err := c.noHostnameTLSConfig()
			if err != nil {
				return pulsar.ClientOptions{}, err
			}
			o.TLSConfig = cfg
		}
	}
	switch {
	case c.Auth.Token != "":
		o.Authentication = pulsar.NewAuthenticationToken(c.Auth.Token)
	case c.Auth.TokenFile != "":
		o.Authentication = pulsar.NewAuthenticationTokenFromFile(c.Auth.TokenFile)
	case c.TLS.CertFile != "":
		o.Authentication = pulsar.NewAuthenticationTLS(c.TLS.CertFile, c.TLS.KeyFile)
	}
	return o, nil
}
