package kotel

import (
	"reflect"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// spans is how an Observer starts its spans: with tracer, unless tracer
// starts none that records (tracing off, trace/noop's tracer), or it is the
// global tracer and its spans are no-op spans (no TracerProvider set yet).
type spans struct {
	// tracer starts the spans; nil when none is started: tracing is
	// off, or the tracer is trace/noop's, whose spans only carry the
	// caller's span context on. Set by init.
	tracer trace.Tracer
	// global is the global TracerProvider when the Observer took it by
	// default (no WithTracerProvider), nil otherwise. Set by init.
	global trace.TracerProvider
	// inert is set once a span of tracer came back as a no-op span (not
	// recording, its parent's span context, global's own) while global
	// was the global TracerProvider. OpenTelemetry's default global
	// TracerProvider starts only such spans until otel.SetTracerProvider
	// replaces it, yet each Start allocates two objects (the span and its
	// context, about 300 ns with the GC they cause): while global stays
	// the global TracerProvider, start returns nil.
	inert atomic.Bool
}

// init sets up the spans of a tracing Observer (tracing: WithTracing)
// with c's TracerProvider.
func (s *spans) init(c cfg) {
	if !c.tracing {
		return
	}
	tracer := c.tp.Tracer(ScopeName, trace.WithSchemaURL(semconv.SchemaURL))
	if _, isNoop := tracer.(tracenoop.Tracer); isNoop {
		return
	}
	s.tracer = tracer
	// Only a comparable TracerProvider can be compared with the global
	// one (OpenTelemetry's default is a pointer).
	if !c.tpSet && reflect.TypeOf(c.tp).Comparable() {
		s.global = c.tp
	}
}

// start returns the tracer to start a span with now, or nil when no span
// needs starting. Once a TracerProvider is set, the global tracer
// delegates to it, and start returns it.
func (s *spans) start() trace.Tracer {
	if s.inert.Load() && otel.GetTracerProvider() == s.global {
		return nil
	}
	return s.tracer
}

// notRecording notes a span of tracer that does not record, started with
// parent as its parent's span context: see inert.
func (s *spans) notRecording(parent trace.SpanContext, span trace.Span) {
	if s.global != nil && !s.inert.Load() && span.SpanContext().Equal(parent) &&
		span.TracerProvider() == s.global && otel.GetTracerProvider() == s.global {
		s.inert.Store(true)
	}
}
