package kotel

import (
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope name of the meter and tracer.
const ScopeName = "github.com/keyroute/keyroute/plugin/kotel"

// cfg is what New builds the Observer from.
type cfg struct {
	mp      metric.MeterProvider
	tp      trace.TracerProvider
	prop    propagation.TextMapPropagator
	tracing bool
	tpSet   bool // tp was given with WithTracerProvider
	durs    *Durations
}

// Opt configures an Observer. Every Opt is also a ConsumerOpt: the
// providers, the propagator and WithTracing mean the same for a
// ConsumerObserver.
type Opt interface {
	ConsumerOpt
	apply(*cfg)
}

type optFunc func(*cfg)

func (f optFunc) apply(c *cfg) { f(c) }

func (f optFunc) applyConsumer(c *consumerCfg) { f(&c.cfg) }

// WithMeterProvider sets the MeterProvider the metrics are recorded with
// (default: otel.GetMeterProvider() at New). nil keeps the default.
func WithMeterProvider(mp metric.MeterProvider) Opt {
	return optFunc(func(c *cfg) {
		if mp != nil {
			c.mp = mp
		}
	})
}

// WithTracerProvider sets the TracerProvider the spans are started with
// (default: otel.GetTracerProvider() at New). nil keeps the default.
//
// By default, while no TracerProvider has been set with
// otel.SetTracerProvider, the Observer starts no span (but the first, whose
// no-op span shows it), as with trace/noop's tracer: the global tracer's
// spans would be no-op spans, and starting them costs more than the rest of
// the Observer. Once one is set, spans are
// started through it. Given explicitly, even the global default, every span
// is started: for instrumentation that attaches to the global tracer's
// spans (go.opentelemetry.io/auto).
func WithTracerProvider(tp trace.TracerProvider) Opt {
	return optFunc(func(c *cfg) {
		if tp != nil {
			c.tp, c.tpSet = tp, true
		}
	})
}

// WithPropagator sets the propagator that writes the span's context into
// the message properties (default: otel.GetTextMapPropagator() at New).
// nil keeps the default.
func WithPropagator(p propagation.TextMapPropagator) Opt {
	return optFunc(func(c *cfg) {
		if p != nil {
			c.prop = p
		}
	})
}

// WithTracing sets whether the Observer starts a span per message and
// propagates trace context in the message properties (default true). With
// false it records the metrics only: no span is started, no property is
// written and OnStart always returns nil: about a third of the cost per
// message of a tracer that samples nothing (see the package doc). A
// ConsumerObserver with false starts no receive span and reads no
// property; its ContextFrom still extracts with the propagator.
func WithTracing(on bool) Opt {
	return optFunc(func(c *cfg) { c.tracing = on })
}

// WithDurations makes the Observer record messaging.client.operation.duration
// in d instead of in a histogram of the MeterProvider, which then has no
// such instrument: register d on the reader (see Durations). Recording
// costs about a tenth of the synchronous histogram's per message. nil keeps
// the default. A ConsumerObserver records no duration and ignores it.
func WithDurations(d *Durations) Opt {
	return optFunc(func(c *cfg) { c.durs = d })
}

func defaultCfg() cfg {
	return cfg{
		mp:      otel.GetMeterProvider(),
		tp:      otel.GetTracerProvider(),
		prop:    otel.GetTextMapPropagator(),
		tracing: true,
	}
}
