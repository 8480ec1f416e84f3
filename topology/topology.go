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
	// Renaming a cluster moves its keys.
	Name string `yaml:"name"`
	// ServiceURL is the binary-protocol URL: pulsar:// or pulsar+ssl://.
	ServiceURL string `yaml:"serviceURL"`
	// AdminURL is the HTTP admin URL: http:// or https://. Optional.
	AdminURL string `yaml:"adminURL,omitempty"`
	// Weight is the cluster's relative share of keys. It must be > 0;
	// YAML files that omit it get 1.
	Weight float64 `yaml:"weight"`
	// Auth is optional token authentication.
	Auth Auth `yaml:"auth,omitempty"`
	// TLS is optional TLS material.
	TLS TLS `yaml:"tls,omitempty"`
	// Client holds optional per-cluster client settings.
	Client ClientSettings `yaml:"client,omitempty"`
}

// Auth configures token authentication. At most one of Token and TokenFile
// is set. Secrets never appear in errors, logs or String output.
type Auth struct {
	Token     string `yaml:"token,omitempty"`
	TokenFile string `yaml:"tokenFile,omitempty"`
}

// TLS configures TLS for a cluster. Paths must be readable files.
type TLS struct {
	CAFile               string `yaml:"caFile,omitempty"`
	CertFile             string `yaml:"certFile,omitempty"`
	KeyFile              string `yaml:"keyFile,omitempty"`
	AllowInsecure        bool   `yaml:"allowInsecure,omitempty"`
	SkipHostnameChecking bool   `yaml:"skipHostnameChecking,omitempty"`
}

// ClientSettings are per-cluster pulsar-client-go client settings. A zero
// value leaves the pulsar-client-go default in place.
type ClientSettings struct {
	OperationTimeout  time.Duration `yaml:"operationTimeout,omitempty"`
	ConnectionTimeout time.Duration `yaml:"connectionTimeout,omitempty"`
	// ConnectionsPerBroker is the number of TCP connections per broker.
	ConnectionsPerBroker int `yaml:"connectionsPerBroker,omitempty"`
}
