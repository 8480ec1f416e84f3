// Package admin is the small slice of the Pulsar admin REST API that the
// project's tests, examples and benchmarks need: creating and deleting
// partitioned topics on one cluster and counting the entries their ledgers
// hold, addressed by its admin URL (the topology's Cluster.AdminURL).
//
// It talks plain HTTP (no authentication or TLS settings beyond what the
// URL implies) and is not part of the SDK's public surface.
package admin
