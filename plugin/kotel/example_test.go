package kotel_test

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/keyroute/keyroute/plugin/kotel"
	"github.com/keyroute/keyroute/producer"
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
