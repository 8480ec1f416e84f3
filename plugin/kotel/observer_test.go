package kotel_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/trace"

	"github.com/keyroute/keyroute/plugin/kotel"
	"github.com/keyroute/keyroute/producer"
	"github.com/keyroute/keyroute/producer/producertest"
	"github.com/keyroute/keyroute/topology"
)

func TestSuccessSpanAndMetrics(t *testing.T) {
	r := newRig(t)
	ev := event(producer.OpSendAsync, 3)
	r.sendOK(context.Background(), ev)

	ended := r.spans.Ended()
	require.Len(t, ended, 1)
	s := ended[0]
	assert.Equal(t, "send persistent://public/default/events", s.Name())
	assert.Equal(t, trace.SpanKindProducer, s.SpanKind())
	assert.Equal(t, codes.Unset, s.Status().Code)
	assert.Equal(t, kotel.ScopeName, s.InstrumentationScope().Name)
	want := append(baseAttrs("send_async"), attribute.String("messaging.message.id", ev.ID.String()))
	assert.ElementsMatch(t, want, s.Attributes())
	assert.Equal(t, "east-1/3/17:4:2", ev.ID.String())

	m := r.collect(t)
	sum, ok := m["messaging.client.sent.messages"].(metricdata.Sum[int64])
	require.True(t, ok, "counter type %T", m["messaging.client.sent.messages"])
	require.Len(t, sum.DataPoints, 1)
	assert.True(t, sum.IsMonotonic)
	assert.Equal(t, int64(1), sum.DataPoints[0].Value)
	assert.Equal(t, attribute.NewSet(baseAttrs("send_async")...), sum.DataPoints[0].Attributes)

	hist, ok := m["messaging.client.operation.duration"].(metricdata.Histogram[float64])
	require.True(t, ok)
	require.Len(t, hist.DataPoints, 1)
	dp := hist.DataPoints[0]
	assert.Equal(t, uint64(1), dp.Count)
	assert.Equal(t, []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}, dp.Bounds)
	assert.Equal(t, attribute.NewSet(baseAttrs("send_async")...), dp.Attributes)
	assert.GreaterOrEqual(t, dp.Sum, 0.0)
}

type myErr struct{}

func (*myErr) Error() string { return "mine" }

func TestErrorType(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"send timeout", &producer.SendError{Err: producer.ErrSendTimeout, Cause: pulsar.ErrSendTimeout}, "send_timeout"},
		{"closed", &producer.SendError{Err: producer.ErrClosed}, "closed"},
		{"too large", &producer.SendError{Err: producer.ErrMessageTooLarge, Cause: pulsar.ErrMessageTooLarge}, "message_too_large"},
		{"deadline", &producer.SendError{Cause: context.DeadlineExceeded}, "deadline_exceeded"},
		{"canceled", &producer.SendError{Cause: context.Canceled}, "canceled"},
		{"other cause", &producer.SendError{Cause: fmt.Errorf("wrapped: %w", &myErr{})}, "*kotel_test.myErr"},
		{"bare", errors.New("x"), "*errors.errorString"},
		{"cluster down", &producer.SendError{Err: producer.ErrClusterDown}, "cluster_down"},
		{"in callback", producer.ErrInCallback, "in_callback"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			ev := event(producer.OpSend, 3)
			r.obs.OnStart(context.Background(), ev)
			ev.Err = tc.err
			r.obs.OnDone(ev)

			s := r.spans.Ended()[0]
			assert.Equal(t, codes.Error, s.Status().Code)
			assert.Equal(t, tc.err.Error(), s.Status().Description)
			assert.ElementsMatch(t, append(baseAttrs("send"), attribute.String("error.type", tc.want)), s.Attributes())

			wantSet := attribute.NewSet(append(baseAttrs("send"), attribute.String("error.type", tc.want))...)
			m := r.collect(t)
			sum := m["messaging.client.sent.messages"].(metricdata.Sum[int64])
			require.Len(t, sum.DataPoints, 1)
			assert.Equal(t, wantSet, sum.DataPoints[0].Attributes)
			hist := m["messaging.client.operation.duration"].(metricdata.Histogram[float64])
			require.Len(t, hist.DataPoints, 1)
			assert.Equal(t, wantSet, hist.DataPoints[0].Attributes)
		})
	}
}

func TestSpanIsChildOfCtxSpan(t *testing.T) {
	r := newRig(t)
	ctx, parent := r.tp.Tracer("test").Start(context.Background(), "handler")
	r.sendOK(ctx, event(producer.OpSend, 0))
	parent.End()

	ended := r.spans.Ended()
	require.Len(t, ended, 2)
	child := ended[0]
	assert.Equal(t, parent.SpanContext().TraceID(), child.SpanContext().TraceID())
	assert.Equal(t, parent.SpanContext().SpanID(), child.Parent().SpanID())
}

