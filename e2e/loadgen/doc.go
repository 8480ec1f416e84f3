// Package loadgen is the end-to-end suite of the load generator
// (examples/loadgen): it builds the binary and runs it with short settings
// against five local clusters it starts itself, then against a topology
// file written by a test bed the suite starts (sync mode, -compare-raw, an
// OpenMessaging Benchmark workload file with consumers, and pulsar-perf's
// -n, -payload-file and -histogram-file), then against the topology file
// of two TLS + token clusters (topics created through the topology's
// credentials; -cleanup deleting the topic loadgen created and keeping one
// that was there before). It checks the exit code, the final table, that
// every message was accounted for (acked + failed == sent, and every
// acknowledged message received by every subscription), the -json output,
// and that the OMB result JSON has exactly the fields of OMB's TestResult
// with sane values.
//
// testdata/small-omb.yaml is the suite's workload; -omb-minute 6s runs its
// minutes as 6 s each (6 s of warm-up, 12 s measured).
//
// The specs are behind the e2e build tag:
//
//	go test -tags e2e -count=1 -timeout 30m ./e2e/loadgen/
package loadgen
