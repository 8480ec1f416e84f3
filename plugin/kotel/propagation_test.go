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
	tracenoop "go.opentelemetry.io/otel/trace/noop"

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

// extract returns the span context that props carry.
func extract(props map[string]string) trace.SpanContext {
	return trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier(props)))
}

// TestOnStartInjectsIntoCopy checks that OnStart returns a copy of the
// message's properties plus the span's context (extracting it gives the
// span), and that the message's own map is left alone: OnStart's result
// replaces the message's properties, so it must hold them all.
func TestOnStartInjectsIntoCopy(t *testing.T) {
	o, spans := newTestObserver(t, propagation.TraceContext{})
	orig := map[string]string{"tenant": "acme", "schema": "v2"}
	before := maps.Clone(orig)
	ev := testEvent()
	ev.Properties = orig
	got := o.OnStart(context.Background(), ev)
	assert.Equal(t, before, orig, "the message's properties must not be modified")
	assert.Equal(t, map[string]string{"tenant": "acme", "schema": "v2", "traceparent": got["traceparent"]}, got)
	o.OnDone(ev)
	require.Len(t, spans.Ended(), 1)
	span := spans.Ended()[0].SpanContext()
	sc := extract(got)
	require.True(t, sc.IsValid())
	assert.Equal(t, span.TraceID(), sc.TraceID())
	assert.Equal(t, span.SpanID(), sc.SpanID())
	assert.True(t, sc.IsSampled())
	assert.True(t, sc.IsRemote())
}

func TestOnStartNilProperties(t *testing.T) {
	o, _ := newTestObserver(t, propagation.TraceContext{})
	got := o.OnStart(context.Background(), testEvent())
	assert.Len(t, got, 1)
	assert.Contains(t, got, "traceparent")
}

// TestOnStartInjectsNothing checks that no copy is made when the
// propagator has nothing to write, and that the span is recorded anyway.
func TestOnStartInjectsNothing(t *testing.T) {
	o, spans := newTestObserver(t, propagation.NewCompositeTextMapPropagator())
	ev := testEvent()
	ev.Properties = map[string]string{"a": "b"}
	assert.Nil(t, o.OnStart(context.Background(), ev))
	assert.Equal(t, map[string]string{"a": "b"}, ev.Properties)
	o.OnDone(ev)
	assert.Len(t, spans.Ended(), 1)
}

// TestUnsampledSpanPropagates: a span the sampler drops is not recorded,
// but its context (not sampled) still travels, so that consumers follow
// the decision.
func TestUnsampledSpanPropagates(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans), sdktrace.WithSampler(sdktrace.NeverSample()))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	o, err := New(WithTracerProvider(tp), WithPropagator(propagation.TraceContext{}))
	require.NoError(t, err)
	ev := testEvent()
	got := o.OnStart(context.Background(), ev)
	assert.IsType(t, (*dest)(nil), ev.Token, "no allocation for an unsampled span")
	o.OnDone(ev)
	assert.Empty(t, spans.Ended())
	sc := extract(got)
	assert.True(t, sc.IsValid())
	assert.False(t, sc.IsSampled())
}

// TestNoopTracerPropagatesCaller: with trace/noop's tracer no span is
// started, and the properties carry exactly what that tracer's span would:
// the caller's span context, or nothing.
func TestNoopTracerPropagatesCaller(t *testing.T) {
	o, err := New(WithTracerProvider(tracenoop.NewTracerProvider()), WithPropagator(propagation.TraceContext{}))
	require.NoError(t, err)
	require.Nil(t, o.spans.tracer)

	ev := testEvent()
	assert.Nil(t, o.OnStart(context.Background(), ev))
	assert.IsType(t, (*dest)(nil), ev.Token)
	o.OnDone(ev)

	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ctx, parent := tp.Tracer("test").Start(context.Background(), "handler")
	defer parent.End()
	ev = testEvent()
	got := o.OnStart(ctx, ev)
	noopCtx, _ := tracenoop.NewTracerProvider().Tracer("").Start(ctx, "x")
	want := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(noopCtx, want)
	assert.Equal(t, map[string]string(want), got)
	assert.Equal(t, parent.SpanContext().SpanID(), extract(got).SpanID())
	assert.Equal(t, ctx, ev.Token, "the caller's ctx is kept for the exemplars")
	o.OnDone(ev)
	assert.True(t, parent.IsRecording(), "the caller's span is not ended")
}

func TestCarrierKeys(t *testing.T) {
	ev := testEvent()
	ev.Properties = map[string]string{"a": "1"}
	c := (*carrier)(ev)
	assert.Equal(t, []string{"a"}, c.Keys())
	assert.Equal(t, "1", c.Get("a"))
	c.Set("b", "2")
	assert.ElementsMatch(t, []string{"a", "b"}, c.Keys())
	assert.Equal(t, "2", c.Get("b"))
	assert.Equal(t, "1", c.Get("a"))
	assert.Equal(t, map[string]string{"a": "1"}, ev.Properties)
	assert.Equal(t, map[string]string{"a": "1", "b": "2"}, ev.Token)
}