func TestOnDoneWithoutOnStart(t *testing.T) {
	r := newRig(t)
	ev := event(producer.OpSend, 1)
	ev.Err = &producer.SendError{Err: producer.ErrClosed}
	r.obs.OnDone(ev) // no span, but the message is still counted
	assert.Empty(t, r.spans.Ended())
	sum := r.collect(t)["messaging.client.sent.messages"].(metricdata.Sum[int64])
	require.Len(t, sum.DataPoints, 1)
	assert.Equal(t, int64(1), sum.DataPoints[0].Value)
}

func TestServerAddress(t *testing.T) {
	for url, want := range map[string]attribute.Set{
		"pulsar://127.0.0.1:6650":          attribute.NewSet(attribute.String("server.address", "127.0.0.1"), attribute.Int("server.port", 6650)),
		"pulsar://broker":                  attribute.NewSet(attribute.String("server.address", "broker"), attribute.Int("server.port", 6650)),
		"pulsar+ssl://a.example,b.example": attribute.NewSet(attribute.String("server.address", "a.example"), attribute.Int("server.port", 6651)),
		"pulsar://[::1]:7000,[::2]:7000":   attribute.NewSet(attribute.String("server.address", "::1"), attribute.Int("server.port", 7000)),
		"pulsar+ssl://h.example:6652/":     attribute.NewSet(attribute.String("server.address", "h.example"), attribute.Int("server.port", 6652)),
	} {
		r := newRig(t)
		ev := event(producer.OpSend, 0)
		ev.ServiceURL = url
		r.obs.OnStart(context.Background(), ev)
		r.obs.OnDone(ev)
		got := attribute.NewSet(r.spans.Ended()[0].Attributes()...)
		for _, kv := range want.ToSlice() {
			v, ok := got.Value(kv.Key)
			if assert.True(t, ok, "%s: %s", url, kv.Key) {
				assert.Equal(t, kv.Value, v, "%s: %s", url, kv.Key)
			}
		}
	}
}

// TestConcurrent exercises the attribute cache from many goroutines (run
// with -race) and checks that no message is lost or double counted.
func TestConcurrent(t *testing.T) {
	r := newRig(t)
	const goroutines, perG, parts = 8, 500, 7
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perG {
				op := producer.OpSendAsync
				if i%2 == 0 {
					op = producer.OpSend
				}
				ev := event(op, (g+i)%parts)
				r.obs.OnStart(context.Background(), ev)
				if i%10 == 0 {
					ev.Err = &producer.SendError{Err: producer.ErrSendTimeout}
				} else {
					ev.ID = okID(ev)
				}
				r.obs.OnDone(ev)
			}
		}()
	}
	wg.Wait()
	sum := r.collect(t)["messaging.client.sent.messages"].(metricdata.Sum[int64])
	var total int64
	for _, dp := range sum.DataPoints {
		total += dp.Value
	}
	assert.Equal(t, int64(goroutines*perG), total)
	// partitions x {send ok, send_async ok, send send_timeout}: only even
	// i (OpSend) can be a multiple of 10.
	assert.Equal(t, parts*3, len(sum.DataPoints))
	assert.Len(t, r.spans.Ended(), goroutines*perG)
}

// Through a Producer, the durations kotel records are times since the
// message was handed over (Event.Start), not since year 1.
func TestDurationsThroughProducer(t *testing.T) {
	r := newRig(t)
	fake := producertest.New(producertest.Partitions(1))
	topo := &topology.Topology{Clusters: []topology.Cluster{{Name: "c1", ServiceURL: "pulsar://c1:6650", Weight: 1}}}
	p, err := producer.New(context.Background(), topo, producer.Topic("t"), fake.Opt(), producer.Observe(r.obs))
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	start := time.Now()
	for i := range 10 {
		_, err := p.Send(context.Background(), &producer.Message{Key: fmt.Sprintf("k-%d", i)})
		require.NoError(t, err)
	}
	elapsed := time.Since(start).Seconds()
	hist, ok := r.collect(t)["messaging.client.operation.duration"].(metricdata.Histogram[float64])
	require.True(t, ok)
	require.Len(t, hist.DataPoints, 1)
	dp := hist.DataPoints[0]
	assert.Equal(t, uint64(10), dp.Count)
	mx, ok := dp.Max.Value()
	require.True(t, ok)
	assert.LessOrEqual(t, mx, elapsed, "a message's duration is longer than all the sends took")
}
