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
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()),
		sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	tb.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	obs, err := kotel.New(kotel.WithMeterProvider(mp), kotel.WithTracerProvider(tp),
		kotel.WithPropagator(propagation.TraceContext{}))
	require.NoError(tb, err)
	return obs
}

// sampledObserver is sdkObserver with 1% of new traces sampled.
func sampledObserver(tb testing.TB) *kotel.Observer {
	tb.Helper()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.01))),
		sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	tb.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	obs, err := kotel.New(kotel.WithMeterProvider(mp), kotel.WithTracerProvider(tp),
		kotel.WithPropagator(propagation.TraceContext{}))
	require.NoError(tb, err)
	return obs
}

// metricsObserver records metrics with the real SDK and no traces.
func metricsObserver(tb testing.TB) *kotel.Observer {
	tb.Helper()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	tb.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	obs, err := kotel.New(kotel.WithMeterProvider(mp), kotel.WithTracerProvider(tracenoop.NewTracerProvider()),
		kotel.WithPropagator(propagation.TraceContext{}))
	require.NoError(tb, err)
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

// TestAllocs pins what the Observer itself allocates per message: with
// no-op providers only the span context; attribute sets are never rebuilt.
func TestAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation counts")
	}
	ev := event(producer.OpSendAsync, 3)
	id := okID(ev)

	noop := noopObserver(t)
	roundTrip(noop, ev, id)
	assert.LessOrEqual(t, testing.AllocsPerRun(1000, func() { roundTrip(noop, ev, id) }), 1.0, "no-op providers")

	metrics := metricsObserver(t)
	roundTrip(metrics, ev, id)
	assert.LessOrEqual(t, testing.AllocsPerRun(1000, func() { roundTrip(metrics, ev, id) }), 1.0, "metrics only")

	sdk := sdkObserver(t)
	roundTrip(sdk, ev, id)
	got := testing.AllocsPerRun(1000, func() { roundTrip(sdk, ev, id) })
	t.Logf("real SDKs, every span sampled: %.0f allocs per message", got)
	assert.LessOrEqual(t, got, 12.0, "real SDKs")
}

func BenchmarkObserver(b *testing.B) {
	for _, bc := range []struct {
		name string
		obs  func(testing.TB) *kotel.Observer
	}{{"noop", noopObserver}, {"metrics", metricsObserver}, {"sampled", sampledObserver}, {"sdk", sdkObserver}} {
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
