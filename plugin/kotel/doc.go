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
// error.type is the name of the error's producer.Reason code
// ("send_timeout", "closed", "cluster_down", "deadline_exceeded",
// "canceled", ...), and for an error the SDK has no code for, the Go type
// of the underlying cause, as semconv.ErrorType names it.
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
// to Send or SendAsync, which is all that tracer's spans carry. With
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
// Measured on the project's 2-core development machine, one goroutine
// (go test -bench Observer -cpu 1, medians of 3; CPU per message):
//
//	no-op providers                                       50 ns, 0 allocs
//	metrics, WithTracing(false), WithDurations            88 ns, 0 allocs
//	metrics only, WithTracing(false)                     397 ns, 0 allocs
//	metrics + no-op tracer                               414 ns, 0 allocs
//	metrics + ParentBased(TraceIDRatioBased(0.01))      1.1 us, 5 allocs, 560 B
//	metrics + every span sampled                        3.9 us, 12 allocs, 2.5 KB
//
// Kotel's own share is small: attribute sets, counters and histograms are
// built once per (topic, cluster, partition, operation), a message costs
// atomic adds, a message whose span does not record allocates nothing of
// kotel's, and no span is started when there is no tracer to record or
// propagate one. The rest is the SDKs': the metric SDK's Record of the
// duration with its eight attributes is about 300 ns (about 25 ns per
// attribute, re-checked on every call since v1.45), reading the clock about
// 35 ns; a span the sampler drops still costs its Start, its context and
// the properties' copy with a traceparent (about 700 ns), and a sampled
// span about as much CPU as the client spends on the message, plus ~2 KB.
//
// End to end (SendAsync on one local cluster, e2e/telemetry, every
// mode once per round in rotating order, 12 rounds; medians of throughput
// and client CPU against no observer in the same round): a no-op Observer
// 0.88x (+9% CPU), which is the producer's own cost of observing (an
// Event, a clock read, two calls); metrics with WithTracing(false) and
// WithDurations 0.86x (+12%); metrics through the SDK's histogram 0.82x
// (+23%). Rounds swing by ±20% on this machine. An earlier run gave 0.49x
// with 1% of traces sampled and 0.36x with every message traced.
//
// Recommended: WithTracing(false) on hot topics that need no traces, with
// WithDurations where its trade is acceptable; otherwise
// ParentBased(TraceIDRatioBased(r)) sampling, which keeps the cost of every
// unsampled message at the figure above and adds the sampled spans' in
// proportion to r. See bench_test.go here and e2e/telemetry.
package kotel
