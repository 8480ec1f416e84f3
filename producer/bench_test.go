package producer_test

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/cespare/xxhash/v2"

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

// rounds is how many times BenchmarkSendAsyncOverhead runs every side.
var rounds = flag.Int("rounds", 5, "interleaved rounds of BenchmarkSendAsyncOverhead")

// BenchmarkSendAsyncOverhead measures the process CPU per message of
// SendAsync over benchFake against the same load handed straight to one
// fake writer (raw-fake, the floor), in -rounds interleaved rounds (each
// round starts one side later); the last sub-benchmark reports the medians
// and what each side adds over raw-fake. CPU time, not ns/op: on two cores
// ns/op would hide work moved to another goroutine. Setting a side up
// (producer.New, the fake's writers) and tearing it down (Close) are not
// timed: a producer is made once and then sends for long. Each round
// reports the setup's CPU as setup-cpu-us: New took 2.5-4.2 ms with 5
// clusters (above all the router's slot table, 64K rendezvous rankings)
// and 0.5-0.9 ms with 1, where a raw side's took 0.03-0.13 ms; 0.5-4 ns
// a message of a 1M-message round. Each round also reports the share of
// its CPU spent in the kernel (sys-ns/op) and its context switches per
// thousand messages (switches/kmsg), and the medians include every
// side's sys-ns/op: a floor whose kernel share moved explains a figure
// that moved with the same code. Use -benchtime Nx
// (e.g. 1000000x) so that every round sends as many messages:
//
//	go test -run '^$' -bench SendAsyncOverhead -benchtime 1000000x ./producer/
func BenchmarkSendAsyncOverhead(b *testing.B) {
	keys := make([]string, 10_000)
	for i := range keys {
		keys[i] = fmt.Sprintf("key-%08d", i)
	}
	value := make([]byte, 128)
	// A side sets up what it sends through (not timed: a producer is
	// made once and sends for long), calls start, sends b.N messages and
	// waits for their outcomes, and returns what tears it down (not
	// timed either).
	type side struct {
		name string
		run  func(b *testing.B, start func()) (stop func())
	}
	// The same load straight into one fake writer: the floor that the SDK's
	// figures are compared with.
	sides := []side{{"raw-fake", func(b *testing.B, start func()) func() {
		w := rawWriter(b, benchFake())
		start()
		var wg sync.WaitGroup
		wg.Add(b.N)
		cb := func(pulsar.MessageID, *pulsar.ProducerMessage, error) { wg.Done() }
		for i := 0; i < b.N; i++ {
			w.SendAsync(context.Background(), &pulsar.ProducerMessage{Key: keys[i%len(keys)], Payload: value}, cb)
		}
		_ = w.FlushWithCtx(context.Background())
		wg.Wait()
		return func() {}
	}}}
	// The same load keyed over n fake writers, as pulsar-client-go's own
	// partitioned producer sends it: raw-fake-5 is the floor for one
	// cluster of five partitions, raw-fake-25 for five (their writers
	// together hold n times the messages in flight of one writer).
	// raw-fake-5-hop also hands every outcome to a callback goroutine of
	// its own (see hopper): the least that running callbacks off the
	// writers' goroutines costs (the SDK's contract, doc.go: Outcomes),
	// with none of the SDK's own work.
	keyed := func(n int, hop bool) func(b *testing.B, start func()) func() {
		return func(b *testing.B, start func()) func() {
			fake := producertest.New(producertest.Partitions(n), producertest.AsyncAcks(1000), producertest.KeepMessages(false))
			ws := rawWriters(b, fake)
			var wg sync.WaitGroup
			wg.Add(b.N)
			cb := func(pulsar.MessageID, *pulsar.ProducerMessage, error) { wg.Done() }
			stop := func() {}
			var h *hopper
			if hop {
				h = newHopper(cb)
				stop = h.close
				cb = h.push
			}
			start()
			for i := 0; i < b.N; i++ {
				key := keys[i%len(keys)]
				ws[xxhash.Sum64String(key)%uint64(n)].SendAsync(context.Background(), &pulsar.ProducerMessage{Key: key, Payload: value}, cb)
			}
			for _, w := range ws {
				_ = w.FlushWithCtx(context.Background())
			}
			if h != nil {
				h.wake() // a flushed batch may end without its last message
			}
			wg.Wait()
			return stop
		}
	}
	sides = append(sides, side{"raw-fake-5", keyed(5, false)}, side{"raw-fake-25", keyed(25, false)},
		side{"raw-fake-5-hop", keyed(5, true)})
	for _, bc := range []struct {
		clusters int
		tag      string // the side's name after clusters=N, with obs
		obs      producer.Observer
		noCb     bool
	}{
		{clusters: 1},
		{clusters: 5},
		// An observer that does nothing: what observing costs the SDK
		// itself, before any telemetry library's own cost.
		{clusters: 1, tag: "/observed", obs: nopObserver{}},
		{clusters: 1, noCb: true},
	} {
		name := fmt.Sprintf("clusters=%d", bc.clusters) + bc.tag
		opts := []producer.Opt{producer.Topic("t"), benchFake().Opt()}
		if bc.obs != nil {
			opts = append(opts, producer.Observe(bc.obs))
		}
		if bc.noCb {
			// No callbacks: no hop to the callback goroutine, so the
			// difference from clusters=1 is what that hop costs. Flush
			// still waits for every ack.
			name += "/nocb"
		}
		sides = append(sides, side{name, func(b *testing.B, start func()) func() {
			p, err := producer.New(context.Background(), topo(bc.clusters), opts...)
			if err != nil {
				b.Fatal(err)
			}
			start()
			var wg sync.WaitGroup
			wg.Add(b.N)
			cb := func(producer.ID, *producer.Message, error) { wg.Done() }
			if bc.noCb {
				cb = nil
			}
			for i := 0; i < b.N; i++ {
				p.SendAsync(context.Background(), &producer.Message{Key: keys[i%len(keys)], Value: value}, cb)
				if cb == nil {
					wg.Done()
				}
			}
			if err := p.Flush(context.Background()); err != nil {
				b.Fatal(err)
			}
			wg.Wait()
			return func() { _ = p.Close(context.Background()) }
		}})
	}
	cpu, sys := map[string][]float64{}, map[string][]float64{}
	for round := range *rounds {
		for i := range sides {
			sd := sides[(i+round)%len(sides)]
			var last, lastSys float64 // of the run with the final b.N
			b.Run(fmt.Sprintf("%s/round=%d", sd.name, round+1), func(b *testing.B) {
				b.ReportAllocs()
				runtime.GC()
				use0 := usage()
				var setup time.Duration
				stop := sd.run(b, func() {
					now := usage()
					setup, use0 = now.cpu-use0.cpu, now
					b.ResetTimer()
				})
				b.StopTimer()
				use := usage()
				last = float64(use.cpu-use0.cpu) / float64(b.N)
				stop()
				b.ReportMetric(last, "cpu-ns/op")
				lastSys = float64(use.sys-use0.sys) / float64(b.N)
				b.ReportMetric(lastSys, "sys-ns/op")
				b.ReportMetric(float64(use.switches-use0.switches)*1000/float64(b.N), "switches/kmsg")
				b.ReportMetric(float64(setup.Microseconds()), "setup-cpu-us")
			})
			cpu[sd.name] = append(cpu[sd.name], last)
			sys[sd.name] = append(sys[sd.name], lastSys)
		}
	}
	// Differences are taken within each round, then their median.
	added := func(name, base string) float64 {
		d := make([]float64, len(cpu[name]))
		for i := range d {
			d[i] = cpu[name][i] - cpu[base][i]
		}
		return median(d)
	}
	metrics := map[string]float64{
		"observer-added-cpu-ns/op": added("clusters=1/observed", "clusters=1"),
	}
	for _, sd := range sides {
		if !strings.HasPrefix(sd.name, "raw-fake") || sd.name == "raw-fake-5-hop" {
			metrics[sd.name+"-added-cpu-ns/op"] = added(sd.name, "raw-fake")
		}
	}
	metrics["clusters=1-over-raw-fake-5-cpu-ns/op"] = added("clusters=1", "raw-fake-5")
	metrics["clusters=5-over-raw-fake-25-cpu-ns/op"] = added("clusters=5", "raw-fake-25")
	metrics["raw-fake-5-hop-over-raw-fake-5-cpu-ns/op"] = added("raw-fake-5-hop", "raw-fake-5")
	metrics["clusters=1-over-raw-fake-5-hop-cpu-ns/op"] = added("clusters=1", "raw-fake-5-hop")
	metrics["raw-fake-cpu-ns/op"] = median(slices.Clone(cpu["raw-fake"]))
	for _, sd := range sides {
		metrics[sd.name+"-sys-ns/op"] = median(sys[sd.name])
	}
	b.Run("median", func(b *testing.B) {
		for unit, v := range metrics {
			b.ReportMetric(v, unit)
		}
	})
}

