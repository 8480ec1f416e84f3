// Package producer sends messages to a set of independent Pulsar clusters as
// if they were one topic.
//
// Data flows topology -> router -> producer. New opens one pulsar-client-go
// client per cluster of a validated topology.Topology and one pulsar-client-go
// producer per partition of the topic in each cluster. Send and SendAsync hash
// the message key (router.Hash), pick the owning cluster (rendezvous over the
// cluster names) and the partition inside it (router.Partition), and hand the
// message to the single writer that owns that partition.
//
// # Ordering
//
// Messages with the same non-empty key always go to the same cluster and
// partition while the topology's cluster names and weights and the topic's
// partition count stay the same (and, under the Spill policy, while their
// cluster is up). Messages of one key are written, acknowledged and
// reported (callbacks run) in the order they were handed over, across Send
// and SendAsync alike, whenever each hand-over returned before the next
// began: one goroutine's sends, or sends ordered by the caller's own
// synchronisation. Messages handed over concurrently have no order between
// them. A message with an empty key has no order promise: keyless
// messages are spread over clusters and partitions in runs of 64.
//
// # Outcomes
//
// Every message handed to Send or SendAsync gets exactly one outcome: Send
// returns it; SendAsync calls its callback exactly once. Callbacks never run
// on pulsar-client-go's connection goroutines: each cluster has one callback
// goroutine, so a slow callback delays later callbacks of that cluster only
// and holds that cluster's share of the buffer until it returns. Callbacks
// for messages that fail before they are accepted (closed producer, ctx
// ended while waiting for buffer space) run on the caller's goroutine before
// SendAsync returns.
//
// # Buffering and back-pressure
//
// MaxPendingMessages and MemoryLimit bound all clusters together and are
// shared out among clusters by routing weight, so a slow or dead cluster can
// fill only its own share: sends routed to healthy clusters go on. A send
// that finds its cluster's share full waits for space until its ctx ends.
// A message is held against the limits from the moment it is accepted until
// its callback has returned.
//
// # Cluster health
//
// A cluster that holds messages and acknowledges none for DownAfter counts
// as down until its next acknowledgement; Health reports the state. What
// happens to new messages for a down cluster is the OnClusterDown policy:
// FailFast (the default: ErrClusterDown at once), WaitUp (wait a bounded
// time for recovery) or Spill (send to the key's next cluster, which breaks
// per-key order). Messages accepted before the cluster went down stay with
// its writers: they are written when it comes back, or fail at the send
// timeout.
//
// # Transactions
//
// Txn (BeginTxn, RunInTxn, SendTxnBulk) stages messages and writes them at
// Commit, one Pulsar transaction per touched cluster. A transaction is
// atomic within a cluster, not across clusters; see Txn for the exact
// guarantee and for the pulsar-client-go bug (#1498) it works around.
//
// # Errors
//
// Errors that concern one message are *SendError values naming the key,
// cluster and partition; they match the sentinels in errors.go with
// errors.Is, and a ctx that ended matches errors.Is(err, ctx.Err()).
package producer
