// Package txn is the end-to-end suite of the producer's transactions: it
// starts five real local Pulsar clusters with internal/testbed and checks
// that committed transactions are visible exactly once, in per-key order,
// on the clusters Placement names; that a staged abort sends nothing and
// leaves no aborted transaction on any broker; that killing a cluster
// between the sends and the commits yields a *producer.PartialCommitError
// naming the clusters exactly while the others' messages are visible once;
// that bulk sends commit everything; that consume-transform-produce
// writes every input exactly once, in key order, when the processor (a
// separate process, e2e/internal/ctpproc) is SIGKILLed mid-stream; and it
// pins the upstream bug apache/pulsar-client-go#1498 (messages of an
// aborted transaction are still delivered) with a canary that fails the
// day the bug is fixed.
//
// The specs and the benchmark are behind the e2e build tag:
//
//	go test -tags e2e -count=1 -timeout 30m ./e2e/txn/
//	go test -tags e2e -run '^$' -bench . -benchtime 1x -timeout 30m ./e2e/txn/
package txn
