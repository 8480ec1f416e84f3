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
	"github.com/keyroute/keyroute/topology"
)

// batchAcker is a writer that acks on its own goroutine in batches, as
// pulsar-client-go's connection goroutine does, so the benchmark measures the
// SDK's own cost per message: routing, buffer accounting, tracking and the
// hop to the callback goroutine.
type batchAcker struct {
	mu      sync.Mutex
	pending []pendingAck
	kick    chan struct{}
	ids     map[int][]pulsar.MessageID // by batch size; run's only
	stop    chan struct{}
	done    chan struct{}
}

func newBatchAcker() *batchAcker {
	a := &batchAcker{ids: map[int][]pulsar.MessageID{}, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go a.run()
	return a
}

func (a *batchAcker) run() {
	defer close(a.done)
	var batch []pendingAck
	for {
		select {
		case <-a.kick:
		case <-a.stop:
			return
		}
		a.mu.Lock()
		batch, a.pending = a.pending, batch[:0]
		a.mu.Unlock()
		for i, p := range batch {
			p.cb(a.id(i, len(batch)), p.pm, nil)
			batch[i] = pendingAck{}
		}
	}
}

// id returns the ID of message i of a batch of n, boxed once per batch
// size so that the fake allocates no ID per message.
func (a *batchAcker) id(i, n int) pulsar.MessageID {
	ids := a.ids[n]
	if ids == nil {
		ids = make([]pulsar.MessageID, n)
		for j := range ids {
			ids[j] = fakeID{seq: 1, idx: int32(j), size: int32(n)}
		}
		a.ids[n] = ids
	}
	return ids[i]
}

func (a *batchAcker) Send(ctx context.Context, pm *pulsar.ProducerMessage) (pulsar.MessageID, error) {
	return fakeID{seq: 1}, nil
}

func (a *batchAcker) SendAsync(ctx context.Context, pm *pulsar.ProducerMessage, cb func(pulsar.MessageID, *pulsar.ProducerMessage, error)) {
	a.mu.Lock()
	a.pending = append(a.pending, pendingAck{pm, cb})
	full := len(a.pending) >= 1000
	a.mu.Unlock()
	if full {
		select {
		case a.kick <- struct{}{}:
		default:
		}
	}
}

func (a *batchAcker) FlushWithCtx(ctx context.Context) error {
	select {
	case a.kick <- struct{}{}:
	default:
	}
	return nil
}

func (a *batchAcker) Close() { close(a.stop); <-a.done }

func BenchmarkSendAsyncOverhead(b *testing.B) {
	keys := make([]string, 10_000)
	for i := range keys {
		keys[i] = fmt.Sprintf("key-%08d", i)
	}
	value := make([]byte, 128)
	connect := func(ctx context.Context, cl topology.Cluster, _ int) ([]producer.Writer, error) {
		ws := make([]producer.Writer, 5)
		for i := range ws {
			ws[i] = newBatchAcker()
		}
		return ws, nil
	}
	// The same load straight into one fake writer: the floor that the SDK's
	// figures are compared with.
	b.Run("raw-fake", func(b *testing.B) {
		w := newBatchAcker()
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
		w.Close()
	})
	for _, bc := range []struct {
		clusters int
		observed bool
	}{{1, false}, {5, false}, {1, true}} {
		name := fmt.Sprintf("clusters=%d", bc.clusters)
		opts := []producer.Opt{producer.Topic("t"), producer.WithConnector(connect)}
		if bc.observed {
			// An observer that does nothing: what observing costs the
			// SDK itself, before any telemetry library's own cost.
			name += "/observed"
			opts = append(opts, producer.Observe(nopObserver{}))
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
