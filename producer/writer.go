package producer

import (
	"context"
	"log/slog"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/keyroute/keyroute/topology"
)

// writer is the part of a pulsar-client-go producer (on one partition) that
// the Producer uses. Unit tests substitute fakes.
type writer interface {
	Send(ctx context.Context, msg *pulsar.ProducerMessage) (pulsar.MessageID, error)
	SendAsync(ctx context.Context, msg *pulsar.ProducerMessage, cb func(pulsar.MessageID, *pulsar.ProducerMessage, error))
	FlushWithCtx(ctx context.Context) error
	Close()
}

// link is an open connection to one cluster: a writer per partition, in
// partition order, and a func that releases the connection after the
// writers are closed.
type link struct {
	writers []writer
	close   func()
	// probe makes a broker round trip that writes nothing (a topic
	// lookup), for the health monitor; nil: never probe.
	probe func() error
	// newTxn begins a Pulsar transaction on the cluster; nil when the
	// cluster's client has transactions off.
	newTxn func(timeout time.Duration) (pulsar.Transaction, error)
}

// writerConfig is what a connector needs to open a cluster's writers.
type writerConfig struct {
	topic            string
	batching         bool
	batchMaxMessages int
	batchMaxBytes    int
	linger           int64 // nanoseconds
	codec            Codec
	maxPending       int          // the cluster's share; per-partition queues never bind first
	memoryLimit      int64        // the cluster's share
	sendTimeout      int64        // nanoseconds
	logger           *slog.Logger // nil: no logs
	transactions     bool
	configure        func(cluster string, o *pulsar.ClientOptions) // nil: none
}

// connector opens one cluster.
type connector interface {
	connect(ctx context.Context, cl topology.Cluster, wc writerConfig) (*link, error)
}
