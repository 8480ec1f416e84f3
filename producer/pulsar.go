package producer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/keyroute/keyroute/topology"
)

// pulsarConnector opens real clusters with pulsar-client-go.
type pulsarConnector struct{}

var codecs = map[Codec]pulsar.CompressionType{
	LZ4:           pulsar.LZ4,
	NoCompression: pulsar.NoCompression,
	ZLib:          pulsar.ZLib,
	ZSTD:          pulsar.ZSTD,
}

func (pulsarConnector) connect(ctx context.Context, cl topology.Cluster, wc writerConfig) (*link, error) {
	opts, err := cl.ClientOptions()
	if err != nil {
		return nil, err
	}
	opts.MemoryLimitBytes = wc.memoryLimit
	opts.EnableTransaction = wc.transactions
	opts.Logger = plog.DefaultNopLogger()
	if wc.logger != nil {
		opts.Logger = plog.NewLoggerWithSlog(wc.logger.With("cluster", cl.Name))
	}
	clientOptions(&opts, cl.Name, wc.configure)
	client, err := pulsar.NewClient(opts)
	if err != nil {
		return nil, err
	}
	writers, err := openWriters(ctx, client, wc)
	if err != nil {
		client.Close()
		return nil, err
	}
	l := &link{writers: writers, close: client.Close, probe: func() error {
		_, err := client.TopicPartitions(wc.topic)
		return err
	}}
	if wc.transactions {
		l.newTxn = client.NewTransaction
	}
	return l, nil
}

// openWriters creates one producer per partition. pulsar-client-go's calls
// take no ctx; they are bounded by the client's operation timeout, and ctx
// is checked between them.
func openWriters(ctx context.Context, client pulsar.Client, wc writerConfig) ([]writer, error) {
	topics, err := client.TopicPartitions(wc.topic)
	if err != nil {
		return nil, fmt.Errorf("look up partitions of %q: %w", wc.topic, err)
	}
	if len(topics) == 0 {
		return nil, fmt.Errorf("topic %q has no partitions", wc.topic)
	}
	perPartition := wc.maxPending
	writers := make([]writer, 0, len(topics))
	closeAll := func() {
		for _, w := range writers {
			w.Close()
		}
	}
	for _, t := range topics {
		if err := ctx.Err(); err != nil {
			closeAll()
			return nil, err
		}
		p, err := client.CreateProducer(pulsar.ProducerOptions{
			Topic:                   t,
			SendTimeout:             time.Duration(wc.sendTimeout),
			MaxPendingMessages:      perPartition,
			DisableBatching:         !wc.batching,
			BatchingMaxPublishDelay: time.Duration(wc.linger),
			BatchingMaxMessages:     uint(wc.batchMaxMessages),
			BatchingMaxSize:         uint(wc.batchMaxBytes),
			CompressionType:         codecs[wc.codec],
		})
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("create producer on %q: %w", t, err)
		}
		writers = append(writers, p)
	}
	return writers, nil
}

// errNoWriters guards against a connector returning an empty link.
var errNoWriters = errors.New("no partition writers")

// clientOptions labels the client's metrics with its cluster and applies
// the user's ConfigureClient. pulsar-client-go v0.21.0 registers every
// client's collectors in one registerer, with the labels as const labels:
// without a label per cluster the N clients would share (and add up in)
// the same series.
func clientOptions(o *pulsar.ClientOptions, cluster string, configure func(string, *pulsar.ClientOptions)) {
	labels := make(map[string]string, len(o.CustomMetricsLabels)+1)
	for k, v := range o.CustomMetricsLabels {
		labels[k] = v
	}
	labels["cluster"] = cluster
	o.CustomMetricsLabels = labels
	if configure != nil {
		configure(cluster, o)
	}
}
