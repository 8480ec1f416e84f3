package producer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/keyroute/keyroute"
	"github.com/keyroute/keyroute/producer/internal/hook"
	"github.com/keyroute/keyroute/topology"
)

// writer is the part of a pulsar-client-go producer (on one partition) that
// the Producer uses; package producertest's fakes are writers too.
type writer = hook.Writer

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
	// openBulk opens a second writer per partition, in partition order,
	// reserved for SendTxnBulk; nil: the connector has none.
	openBulk func(ctx context.Context) ([]writer, error)
	// partitions reads the topic's partition count again, and openFrom
	// opens a writer on each partition from from on, for partition
	// auto-discovery; nil: the connector cannot.
	partitions func() (int, error)
	openFrom   func(ctx context.Context, from int) ([]writer, error)
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
	clients          *keyroute.Clients                             // nil: open a client per cluster
	cluster          string                                        // for the writers' names
	name             string                                        // "": names chosen by the broker
	nameSuffix       string                                        // after the writers' names, if named
	bulk             bool                                          // the writers reserved for SendTxnBulk
	level            Level
	keyBatching      bool
	chunkMax         int
	encryption       *pulsar.ProducerEncryptionInfo
	schema           pulsar.Schema
	configureWriter  func(cluster string, partition int, o *pulsar.ProducerOptions) // nil: none
}

// connector opens one cluster.
type connector interface {
	connect(ctx context.Context, cl topology.Cluster, wc writerConfig) (*link, error)
}

// emptyPayload is the payload of a message with a nil Value:
// pulsar-client-go sends a nil Payload as a null value (a tombstone).
var emptyPayload = []byte{}

// toPulsar sets pm's fields to m's. pm is usually a reused inflight's:
// every field that a message sets is stored, set or not, so that nothing
// of the inflight's last message is left.
func toPulsar(pm *pulsar.ProducerMessage, m *Message, props map[string]string) {
	pm.Key = m.Key
	pm.Payload = m.Value
	if pm.Payload == nil && !m.NullValue {
		pm.Payload = emptyPayload
	}
	pm.DeliverAfter = m.DeliverAfter
	pm.DisableReplication = m.DisableReplication
	pm.Properties = props
	pm.ReplicationClusters = m.ReplicationClusters
	pm.EventTime = m.EventTime
	pm.DeliverAt = m.DeliverAt
	pm.OrderingKey = m.OrderingKey
	pm.SequenceID = m.SequenceID
}

// storeIfNew sets *p to v unless it already holds it, so that an unchanged
// pointer field costs no write barrier while the GC marks (each pointer
// store does then). It suits a field that the goroutine has in its cache
// already: on a field it has not, the load it adds waits for memory. T
// must not be an interface type whose dynamic values may be uncomparable.
func storeIfNew[T comparable](p *T, v T) {
	if *p != v {
		*p = v
	}
}

// pulsarConnector opens real clusters with pulsar-client-go.
type pulsarConnector struct{}

var codecs = map[Codec]pulsar.CompressionType{
	LZ4:           pulsar.LZ4,
	NoCompression: pulsar.NoCompression,
	ZLib:          pulsar.ZLib,
	ZSTD:          pulsar.ZSTD,
}

func (pulsarConnector) connect(ctx context.Context, cl topology.Cluster, wc writerConfig) (*link, error) {
	var client pulsar.Client
	var err error
	closeClient := func() {}
	if wc.clients != nil {
		// Held until the writers close: a change of the Clients that
		// replaces or removes the cluster's client closes it only then,
		// once this connection's hand-over is over (see reconnect.go).
		client, closeClient, err = wc.clients.Acquire(cl.Name)
	} else {
		client, err = keyroute.Open(cl, wc.transactions, wc.memoryLimit, wc.logger, wc.configure)
		if err == nil {
			closeClient = client.Close
		}
	}
	if err != nil {
		return nil, err
	}
	writers, err := openWriters(ctx, client, wc, 0)
	if err != nil {
		closeClient()
		return nil, err
	}
	l := &link{writers: writers, close: closeClient, probe: func() error {
		_, err := client.TopicPartitions(wc.topic)
		return err
	}}
	l.partitions = func() (int, error) {
		topics, err := client.TopicPartitions(wc.topic)
		return len(topics), err
	}
	l.openFrom = func(ctx context.Context, from int) ([]writer, error) { return openWriters(ctx, client, wc, from) }
	if wc.transactions {
		l.newTxn = client.NewTransaction
		bulk := bulkConfig(wc)
		l.openBulk = func(ctx context.Context) ([]writer, error) { return openWriters(ctx, client, bulk, 0) }
	}
	return l, nil
}

