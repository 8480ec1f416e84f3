// Package bedsuite starts the local test bed for a ginkgo suite: it fails
// the suite when the clusters do not start (never skips), prints how long
// each step of the suite took, and checks when the suite ends that the test
// bed stopped and no JVM it started outlived it.
package bedsuite
