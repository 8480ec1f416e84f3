// Package bench compares the SDK with raw pulsar-client-go on real local
// Pulsar clusters, alternating the two in one run so that both see the same
// machine: for the producer (-clusters, default one; the raw side is a
// plain client and producer per cluster), async batched LZ4 throughput,
// sync send latency, allocations and client CPU per message; for the
// consumer (BenchmarkConsumer, -clusters too), client CPU per message of
// one keyroute consumer against one plain consumer per cluster. Run it with
//
//	go test -tags e2e -run '^$' -bench . -timeout 30m ./e2e/bench/
//	go test -tags e2e -run '^$' -bench Async -benchtime 300000x -clusters 5 ./e2e/bench/
package bench
