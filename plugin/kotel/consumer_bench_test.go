package kotel_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/keyroute/keyroute/consumer"
	"github.com/keyroute/keyroute/plugin/kotel"
	"github.com/keyroute/keyroute/producer"
)

// sdkConsumerObserver is a ConsumerObserver on the real SDKs (spans to a
// batch processor with a discarding exporter, metrics for a manual
// reader), with sampler (nil: tracing off).
func sdkConsumerObserver(tb testing.TB, sampler sdktrace.Sampler) *kotel.ConsumerObserver {
	tb.Helper()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()), sdktrace.WithSampler(sampler))
	tb.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	opts := []kotel.ConsumerOpt{kotel.WithMeterProvider(mp), kotel.WithTracerProvider(tp),
		kotel.WithPropagator(propagation.TraceContext{}), kotel.WithTopic(testTopic), kotel.WithSubscription("indexer"),
		kotel.WithTopology(testTopology), kotel.WithTracing(sampler != nil)}
	obs, err := kotel.NewConsumerObserver(opts...)
	require.NoError(tb, err)
	return obs
}

// tracedMessage is a message carrying a sampled producer span's context.
func tracedMessage(tb testing.TB) *consumer.Message {
	tb.Helper()
	obs := sdkObserver(tb)
	props := obs.OnStart(context.Background(), event(producer.OpSend, 3))
	require.Contains(tb, props, "traceparent")
	return message(3, 4, props)
}

func consumeOne(obs *kotel.ConsumerObserver, m *consumer.Message) {
	obs.OnReceive(m)
	obs.OnAck(m.ID, nil)
}

// TestConsumerAllocs pins what the ConsumerObserver allocates per message
// (received and acknowledged): nothing without a span; attribute sets are
// never rebuilt. A span costs the extraction of the producer's context,
// the link and what the trace SDK allocates.
func TestConsumerAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation counts")
	}
	m := tracedMessage(t)
	for _, tc := range []struct {
		name    string
		sampler sdktrace.Sampler
		max     float64
	}{
		{"tracing off", nil, 0},
		{"no span sampled", sdktrace.NeverSample(), 8},
		{"every span sampled", sdktrace.AlwaysSample(), 16},
	} {
		obs := sdkConsumerObserver(t, tc.sampler)
		consumeOne(obs, m)
		got := testing.AllocsPerRun(1000, func() { consumeOne(obs, m) })
		t.Logf("%s: %.0f allocs per message", tc.name, got)
		assert.LessOrEqual(t, got, tc.max, tc.name)
	}
}

func BenchmarkConsumerObserver(b *testing.B) {
	for _, bc := range []struct {
		name    string
		sampler sdktrace.Sampler
	}{{"tracingoff", nil}, {"unsampled", sdktrace.NeverSample()}, {"sdk", sdktrace.AlwaysSample()}} {
		b.Run(bc.name, func(b *testing.B) {
			obs := sdkConsumerObserver(b, bc.sampler)
			m := tracedMessage(b)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					consumeOne(obs, m)
				}
			})
		})
	}
}
