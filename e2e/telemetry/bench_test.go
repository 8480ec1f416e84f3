//go:build e2e

package telemetry

// The end-to-end cost of telemetry: SendAsync through a real producer to
// one local Pulsar cluster, without an Observer and with kotel in each mode
// (real SDKs). Run with:
//
//	go test -tags e2e -run XXX -bench Telemetry -benchtime 200000x ./e2e/telemetry/ -rounds 12 -modes off,nop,durations,notrace

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/keyroute/keyroute/internal/admin"
	"github.com/keyroute/keyroute/internal/testbed"
	"github.com/keyroute/keyroute/plugin/kotel"
	"github.com/keyroute/keyroute/producer"
	"github.com/keyroute/keyroute/topology"
)

const (
	benchPartitions = 5
	benchKeys       = 10_000
	benchValueSize  = 128
	benchWarmUp     = 20 * time.Second // a cold broker's JIT needs load before it settles
)

// benchEnv is one local cluster with a partitioned topic, started once for
// every benchmark of the package and stopped by TestMain.
var benchEnv struct {
	once  sync.Once
	bed   *testbed.Bed
	topo  *topology.Topology
	topic string
	keys  []string
	value []byte
	err   error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if benchEnv.bed != nil {
		if err := benchEnv.bed.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop test bed:", err)
			code = 1
		}
	}
	os.Exit(code)
}

func setupBench(b *testing.B) {
	b.Helper()
	benchEnv.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		bed, err := testbed.Start(ctx, testbed.Options{Clusters: 1, Log: io.Discard,
			JVMArgs: []string{"-XX:+UseG1GC", "-Xms512m", "-Xmx512m", "-XX:MaxDirectMemorySize=512m"}})
		if err != nil {
			benchEnv.err = err
			return
		}
		benchEnv.bed, benchEnv.topo = bed, bed.Topology()
		benchEnv.topic = "persistent://public/default/kotel-bench-" + strconv.FormatInt(time.Now().UnixNano(), 36)
		if err := admin.CreatePartitionedTopic(ctx, bed.Clusters()[0].AdminURL, benchEnv.topic, benchPartitions); err != nil {
			benchEnv.err = err
			return
		}
		for i := range benchKeys {
			benchEnv.keys = append(benchEnv.keys, "key-"+strconv.Itoa(i))
		}
		benchEnv.value = make([]byte, benchValueSize)
		for i := range benchEnv.value {
			benchEnv.value[i] = byte('a' + i%26)
		}
		// Warm up the broker (and the client code) before measuring.
		p, err := producer.New(ctx, benchEnv.topo, producer.Topic(benchEnv.topic))
		if err != nil {
			benchEnv.err = err
			return
		}
		defer p.Close(context.Background())
		deadline := time.Now().Add(benchWarmUp)
		for i := 0; time.Now().Before(deadline); i++ {
			for j := range 10_000 {
				p.SendAsync(ctx, &producer.Message{Key: benchEnv.keys[(i+j)%benchKeys], Value: benchEnv.value}, nil)
			}
		}
		benchEnv.err = p.Flush(ctx)
	})
	if benchEnv.err != nil {
		b.Fatalf("test bed: %v", benchEnv.err) // never skip: a bed that cannot start is a failure
	}
}

// Telemetry modes of BenchmarkTelemetry.
const (
	telemetryOff       = "off"
	telemetryNop       = "nop"       // an Observer that does nothing but ask for Event.Start, as kotel does: the producer's own cost of observing for kotel
	telemetryDurations = "durations" // metrics only (WithTracing(false)), durations kept by a Durations
	telemetryOn        = "on"        // metrics and a span per message, every span sampled
	telemetryMetrics   = "metrics"   // metrics only (no-op tracer)
	telemetryNoTrace   = "notrace"   // metrics only (WithTracing(false))
	telemetrySampled   = "sampled"   // metrics and spans, 1% of new traces sampled
)

