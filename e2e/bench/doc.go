// Package bench compares the SDK with raw pulsar-client-go on one real local
// Pulsar cluster, alternating the two in one run so that both see the same
// machine: async batched LZ4 throughput, sync send latency, allocations and
// client CPU per message. Run it with
//
//	go test -tags e2e -run '^$' -bench . -timeout 30m ./e2e/bench/
package bench
