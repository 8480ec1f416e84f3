// Package faults holds the fault suite: five real local Pulsar clusters
// under a steady load while one of them is killed (SIGKILL), hung
// (SIGSTOP) or restarted. It checks that the other clusters keep their
// throughput and hand-over times, that messages for the broken cluster get
// typed errors within the configured bound, that every acknowledged
// message is consumed exactly once and in key order, that a cluster broken
// for longer than the send timeout is seen up again (under Spill, with
// keyless traffic only, after a kill and restart) within a bound derived
// from the producer's settings and the mended JVM's own answer time, and
// that a Send whose ctx ends after hand-over reports an unknown outcome
// and keeps its buffer share until the real one; it reports detection and
// recovery times. Timing bounds come from the producer's settings or from
// a baseline measured in the same spec, never from fixed constants. Run it
// with `go test -tags e2e -v ./e2e/faults/`.
package faults
