package kotel

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/keyroute/keyroute/producer"
)

func newTestObserver(t *testing.T, prop propagation.TextMapPropagator) (*Observer, *tracetest.SpanRecorder) {
	t.Helper()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	o, err := New(WithTracerProvider(tp), WithPropagator(prop))
	require.NoError(t, err)
	return o, spans
}

func testEvent() *producer.Event {
	return &producer.Event{Op: producer.OpSend, Topic: "t", Cluster: "c", Partition: 1, ServiceURL: "pulsar://h:6650", Start: time.Now()}
}

// TestInjectCopies checks that the span's context is written into a copy of
// the message's properties, that extracting it gives the span's trace, and
// that the message's own map is left alone.
func TestInjectCopies(t *testing.T) {
	o, _ := newTestObserver(t, propagation.TraceContext{})
	orig := map[string]string{"tenant": "acme", "schema": "v2"}
	before := maps.Clone(orig)

	ev := testEvent()
	ctx := o.start(context.Background(), ev)
	got := o.inject(ctx, orig)

	assert.Equal(t, before, orig, "the message's properties must not be modified")
	require.NotNil(t, got)
	assert.Equal(t, "acme", got["tenant"])
	assert.Equal(t, "v2", got["schema"])
	assert.Contains(t, got, "traceparent")
	assert.Len(t, got, 3)

	sc := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier(got)))
	span := trace.SpanContextFromContext(ctx)
	require.True(t, sc.IsValid())
	assert.Equal(t, span.TraceID(), sc.TraceID())
	assert.Equal(t, span.SpanID(), sc.SpanID())
	assert.True(t, sc.IsRemote())
}

func TestInjectNilProperties(t *testing.T) {
	o, _ := newTestObserver(t, propagation.TraceContext{})
	ctx := o.start(context.Background(), testEvent())
	got := o.inject(ctx, nil)
	assert.Len(t, got, 1)
	assert.Contains(t, got, "traceparent")
}

// TestInjectNothing checks that no copy is made when the propagator has
// nothing to write.
func TestInjectNothing(t *testing.T) {
	o, _ := newTestObserver(t, propagation.NewCompositeTextMapPropagator())
	ctx := o.start(context.Background(), testEvent())
	assert.Nil(t, o.inject(ctx, map[string]string{"a": "b"}))
}

// TestOnStartNeverDropsProperties: OnStart's result replaces the message's
// properties, so it must either be nil or hold them all.
func TestOnStartNeverDropsProperties(t *testing.T) {
	o, spans := newTestObserver(t, propagation.TraceContext{})
	ev := testEvent()
	ev.Properties = map[string]string{"a": "1", "b": "2"}
	got := o.OnStart(context.Background(), ev)
	assert.Contains(t, got, "traceparent")
	assert.Equal(t, "1", got["a"])
	assert.Equal(t, "2", got["b"])
	o.OnDone(ev)
	assert.Len(t, spans.Ended(), 1, "the span is recorded either way")
}

// TestOnStartInjectsIntoCopy: OnStart returns the message's properties plus
// the trace context, and leaves the message's map alone.
func TestOnStartInjectsIntoCopy(t *testing.T) {
	o, spans := newTestObserver(t, propagation.TraceContext{})
	orig := map[string]string{"tenant": "acme"}
	ev := testEvent()
	ev.Properties = orig
	got := o.OnStart(context.Background(), ev)
	assert.Equal(t, map[string]string{"tenant": "acme"}, orig)
	assert.Equal(t, "acme", got["tenant"])
	o.OnDone(ev)
	sc := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier(got)))
	assert.Equal(t, spans.Ended()[0].SpanContext().TraceID(), sc.TraceID())
	assert.Equal(t, spans.Ended()[0].SpanContext().SpanID(), sc.SpanID())
}

func TestCarrierKeys(t *testing.T) {
	c := carrier{src: map[string]string{"a": "1"}}
	assert.Equal(t, []string{"a"}, c.Keys())
	assert.Equal(t, "1", c.Get("a"))
	c.Set("b", "2")
	assert.ElementsMatch(t, []string{"a", "b"}, c.Keys())
	assert.Equal(t, "2", c.Get("b"))
	assert.Equal(t, map[string]string{"a": "1"}, c.src)
}
