// Package bedsuite runs a ginkgo e2e suite on the local test bed: it starts
// the clusters (failing the suite when they do not start, never skipping),
// prints how long each step of the suite took, checks when the suite ends
// that the test bed stopped and no JVM it started outlived it, and gives
// the suites a quiet pulsar-client-go client for a cluster.
package bedsuite
