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
// returns it; SendAsync calls its callback exactly once. The path of a
// message, in ten lines:
//
//	Send / SendAsync(ctx, msg, cb)
//	  route: key -> xxhash -> cluster -> partition (router)
//	  admit: cluster down? (OnClusterDown)  buffer share free? (waits on ctx)
//	  refused here (ctx ended, down, full, closed): outcome = not written
//	  else hand over: the partition's single writer (pulsar-client-go) batches it
//	  the writer reports: ack, send timeout, close, ... (any goroutine)
//	  the cluster's callback goroutine takes every outcome, refusals included,
//	    and reports them per partition in hand-over order:
//	    Observer.OnDone, then cb (or Send returns), then the buffer share is freed
//
// So the callbacks (and Send's returns) of one key come in the order the
// messages were handed over, failures before acceptance included: a
// message refused because its ctx had ended is reported after the key's
// earlier messages still in flight, never before. (So under FailFast, the
// ErrClusterDown of a stalled cluster's keys come only once the messages
// held there ahead of them have their outcome: their ack, or the send
// timeout.) Send waits for that
// turn even when it fails before hand-over. Only a message with no key to
// order by (nil message, nil Producer) is called back at once on the
// caller's goroutine.
//
// Callbacks run on the cluster's callback goroutine, never on
// pulsar-client-go's connection goroutines: a slow callback delays later
// callbacks of that cluster only, and holds that cluster's share of the
// buffer until it returns. A callback must not block for long, and must
// not wait for other outcomes: Send, Flush and Close called from a
// callback return ErrInCallback at once, and a SendAsync from a callback
// that would have to wait for buffer space gets ErrInCallback (through
// its own callback) rather than wait for the callback that holds it.
//
// Every error can be asked two questions. NotWritten(err): was the
// message definitely not written, so that sending it again cannot
// duplicate it? It is true for every refusal before hand-over and for the
// errors pulsar-client-go reports before the message leaves the client;
// false when the outcome is unknown (a send timeout, a Send whose ctx
// ended after hand-over, a message failed by Close). Reason(err): a stable
// ReasonCode to switch on or count.
//
// A Send whose ctx ends after hand-over returns at once with an
// outcome-unknown error matching ctx.Err(); the message keeps its share of
// the buffer until pulsar-client-go reports it (Observer.OnDone sees its
// real outcome).
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
// as down; Health reports the state. While down it is probed every
// DownProbeInterval (a topic lookup, which writes nothing), whatever the
// traffic: it is up again at its next acknowledgement, or, once it holds
// no message, at its first successful probe. What
// happens to new messages for a down cluster is the OnClusterDown policy:
// FailFast (the default: ErrClusterDown at once), WaitUp (wait a bounded
// time for recovery) or Spill (send to the key's next cluster, which breaks
// per-key order). Messages accepted before the cluster went down stay with
// its writers: they are written when it comes back, or fail at the send
// timeout.
//
// A cluster that does not answer New within StartTimeout starts down the
// same way, and joins by itself once it answers (see New). So a service
// can start, and keep its other clusters' keys flowing, while one cluster
// is out.
//
// # Changing the topology
//
// Update applies a new topology while messages flow, as the producer of
// router/HANDOVER.md, section 5: only the keys whose owner changes move;
// each old owner partition they leave gets a marker, their messages wait
// in memory until its acknowledgement, then go to the new owner tagged
// with where their earlier ones lie. HandoverTimeout bounds that wait
// for an old owner that does not answer, and OnClusterDown decides what
// the held messages do then (section 7.1); Spill's possible reorder is
// logged and told to a ChangeObserver. A cluster that has not joined
// (StartTimeout) was never written, so it owes no marker (section 7.6).
// A topic found with more partitions is a change of its own
// (PartitionsAutoDiscoveryInterval). LastChange and a ChangeObserver
// report each change.
//
// # Transactions
//
// Txn (BeginTxn, RunInTxn, SendTxnBulk) stages messages and writes them at
// Commit, one Pulsar transaction per touched cluster. A transaction is
// atomic within a cluster, not across clusters; see Txn for the exact
// guarantee and for the pulsar-client-go bug (#1498) it works around. A
// commit takes a Pulsar transaction begun ahead when it can (TxnPrebegin),
// so it waits for no begin. SendTxnBulk cuts an import into transactions of
// one partition each, written in batches through writers reserved for it,
// the next written while the one before commits.
//
// # Errors
//
// Errors that concern one message are *SendError values naming the key,
// cluster and partition; they match the sentinels in errors.go with
// errors.Is, and a ctx that ended matches errors.Is(err, ctx.Err()).
// NotWritten and Reason classify them (and every other error of the
// package) without reading their text.
//
// # Payloads
//
// A nil or empty Value sends an empty payload; NullValue sends a Pulsar
// null value (a compaction tombstone).
//
// # Close
//
// Close honours its ctx: it flushes until ctx ends, then fails what is
// left (outcome unknown) and waits for every goroutine the Producer
// started. A method called on a nil *Producer returns ErrNilProducer.
package producer

// The files of the package, in the order a message travels:
//
//	options.go    every option (Producer and transaction), defaults, validation
//	producer.go   Producer: New, Close, the close protocol, background goroutines
//	message.go    Message, ID, Callback
//	typed.go      Typed[T]: values encoded with the Producer's Schema
//	route.go      key -> cluster -> partition, keyless spreading, the down policy's pick
//	admit.go      the cluster's buffer share (budget) and what a down cluster admits
//	health.go     cluster health: the monitor, probes, Health
//	join.go       clusters joining: at New, and later for those that did not answer
//	send.go       Send, SendAsync and the hand-over to the partition's writer; Flush
//	write.go      the writer interface and the pulsar-client-go connector
//	hook.go       the connector for package producertest's fakes (internal/hook)
//	cluster.go    a cluster, its partitions, a message in flight (inflight) and its reuse
//	outcome.go    fixing a message's outcome: acks, refusals, Close's sweep, errors
//	dispatch.go   the callback goroutine: outcomes in hand-over order, Flush barriers
//	observer.go   Observer, Event and observing a message
//	reason.go     NotWritten and Reason: outcome classes and codes
//	errors.go     sentinels and error types, transactions' included
//	internals.go  everything relied on beyond pulsar-client-go's documented API
//	txn*.go       transactions: txn.go (Txn), txn_commit.go (the attempt), then
//	              txn_begin.go, txn_send.go, txn_abort.go by phase; txn_pool.go
//	              (transactions begun ahead); txn_bulk.go (SendTxnBulk's
//	              pipeline) and txn_bulk_write.go (its reserved writers);
//	              txn_observe.go
