// Package kotel is the OpenTelemetry adapter for keyroute: Observer, an
// implementation of producer.Observer that records the messaging semantic
// conventions' client metrics and a PRODUCER span for every message, and
// propagates the span's trace context in the message properties; and
// ConsumerObserver, an implementation of consumer.Observer that counts the
// messages received and settled and records a receive span linked to the
// producer's, and of consumer.HandoverObserver that records the hand-over
// events of moving keys (see Consumer and Consumer hand-over below).
//
// Data flows topology -> router -> producer -> (observer) kotel: the
// producer calls OnStart when a message is handed over and OnDone once with
// its outcome; kotel owns nothing else and never blocks. On the other side,
// topology -> consumer -> (observer) kotel: the consumer calls OnReceive,
// OnAck, OnNack and OnHandover.
//
//	obs, err := kotel.New() // global providers and propagator
//	if err != nil { ... }
//	p, err := producer.New(ctx, topo, producer.Topic(topic), producer.Observe(obs))
//
// Files: observer.go, attrs.go, carrier.go, errtype.go, durations.go and
// options.go hold the producer's Observer; change.go its topology change
// metrics; consumer_*.go the ConsumerObserver.
//
// # Semantic conventions
//
// Names and attributes follow the OpenTelemetry semantic conventions
// v1.43.0 (package go.opentelemetry.io/otel/semconv/v1.43.0, whose schema URL
// the meter and tracer carry):
//
//   - counter messaging.client.sent.messages ({message}): one per message
//     with an outcome, failed ones carrying error.type. It is an observable
//     counter: kotel counts with atomics and reports the totals when the
//     metrics are collected (same name, unit and data: a monotonic
//     cumulative sum), so it carries no exemplars;
//   - histogram messaging.client.operation.duration (s, buckets 5 ms .. 10 s
//     as recommended): from hand-over to acknowledgement (or failure);
//   - span "send {topic}", kind PRODUCER, a child of the span in the ctx
//     given to Send or SendAsync, ended at the outcome; a failed message
//     sets the span status to Error and error.type; a written one sets
//     messaging.message.id to producer.ID.String().
//
// Every metric point and span carries messaging.system=pulsar,
// messaging.operation.name ("send" for Send, "send_async" for SendAsync),
// messaging.operation.type=send, messaging.destination.name (the topic),
// messaging.destination.partition.id (the partition index, as a string),
// server.address and server.port (the first host of the cluster's service
// URL) and keyroute.cluster (the cluster name).
//
// error.type is the name of the error's producer.Reason code
// ("send_timeout", "closed", "cluster_down", "deadline_exceeded",
// "canceled", ...), and for an error the SDK has no code for, the Go type
// of the underlying cause, as semconv.ErrorType names it.
//
// # Topology changes
//
// Observer is also a producer.ChangeObserver: the Producer reports each
// topology change (Update) and partition change to OnChange, which
// records, once the change's hand-overs have ended (Change.Done), from
// the Change alone:
//
//   - counter keyroute.producer.changes ({change}): one per change;
//   - histogram keyroute.producer.change.duration (s, buckets 1 ms ..
//     120 s): Change.Stall, from the change to the release or decision
//     of its last hand-over;
//   - counter keyroute.producer.change.moved.slots ({slot}): the routing
//     slots (of 65536) whose owner changed, Change.SlotsMoved (none for a
//     partition change);
//   - counter keyroute.producer.change.moved.keys (1): the share of the
//     key space that moved to another cluster or partition,
//     Change.KeysMoved (a growth from P to Q partitions moves (Q-P)/Q of
//     the grown cluster's keys);
//   - counter keyroute.producer.change.sent.markers ({marker}): the old
//     owner partitions given a hand-over marker, Change.Markers;
//   - counter keyroute.producer.change.held.messages ({message}): the
//     moved keys' messages held until their hand-over ended, Change.Held;
//   - counter keyroute.producer.change.forced.handovers ({handover}): the
//     hand-overs whose marker was not acknowledged within
//     HandoverTimeout, so that OnClusterDown decided for their moved keys
//     (under Spill, a possible reorder), Change.Forced.
//
// The conventions define no such metrics, so the names are kotel's own,
// as the settle counter's. Every point carries messaging.system=pulsar,
// keyroute.change.kind ("topology", or "partitions" with keyroute.cluster
// naming the cluster that grew) and keyroute.change.outcome ("forced"
// when Forced > 0, else "handed_over"). A Change names neither the
// Producer nor its topic, nor the clusters or policy of a forced
// decision, so the points carry none of them; a change ended by Close
// counts as "handed_over". Nothing is recorded while a change is under
// way (its applied and forced reports): the ended report has the figures.
// The Producer may report an ended change twice; OnChange counts it once,
// knowing it by its epoch and figures (Stall to the nanosecond) among the
// last 64 ended changes. The instruments are synchronous: a change is
// rare, and nothing of it touches the per-message path.
//
// # Propagation
//
// OnStart injects the span's context with the propagator into a copy of the
// message's properties and returns the copy, which the producer sends; the
// message's own map is never modified. When the propagator writes nothing
// (no valid span, no-op propagator) no copy is made. A span the sampler
// drops still has a context, marked not sampled, and it travels too, so
// that consumers follow the decision.
//
// With the no-op tracer of go.opentelemetry.io/otel/trace/noop, kotel
// starts no span and propagates the span context already in the ctx given
// to Send or SendAsync, which is all that tracer's spans carry. The same
// holds for the global tracer taken by default while no TracerProvider has
// been set (otel.SetTracerProvider): its spans are no-op spans too; once
// one is set, spans are started through it (see WithTracerProvider). With
// WithTracing(false) it starts no span and writes no property at all.
//
// # Exemplars
//
// A duration is recorded with the message's span in its ctx when that span
// records, so that exemplars link to it. Without a span (tracing off, no-op
// tracer) it is recorded with the caller's ctx when that holds a span
// context, as it was through a no-op span. A message whose span the
// sampler dropped is recorded with no span: with the default trace-based
// exemplar filter neither an unsampled span nor its unsampled parent would
// give an exemplar.
//
// # Durations kept by kotel
//
// The metric SDK's synchronous histogram re-checks the attribute set on
// every Record, which is most of what metrics cost per message. With
// WithDurations(d), kotel keeps messaging.client.operation.duration itself
// (atomic adds per attribute set) and d hands it to the reader it is
// registered on with sdkmetric.WithProducer, as a cumulative histogram with
// the same name, unit, buckets and attributes. The trade: views do not
// apply to it, it has no exemplars, and it must be registered on the
// reader (an Observer WithDurations records no duration with the
// MeterProvider). See Durations.
//
// # Cost
//
// Kotel's own share is small: attribute sets, counters and histograms are
// built once per (topic, cluster, partition, operation), a message costs
// atomic adds, a message whose span does not record allocates nothing of
// kotel's, and no span is started when there is no tracer to record or
// propagate one. The rest is the SDKs': the metric SDK's Record of the
// duration with its eight attributes is the largest part of metrics, and a
// span, even one the sampler drops, costs its Start, its context and the
// properties' copy with a traceparent; a sampled span costs about as much
// CPU as the client spends on the message. PERF.md has the figures
// (bench_test.go here and e2e/telemetry measure them).
//
// Recommended: WithTracing(false) on hot topics that need no traces, with
// WithDurations where its trade is acceptable; otherwise
// ParentBased(TraceIDRatioBased(r)) sampling, which keeps the cost of every
// unsampled message that of metrics alone and adds the sampled spans' in
// proportion to r.
//
// # Consumer
//
// NewConsumerObserver takes the same providers, propagator and WithTracing
// (WithDurations does not apply), and what consumer.Observer's callbacks do
// not say, as given to consumer.New: WithTopic, WithSubscription and
// WithTopology (for server.address). One ConsumerObserver serves the
// Consumers of one topic and subscription:
//
//	obs, err := kotel.NewConsumerObserver(kotel.WithTopic(topic),
//		kotel.WithSubscription(sub), kotel.WithTopology(topo))
//	if err != nil { ... }
//	c, err := consumer.New(ctx, topo, consumer.Topic(topic),
//		consumer.Subscription(sub), consumer.Observe(obs))
//
// It records, with the conventions v1.43.0 as above:
//
//   - counter messaging.client.consumed.messages ({message}): one per
//     OnReceive, observed like the sent counter. The consumer calls
//     OnReceive when a cluster's pump reads the message, before the
//     application takes it, so a message dropped by SeekByTime or Close
//     (at most one per cluster each time) is counted though never
//     delivered;
//   - span "receive {topic}" ("receive" without WithTopic), kind CLIENT
//     (the kind v1.43.0 gives receive operations; v1.24.0 and before said
//     CONSUMER), per message, started and ended in OnReceive: the
//     Observer sees when a message is read, not a wait for it, so the span
//     marks that moment. It has no parent (there is no caller's ctx) and
//     links to the producer's span, read from the message properties with
//     the propagator; a message that carries none gets no link. Being a
//     root span, it is sampled by the sampler's root decision
//     (ParentBased's root sampler), not by the producer's. It carries
//     messaging.message.id (consumer.ID.String());
//   - counter keyroute.consumer.settle.operations ({operation}): one per
//     OnAck (messaging.operation.name "ack": Ack, AckID, AckCumulative and
//     AckIDCumulative alike, so a cumulative acknowledgement counts once,
//     whatever it settles) and per OnNack ("nack"), with
//     messaging.operation.type=settle, and error.type on an
//     acknowledgement that failed. The conventions define no settlement
//     counter, so its name is kotel's own, outside the messaging
//     namespace. It records no messaging.client.operation.duration: with
//     acknowledgement grouping (the consumer's default) Ack returns once
//     the acknowledgement is queued, so a duration would time a queue
//     insert, and OnAck has no start time anyway. Nor a settle span:
//     OnAck has neither a ctx to parent it nor the message to link it to.
//
// Every point and span carries messaging.system=pulsar,
// messaging.operation.name and messaging.operation.type,
// messaging.destination.name (WithTopic), messaging.consumer.group.name
// (the subscription name, WithSubscription: a Pulsar subscription is a
// named cursor shared by the consumers attached to it, the role of a Kafka
// consumer group; the conventions have no Pulsar page to say otherwise),
// messaging.destination.partition.id, server.address and server.port (the
// first host of the cluster's service URL in WithTopology) and
// keyroute.cluster. An attribute whose option was not given is left out.
//
// error.type on a failed acknowledgement is "canceled" or
// "deadline_exceeded" for a ctx that ended, "closed" for consumer.ErrClosed,
// else the Go type of the cause as semconv.ErrorType names it
// (pulsar-client-go v0.21.0's errors are "*pulsar.Error" or, for those it
// makes with errors.New, a closed consumer's among them,
// "*errors.errorString").
//
// ContextFrom continues the producer's trace where the application
// processes a message: it returns a ctx whose remote parent is the
// producer's span, for a child span, or for trace.LinkFromContext where
// the processing runs in another span's scope (the conventions' default).
//
// Cost per message received and acknowledged (go test -bench
// ConsumerObserver -cpu 1, medians of 3, the same machine as above):
// WithTracing(false) 52 ns and no allocation; a receive span the sampler
// drops 0.84 us, 8 allocs (extracting the producer's context, the link and
// the SDK's unsampled span); a sampled one 3.8 us, 16 allocs, 2.7 KB.
//
// # Consumer hand-over
//
// ConsumerObserver is also a consumer.HandoverObserver: a Consumer given
// it with consumer.Observe reports to OnHandover each hold of a moving
// key that ends (router/HANDOVER.md, section 6), as planned or not, and
// each moved message it could not hold, and OnHandover records, from the
// consumer.HandoverEvent alone:
//
//   - counter keyroute.consumer.handover.events ({event}): one per event;
//   - counter keyroute.consumer.handover.released.messages ({message}):
//     the messages the event delivered, HandoverEvent.Messages (a released
//     hold's whole queue; 1 for the other kinds);
//   - histogram keyroute.consumer.handover.hold.duration (s, the buckets
//     of keyroute.producer.change.duration, 1 ms .. 120 s): how long the
//     first message the event delivered was held, HandoverEvent.Held; 0
//     for a message delivered without a hold (HandoverUnordered,
//     HandoverBad, and HandoverUnread of a moved message whose origin is
//     on a cluster the Consumer does not read), so the histogram counts
//     every event too.
//
// The conventions define no such metrics, so the names are kotel's own.
// Every point carries the attributes of the consumer's other points for
// the cluster and partition where the event's message was read
// (messaging.system=pulsar, messaging.destination.name,
// messaging.consumer.group.name, messaging.destination.partition.id,
// server.address, server.port, keyroute.cluster; those whose option was
// not given are left out) and keyroute.handover.kind: "released" (a hold
// whose origins passed, delivered in order), "hold_timeout" (its origin
// made no progress for HoldTimeout), "hold_limit" (MaxHeld released the
// oldest hold of a Retry subscription), "origin_unread" (an origin on a cluster the Consumer does not
// read), "unordered" (a moved message its producer released without its
// origin) or "bad" (hand-over properties that do not follow HANDOVER.md);
// "_OTHER" for a kind this version does not know. Every kind but
// "released" and "bad" may deliver a moved key's message before an
// earlier one of that key. The instruments are synchronous: events are
// rare next to the messages.
package kotel
