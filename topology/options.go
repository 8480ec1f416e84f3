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
//     auth), TLSAllowInsecureConnection from TLS.AllowInsecure.
//     TLSValidateHostname is true unless TLS.SkipHostnameChecking is set:
//     unlike pulsar-client-go, whose default is false, keyroute checks
//     broker host names by default.
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
