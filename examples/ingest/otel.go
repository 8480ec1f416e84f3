package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// setupOTel installs the global OpenTelemetry providers for exporter
// ("none" or "" for none, "stdout") and returns their shutdown.
func setupOTel(exporter string) (func(context.Context) error, error) {
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	switch exporter {
	case "", "none":
		return func(context.Context) error { return nil }, nil
	case "stdout":
	default:
		return nil, fmt.Errorf("OTEL_EXPORTER=%q: want none or stdout", exporter)
	}
	me, err := stdoutmetric.New()
	if err != nil {
		return nil, err
	}
	te, err := stdouttrace.New()
	if err != nil {
		return nil, err
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(me, sdkmetric.WithInterval(10*time.Second))))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(te))
	otel.SetMeterProvider(mp)
	otel.SetTracerProvider(tp)
	return func(ctx context.Context) error {
		return errors.Join(tp.Shutdown(ctx), mp.Shutdown(ctx))
	}, nil
}
