// Package hook lets package consumertest stand in for the Pulsar clusters
// of a Consumer without adding to package consumer's exported API: only
// consumer and consumer/consumertest can import it.
//
// The flow: consumertest builds a Connect and a Position and hands them to
// Opt, which package consumer sets in an init function; Opt returns a
// consumer.Opt (as any: hook cannot import consumer), which consumertest
// hands to its users. consumer.New then calls Connect once per cluster
// instead of opening a pulsar-client-go client and subscribing, and the
// positions (consumer.StartAfter, Consumer.SeekByID) call the Position
// instead of the cluster's admin API.
package hook

import (
	"context"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// Stream is the part of a pulsar-client-go consumer (over every partition
// of the topic on one cluster) that package consumer uses; pulsar.Consumer
// satisfies it.
type Stream interface {
	Chan() <-chan pulsar.ConsumerMessage
	Ack(pulsar.Message) error
	AckID(pulsar.MessageID) error
	AckCumulative(pulsar.Message) error
	AckIDCumulative(pulsar.MessageID) error
	Nack(pulsar.Message)
	NackID(pulsar.MessageID)
	SeekByTime(time.Time) error
	Close()
}

// Sub is what a Consumer subscribes to on one cluster.
type Sub struct {
	Cluster      string
	Topic        string
	Subscription string
	Type         pulsar.SubscriptionType
	Earliest     bool // a new subscription starts at the first message, not after the last
	Queue        int  // the cluster's share of MaxBuffered
}

// Conn is an open subscription on one cluster. Only Stream is required.
type Conn struct {
	Stream Stream
	// Probe is a broker round trip that reads nothing, for Health; nil:
	// the cluster is never probed (always connected).
	Probe func() error
	// Close is called after the Stream is closed; nil: nothing to do.
	Close func()
	// Backlog returns the subscription's backlog on the cluster (what
	// the admin API says for a real one), for Health and for the drain
	// of a cluster an Update removed; nil: unknown.
	Backlog func() (int64, error)
}

// Connect subscribes on one cluster.
type Connect func(ctx context.Context, sub Sub) (*Conn, error)

// Position moves subscriptions on fake clusters where package consumer
// moves them over a real cluster's admin API (consumer.StartAfter,
// Consumer.SeekByID). Package consumer checks every position against
// Partitions before it calls ResetAfter, and calls ResetAfter only while
// no Stream of its own is open on that cluster's subscription.
type Position interface {
	// Partitions returns how many partitions topic has on cluster (0:
	// not partitioned), as the admin API's partitioned-topic metadata
	// does for a real one.
	Partitions(ctx context.Context, cluster, topic string) (int, error)
	// ResetAfter moves subscription on cluster and topic, on the
	// partition of id, to just after id, as the broker's resetcursor
	// with isExcluded does: the next message delivered from that
	// partition is the one after id. It creates the subscription when it
	// does not exist. An error leaves the cursor where it was.
	ResetAfter(ctx context.Context, cluster, topic, subscription string, id pulsar.MessageID) error
}

// Opt turns a Connect, and a Position (nil: none, positions then need
// the cluster's admin API), into a consumer.Opt that makes consumer.New
// subscribe on every cluster with them. Package consumer sets it when it
// is initialised.
var Opt func(Connect, Position) any
