// Package testbed runs independent local Apache Pulsar standalone clusters
// for the project's end-to-end tests, examples and benchmarks.
//
// It owns everything between "a machine with Java and Maven" and "N
// clusters that accept produces and transactions":
//
//   - EnsureDistribution fetches the pinned Pulsar server distribution from
//     Maven Central with the mvn client, checks its SHA-512 and unpacks it
//     once into the per-user cache directory (or uses KEYROUTE_PULSAR_HOME).
//   - Start picks free ports, writes one broker config per cluster, starts
//     one JVM per cluster (reusing a class-data-sharing archive kept next to
//     the cached distribution) and returns only once a real produce and a
//     real transaction have succeeded on every cluster.
//   - A Bed hands the clusters to the rest of the project as a
//     *topology.Topology (topology -> router -> producer), and each Cluster
//     can be stopped, killed, paused, resumed and restarted for fault tests.
//   - With Options.Secure the clusters accept only TLS with a client
//     certificate and only token-authenticated clients. Start generates the
//     material in Go (a throwaway CA, RSA certificates in PKCS#8 PEM, an
//     HS256 key and tokens signed by SignToken) into a directory that
//     Bed.Stop removes; the topology then carries pulsar+ssl:// and https://
//     URLs, the TLS files and a token file, readiness goes through TLS and a
//     token as well, and no token is ever written to a config file or a log.
//
// JVMs never outlive the process that started them: each runs in its own
// process group with a parent-death signal, and the package kills every JVM
// it started when the process receives SIGINT or SIGTERM.
package testbed
