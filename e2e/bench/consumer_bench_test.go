//go:build e2e

package bench

import (
	"context"
	"fmt"
	"runtime"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/keyroute/keyroute/consumer"
	"github.com/keyroute/keyroute/internal/admin"
	"github.com/keyroute/keyroute/internal/testbed"
	"github.com/keyroute/keyroute/producer"
)

// The consumer benchmark reads one pre-produced load from the -clusters
// clusters, with the keyroute consumer and with plain pulsar-client-go
// consumers, and compares the client CPU per message.
const (
	// consumerLoad is the messages pre-produced over all clusters; one op
	// reads all of them on a new subscription (ns/op is the time of one
	// whole read, from subscribing to closing).
	consumerLoad = 300_000
	// consumerQueue is every partition's receiver queue on both sides
	// (pulsar-client-go's default).
	consumerQueue = 1000
)

// consumerSide is one way of reading the load: read takes n messages
// (acking each) on a new subscription, from its creation to its close.
type consumerSide struct {
	name string
	read func(b *testing.B, sub string, n int) int
}

// consumerRig is the topic on the benchmark's clusters that holds the
// load.
type consumerRig struct {
	bed   *testbed.Bed
	topic string
}

// BenchmarkConsumer: client CPU per message of the keyroute consumer
// (one Consumer over the -clusters clusters, each message taken with
// Receive and acked; the same with ReceiveBatch, and with ReceiveInto and
// one buffer) against one plain pulsar-client-go consumer per
// cluster (same Exclusive subscription, same receiver queue, each read
// from its own Chan by a goroutine that acks), on the same pre-produced
// load, in -rounds interleaved rounds; the last sub-benchmark reports the
// medians and what keyroute adds. Not gated: the figures are for reading.
func BenchmarkConsumer(b *testing.B) {
	rig := startConsumerRig(b)
	sides := []consumerSide{
		{"raw", rig.readRaw},
		{"keyroute", rig.readKeyroute},
		{"batch", rig.readBatch},
		{"into", rig.readInto},
	}
	// One whole unmeasured read first: the brokers' read path (and the
	// bookies' caches) settle before any figure.
	rig.readRaw(b, "warm", consumerLoad)
	cpuPerMsg := map[string][]float64{}
	allocsPerMsg := map[string][]float64{}
	subs := 0
	for round := 1; round <= *rounds; round++ {
		for i := range sides {
			side := sides[(i+round-1)%len(sides)]
			var last, allocs float64
			ran := b.Run(fmt.Sprintf("%s/round=%d", side.name, round), func(b *testing.B) {
				// The side's clients and consumers, made on this goroutine,
				// carry its label: pprof -tagfocus side=NAME.
				pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(), pprof.Labels("side", side.name)))
				defer pprof.SetGoroutineLabels(context.Background())
				runtime.GC()
				var m0, m1 runtime.MemStats
				runtime.ReadMemStats(&m0)
				cpu0, t0 := cpuTime(), time.Now()
				got := 0
				for range b.N {
					subs++
					got += side.read(b, fmt.Sprintf("bench-%d", subs), consumerLoad)
				}
				cpu, took := cpuTime()-cpu0, time.Since(t0)
				runtime.ReadMemStats(&m1)
				last = float64(cpu.Nanoseconds()) / float64(got)
				allocs = float64(m1.Mallocs-m0.Mallocs) / float64(got)
				b.ReportMetric(float64(got)/took.Seconds(), "msg/s")
				b.ReportMetric(last, "cpu-ns/msg")
				b.ReportMetric(allocs, "allocs/msg")
			})
			if ran {
				cpuPerMsg[side.name] = append(cpuPerMsg[side.name], last)
				allocsPerMsg[side.name] = append(allocsPerMsg[side.name], allocs)
			}
		}
	}
	b.Run("median", func(b *testing.B) {
		raw := median(cpuPerMsg["raw"])
		b.ReportMetric(raw, "raw-cpu-ns/msg")
		b.ReportMetric(median(allocsPerMsg["raw"]), "raw-allocs/msg")
		for _, s := range sides[1:] {
			if len(cpuPerMsg[s.name]) == 0 || raw == 0 {
				continue
			}
			kr := median(cpuPerMsg[s.name])
			b.ReportMetric(kr, s.name+"-cpu-ns/msg")
			b.ReportMetric(kr-raw, s.name+"-added-cpu-ns/msg")
			b.ReportMetric(median(allocsPerMsg[s.name]), s.name+"-allocs/msg")
		}
	})
}

// startConsumerRig pre-produces the load on the benchmark's clusters
// (TestMain's, -clusters of them).
func startConsumerRig(b *testing.B) *consumerRig {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	rig := &consumerRig{bed: bed, topic: fmt.Sprintf("persistent://public/default/cbench-%d", time.Now().UnixNano())}
	if err := produceLoad(ctx, bed, rig.topic); err != nil {
		b.Fatal(err)
	}
	return rig
}

