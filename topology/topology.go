package topology

import "time"

// Topology is an ordered set of independent Pulsar clusters.
//
// The order of Clusters does not affect key placement: the router derives a
// cluster's identity from its Name.
type Topology struct {
	Clusters []Cluster `yaml:"clusters"`
}

// Cluster is one independent Pulsar cluster.
type Cluster struct {
	// Name identifies the cluster in routing, errors, logs and metrics.
	// Renaming a cluster moves its keys. It must be non-empty, unique, and
	// free of whitespace and non-printing characters.
	Name string `yaml:"name"`
	// ServiceURL is the binary-protocol URL: pulsar:// or pulsar+ssl://,
	// then one or more host[:port] separated by ',' (port default 6650,
	// or 6651 for pulsar+ssl://).
	ServiceURL string `yaml:"serviceURL"`
	// AdminURL is the HTTP admin URL: http:// or https://. Optional; the
	// producer does not use it.
	AdminURL string `yaml:"adminURL,omitempty"`
	// Weight is the cluster's relative share of keys. It must be finite
	// and > 0; YAML files that omit it get 1, code gets no default.
	Weight float64 `yaml:"weight"`
	// Auth is optional token authentication.
	Auth Auth `yaml:"auth,omitempty"`
	// TLS is optional TLS material, allowed only with pulsar+ssl://.
	TLS TLS `yaml:"tls,omitempty"`
	// Client holds optional per-cluster client settings.
	Client ClientSettings `yaml:"client,omitempty"`
	// Producer holds optional per-cluster overrides of the producer's
	// settings, e.g. a longer send timeout for a distant cluster.
	Producer ProducerSettings `yaml:"producer,omitempty"`
}

// SameClient reports whether one pulsar-client-go client serves both a
// and b: the same ServiceURL, Auth, TLS and Client settings. Name,
// Weight, AdminURL and Producer are not client settings. It is the one
// rule for a kept cluster whose settings change: keyroute.Clients
// replaces a cluster's client, a consumer subscribes again and a producer
// reconnects (the producer also when Producer changes) exactly when it is
// false.
func SameClient(a, b Cluster) bool {
	return a.ServiceURL == b.ServiceURL && a.Auth == b.Auth && a.TLS == b.TLS && a.Client == b.Client
}

// Auth configures token authentication. At most one of Token and TokenFile
// is set. Secrets never appear in errors, logs or String output: Auth
// redacts Token when formatted, logged with log/slog or encoded as JSON.
type Auth struct {
	// Token is the token itself. Prefer TokenFile or the
	// KEYROUTE_CLUSTER_<NAME>_TOKEN variable over writing it in YAML.
	Token string `yaml:"token,omitempty"`
	// TokenFile is a file holding the token, re-read by the client on each
	// use so that rotation works. Leading and trailing spaces and newlines
	// are ignored.
	TokenFile string `yaml:"tokenFile,omitempty"`
}

// TLS configures TLS for a cluster whose ServiceURL is pulsar+ssl://.
// Paths must name readable, non-empty regular files; relative paths are
// resolved against the working directory.
type TLS struct {
	// CAFile holds the PEM certificates that sign the brokers'
	// certificates. Empty means the system roots.
	CAFile string `yaml:"caFile,omitempty"`
	// CertFile and KeyFile are a PEM client certificate and key, both or
	// neither. Without a token they also authenticate the client (Pulsar
	// TLS authentication); with one they only serve mutual TLS.
	CertFile string `yaml:"certFile,omitempty"`
	KeyFile  string `yaml:"keyFile,omitempty"`
	// AllowInsecure accepts any broker certificate. For tests only.
	AllowInsecure bool `yaml:"allowInsecure,omitempty"`
	// SkipHostnameChecking accepts a broker certificate that does not
	// name the broker's host, as long as its chain still leads to a root
	// in CAFile (or, without CAFile, to a system root: then any publicly
	// trusted certificate is accepted). Expiry and key usage are still
	// checked. Host names are checked by default. See
	// Cluster.ClientOptions for how this is done.
	SkipHostnameChecking bool `yaml:"skipHostnameChecking,omitempty"`
}

// ClientSettings are per-cluster pulsar-client-go client settings. A zero
// value leaves the pulsar-client-go default in place; negative values are
// rejected. In YAML, durations are strings with a unit ("5s").
type ClientSettings struct {
	// OperationTimeout bounds producer creation and lookups (client
	// default 30s).
	OperationTimeout time.Duration `yaml:"operationTimeout,omitempty"`
	// ConnectionTimeout bounds establishing a TCP (and TLS) connection
	// (client default: none, the OS limit applies).
	ConnectionTimeout time.Duration `yaml:"connectionTimeout,omitempty"`
	// ConnectionsPerBroker is the number of TCP connections per broker.
	ConnectionsPerBroker int `yaml:"connectionsPerBroker,omitempty"`
}

// ProducerSettings override, for one cluster, the producer options of the
// same names. A zero value keeps the producer's option; negative values
// and unknown codecs are rejected. In YAML, durations are strings with a
// unit ("45s").
type ProducerSettings struct {
	SendTimeout      time.Duration `yaml:"sendTimeout,omitempty"`
	Linger           time.Duration `yaml:"linger,omitempty"`
	BatchMaxMessages int           `yaml:"batchMaxMessages,omitempty"`
	BatchMaxBytes    int           `yaml:"batchMaxBytes,omitempty"`
	// Compression is "lz4", "none", "zlib" or "zstd".
	Compression string `yaml:"compression,omitempty"`
}

// Codecs are the values ProducerSettings.Compression takes.
var Codecs = []string{"lz4", "none", "zlib", "zstd"}

// Names returns the cluster names in order. A nil t gives nil.
func (t *Topology) Names() []string {
	if t == nil {
		return nil
	}
	names := make([]string, len(t.Clusters))
	for i := range t.Clusters {
		names[i] = t.Clusters[i].Name
	}
	return names
}
