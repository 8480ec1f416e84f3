// Package parity holds the end-to-end suite of the producer's parity with
// pulsar-client-go: for each pulsar-client-go producer feature the
// keyroute producer exposes (shared clients, schemas, per-message fields,
// stable names with broker deduplication, chunking, end-to-end encryption,
// compression level, key-based batching, per-cluster overrides), it writes
// through keyroute on three real local Pulsar clusters and reads back with
// plain pulsar-client-go consumers, or looks at the broker's stored copy
// through the admin API where a consumer cannot see a field.
//
// The clusters start once for the whole suite, with two broker settings
// that the other specs do not notice: a 256 KiB maxMessageSize (so that a
// message above the broker's limit is cheap to make) and strict delayed
// delivery (a delayed message is never dispatched before its time).
// Deduplication and the schema compatibility strategy are namespace
// policies set over the admin API on namespaces of their own.
//
// Run it with `go test -tags e2e ./e2e/parity/`.
package parity
