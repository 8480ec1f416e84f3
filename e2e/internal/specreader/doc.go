// Package specreader reads a keyroute topic by router/HANDOVER.md section 6
// alone, on plain pulsar-client-go consumers: one Exclusive (or Failover)
// consumer per partition of each cluster, subscribed at the earliest
// position, and none of
// keyroute's consumer package. Its job in the e2e suites is to show that
// the SPEC suffices: a second reader, written from the document, that
// keeps every key's order across a hand-over.
//
// The flow of one received message:
//
//	partition's consumer -> Reader.receive, under one lock:
//	  the partition's pending list (positions received, in order)
//	  marker?        processed at once; acknowledged once within the frontier
//	  keyless?       delivered at once
//	  slot queue of (cluster, partition, slot) not empty?  held behind it
//	  moved message with an origin not passed?            held (new queue)
//	  else           delivered
//	the partition's delivered frontier advances over the pending list's
//	  delivered head; queues waiting on that partition are looked at again
//
// An origin on a cluster the reader does not know is released at once and
// reported (section 6.4). One on a partition the reader has not seen yet
// waits: the reader looks the partition count up again every
// PartitionDiscovery and subscribes the new partitions at the earliest
// position, after which the origin passes as any other.
//
// Deliver is called for each delivered message, serially, under the lock.
// A hold older than HoldTimeout, or the oldest hold when more than
// HoldLimit messages are held, is released by force and reported (Release).
//
// The reader uses router's key hash and slot (SPEC.md) and router's
// property decoders (HANDOVER.md section 4, checked against known answers
// and a second implementation in Python); the rule of section 6 is its own.
package specreader