// openWriters creates one producer per partition, from partition from on.
// pulsar-client-go's calls take no ctx; they are bounded by the client's
// operation timeout, and ctx is checked between them.
//
// Each producer is created on one partition's own topic name
// ("<topic>-partition-<i>"), whose partitioned metadata has no
// partitions: pulsar-client-go v0.21.0's partition auto-discovery
// (producer_impl.go, runBackgroundPartitionDiscovery and
// internalCreatePartitionsProducers, through client.TopicPartitions)
// finds that one topic at every look, so it never opens, nor writes to, a
// partition added later on its own. The Producer's own discovery
// (PartitionsAutoDiscoveryInterval) opens those and moves keys to them
// with a hand-over.
func openWriters(ctx context.Context, client pulsar.Client, wc writerConfig, from int) ([]writer, error) {
	all, err := client.TopicPartitions(wc.topic)
	if err != nil {
		return nil, fmt.Errorf("look up partitions of %q: %w", wc.topic, err)
	}
	if len(all) == 0 {
		return nil, fmt.Errorf("topic %q has no partitions", wc.topic)
	}
	if from > len(all) {
		return nil, fmt.Errorf("%w: topic %q has %d partitions, fewer than the %d open", errShrunk, wc.topic, len(all), from)
	}
	topics := all[from:]
	perPartition := wc.maxPending
	writers := make([]writer, 0, len(topics))
	closeAll := func() {
		for _, w := range writers {
			w.Close()
		}
	}
	for j, t := range topics {
		i := from + j
		if err := ctx.Err(); err != nil {
			closeAll()
			return nil, err
		}
		o := pulsar.ProducerOptions{
			Topic:                   t,
			SendTimeout:             time.Duration(wc.sendTimeout),
			MaxPendingMessages:      perPartition,
			DisableBatching:         !wc.batching,
			BatchingMaxPublishDelay: time.Duration(wc.linger),
			BatchingMaxMessages:     uint(wc.batchMaxMessages),
			BatchingMaxSize:         uint(wc.batchMaxBytes),
			CompressionType:         codecs[wc.codec],
			CompressionLevel:        pulsar.CompressionLevel(wc.level),
			EnableChunking:          wc.chunkMax > 0,
			ChunkMaxMessageSize:     uint(wc.chunkMax),
			Encryption:              ownCopy(wc.encryption),
			Schema:                  wc.schema,
		}
		if wc.keyBatching {
			o.BatcherBuilderType = pulsar.KeyBasedBatchBuilder
		}
		if wc.name != "" {
			o.Name = wc.name + "-" + wc.cluster + "-" + strconv.Itoa(i)
		}
		if wc.configureWriter != nil {
			wc.configureWriter(wc.cluster, i, &o)
			o.Topic = t
		}
		if o.Name != "" {
			o.Name += wc.nameSuffix
		}
		if wc.bulk && o.ProducerAccessMode != pulsar.ProducerAccessModeShared {
			// A second producer on the partition would be refused.
			closeAll()
			return nil, errBulkNotShared
		}
		p, err := client.CreateProducer(o)
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("create producer on %q: %w", t, err)
		}
		writers = append(writers, p)
	}
	return writers, nil
}

// Batch limits of the writers reserved for SendTxnBulk. They flush at the
// end of each transaction, so larger limits put a transaction in fewer
// batches (fewer broker entries) without delaying anything;
// pulsar-client-go still cuts batches at the broker's maximum message size.
const (
	bulkBatchMaxMessages = DefaultTxnMaxMessages
	bulkBatchMaxBytes    = 4 << 20
)

// bulkConfig is the configuration of the writers reserved for SendTxnBulk:
// wc's, with larger batches, and names (when the writers have names, from
// Name or ConfigureWriter) ending in "-bulk".
func bulkConfig(wc writerConfig) writerConfig {
	wc.batchMaxMessages = max(wc.batchMaxMessages, bulkBatchMaxMessages)
	wc.batchMaxBytes = max(wc.batchMaxBytes, bulkBatchMaxBytes)
	wc.nameSuffix = "-bulk"
	wc.bulk = true
	return wc
}

// errBulkNotShared is openBulk's answer when ConfigureWriter sets a
// ProducerAccessMode other than Shared: a partition then takes no second
// producer, and SendTxnBulk writes through the partitions' own writers.
var errBulkNotShared = errors.New("the writers' access mode is not shared")

// errShrunk is the error of a topic found with fewer partitions than the
// Producer writes: Pulsar cannot shrink a partitioned topic, so it was
// deleted and made again; the Producer goes on with the partitions it has.
var errShrunk = errors.New("the topic's partition count shrank")

// errNoWriters guards against a connector returning an empty link.
var errNoWriters = errors.New("no partition writers")

// overrideFor applies a cluster's producer settings from the topology
// (validated there: no negatives, known codecs) over the options.
func overrideFor(wc *writerConfig, s topology.ProducerSettings) {
	if s.SendTimeout > 0 {
		wc.sendTimeout = int64(s.SendTimeout)
	}
	if s.Linger > 0 {
		wc.linger = int64(s.Linger)
	}
	if s.BatchMaxMessages > 0 {
		wc.batchMaxMessages = s.BatchMaxMessages
	}
	if s.BatchMaxBytes > 0 {
		wc.batchMaxBytes = s.BatchMaxBytes
	}
	if s.Compression != "" {
		wc.codec, _ = ParseCodec(s.Compression) // checked by topology.Validate
	}
}

// ownCopy gives each writer its own ProducerEncryptionInfo: pulsar-client-go
// v0.21.0 stores the writer's MessageCrypto in the struct it is given
// (producer_partition.go, newPartitionProducer), so writers sharing one
// would share that writer's data key and log its partition, and the
// writers of the clusters, opened in parallel, would race on the store.
func ownCopy(e *pulsar.ProducerEncryptionInfo) *pulsar.ProducerEncryptionInfo {
	if e == nil {
		return nil
	}
	c := *e
	c.Keys = append([]string(nil), e.Keys...)
	return &c
}
