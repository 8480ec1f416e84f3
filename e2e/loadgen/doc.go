// Package loadgen is the end-to-end suite of the load generator
// (examples/loadgen): it builds the binary and runs it with short settings
// against five local clusters it starts itself, then against a topology
// file written by a test bed the suite starts (sync mode, and -compare-raw),
// checking the exit code, the final table, that every message was accounted
// for (acked + failed == sent) and the -json output.
//
// The specs are behind the e2e build tag:
//
//	go test -tags e2e -count=1 -timeout 30m ./e2e/loadgen/
package loadgen
