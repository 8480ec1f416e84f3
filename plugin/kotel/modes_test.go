package kotel_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/keyroute/keyroute/plugin/kotel"
	"github.com/keyroute/keyroute/producer"
)

// TestMetricsOnly covers the two ways to record metrics without spans:
// WithTracing(false), and a no-op tracer. Every message is counted and
// timed with its attributes, no span is started or ended (not even the
// caller's), and the durations' exemplars link to the caller's span as
// they would through a no-op span. Only the no-op tracer propagates: the
// caller's span context, as its spans would.
func TestMetricsOnly(t *testing.T) {
	for _, tc := range []struct {
		name       string
		opt        kotel.Opt
		propagates bool
	}{
		{"tracing off", kotel.WithTracing(false), false},
		{"noop tracer", kotel.WithTracerProvider(tracenoop.NewTracerProvider()), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRigWith(t, sdktrace.AlwaysSample(), tc.opt)
			ctx, parent := r.tp.Tracer("test").Start(context.Background(), "handler")

			ok := event(producer.OpSendAsync, 3)
			ok.Properties = map[string]string{"tenant": "acme"}
			props := r.obs.OnStart(ctx, ok)
			if tc.propagates {
				assert.Equal(t, "acme", props["tenant"])
				assert.Equal(t, parent.SpanContext().SpanID(), extractSC(props).SpanID())
			} else {
				assert.Nil(t, props)
			}
			ok.ID = okID(ok)
			r.obs.OnDone(ok)

			failed := event(producer.OpSendAsync, 3)
			assert.Nil(t, r.obs.OnStart(context.Background(), failed))
			failed.Err = &producer.SendError{Err: producer.ErrSendTimeout}
			r.obs.OnDone(failed)

			assert.Empty(t, r.spans.Ended(), "no span is started, and the caller's is not ended")
			parent.End()
			require.Len(t, r.spans.Ended(), 1)

			m := r.collect(t)
			base := baseAttrs("send_async")
			withErr := append(baseAttrs("send_async"), attribute.String("error.type", "send_timeout"))
			assert.Equal(t, int64(1), sentCount(t, m, base...))
			assert.Equal(t, int64(1), sentCount(t, m, withErr...))
			dp := histPoint(t, m, base...)
			assert.Equal(t, uint64(1), dp.Count)
			require.Len(t, dp.Exemplars, 1)
			assert.Equal(t, parent.SpanContext().TraceID(), trace.TraceID(dp.Exemplars[0].TraceID))
			assert.Equal(t, parent.SpanContext().SpanID(), trace.SpanID(dp.Exemplars[0].SpanID))
			dp = histPoint(t, m, withErr...)
			assert.Equal(t, uint64(1), dp.Count)
			assert.Empty(t, dp.Exemplars, "no span in the failed message's ctx")
		})
	}
}

// TestExemplarLinksMessageSpan: a sampled message's duration links to
// the message's own span.
func TestExemplarLinksMessageSpan(t *testing.T) {
	r := newRig(t)
	r.sendOK(context.Background(), event(producer.OpSend, 3))
	require.Len(t, r.spans.Ended(), 1)
	span := r.spans.Ended()[0].SpanContext()
	dp := histPoint(t, r.collect(t), baseAttrs("send")...)
	require.Len(t, dp.Exemplars, 1)
	assert.Equal(t, span.TraceID(), trace.TraceID(dp.Exemplars[0].TraceID))
	assert.Equal(t, span.SpanID(), trace.SpanID(dp.Exemplars[0].SpanID))
}

// TestUnsampledMessage: a message whose span the sampler drops is counted
// and timed like any other, and its (unsampled) context travels.
func TestUnsampledMessage(t *testing.T) {
	r := newRigWith(t, sdktrace.NeverSample())
	sc := extractSC(r.sendOK(context.Background(), event(producer.OpSend, 3)))
	assert.True(t, sc.IsValid())
	assert.False(t, sc.IsSampled())
	assert.Empty(t, r.spans.Ended())
	m := r.collect(t)
	assert.Equal(t, int64(1), sentCount(t, m, baseAttrs("send")...))
	dp := histPoint(t, m, baseAttrs("send")...)
	assert.Equal(t, uint64(1), dp.Count)
	assert.Empty(t, dp.Exemplars)
}

// extractSC returns the span context that props carry.
func extractSC(props map[string]string) trace.SpanContext {
	return trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier(props)))
}
