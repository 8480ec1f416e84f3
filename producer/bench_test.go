package producer_test

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/keyroute/keyroute/producer"
	"github.com/keyroute/keyroute/producer/producertest"
)

// benchFake acknowledges on a goroutine per writer, in batches of 1000, as
// pulsar-client-go's connection goroutine does, and keeps nothing, so that
// the benchmark measures the SDK's own cost per message: routing, buffer
// accounting, tracking and the hop to the callback goroutine.
func benchFake() *producertest.Clusters {
	return producertest.New(producertest.Partitions(5), producertest.AsyncAcks(1000), producertest.KeepMessages(false))
}

func BenchmarkSendAsyncOverhead(b *testing.B) {
	keys := make([]string, 10_000)
	for i := range keys {
		keys[i] = fmt.Sprintf("key-%08d", i)
	}
	value := make([]byte, 128)
	// The same load straight into one fake writer: the floor that the SDK's
	// figures are compared with.
	b.Run("raw-fake", func(b *testing.B) {
		w := rawWriter(b, benchFake())
		var wg sync.WaitGroup
		wg.Add(b.N)
		cb := func(pulsar.MessageID, *pulsar.ProducerMessage, error) { wg.Done() }
		b.ReportAllocs()
		cpu0 := cpuTime()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			w.SendAsync(context.Background(), &pulsar.ProducerMessage{Key: keys[i%len(keys)], Payload: value}, cb)
		}
		_ = w.FlushWithCtx(context.Background())
		wg.Wait()
		b.StopTimer()
		reportCPU(b, cpu0)
	})
	for _, bc := range []struct {
		clusters int
		observed bool
		noCb     bool
	}{{1, false, false}, {5, false, false}, {1, true, false}, {1, false, true}} {
		name := fmt.Sprintf("clusters=%d", bc.clusters)
		opts := []producer.Opt{producer.Topic("t"), benchFake().Opt()}
		if bc.observed {
			// An observer that does nothing: what observing costs the
			// SDK itself, before any telemetry library's own cost.
			name += "/observed"
			opts = append(opts, producer.Observe(nopObserver{}))
		}
		if bc.noCb {
			// No callbacks: no hop to the callback goroutine, so the
			// difference from clusters=1 is what that hop costs. Flush
			// still waits for every ack.
			name += "/nocb"
		}
		b.Run(name, func(b *testing.B) {
			p, err := producer.New(context.Background(), topo(bc.clusters), opts...)
			if err != nil {
				b.Fatal(err)
			}
			var wg sync.WaitGroup
			wg.Add(b.N)
			cb := func(producer.ID, *producer.Message, error) { wg.Done() }
			b.ReportAllocs()
			cpu0 := cpuTime()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if bc.noCb {
					p.SendAsync(context.Background(), &producer.Message{Key: keys[i%len(keys)], Value: value}, nil)
					wg.Done()
					continue
				}
				p.SendAsync(context.Background(), &producer.Message{Key: keys[i%len(keys)], Value: value}, cb)
			}
			if err := p.Flush(context.Background()); err != nil {
				b.Fatal(err)
			}
			wg.Wait()
			b.StopTimer()
			reportCPU(b, cpu0)
			_ = p.Close(context.Background())
		})
	}
}

// cpuTime is the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the CPU time used since cpu0 per op: on two cores,
// ns/op alone would hide work moved to another goroutine.
func reportCPU(b *testing.B, cpu0 time.Duration) {
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}

type nopObserver struct{}

func (nopObserver) OnStart(context.Context, *producer.Event) map[string]string { return nil }
func (nopObserver) OnDone(*producer.Event)                                     {}
