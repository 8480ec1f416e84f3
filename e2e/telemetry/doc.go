//go:build e2e

// Package telemetry measures what plugin/kotel costs end to end: SendAsync
// through a real producer to one local Pulsar cluster, with and without an
// Observer. It holds benchmarks only (see bench_test.go).
package telemetry
