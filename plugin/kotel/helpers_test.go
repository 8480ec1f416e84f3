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
	return newRigWith(t, sdktrace.AlwaysSample())
}

// newRigWith is newRig with sampler and opts (applied after the rig's own).
func newRigWith(t *testing.T, sampler sdktrace.Sampler, opts ...kotel.Opt) *rig {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans), sdktrace.WithSampler(sampler))
	t.Cleanup(func() {
		_ = mp.Shutdown(context.Background())
		_ = tp.Shutdown(context.Background())
	})
	obs, err := kotel.New(append([]kotel.Opt{
		kotel.WithMeterProvider(mp),
		kotel.WithTracerProvider(tp),
		kotel.WithPropagator(propagation.TraceContext{}),
	}, opts...)...)
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

// histPoint returns the duration histogram's point with attrs.
func histPoint(t *testing.T, m map[string]metricdata.Aggregation, attrs ...attribute.KeyValue) metricdata.HistogramDataPoint[float64] {
	t.Helper()
	hist, ok := m["messaging.client.operation.duration"].(metricdata.Histogram[float64])
	require.True(t, ok, "histogram type %T", m["messaging.client.operation.duration"])
	return pointWith(t, hist.DataPoints, func(dp metricdata.HistogramDataPoint[float64]) attribute.Set { return dp.Attributes }, attrs)
}

// sentCount returns the value of the sent counter's point with attrs.
func sentCount(t *testing.T, m map[string]metricdata.Aggregation, attrs ...attribute.KeyValue) int64 {
	t.Helper()
	sum, ok := m["messaging.client.sent.messages"].(metricdata.Sum[int64])
	require.True(t, ok, "counter type %T", m["messaging.client.sent.messages"])
	return pointWith(t, sum.DataPoints, func(dp metricdata.DataPoint[int64]) attribute.Set { return dp.Attributes }, attrs).Value
}

// pointWith returns the one of points whose attributes are attrs.
func pointWith[P any](t *testing.T, points []P, attrsOf func(P) attribute.Set, attrs []attribute.KeyValue) P {
	t.Helper()
	want := attribute.NewSet(attrs...)
	for _, p := range points {
		if got := attrsOf(p); got.Equals(&want) {
			return p
		}
	}
	require.Failf(t, "no point", "attributes %v", want.ToSlice())
	var zero P
	return zero
}

// sendOK passes ev through OnStart and, written, OnDone, and returns what
// OnStart returned.
func (r *rig) sendOK(ctx context.Context, ev *producer.Event) map[string]string {
	props := r.obs.OnStart(ctx, ev)
	ev.ID = okID(ev)
	r.obs.OnDone(ev)
	return props
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
