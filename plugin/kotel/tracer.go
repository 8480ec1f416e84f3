package kotel

import (
	"reflect"

	"go.opentelemetry.io/otel"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// spans is how an Observer starts its spans: with tracer, unless tracer
// starts none that records (tracing off, trace/noop's tracer), or it is the
// global tracer and no TracerProvider has been set yet.
type spans struct {
	// tracer starts the spans; nil when none is started: tracing is
	// off, or the tracer is trace/noop's, whose spans only carry the
	// caller's span context on.
	tracer trace.Tracer
	// unset is OpenTelemetry's default global TracerProvider when the
	// Observer took it by default (no WithTracerProvider): until
	// otel.SetTracerProvider replaces it, its tracers' spans are no-op
	// spans, like trace/noop's, yet each Start allocates two objects
	// (the span and its context, about 300 ns with the GC they cause).
	// Nil otherwise.
	unset trace.TracerProvider
}

// newSpans returns the spans of a tracing Observer (tracing: WithTracing)
// with c's TracerProvider.
func newSpans(c cfg) spans {
	if !c.tracing {
		return spans{}
	}
	s := spans{tracer: c.tp.Tracer(ScopeName, trace.WithSchemaURL(semconv.SchemaURL))}
	if _, isNoop := s.tracer.(tracenoop.Tracer); isNoop {
		return spans{}
	}
	if !c.tpSet && isGlobalDefault(c.tp) {
		s.unset = c.tp
	}
	return s
}

// start returns the tracer to start a span with now, or nil when no span
// needs starting. Once a TracerProvider is set, the global tracer
// delegates to it, and start returns it.
func (s *spans) start() trace.Tracer {
	if s.unset != nil && otel.GetTracerProvider() == s.unset {
		return nil
	}
	return s.tracer
}

// globalDefault is where the default global TracerProvider's type lives;
// see isGlobalDefault.
const globalDefault = "go.opentelemetry.io/otel/internal/global"

// isGlobalDefault reports whether tp is OpenTelemetry's default global
// TracerProvider, the one otel.GetTracerProvider returns before any
// otel.SetTracerProvider. Its type is internal to OpenTelemetry, so it is
// known by its package and name; if a later OpenTelemetry renamed it, the
// Observer would start spans through it as before, only slower.
func isGlobalDefault(tp trace.TracerProvider) bool {
	t := reflect.TypeOf(tp)
	if t == nil || t.Kind() != reflect.Pointer {
		return false
	}
	t = t.Elem()
	return t.PkgPath() == globalDefault && t.Name() == "tracerProvider"
}
