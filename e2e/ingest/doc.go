// Package ingest is the end-to-end suite of the examples/ingest service: it
// starts five real local Pulsar clusters with internal/testbed, runs the
// ingest server (internal/ingest, as examples/ingest wires it) in-process
// over a keyroute producer, posts 2,000 events over 200 keys (sync and
// async), checks /healthz, shuts the server down gracefully and then reads
// every cluster with plain pulsar-client-go to check that each event was
// delivered exactly once, in per-key order, on the cluster and partition
// its key is placed on.
//
// The specs are behind the e2e build tag:
//
//	go test -tags e2e -count=1 -timeout 30m ./e2e/ingest/
package ingest