var (
	telemetryRounds = flag.Int("rounds", 3, "how many times BenchmarkTelemetry runs every mode")
	telemetryModes  = flag.String("modes", strings.Join(allModes, ","), "the modes BenchmarkTelemetry runs, comma-separated")
	allModes        = []string{telemetryOff, telemetryNop, telemetryDurations, telemetryNoTrace, telemetryMetrics, telemetrySampled, telemetryOn}
)

// BenchmarkTelemetry runs every mode once per round, round after round, so
// that drift in the broker or the machine hits all modes alike; compare
// each mode with "off" of the same round, and take the median over rounds.
func BenchmarkTelemetry(b *testing.B) {
	setupBench(b)
	modes := strings.Split(*telemetryModes, ",")
	for _, m := range modes {
		if !slices.Contains(allModes, m) {
			b.Fatalf("-modes: unknown mode %q (known: %s)", m, strings.Join(allModes, ", "))
		}
	}
	for round := 1; round <= *telemetryRounds; round++ {
		// Each round starts one mode later, so that no mode always runs
		// right after the same other one.
		for i := range modes {
			mode := modes[(i+round-1)%len(modes)]
			b.Run(fmt.Sprintf("round=%d/%s", round, mode), func(b *testing.B) { benchSendAsync(b, mode) })
		}
	}
}

func benchSendAsync(b *testing.B, mode string) {
	ctx := context.Background()
	opts := []producer.Opt{producer.Topic(benchEnv.topic)}
	switch mode {
	case telemetryOff:
	case telemetryNop:
		opts = append(opts, producer.Observe(nopObserver{}))
	default:
		durs := kotel.NewDurations()
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader(sdkmetric.WithProducer(durs))))
		sampler := sdktrace.AlwaysSample()
		if mode == telemetrySampled {
			sampler = sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.01))
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sampler),
			sdktrace.WithBatcher(tracetest.NewNoopExporter()))
		defer func() {
			_ = tp.Shutdown(ctx)
			_ = mp.Shutdown(ctx)
		}()
		kopts := []kotel.Opt{kotel.WithMeterProvider(mp), kotel.WithTracerProvider(tp),
			kotel.WithPropagator(propagation.TraceContext{})}
		switch mode {
		case telemetryMetrics:
			kopts[1] = kotel.WithTracerProvider(tracenoop.NewTracerProvider())
		case telemetryNoTrace:
			kopts = append(kopts, kotel.WithTracing(false))
		case telemetryDurations:
			kopts = append(kopts, kotel.WithTracing(false), kotel.WithDurations(durs))
		}
		obs, err := kotel.New(kopts...)
		if err != nil {
			b.Fatal(err)
		}
		opts = append(opts, producer.Observe(obs))
	}
	p, err := producer.New(ctx, benchEnv.topo, opts...)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close(ctx)

	var failed atomic.Int64
	var firstErr atomic.Value
	cb := func(_ producer.ID, _ *producer.Message, err error) {
		if err != nil && failed.Add(1) == 1 {
			firstErr.Store(err)
		}
	}
	keys, value := benchEnv.keys, benchEnv.value
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	start := time.Now()
	for i := range b.N {
		p.SendAsync(ctx, &producer.Message{Key: keys[i%benchKeys], Value: value}, cb)
	}
	if err := p.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	cpu := cpuTime() - cpu0
	b.StopTimer()
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d sends failed, first: %v", n, firstErr.Load())
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msg/s")
	// CPU time is what telemetry costs; it is far less disturbed than
	// msg/s by other load on a shared machine.
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/msg")
}

type nopObserver struct{}

func (nopObserver) OnStart(context.Context, *producer.Event) map[string]string { return nil }
func (nopObserver) OnDone(*producer.Event)                                     {}

// ReadsStart asks for Event.Start, as kotel's Observer does, so that
// the producer's own cost of observing is the same under both and kotel
// minus nop is kotel's own.
func (nopObserver) ReadsStart() bool { return true }

// cpuTime returns the user+system CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
