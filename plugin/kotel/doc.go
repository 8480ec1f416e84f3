// Package kotel is the OpenTelemetry adapter for keyroute: an
// implementation of producer.Observer that records the messaging semantic
// conventions' client metrics and a PRODUCER span for every message, and
// propagates the span's trace context in the message properties.
//
// Data flows topology -> router -> producer -> (observer) kotel: the
// producer calls OnStart when a message is handed over and OnDone once with
// its outcome; kotel owns nothing else and never blocks.
//
//	obs, err := kotel.New() // global providers and propagator
//	if err != nil { ... }
//	p, err := producer.New(ctx, topo, producer.Topic(topic), producer.Observe(obs))
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
// error.type is a short name for the SDK's sentinels and the ctx errors
// ("send_timeout", "closed", "message_too_large", "nil_message",
// "context_deadline_exceeded", "context_canceled") and otherwise the Go
// type of the underlying cause, as semconv.ErrorType names it.
//
// # Propagation
//
// OnStart injects the span's context with the propagator into a copy of the
// message's properties and returns the copy, which the producer sends; the
// message's own map is never modified. When the propagator writes nothing
// (no valid span, no-op propagator) no copy is made.
//
// This needs the message's properties on producer.Event (a Properties
// field). Until the producer provides it, OnStart cannot copy them, so it
// propagates nothing and returns nil rather than drop the caller's
// properties; spans and metrics are recorded either way (see props.go).
//
// # Cost
//
// Attribute sets are built once per (topic, cluster, partition, operation)
// and reused, so a message costs the span, its context and the properties
// copy, not attribute building; a span's attributes are set in one call
// when it ends, which halves what the trace SDK allocates for it. Most of
// the remaining cost is the SDKs' own: a sampled span costs several
// microseconds of CPU and ~2 KB, about as much as pulsar-client-go spends
// on the message itself, so sample traces (ParentBased(TraceIDRatioBased))
// on hot topics. See bench_test.go and bench_e2e_test.go for figures.
package kotel
