// Package admin is the small slice of the Pulsar admin REST API that the
// project's tests, examples and benchmarks need: creating and deleting
// partitioned topics on one cluster and counting the entries their ledgers
// hold.
//
// New(cluster) returns a Client that calls the cluster's admin URL as its
// topology entry says: over https with its CA, client certificate and
// hostname settings, and with its token (topology.Cluster.AdminClient), so
// it works on secured clusters. Plain(adminURL) and the package-level
// functions call an admin URL without credentials, for the plain local
// test bed. It is not part of the SDK's public surface.
package admin
