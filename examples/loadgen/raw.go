package main

import (
	"context"
	"fmt"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/keyroute/keyroute/producer"
	"github.com/keyroute/keyroute/topology"
)

// rawProducer is the baseline of -compare-raw: one pulsar-client-go client
// and one partitioned producer on one cluster, with the SDK's settings.
type rawProducer struct {
	client pulsar.Client
	p      pulsar.Producer
}

var rawCodecs = map[producer.Codec]pulsar.CompressionType{
	producer.LZ4:           pulsar.LZ4,
	producer.NoCompression: pulsar.NoCompression,
	producer.ZLib:          pulsar.ZLib,
	producer.ZSTD:          pulsar.ZSTD,
}

// openRaw connects to c and opens a partitioned producer on cfg.topic.
// MaxPendingMessages is per partition in pulsar-client-go but a total in
// the SDK, so the total is split over the partitions; the memory limit is
// per client in both.
func openRaw(cfg *config, c topology.Cluster, partitions int) (*rawProducer, error) {
	opts, err := c.ClientOptions()
	if err != nil {
		return nil, err
	}
	opts.MemoryLimitBytes = int64(cfg.memoryLimit)
	opts.Logger = plog.DefaultNopLogger()
	client, err := pulsar.NewClient(opts)
	if err != nil {
		return nil, fmt.Errorf("raw client for %s: %w", c.Name, err)
	}
	perPartition := (cfg.maxPending + partitions - 1) / max(partitions, 1)
	p, err := client.CreateProducer(pulsar.ProducerOptions{
		Topic:                   cfg.topic,
		SendTimeout:             cfg.sendTimeout,
		MaxPendingMessages:      perPartition,
		DisableBatching:         !cfg.batching,
		BatchingMaxPublishDelay: cfg.linger,
		BatchingMaxMessages:     uint(cfg.batchMaxMessages),
		BatchingMaxSize:         uint(producer.DefaultBatchMaxBytes),
		CompressionType:         rawCodecs[cfg.codec],
	})
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("raw producer on %s of %s: %w", cfg.topic, c.Name, err)
	}
	return &rawProducer{client: client, p: p}, nil
}

func (r *rawProducer) close() {
	r.p.Close()
	r.client.Close()
}

// rawSlot is the raw counterpart of sdkSlot.
type rawSlot struct {
	pm    pulsar.ProducerMessage
	start int64
	delay int64
	cb    func(pulsar.MessageID, *pulsar.ProducerMessage, error)
}

// rawAsync sends with pulsar-client-go's SendAsync, reusing slots.
type rawAsync struct {
	*load
	p    pulsar.Producer
	free chan *rawSlot
}

func newRawAsync(l *load, p pulsar.Producer, slots int) *rawAsync {
	t := &rawAsync{load: l, p: p, free: make(chan *rawSlot, slots)}
	for range slots {
		s := &rawSlot{}
		s.cb = func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
			t.rec.done(0, s.start, s.delay, err)
			t.free <- s
		}
		t.free <- s
	}
	return t
}

func (t *rawAsync) send(ctx context.Context, sender, k int, due int64) bool {
	start, delay := t.times(due)
	var s *rawSlot
	select {
	case s = <-t.free:
	case <-ctx.Done():
		return false
	}
	s.pm.Key, _ = t.key(k)
	s.pm.Payload = t.pay.fill(&t.pick[sender], nil)
	s.start, s.delay = start, delay
	t.rec.addSent(sender)
	t.p.SendAsync(ctx, &s.pm, s.cb)
	return true
}

// rawSync sends with pulsar-client-go's Send.
type rawSync struct {
	*load
	p    pulsar.Producer
	msgs []pulsar.ProducerMessage
}

func newRawSync(l *load, p pulsar.Producer, senders int) *rawSync {
	return &rawSync{load: l, p: p, msgs: make([]pulsar.ProducerMessage, senders)}
}

func (t *rawSync) send(ctx context.Context, sender, k int, due int64) bool {
	m := &t.msgs[sender]
	m.Key, _ = t.key(k)
	m.Payload = t.pay.fill(&t.pick[sender], nil)
	st, delay := t.times(due)
	t.rec.addSent(sender)
	_, err := t.p.Send(ctx, m)
	t.rec.done(0, st, delay, err)
	return true
}
