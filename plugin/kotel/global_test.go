package kotel_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/keyroute/keyroute/plugin/kotel"
	"github.com/keyroute/keyroute/producer"
)

// TestAllocsGlobalTracerUnset: Observers that take the global TracerProvider by
// default start no span while none has been set (its spans would be no-op
// spans, at two allocations each), and start spans through it once one is
// set, Observers made before included. One test, because setting the
// global TracerProvider cannot be undone: no other test of the package
// uses the global one.
func TestAllocsGlobalTracerUnset(t *testing.T) {
	_, probe := otel.Tracer("probe").Start(context.Background(), "probe")
	require.False(t, probe.IsRecording() || probe.SpanContext().IsValid(), "a test set the global TracerProvider before this one")
	byDefault, err := kotel.New(kotel.WithPropagator(propagation.TraceContext{}))
	require.NoError(t, err)
	explicit, err := kotel.New(kotel.WithTracerProvider(otel.GetTracerProvider()), kotel.WithPropagator(propagation.TraceContext{}))
	require.NoError(t, err)
	consumerObs, err := kotel.NewConsumerObserver(kotel.WithTopic(testTopic), kotel.WithTopology(testTopology))
	require.NoError(t, err)
	m := tracedMessage(t)

	// The race detector changes allocation counts.
	if !raceEnabled {
		ev := event(producer.OpSendAsync, 3)
		id := okID(ev)
		assert.Zero(t, testing.AllocsPerRun(100, func() { roundTrip(byDefault, ev, id) }), "a span started by default")
		assert.Zero(t, testing.AllocsPerRun(100, func() { consumeOne(consumerObs, m) }), "a receive span started by default")
		assert.NotZero(t, testing.AllocsPerRun(100, func() { roundTrip(explicit, ev, id) }),
			"given explicitly, the global TracerProvider's tracer starts every span")
	}

	// What a no-op span would carry still travels: the caller's span
	// context.
	local := sdktrace.NewTracerProvider()
	t.Cleanup(func() { _ = local.Shutdown(context.Background()) })
	ctx, parent := local.Tracer("test").Start(context.Background(), "handler")
	defer parent.End()
	ev := event(producer.OpSendAsync, 3)
	props := byDefault.OnStart(ctx, ev)
	assert.Equal(t, parent.SpanContext().SpanID(), extractSC(props).SpanID())
	byDefault.OnDone(ev)

	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	otel.SetTracerProvider(tp)
	t.Cleanup(func() {
		otel.SetTracerProvider(tracenoop.NewTracerProvider())
		_ = tp.Shutdown(context.Background())
	})
	ev = event(producer.OpSendAsync, 3)
	roundTrip(byDefault, ev, okID(ev))
	consumeOne(consumerObs, m)
	var names []string
	for _, s := range spans.Ended() {
		names = append(names, s.Name())
	}
	assert.Equal(t, []string{"send persistent://public/default/events", "receive " + testTopic}, names)
}
