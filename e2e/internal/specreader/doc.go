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
//	partition's goroutine: waits while the partition is stopped, then
//	  Receive -> Reader.receive, under one lock:
//	  the partition's pending list (positions received, in order)
//	  marker?        processed at once; acknowledged once within the frontier
//	  keyless?       delivered at once
//	  slot queue of (cluster, partition, slot) not empty?  held behind it
//	  moved message with an origin not passed?            held (new queue)
//	  else           delivered
//	the partition's delivered frontier advances over the pending list's
//	  delivered head; queues waiting on that partition are looked at again
//
// A hold is one queue per partition and slot. Memory is bounded by
// back-pressure, not by releasing holds: when the messages held reach
// HoldLimit, each partition that holds messages is stopped, its goroutine
// taking none of its messages (they wait in pulsar-client-go's receive
// queue and on the broker) until the partition holds none; every other
// partition, the origins among them, is read on. The messages held stay
// under HoldLimit plus one per partition (one taken as its partition
// stops). Waits go back in time, so a chain of them ends at a partition
// that is read.
//
// A hold is released by force only when its origin makes no progress:
// its partition has held nothing and kept its delivered frontier for
// HoldTimeout, sampled every HoldTimeout/8. A partition that holds,
// stopped or not, counts as progressing (its own hold is judged by its
// own origin), so an origin that is being read is never given up on; one
// on a cluster not subscribed yet (Deferred), on a partition not found
// yet, or behind everything the subscription still has, is. The reader
// then gives up on that partition up to the origin: the queues waiting
// on it are delivered in order up to a message with another origin not
// passed, and later origins there up to that position pass at once.
//
// An origin on a cluster the reader does not know is not waited for and
// is reported (section 6.4). One on a partition the reader has not seen
// yet waits: the reader looks the partition count up again every
// PartitionDiscovery and subscribes the new partitions at the earliest
// position, after which the origin passes as any other.
//
// Deliver is called for each delivered message, serially, under the lock.
// Each origin given up on is reported (Release).
//
// The reader uses router's key hash and slot (SPEC.md) and router's
// property decoders (HANDOVER.md section 4, checked against known answers
// and a second implementation in Python); the rule of section 6 is its own.
package specreader
