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
var durationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}

// attrPool holds scratch slices for a span's attributes.
var attrPool = sync.Pool{New: func() any { s := make([]attribute.KeyValue, 0, 16); return &s }}

// Observer records OpenTelemetry metrics and spans for a keyroute
// producer; pass it to producer.Observe. It is safe for concurrent use and
// may observe several producers.
type Observer struct {
	tracer trace.Tracer
	prop   propagation.TextMapPropagator
	sent   metric.Int64ObservableCounter
	dur    metric.Float64Histogram
	dests  cache
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
	o := &Observer{tracer: c.tp.Tracer(ScopeName, trace.WithSchemaURL(semconv.SchemaURL)), prop: c.prop}
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
	dur, err := messagingconv.NewClientOperationDuration(meter, metric.WithExplicitBucketBoundaries(durationBuckets...))
	if err != nil {
		return nil, fmt.Errorf("kotel: %s: %w", dur.Name(), err)
	}
	o.dur = dur.Inst()
	return o, nil
}

// OnStart starts the message's PRODUCER span as a child of the span in
// ctx and returns a copy of the message's properties carrying the span's
// context, or nil when the propagator has nothing to write.
func (o *Observer) OnStart(ctx context.Context, ev *producer.Event) map[string]string {
	return o.inject(o.start(ctx, ev), messageProps(ev))
}

// start starts the span and keeps its ctx in ev.Token for OnDone.
func (o *Observer) start(ctx context.Context, ev *producer.Event) context.Context {
	d := o.dests.get(ev)
	ctx, _ = o.tracer.Start(ctx, d.spanName, d.startOpts...)
	ev.Token = ctx
	return ctx
}

// inject writes ctx's trace context into a copy of props and returns it,
// or returns nil when the propagator writes nothing.
func (o *Observer) inject(ctx context.Context, props map[string]string) map[string]string {
	c := carrier{src: props}
	o.prop.Inject(ctx, &c)
	return c.dst
}

// OnDone ends the message's span and records its metrics: the span gets
// messaging.message.id on success, an Error status and error.type on
// failure.
func (o *Observer) OnDone(ev *producer.Event) {
	ctx, _ := ev.Token.(context.Context)
	if ctx == nil {
		ctx = context.Background()
	}
	d := o.dests.get(ev)
	span := trace.SpanFromContext(ctx)
	sent, rec := d.sent, d.recOpts
	if ev.Err != nil {
		f := d.failure(errorType(ev.Err))
		sent, rec = f.sent, f.recOpts
		if span.IsRecording() {
			span.SetStatus(codes.Error, ev.Err.Error())
			span.SetAttributes(f.attrs...)
		}
	} else if span.IsRecording() {
		// The SDK copies the attributes, so the slice can be reused.
		bp := attrPool.Get().(*[]attribute.KeyValue)
		attrs := append(append((*bp)[:0], d.attrs...), semconv.MessagingMessageID(formatID(ev.ID)))
		span.SetAttributes(attrs...)
		clear(attrs)
		*bp = attrs[:0]
		attrPool.Put(bp)
	}
	span.End()
	sent.n.Add(1)
	o.dur.Record(ctx, time.Since(ev.Start).Seconds(), rec...)
}
