package kotel_test

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/keyroute/keyroute/plugin/kotel"
	"github.com/keyroute/keyroute/producer"
	"github.com/keyroute/keyroute/producer/producertest"
	"github.com/keyroute/keyroute/topology"
)

var sendRounds = flag.Int("rounds", 5, "interleaved rounds of BenchmarkSendAsyncObserved")

// BenchmarkSendAsyncObserved is what the Observer costs a SendAsync, CPU
// time per message over the same producer without an observer, on
// producertest's fake (acks in batches of 1000 on a goroutine per writer),
// in -rounds interleaved rounds; the last sub-benchmark reports the median
// of the differences within each round:
//
//	go test -run '^$' -bench SendAsyncObserved -benchtime 1000000x ./plugin/kotel/
//
// "default" is kotel.New() with OpenTelemetry's global providers as a
// service that has not set them up has them (no-op); "metrics" records the
// metrics with the real metric SDK, tracing off; "nop" is an Observer that
// does nothing but ask for Event.Start as kotel does, the producer's own
// cost of observing for kotel, which default-over-nop takes out.
func BenchmarkSendAsyncObserved(b *testing.B) {
	sides := []struct {
		name string
		obs  func(testing.TB) producer.Observer
	}{
		{"none", func(testing.TB) producer.Observer { return nil }},
		// An observer that does nothing but ask for Event.Start: the
		// producer's own cost of observing for kotel, so that default
		// minus nop is kotel's own.
		{"nop", func(testing.TB) producer.Observer { return nopObserver{} }},
		{"default", func(tb testing.TB) producer.Observer {
			obs, err := kotel.New()
			if err != nil {
				tb.Fatal(err)
			}
			return obs
		}},
		{"metrics", func(tb testing.TB) producer.Observer { return tracingOffObserver(tb) }},
	}
	topo := &topology.Topology{Clusters: []topology.Cluster{{Name: "c1", ServiceURL: "pulsar://c1:6650", Weight: 1}}}
	keys := make([]string, 10_000)
	for i := range keys {
		keys[i] = fmt.Sprintf("key-%08d", i)
	}
	value := make([]byte, 128)
	cpu := map[string][]float64{}
	for round := range *sendRounds {
		for i := range sides {
			sd := sides[(i+round)%len(sides)]
			var last float64 // of the run with the final b.N
			b.Run(fmt.Sprintf("%s/round=%d", sd.name, round+1), func(b *testing.B) {
				fake := producertest.New(producertest.Partitions(5), producertest.AsyncAcks(1000), producertest.KeepMessages(false))
				opts := []producer.Opt{producer.Topic("t"), fake.Opt()}
				if obs := sd.obs(b); obs != nil {
					opts = append(opts, producer.Observe(obs))
				}
				p, err := producer.New(context.Background(), topo, opts...)
				if err != nil {
					b.Fatal(err)
				}
				defer p.Close(context.Background())
				var wg sync.WaitGroup
				wg.Add(b.N)
				cb := func(producer.ID, *producer.Message, error) { wg.Done() }
				b.ReportAllocs()
				runtime.GC()
				cpu0 := processCPU()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					p.SendAsync(context.Background(), &producer.Message{Key: keys[i%len(keys)], Value: value}, cb)
				}
				if err := p.Flush(context.Background()); err != nil {
					b.Fatal(err)
				}
				wg.Wait()
				b.StopTimer()
				last = float64(processCPU()-cpu0) / float64(b.N)
				b.ReportMetric(last, "cpu-ns/op")
			})
			cpu[sd.name] = append(cpu[sd.name], last)
		}
	}
	added := map[string]float64{}
	for _, sd := range sides[1:] {
		d := make([]float64, len(cpu[sd.name]))
		for i := range d {
			d[i] = cpu[sd.name][i] - cpu["none"][i]
		}
		slices.Sort(d)
		added[sd.name] = d[len(d)/2]
	}
	own := make([]float64, len(cpu["default"]))
	for i := range own {
		own[i] = cpu["default"][i] - cpu["nop"][i]
	}
	slices.Sort(own)
	b.Run("median", func(b *testing.B) {
		for name, v := range added {
			b.ReportMetric(v, name+"-added-cpu-ns/op")
		}
		b.ReportMetric(own[len(own)/2], "default-over-nop-cpu-ns/op")
	})
}

type nopObserver struct{}

func (nopObserver) OnStart(context.Context, *producer.Event) map[string]string { return nil }
func (nopObserver) OnDone(*producer.Event)                                     {}
