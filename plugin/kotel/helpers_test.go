package kotel_test

import (
	"context"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/keyroute/keyroute/plugin/kotel"
	"github.com/keyroute/keyroute/producer"
)

// rig is an Observer wired to in-memory readers.
type rig struct {
	obs    *kotel.Observer
	reader *sdkmetric.ManualReader
	spans  *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
}

func newRig(t *testing.T) *rig {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	t.Cleanup(func() {
		_ = mp.Shutdown(context.Background())
		_ = tp.Shutdown(context.Background())
	})
	obs, err := kotel.New(
		kotel.WithMeterProvider(mp),
		kotel.WithTracerProvider(tp),
		kotel.WithPropagator(propagation.TraceContext{}),
	)
	require.NoError(t, err)
	return &rig{obs: obs, reader: reader, spans: spans, tp: tp}
}

// collect returns the metrics recorded so far, by name.
func (r *rig) collect(t *testing.T) map[string]metricdata.Aggregation {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, r.reader.Collect(context.Background(), &rm))
	out := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		require.Equal(t, kotel.ScopeName, sm.Scope.Name)
		for _, m := range sm.Metrics {
			out[m.Name] = m.Data
		}
	}
	return out
}

func event(op producer.Op, partition int) *producer.Event {
	return &producer.Event{
		Op:         op,
		Topic:      "persistent://public/default/events",
		Cluster:    "east-1",
		Partition:  partition,
		ServiceURL: "pulsar+ssl://b1.east.example:6651,b2.east.example:6651",
		Key:        "user-42",
		Bytes:      128,
		Start:      time.Now(),
	}
}

func okID(ev *producer.Event) producer.ID {
	return producer.ID{Cluster: ev.Cluster, Partition: ev.Partition, MessageID: pulsar.NewMessageID(17, 4, 2, int32(ev.Partition))}
}

// baseAttrs are the attributes every point and span of event(op, 3) carries.
func baseAttrs(opName string) []attribute.KeyValue {
	return []attribute.KeyValue{
		attribute.String("messaging.system", "pulsar"),
		attribute.String("messaging.operation.name", opName),
		attribute.String("messaging.operation.type", "send"),
		attribute.String("messaging.destination.name", "persistent://public/default/events"),
		attribute.String("messaging.destination.partition.id", "3"),
		attribute.String("server.address", "b1.east.example"),
		attribute.Int("server.port", 6651),
		attribute.String("keyroute.cluster", "east-1"),
	}
}
