// Package hook lets package producertest stand in for the Pulsar clusters
// of a Producer without adding to package producer's exported API: only
// producer and producer/producertest can import it (the internal-hook
// pattern of gRPC's internal package).
//
// The flow: producertest builds a Connect and hands it to Opt, which
// package producer sets in an init function; Opt returns a producer.Opt
// (as any: hook cannot import producer), which producertest hands to its
// users. producer.New then calls Connect once per cluster instead of
// opening a pulsar-client-go client.
package hook

import (
	"context"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// Writer is the part of a pulsar-client-go producer (on one partition)
// that package producer uses; pulsar.Producer satisfies it.
type Writer interface {
	Send(ctx context.Context, msg *pulsar.ProducerMessage) (pulsar.MessageID, error)
	SendAsync(ctx context.Context, msg *pulsar.ProducerMessage, cb func(pulsar.MessageID, *pulsar.ProducerMessage, error))
	FlushWithCtx(ctx context.Context) error
	Close()
}

// Conn is an open connection to one cluster, as a pulsar-client-go client
// with a producer on each partition would be. Only Writers is required.
type Conn struct {
	// Writers are the partition writers, in partition order.
	Writers []Writer
	// Probe is a broker round trip that writes nothing, for the health
	// monitor; nil: the cluster is never probed.
	Probe func() error
	// NewTxn begins a transaction on the cluster; nil: transactions are
	// off there. The producer uses it only with Transactions(true).
	NewTxn func(timeout time.Duration) (pulsar.Transaction, error)
	// BulkWriters opens a second writer per partition, in partition
	// order, reserved for bulk transactions; nil: none (bulk transactions
	// then go through Writers one message at a time).
	BulkWriters func() ([]Writer, error)
	// Close is called when the producer closes the connection, after its
	// writers; nil: nothing to do.
	Close func()
	// Partitions reads the topic's partition count again (partition
	// auto-discovery); nil: never read again.
	Partitions func() (int, error)
	// OpenPartitions opens a writer on each partition from from on, in
	// partition order (partitions added since Writers were opened).
	OpenPartitions func(from int) ([]Writer, error)
}

// Connect opens the named cluster.
type Connect func(ctx context.Context, cluster string) (*Conn, error)

// Opt turns a Connect into a producer.Opt that makes producer.New open
// every cluster with it. Package producer sets it when it is initialised.
var Opt func(Connect) any
