// Package consumertest fakes, in memory, the Pulsar clusters of a
// topology for package consumer, so that tests and examples can run a
// real *consumer.Consumer without brokers, as producertest does for the
// producer.
//
// New makes a set of fake clusters (Clusters); its Opt, given to
// consumer.New, makes the Consumer subscribe on each cluster of its
// topology as the fake of that name instead of connecting to Pulsar.
// Topology makes a topology for it. Messages are fed per cluster and
// partition with Cluster.Publish; the Consumer then reads them as it
// reads real clusters (the merge, ordering, acknowledgements, seeking by
// time, positions by ID, health), and the fake records what it did
// (Events):
//
//	fake := consumertest.New(consumertest.Partitions(2))
//	c, err := consumer.New(ctx, consumertest.Topology("east", "west"),
//		consumer.Topic("events"), consumer.Subscription("billing"), fake.Opt())
//	...
//	fake.Cluster("east").Publish(0, consumertest.Message{Key: "user-42", Value: v})
//	m, err := c.Receive(ctx)
//	err = c.Ack(ctx, m)
//	events := fake.Events() // "subscribe east billing", ..., "ack east/0:0 billing"
//
// Opt reaches package consumer through consumer/internal/hook, which only
// consumer and consumertest can import, so that the fake adds nothing to
// consumer's API.
//
// # What the fake does
//
// Each cluster holds the topic in a number of partitions (Partitions;
// default 1), each a log of the messages published on it, with IDs
// 1:entry:-1 on the partition (ledger 1, the entry its place in the log,
// no batch). A subscription is made at its first Consumer, at the first
// message (consumer.Earliest) or after the last one (consumer.Latest), and
// keeps what was acknowledged when its Consumer closes: a Consumer that
// subscribes again gets the rest. The fake serves one Consumer per
// subscription and cluster at a time (ErrBusy for a second), whatever the
// subscription type.
//
// A subscription's Consumer gets its messages from a goroutine, as from
// pulsar-client-go's, through a queue of the Consumer's share of
// MaxBuffered: the partitions take turns, each in log order. A nacked
// message comes again at once, before the others, with its
// RedeliveryCount one higher (the fake does not wait the
// NackRedeliveryDelay). A cumulative acknowledgement acknowledges every
// message of the partition up to the one named. SeekByTime marks every
// message published before the time acknowledged and every later one not,
// and drops what was queued.
//
// Positions (consumer.StartAfter, Consumer.SeekByID) need no AdminURL
// on a fake cluster: the fake moves the subscription's cursor itself, on
// the partition of each ID, just after it, as the admin API's
// resetcursor does: the messages at or before it there count as
// acknowledged, the later ones not, and the other partitions keep their
// cursor. A position inside a batch is its entry's (the fake has no
// batches). A reset makes the subscription when it does not exist (its
// other partitions start at its first Consumer's InitialPosition), is
// recorded as an OpReset Event ("reset east/0:3 billing"), and is
// refused, moving nothing, for a message the cluster does not have
// (ErrNoPosition; consumer.New and SeekByID refuse a partition it does
// not have first, with consumer.ErrBadPosition) and under an open
// Consumer of the subscription (ErrBusy). SeekByID's Events are the
// subscription's close, its resets, and its new subscribe.
//
// A Consumer's Health reports each fake subscription's backlog (what
// Cluster.Backlog says), as the admin API does for a real cluster; so does
// the drain of a cluster that Consumer.Update removes.
//
// Faults: a cluster stops delivering and its probes fail (Stall, until
// Resume), its subscribing fails (FailConnect), its probes fail
// (FailProbes), its acknowledgements fail (FailAcks).
//
// # Concurrency
//
// A Clusters and its Cluster values are safe for concurrent use; one lock
// guards them all, which also orders Events. The only goroutines the fake
// starts are one per open subscription, each ended by the Consumer's
// Close, so a closed Consumer leaves none behind.
package consumertest
