package kotel_test

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
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
