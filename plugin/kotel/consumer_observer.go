package kotel

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/semconv/v1.43.0/messagingconv"
	"go.opentelemetry.io/otel/trace"

	"github.com/keyroute/keyroute/consumer"
	"github.com/keyroute/keyroute/producer"
)

// Settle-operation counter: no semantic convention counts settlements, so
// kotel names its own outside the messaging namespace.
const (
	settleName = "keyroute.consumer.settle.operations"
	settleUnit = "{operation}"
	settleDesc = "Number of acknowledgements and negative acknowledgements of consumed messages."
)

// receiveKind is the span kind of a "receive" operation in the semantic
// conventions v1.43.0.
var receiveKind = trace.WithSpanKind(trace.SpanKindClient)

// ConsumerObserver records OpenTelemetry metrics and spans for a keyroute
// consumer; pass it to consumer.Observe. It is also a
// consumer.HandoverObserver (OnHandover). It is safe for concurrent use.
// Its topic and subscription are options, so one ConsumerObserver serves
// the Consumers of one topic and subscription.
type ConsumerObserver struct {
	// spans starts the receive spans.
	spans spans
	// prop reads the producer's trace context from the message
	// properties, for the span's link and ContextFrom.
	prop     propagation.TextMapPropagator
	spanName string
	consumed metric.Int64ObservableCounter
	settled  metric.Int64ObservableCounter
	sites    sites
	handover *handoverMetrics
}

var _ consumer.Observer = (*ConsumerObserver)(nil)

// NewConsumerObserver returns a ConsumerObserver recording with the
// providers and propagator the options name (the global ones by default),
// with the topic, subscription and service URLs of WithTopic,
// WithSubscription and WithTopology. It fails only when the MeterProvider
// rejects an instrument.
func NewConsumerObserver(opts ...ConsumerOpt) (*ConsumerObserver, error) {
	c := consumerCfg{cfg: defaultCfg()}
	for _, o := range opts {
		if o != nil {
			o.applyConsumer(&c)
		}
	}
	o := &ConsumerObserver{prop: c.prop, spanName: "receive"}
	if c.topic != "" {
		o.spanName = "receive " + c.topic
	}
	o.sites.topic, o.sites.subscription, o.sites.urls = c.topic, c.subscription, c.urls
	o.spans.init(c.cfg)
	// Both counters are observed, as the producer's sent counter is: the
	// ConsumerObserver counts with atomics and reports the totals at each
	// collection.
	meter := c.mp.Meter(ScopeName, metric.WithSchemaURL(semconv.SchemaURL))
	var consumed messagingconv.ClientConsumedMessages
	var err error
	o.consumed, err = meter.Int64ObservableCounter(consumed.Name(), metric.WithUnit(consumed.Unit()), metric.WithDescription(consumed.Description()))
	if err != nil {
		return nil, fmt.Errorf("kotel: %s: %w", consumed.Name(), err)
	}
	o.settled, err = meter.Int64ObservableCounter(settleName, metric.WithUnit(settleUnit), metric.WithDescription(settleDesc))
	if err != nil {
		return nil, fmt.Errorf("kotel: %s: %w", settleName, err)
	}
	if _, err := meter.RegisterCallback(func(_ context.Context, obs metric.Observer) error {
		o.sites.consumed.observe(obs, o.consumed)
		o.sites.settled.observe(obs, o.settled)
		return nil
	}, o.consumed, o.settled); err != nil {
		return nil, fmt.Errorf("kotel: consumer metrics callback: %w", err)
	}
	if o.handover, err = newHandoverMetrics(meter, &o.sites); err != nil {
		return nil, err
	}
	return o, nil
}

// OnReceive counts m in messaging.client.consumed.messages and records its
// receive span: started and ended here, with no parent, linked to the
// producer's span that m's properties carry, with m's attributes and
// messaging.message.id.
func (o *ConsumerObserver) OnReceive(m *consumer.Message) {
	st := o.sites.get(m.ID.Cluster, m.ID.Partition)
	st.consumed.n.Add(1)
	tracer := o.spans.start()
	if tracer == nil {
		return
	}
	opts := [2]trace.SpanStartOption{receiveKind}
	n := 1
	if sc := o.producerSpan(m); sc.IsValid() {
		opts[1] = trace.WithLinks(trace.Link{SpanContext: sc})
		n = 2
	}
	_, span := tracer.Start(context.Background(), o.spanName, opts[:n]...)
	if span.IsRecording() {
		// The SDK copies the attributes, so the slice can be reused.
		bp := attrPool.Get().(*[]attribute.KeyValue)
		id := producer.ID{Cluster: m.ID.Cluster, Partition: m.ID.Partition, MessageID: m.ID.Pulsar}
		attrs := append(append((*bp)[:0], st.recvAttrs...), semconv.MessagingMessageID(formatID(id)))
		span.SetAttributes(attrs...)
		clear(attrs)
		*bp = attrs[:0]
		attrPool.Put(bp)
	} else {
		o.spans.notRecording(trace.SpanContext{}, span)
	}
	span.End()
}

// OnAck counts an acknowledgement in keyroute.consumer.settle.operations
// (messaging.operation.name "ack"), with error.type when it failed.
func (o *ConsumerObserver) OnAck(id consumer.ID, err error) {
	st := o.sites.get(id.Cluster, id.Partition)
	if err != nil {
		st.ackFailed(ackErrorType(err)).n.Add(1)
		return
	}
	st.acked.n.Add(1)
}

// OnNack counts a negative acknowledgement in
// keyroute.consumer.settle.operations (messaging.operation.name "nack").
func (o *ConsumerObserver) OnNack(id consumer.ID) {
	o.sites.get(id.Cluster, id.Partition).nacked.n.Add(1)
}

// ContextFrom returns ctx with what the producer propagated in m's
// properties, read with the ConsumerObserver's propagator: the producer's
// span context, as the remote parent of the spans started from the
// result, and baggage where the propagator reads it. When m carries no
// span context (or is nil), ctx's own span stays the parent. It reads the properties
// even WithTracing(false).
//
// A span started from it makes the processing of m a child of the
// producer's span, in the producer's trace. Where m is processed in the
// scope of another span (an HTTP request's, a batch's), the semantic
// conventions recommend a link instead:
//
//	link := trace.LinkFromContext(obs.ContextFrom(context.Background(), m))
//	ctx, span := tracer.Start(ctx, "process "+topic, trace.WithLinks(link))
func (o *ConsumerObserver) ContextFrom(ctx context.Context, m *consumer.Message) context.Context {
	if m == nil {
		return ctx
	}
	// Extract only reads the carrier: m's map is never written.
	return o.prop.Extract(ctx, propagation.MapCarrier(m.Properties))
}

// producerSpan returns the span context m's properties carry, invalid when
// they carry none.
func (o *ConsumerObserver) producerSpan(m *consumer.Message) trace.SpanContext {
	return trace.SpanContextFromContext(o.ContextFrom(context.Background(), m))
}
