// Package producertest fakes, in memory, the Pulsar clusters of a
// topology, so that tests and examples can run a real *producer.Producer
// without brokers, as net/http/httptest does for HTTP servers.
//
// New makes a set of fake clusters (Clusters); its Opt, given to
// producer.New, makes the Producer open each cluster of its topology as
// the fake of that name instead of connecting to Pulsar. Topology makes a
// topology for it. The Producer then runs as it does against real
// clusters (routing, buffering, ordering, callbacks, health, transactions),
// and the fake records what each partition wrote:
//
//	fake := producertest.New(producertest.Partitions(4))
//	p, err := producer.New(ctx, producertest.Topology("east", "west"),
//		producer.Topic("events"), fake.Opt())
//	...
//	id, err := p.Send(ctx, &producer.Message{Key: "user-42", Value: v})
//	msgs := fake.Cluster(id.Cluster).Partition(id.Partition).Messages()
//
// Opt reaches package producer through producer/internal/hook, which only
// producer and producertest can import, so that the fake adds nothing to
// producer's API: producer sets hook.Opt when it is initialised, Opt hands
// it the fake's connect, and producer.New calls that for each cluster in
// place of opening a pulsar-client-go client and producers.
//
// # What the fake does
//
// Each cluster holds the topic in a number of partitions (Partitions;
// default 1), and each connected Producer has one writer per partition,
// as it has one pulsar-client-go producer per partition on real clusters.
// A partition writes the messages it is sent in the order they come and,
// by default, acknowledges each at once, inside the Producer's hand-over,
// as a batch of one. It is deterministic: the same sends, in the same
// order, give the same messages, IDs and events. Cluster.Hold makes a
// cluster write messages but hold their acknowledgements until
// Partition.Ack or Cluster.Release (or report them failed:
// Partition.Fail); AsyncAcks acknowledges on a goroutine per writer
// instead, in batches, as pulsar-client-go does.
//
// Faults: a cluster's or a partition's sends fail (FailSends, FailSendAt),
// its connect fails (FailConnect) or gets no answer (BlackHole), its
// probes fail (FailProbes), its transactions cannot begin (FailBegins),
// commit (FailCommits), or get no answer (StallBegins, StallCommits), or
// it has none (Transactions).
//
// Transactions begin, commit and abort; a consumer sees a transaction's
// messages only once it has committed. Messages returns what a consumer
// would read, per partition in write order; Events returns what happened
// on every cluster (sends, acknowledgements, failures, transactions) in
// one order.
//
// # Concurrency
//
// A Clusters and its Cluster and Partition values are safe for concurrent
// use; one lock guards them all, which also orders Events. Any number of
// Producers may use one Clusters, in turn or at once; what a partition
// wrote stays when they close. Ack, AckMissing, Fail, ReportTwice and
// Release run the writers' callbacks (package producer's, which hand the
// outcome to the Producer's callback goroutine) before they return, in
// order per writer; the callbacks of a message acknowledged at once run
// on the goroutine that sent it. Any method may be called from a
// Producer's Callback or Observer, except that an Observer must not call
// those five: it may run inside them. The only goroutines the fake
// starts are those of AsyncAcks, and each ends when its writer closes, so
// a closed Producer leaves none behind.
//
// Messages, Keys and Events return copies, consistent at one instant;
// a Message shares its Properties map with what was sent.
package producertest
