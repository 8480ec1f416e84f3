// Package consumer reads a topic that keyroute's producer spreads over a
// set of independent Pulsar clusters back as one stream.
//
// Data flows topology -> consumer. New subscribes one subscription name on
// the topic on every cluster of a validated topology.Topology, with one
// pulsar-client-go client per cluster and one pulsar-client-go consumer
// per partition there (with Retry, one per cluster, over every partition
// and the retry topic). The path of a message, in a few lines:
//
//	broker (cluster c, partition p) -> pulsar-client-go's receiver queue
//	  (MaxBuffered, split over the partitions of every cluster) -> p's
//	  pulsar-client-go consumer channel (p's messages, in order)
//	Receive / ReceiveBatch / ReceiveInto: the caller's goroutine takes
//	  from the partitions' channels in turn (a busy one cannot starve
//	  the others), and waits on all of them only when all are empty (a
//	  silent or unreachable cluster holds nobody up); Observer.OnReceive
//	Chan(): the same, through one goroutine that hands each message over
//	Ack / Nack / AckCumulative by message or ID -> p's pulsar-client-go
//	  consumer (acknowledgements grouped as AckGrouping says)
//
// No goroutine of the Consumer stands between the brokers' client and the
// caller of Receive or ReceiveBatch, and the Consumer reads nothing ahead
// of its caller: what is not taken stays in pulsar-client-go's queues.
// Over several topics (Topics), each topic is read by a Consumer of its
// own, whose Chan the Consumer merges, the topics taking turns.
// ReceiveBatch returns up to max messages already there in one
// allocation, in the manner of franz-go's PollFetches; ReceiveInto fills a
// buffer the caller reuses and allocates nothing.
//
// # Ordering
//
// The messages of one partition of one cluster are delivered in the order
// the broker dispatches them, which for Exclusive, Failover and KeyShared
// subscriptions is the order they were written: since the producer sends
// every message of a key to one cluster and partition, a key's messages
// come in the order they were sent. Messages of different partitions or
// clusters have no order between them. A message that is not acknowledged
// (the process died, Nack, a broker restart) comes again, after the ones
// that were delivered after it: Pulsar redelivers, it does not rewind.
//
// # Clusters that fail
//
// Each cluster's pulsar-client-go consumer reconnects by itself, for as
// long as it takes. While a cluster is unreachable the others keep
// flowing; its messages come once it is back. (With AckWithResponse, an
// Ack of the unreachable cluster's message waits until it is back:
// acknowledge off the receive loop.) Health reports per cluster
// whether its last probe (a topic lookup every ProbeInterval) answered,
// the messages delivered, redelivered, acknowledged and nacked, the lag,
// and the backlog when the topology gives the cluster an admin URL.
//
// New does not need every cluster: it returns once all are subscribed, or
// once StartTimeout has passed with at least one; a cluster that has not
// answered by then starts down (Health: Connected false, Err) and joins by
// itself when it answers, subscribing at Earliest so that nothing written
// there meanwhile is skipped. A cluster that answers with an error (a
// missing topic) fails New, naming it; RequireAllClusters keeps the
// all-or-nothing start.
//
// # Changing the topology
//
// Update applies a new topology while the stream flows: clusters added are
// subscribed at Earliest, clusters removed are read until their backlog is
// 0 (bounded by DrainTimeout) and then closed, clusters whose URLs or
// credentials changed are reconnected on the same subscription, and
// weights are ignored. A bad topology is refused and the old one keeps
// running. Takes read the set of clusters from one atomic snapshot, with
// no lock per message. The Consumer also looks each cluster's partition
// count up (PartitionsAutoDiscoveryInterval) and, when a cluster's topic
// grew, subscribes the new partitions alone, from their first message.
//
// # The hand-over of moving keys
//
// The Consumer is a reader of router/HANDOVER.md, section 6: it takes
// markers (never delivered; acknowledged once their position has
// passed), holds a moved key's messages per partition and slot until
// their origins pass, and reports every place where a hold does not go
// to plan through a HandoverObserver (one HandoverEvent each) and
// Health's counters (Held, ForcedReleases, Unordered, BadHandover). The
// bounds of section 6.3 are HoldTimeout and MaxHeld. A cluster an Update
// adds, or one that joins after New, and a partition found later are
// subscribed at Earliest whatever InitialPosition says, as section 9
// requires. Messages read from the retry topic (Retry) are delivered as
// they come, never held (section 6.5). With shared keyroute.Clients,
// Clients.Update applies a change to consumers and producers in section
// 9's three steps.
//
// # Positions
//
// A message's ID (cluster, partition, Pulsar message ID) is its position.
// StartAfter starts a Consumer, and SeekByID moves a running one, just
// after saved IDs, per cluster and partition: the cursors are moved over
// each cluster's admin API (position.go), before the cluster subscribes
// or while SeekByID has its subscription closed. The fakes of package
// consumertest move their own cursors and need no admin API.
//
// # Concurrency
//
// A Consumer is safe for concurrent use: any number of goroutines may
// Receive (each message goes to one of them), Ack, Nack, SeekByTime,
// SeekByID and Update.
// Close stops the stream first: a Receive or ReceiveBatch waiting returns
// ErrClosed and Chan is closed; then it closes the clusters' consumers,
// which sends the grouped acknowledgements, and waits for every goroutine
// it started. Observer methods run on the callers' goroutines and on
// Chan's (see Observer).
package consumer
