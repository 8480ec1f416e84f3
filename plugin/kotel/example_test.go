package kotel_test

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/keyroute/keyroute/consumer"
	"github.com/keyroute/keyroute/plugin/kotel"
	"github.com/keyroute/keyroute/producer"
	"github.com/keyroute/keyroute/topology"
)

// Example wires kotel into a producer with explicit providers; with no
// options it uses the global ones (otel.SetMeterProvider and friends).
func Example() {
	mp := sdkmetric.NewMeterProvider() // add a reader/exporter here
	tp := sdktrace.NewTracerProvider() // add a batcher/exporter here
	defer mp.Shutdown(context.Background())
	defer tp.Shutdown(context.Background())

	obs, err := kotel.New(
		kotel.WithMeterProvider(mp),
		kotel.WithTracerProvider(tp),
		kotel.WithPropagator(propagation.TraceContext{}),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	opts := []producer.Opt{producer.Topic("persistent://public/default/events"), producer.Observe(obs)}
	// p, err := producer.New(ctx, topo, opts...)
	fmt.Println(len(opts), kotel.ScopeName)
	// Output: 2 github.com/keyroute/keyroute/plugin/kotel
}

// ExampleWithDurations keeps the duration histogram in kotel, for hot
// paths: the Durations is registered on the reader, and the Observer
// records into it instead of into a synchronous histogram.
func ExampleWithDurations() {
	durs := kotel.NewDurations()
	reader := sdkmetric.NewManualReader(sdkmetric.WithProducer(durs)) // or a PeriodicReader with an exporter
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())

	obs, err := kotel.New(kotel.WithMeterProvider(mp), kotel.WithTracing(false), kotel.WithDurations(durs))
	if err != nil {
		fmt.Println(err)
		return
	}
	ev := &producer.Event{Op: producer.OpSendAsync, Topic: "persistent://public/default/events", Cluster: "east",
		ServiceURL: "pulsar://broker:6650", Start: time.Now().Add(-7 * time.Millisecond)}
	obs.OnStart(context.Background(), ev)
	obs.OnDone(ev)

	var rm metricdata.ResourceMetrics
	_ = reader.Collect(context.Background(), &rm)
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if h, ok := m.Data.(metricdata.Histogram[float64]); ok {
				fmt.Println(m.Name, h.DataPoints[0].Count, h.DataPoints[0].BucketCounts[:3])
			}
		}
	}
	// Output: messaging.client.operation.duration 1 [0 1 0]
}

// ExampleNewConsumerObserver wires kotel into a consumer, with the topic,
// subscription and topology given to consumer.New, and continues the
// producer's trace in the processing of a message. The message here is
// made by hand; a Consumer's Receive returns it with the properties the
// producer's Observer wrote.
func ExampleNewConsumerObserver() {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer tp.Shutdown(context.Background())
	topo := &topology.Topology{Clusters: []topology.Cluster{{Name: "east", ServiceURL: "pulsar://broker:6650", Weight: 1}}}
	const topic, sub = "persistent://public/default/events", "indexer"

	obs, err := kotel.NewConsumerObserver(
		kotel.WithTracerProvider(tp),
		kotel.WithPropagator(propagation.TraceContext{}),
		kotel.WithTopic(topic), kotel.WithSubscription(sub), kotel.WithTopology(topo),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	opts := []consumer.Opt{consumer.Topic(topic), consumer.Subscription(sub), consumer.Observe(obs)}
	// c, err := consumer.New(ctx, topo, opts...)
	_ = opts

	// A producer span's context, as the producer's Observer propagates it.
	sendCtx, send := tp.Tracer("producer").Start(context.Background(), "send "+topic)
	send.End()
	props := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(sendCtx, props)
	m := &consumer.Message{Properties: props, ID: consumer.ID{Cluster: "east"}}
	obs.OnReceive(m) // the Consumer calls this

	// m, err := c.Receive(ctx)
	ctx := obs.ContextFrom(context.Background(), m)
	_, process := tp.Tracer("app").Start(ctx, "process "+topic)
	process.End()

	ended := spans.Ended() // send, receive, process
	receive, sendID := ended[1], send.SpanContext().SpanID()
	fmt.Println(receive.Name(), receive.SpanKind())
	fmt.Println("receive links to send:", receive.Links()[0].SpanContext.SpanID() == sendID)
	fmt.Println("process is a child of send:", ended[2].Parent().SpanID() == sendID)
	// Output:
	// receive persistent://public/default/events client
	// receive links to send: true
	// process is a child of send: true
}
