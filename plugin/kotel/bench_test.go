package kotel_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/keyroute/keyroute/plugin/kotel"
	"github.com/keyroute/keyroute/producer"
)

// sdkObserver is an Observer on the real SDKs: every span sampled and
// handed to a batch processor with a discarding exporter, metrics
// aggregated for a manual reader.
func sdkObserver(tb testing.TB) *kotel.Observer {
	tb.Helper()
	return sdkObserverWith(tb, sdktrace.AlwaysSample())
}

// sampledObserver is sdkObserver with 1% of new traces sampled.
func sampledObserver(tb testing.TB) *kotel.Observer {
	tb.Helper()
	return sdkObserverWith(tb, sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.01)))
}

// metricsObserver records metrics with the real SDK and a no-op tracer.
func metricsObserver(tb testing.TB) *kotel.Observer {
	tb.Helper()
	return sdkObserverWith(tb, nil, kotel.WithTracerProvider(tracenoop.NewTracerProvider()))
}

// tracingOffObserver records metrics with the real SDK and tracing off.
func tracingOffObserver(tb testing.TB) *kotel.Observer {
	tb.Helper()
	return sdkObserverWith(tb, nil, kotel.WithTracing(false))
}

// durationsObserver records metrics with tracing off and the durations in
// a Durations (registered on the reader).
func durationsObserver(tb testing.TB) *kotel.Observer {
	tb.Helper()
	durs := kotel.NewDurations()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader(sdkmetric.WithProducer(durs))))
	tb.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	obs, err := kotel.New(kotel.WithMeterProvider(mp), kotel.WithTracing(false), kotel.WithDurations(durs))
	require.NoError(tb, err)
	return obs
}

// sdkObserverWith is an Observer on the real SDKs with sampler (nil: the
// SDK's default) and opts applied last.
func sdkObserverWith(tb testing.TB, sampler sdktrace.Sampler, opts ...kotel.Opt) *kotel.Observer {
	tb.Helper()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	tpOpts := []sdktrace.TracerProviderOption{sdktrace.WithBatcher(tracetest.NewNoopExporter())}
	if sampler != nil {
		tpOpts = append(tpOpts, sdktrace.WithSampler(sampler))
	}
	tp := sdktrace.NewTracerProvider(tpOpts...)
	tb.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	obs, err := kotel.New(append([]kotel.Opt{kotel.WithMeterProvider(mp), kotel.WithTracerProvider(tp),
		kotel.WithPropagator(propagation.TraceContext{})}, opts...)...)
	require.NoError(tb, err)
	return obs
}

// defaultObserver is kotel.New() with OpenTelemetry's global providers,
// as a service that has not set them up has them.
func defaultObserver(tb testing.TB) *kotel.Observer {
	tb.Helper()
	obs, err := kotel.New()
	if err != nil {
		tb.Fatal(err)
	}
	return obs
}

func noopObserver(tb testing.TB) *kotel.Observer {
	tb.Helper()
	obs, err := kotel.New(kotel.WithMeterProvider(metricnoop.NewMeterProvider()),
		kotel.WithTracerProvider(tracenoop.NewTracerProvider()),
		kotel.WithPropagator(propagation.NewCompositeTextMapPropagator()))
	require.NoError(tb, err)
	return obs
}

func roundTrip(obs *kotel.Observer, ev *producer.Event, id producer.ID) {
	ev.Token, ev.ID, ev.Err = nil, producer.ID{}, nil
	obs.OnStart(context.Background(), ev)
	ev.ID = id
	obs.OnDone(ev)
}

// TestAllocs pins what the Observer itself allocates per message: nothing
// unless it starts a span; attribute sets are never rebuilt. A span the
// sampler drops costs what the trace SDK allocates for it, the properties'
// copy and the injected traceparent; a sampled one, the SDK's span too.
func TestAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation counts")
	}
	ev := event(producer.OpSendAsync, 3)
	id := okID(ev)
	for _, tc := range []struct {
		name string
		obs  func(testing.TB) *kotel.Observer
		max  float64
	}{
		{"no-op providers", noopObserver, 0},
		{"metrics, no-op tracer", metricsObserver, 0},
		{"metrics, tracing off", tracingOffObserver, 0},
		{"metrics, tracing off, Durations", durationsObserver, 0},
		{"1% of spans sampled", sampledObserver, 5},
		{"every span sampled", sdkObserver, 12},
	} {
		obs := tc.obs(t)
		roundTrip(obs, ev, id)
		got := testing.AllocsPerRun(1000, func() { roundTrip(obs, ev, id) })
		t.Logf("%s: %.0f allocs per message", tc.name, got)
		assert.LessOrEqual(t, got, tc.max, tc.name)
	}
}

func BenchmarkObserver(b *testing.B) {
	for _, bc := range []struct {
		name string
		obs  func(testing.TB) *kotel.Observer
	}{{"default", defaultObserver}, {"noop", noopObserver}, {"metrics", metricsObserver}, {"tracingoff", tracingOffObserver}, {"durations", durationsObserver}, {"sampled", sampledObserver}, {"sdk", sdkObserver}} {
		b.Run(bc.name, func(b *testing.B) {
			obs := bc.obs(b)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				ev := event(producer.OpSendAsync, 3)
				id := okID(ev)
				for pb.Next() {
					roundTrip(obs, ev, id)
				}
			})
		})
	}
}