// median returns the median of xs (which it sorts).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	if n := len(xs); n%2 == 0 {
		return (xs[n/2-1] + xs[n/2]) / 2
	}
	return xs[len(xs)/2]
}

type nopObserver struct{}

func (nopObserver) OnStart(context.Context, *producer.Event) map[string]string { return nil }
func (nopObserver) OnDone(*producer.Event)                                     {}

// hopper runs one callback for outcomes reported on other goroutines, on a
// goroutine of its own, in the order they were pushed: a queue under a
// mutex, taken whole, and a wake-up at the end of each batch. It is the
// bare form of the SDK's dispatcher (no per-partition order to restore,
// no budget, no tracking), for BenchmarkSendAsyncOverhead's floor.
type hopper struct {
	cb     func(pulsar.MessageID, *pulsar.ProducerMessage, error)
	mu     sync.Mutex
	queue  []hopped
	signal chan struct{}
	stop   chan struct{}
	done   chan struct{}
}

type hopped struct {
	id  pulsar.MessageID
	pm  *pulsar.ProducerMessage
	err error
}

func newHopper(cb func(pulsar.MessageID, *pulsar.ProducerMessage, error)) *hopper {
	h := &hopper{cb: cb, signal: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go h.run()
	return h
}

// push is the writers' callback.
func (h *hopper) push(id pulsar.MessageID, pm *pulsar.ProducerMessage, err error) {
	h.mu.Lock()
	h.queue = append(h.queue, hopped{id, pm, err})
	h.mu.Unlock()
	if err != nil || id.BatchIdx() >= id.BatchSize()-1 {
		h.wake()
	}
}

func (h *hopper) wake() {
	select {
	case h.signal <- struct{}{}:
	default:
	}
}

func (h *hopper) run() {
	defer close(h.done)
	var spare []hopped
	for {
		select {
		case <-h.signal:
		case <-h.stop:
			return
		}
		h.mu.Lock()
		batch := h.queue
		h.queue = spare[:0]
		h.mu.Unlock()
		for _, o := range batch {
			h.cb(o.id, o.pm, o.err)
		}
		clear(batch)
		spare = batch
	}
}

func (h *hopper) close() {
	close(h.stop)
	<-h.done
}