// produceLoad writes consumerLoad messages over every cluster with the
// keyroute producer, keyed and with distinct payloads like the producer
// benchmarks.
func produceLoad(ctx context.Context, bed *testbed.Bed, topic string) error {
	for _, c := range bed.Clusters() {
		if err := admin.CreatePartitionedTopic(ctx, c.AdminURL, topic, partitions); err != nil {
			return err
		}
	}
	p, err := producer.New(ctx, bed.Topology(), producer.Topic(topic), producer.Compression(producer.LZ4))
	if err != nil {
		return err
	}
	var failed atomic.Pointer[error]
	for i := range consumerLoad {
		p.SendAsync(ctx, &producer.Message{Key: keys[i%keyCount], Value: values[i%len(values)]}, func(_ producer.ID, _ *producer.Message, err error) {
			if err != nil {
				failed.CompareAndSwap(nil, &err)
			}
		})
	}
	if err := p.Flush(ctx); err != nil {
		return err
	}
	if err := p.Close(ctx); err != nil {
		return err
	}
	if e := failed.Load(); e != nil {
		return *e
	}
	return nil
}

// readKeyroute takes n messages with one keyroute Consumer's Receive and
// acks each.
func (r *consumerRig) readKeyroute(b *testing.B, sub string, n int) int {
	b.Helper()
	return r.withConsumer(b, sub, func(ctx context.Context, c *consumer.Consumer) (int, error) {
		m, err := c.Receive(ctx)
		if err != nil {
			return 0, err
		}
		return 1, c.Ack(ctx, m)
	}, n)
}

// batchMax is the most messages one ReceiveBatch returns on the batch
// side.
const batchMax = 256

// readBatch takes n messages with one keyroute Consumer's ReceiveBatch
// and acks each.
func (r *consumerRig) readBatch(b *testing.B, sub string, n int) int {
	b.Helper()
	return r.withConsumer(b, sub, func(ctx context.Context, c *consumer.Consumer) (int, error) {
		ms, err := c.ReceiveBatch(ctx, batchMax)
		if err != nil {
			return 0, err
		}
		for i := range ms {
			if err := c.Ack(ctx, &ms[i]); err != nil {
				return i, err
			}
		}
		return len(ms), nil
	}, n)
}

// readInto takes n messages with one keyroute Consumer's ReceiveInto, into
// one buffer of batchMax messages, and acks each.
func (r *consumerRig) readInto(b *testing.B, sub string, n int) int {
	b.Helper()
	buf := make([]consumer.Message, batchMax)
	return r.withConsumer(b, sub, func(ctx context.Context, c *consumer.Consumer) (int, error) {
		got, err := c.ReceiveInto(ctx, buf)
		if err != nil {
			return 0, err
		}
		for i := range buf[:got] {
			if err := c.Ack(ctx, &buf[i]); err != nil {
				return i, err
			}
		}
		return got, nil
	}, n)
}

// withConsumer opens a keyroute Consumer on a new subscription, calls
// take until it has taken n messages (a few more when a batch ends past
// n), closes it and returns how many were taken.
func (r *consumerRig) withConsumer(b *testing.B, sub string, take func(context.Context, *consumer.Consumer) (int, error), n int) int {
	b.Helper()
	ctx := context.Background()
	c, err := consumer.New(ctx, r.bed.Topology(), consumer.Topic(r.topic), consumer.Subscription(sub),
		consumer.InitialPosition(consumer.Earliest), consumer.MaxBuffered(consumerQueue*partitions*len(r.bed.Clusters())))
	if err != nil {
		b.Fatal(err)
	}
	taken := 0
	for taken < n {
		got, err := take(ctx, c)
		if err != nil {
			b.Fatal(err)
		}
		taken += got
	}
	if err := c.Close(ctx); err != nil {
		b.Fatal(err)
	}
	return taken
}

// readRaw takes n messages over one plain consumer per cluster, each read
// from its own Chan by a goroutine that acks, and returns how many were
// taken (a few more than n when the goroutines race at the end).
func (r *consumerRig) readRaw(b *testing.B, sub string, n int) int {
	b.Helper()
	var (
		taken atomic.Int64
		done  = make(chan struct{})
		stop  = make(chan struct{})
		once  sync.Once
		wg    sync.WaitGroup
	)
	type conn struct {
		client pulsar.Client
		cons   pulsar.Consumer
	}
	var conns []conn
	for _, c := range r.bed.Clusters() {
		client, err := pulsar.NewClient(pulsar.ClientOptions{URL: c.ServiceURL, Logger: plog.DefaultNopLogger(),
			// The keyroute consumer labels its clients' metrics so; the
			// same labels keep both sides on the same collectors.
			CustomMetricsLabels: map[string]string{"cluster": c.Name}})
		if err != nil {
			b.Fatal(err)
		}
		cons, err := client.Subscribe(pulsar.ConsumerOptions{
			Topic: r.topic, SubscriptionName: sub, Type: pulsar.Exclusive,
			SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest,
			ReceiverQueueSize:           consumerQueue,
		})
		if err != nil {
			b.Fatal(err)
		}
		conns = append(conns, conn{client, cons})
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case cm := <-cons.Chan():
					_ = cons.Ack(cm.Message)
					if taken.Add(1) == int64(n) {
						once.Do(func() { close(done) })
					}
				case <-stop:
					return
				}
			}
		}()
	}
	<-done
	close(stop)
	wg.Wait()
	for _, c := range conns {
		c.cons.Close()
		c.client.Close()
	}
	return int(taken.Load())
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
