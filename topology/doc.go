// Package topology describes the set of independent Pulsar clusters that a
// keyroute producer writes to: their names, URLs, routing weights, auth and
// TLS material, and per-cluster client settings.
//
// Data flows topology -> router -> producer: a Topology is loaded (from YAML
// or built in code), validated once, and handed to producer.New, which builds
// a router over the cluster names and weights and one Pulsar client per
// cluster.
package topology
