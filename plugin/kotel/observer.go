package kotel

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/semconv/v1.43.0/messagingconv"
	"go.opentelemetry.io/otel/trace"

	"github.com/keyroute/keyroute/producer"
)

// durationBuckets are the explicit bucket boundaries (seconds) the
// semantic conventions recommend for messaging.client.operation.duration.
var durationBuckets = [...]float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}

// attrPool holds scratch slices for a span's attributes.
var attrPool = sync.Pool{New: func() any { s := make([]attribute.KeyValue, 0, 16); return &s }}

// Observer records OpenTelemetry metrics and spans for a keyroute
// producer; pass it to producer.Observe. It is safe for concurrent use and
// may observe several producers.
type Observer struct {
	// spans starts the messages' spans (see OnStart).
	spans spans
	// prop writes trace context into the message properties; nil when
	// tracing is off.
	prop  propagation.TextMapPropagator
	sent  metric.Int64ObservableCounter
	dur   metric.Float64Histogram // nil with WithDurations
	dests cache
	chg   *changeMetrics // the topology changes' (OnChange)
}

var _ producer.Observer = (*Observer)(nil)

// New returns an Observer recording with the providers and propagator the
// options name (the global ones by default). It fails only when the
// MeterProvider rejects an instrument.
func New(opts ...Opt) (*Observer, error) {
	c := defaultCfg()
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	meter := c.mp.Meter(ScopeName, metric.WithSchemaURL(semconv.SchemaURL))
	o := &Observer{}
	o.spans.init(c)
	if c.tracing {
		o.prop = c.prop
	}
	// The counter is observed: the Observer counts per attribute set with
	// atomics and reports the totals at each collection. Same name, unit,
	// description and data (a monotonic cumulative sum) as a synchronous
	// counter, at a fraction of the cost per message.
	var sent messagingconv.ClientSentMessages
	var err error
	o.sent, err = meter.Int64ObservableCounter(sent.Name(), metric.WithUnit(sent.Unit()), metric.WithDescription(sent.Description()))
	if err != nil {
		return nil, fmt.Errorf("kotel: %s: %w", sent.Name(), err)
	}
	if _, err := meter.RegisterCallback(func(_ context.Context, obs metric.Observer) error {
		o.dests.observe(obs, o.sent)
		return nil
	}, o.sent); err != nil {
		return nil, fmt.Errorf("kotel: %s callback: %w", sent.Name(), err)
	}
	if o.chg, err = newChangeMetrics(meter); err != nil {
		return nil, err
	}
	o.dests.durs = c.durs
	if c.durs != nil {
		return o, nil
	}
	dur, err := messagingconv.NewClientOperationDuration(meter, metric.WithExplicitBucketBoundaries(durationBuckets[:]...))
	if err != nil {
		return nil, fmt.Errorf("kotel: %s: %w", dur.Name(), err)
	}
	o.dur = dur.Inst()
	return o, nil
}

// traced is ev.Token for a message whose span records.
type traced struct {
	d   *dest
	ctx context.Context // holds the span
}

// OnStart starts the message's PRODUCER span as a child of the span in
// ctx and returns a copy of the message's properties carrying the span's
// context, or nil when the propagator has nothing to write.
//
// With trace/noop's tracer, or the global tracer before a TracerProvider is
// set, it starts no span and propagates ctx's own span context, which is
// all that tracer's span would carry; with tracing off it starts and
// propagates nothing.
//
// It leaves in ev.Token what OnDone needs, allocating only for a span that
// records: a *traced for such a span; without a span (tracing off, no-op
// tracer), the caller's ctx when it holds a span context, so that the
// duration's exemplars link to that span as they did through a no-op span;
// else the message's *dest.
func (o *Observer) OnStart(ctx context.Context, ev *producer.Event) map[string]string {
	d := o.dests.get(ev)
	tracer := o.spans.start()
	if tracer == nil {
		var props map[string]string
		if o.prop != nil {
			props = o.inject(ctx, ev)
		}
		ev.Token = d
		if trace.SpanContextFromContext(ctx).IsValid() {
			ev.Token = ctx
		}
		return props
	}
	sctx, span := tracer.Start(ctx, d.spanName, d.startOpts...)
	props := o.inject(sctx, ev)
	ev.Token = d
	if span.IsRecording() {
		ev.Token = &traced{d: d, ctx: sctx}
	} else {
		o.spans.notRecording(trace.SpanContextFromContext(ctx), span)
	}
	return props
}

// OnDone ends the message's span and records its metrics: the span gets
// messaging.message.id on success, an Error status and error.type on
// failure.
func (o *Observer) OnDone(ev *producer.Event) {
	var d *dest
	var span trace.Span
	ctx := context.Background()
	switch t := ev.Token.(type) {
	case *dest:
		d = t
	case *traced:
		d, ctx, span = t.d, t.ctx, trace.SpanFromContext(t.ctx)
	case context.Context:
		d, ctx = o.dests.get(ev), t
	default: // no OnStart
		d = o.dests.get(ev)
	}
	sent, rec := d.sent, d.recOpts
	if ev.Err != nil {
		f := d.failure(errorType(ev.Err))
		sent, rec = f.sent, f.recOpts
		if span != nil {
			span.SetStatus(codes.Error, ev.Err.Error())
			span.SetAttributes(f.attrs...)
		}
	} else if span != nil {
		// The SDK copies the attributes, so the slice can be reused.
		bp := attrPool.Get().(*[]attribute.KeyValue)
		attrs := append(append((*bp)[:0], d.attrs...), semconv.MessagingMessageID(formatID(ev.ID)))
		span.SetAttributes(attrs...)
		clear(attrs)
		*bp = attrs[:0]
		attrPool.Put(bp)
	}
	if span != nil {
		span.End()
	}
	sent.n.Add(1)
	if sent.h != nil {
		sent.h.record(time.Since(ev.Start))
	} else if o.dur.Enabled(ctx) {
		o.dur.Record(ctx, time.Since(ev.Start).Seconds(), rec...)
	}
}
