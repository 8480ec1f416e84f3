package kotel_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/keyroute/keyroute/consumer"
	"github.com/keyroute/keyroute/plugin/kotel"
	"github.com/keyroute/keyroute/producer"
	"github.com/keyroute/keyroute/topology"
)

const (
	consumedName = "messaging.client.consumed.messages"
	settleName   = "keyroute.consumer.settle.operations"
	testTopic    = "persistent://public/default/events"
)

// consumerRig is a ConsumerObserver wired to in-memory readers.
type consumerRig struct {
	obs    *kotel.ConsumerObserver
	reader *sdkmetric.ManualReader
	spans  *tracetest.SpanRecorder
}

// testTopology has east-1, the cluster event() sends to, and west-2.
var testTopology = &topology.Topology{Clusters: []topology.Cluster{
	{Name: "east-1", ServiceURL: "pulsar+ssl://b1.east.example:6651,b2.east.example:6651", Weight: 1},
	{Name: "west-2", ServiceURL: "pulsar://b1.west.example", Weight: 1},
}}

// newConsumerRig returns a rig whose observer knows the topic, the
// subscription "indexer" and testTopology, with opts applied after.
func newConsumerRig(t *testing.T, opts ...kotel.ConsumerOpt) *consumerRig {
	t.Helper()
	return newConsumerRigWith(t, append([]kotel.ConsumerOpt{
		kotel.WithTopic(testTopic), kotel.WithSubscription("indexer"), kotel.WithTopology(testTopology),
	}, opts...)...)
}

// newConsumerRigWith is newConsumerRig with only opts given.
func newConsumerRigWith(t *testing.T, opts ...kotel.ConsumerOpt) *consumerRig {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	t.Cleanup(func() {
		_ = mp.Shutdown(context.Background())
		_ = tp.Shutdown(context.Background())
	})
	obs, err := kotel.NewConsumerObserver(append([]kotel.ConsumerOpt{
		kotel.WithMeterProvider(mp),
		kotel.WithTracerProvider(tp),
		kotel.WithPropagator(propagation.TraceContext{}),
	}, opts...)...)
	require.NoError(t, err)
	return &consumerRig{obs: obs, reader: reader, spans: spans}
}

// counts returns the value of every point of the named counter, by
// attribute set.
func (r *consumerRig) counts(t *testing.T, name string) map[attribute.Distinct]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, r.reader.Collect(context.Background(), &rm))
	out := map[attribute.Distinct]int64{}
	for _, sm := range rm.ScopeMetrics {
		require.Equal(t, kotel.ScopeName, sm.Scope.Name)
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			sum, ok := m.Data.(metricdata.Sum[int64])
			require.True(t, ok, "%s: %T", name, m.Data)
			assert.True(t, sum.IsMonotonic)
			assert.Equal(t, metricdata.CumulativeTemporality, sum.Temporality)
			for _, dp := range sum.DataPoints {
				out[dp.Attributes.Equivalent()] = dp.Value
			}
		}
	}
	return out
}

func set(attrs ...attribute.KeyValue) attribute.Distinct {
	s := attribute.NewSet(attrs...)
	return s.Equivalent()
}

// message is a message of partition of east-1, with props.
func message(partition int, entry int64, props map[string]string) *consumer.Message {
	return &consumer.Message{
		Key:        "user-42",
		Value:      []byte("v"),
		Properties: props,
		ID:         consumer.ID{Cluster: "east-1", Partition: partition, Pulsar: pulsar.NewMessageID(17, entry, 0, int32(partition))},
	}
}

// consumerAttrs are the attributes of operation op (type typ) on
// partition 3 of east-1, as the rig's observer records them.
func consumerAttrs(op, typ string, extra ...attribute.KeyValue) []attribute.KeyValue {
	a := []attribute.KeyValue{
		attribute.String("messaging.system", "pulsar"),
		attribute.String("messaging.operation.name", op),
		attribute.String("messaging.operation.type", typ),
	}
	return append(append(a, eastWhere()...), extra...)
}

// eastWhere are the attributes that place a consumer's point on
// partition 3 of east-1, as the rig's observer records them.
func eastWhere() []attribute.KeyValue {
	return []attribute.KeyValue{
		attribute.String("messaging.destination.name", testTopic),
		attribute.String("messaging.consumer.group.name", "indexer"),
		attribute.String("messaging.destination.partition.id", "3"),
		attribute.String("server.address", "b1.east.example"),
		attribute.Int("server.port", 6651),
		attribute.String("keyroute.cluster", "east-1"),
	}
}

// TestReceiveLinksToProducerSpan sends a message through the producer's
// Observer and hands its properties to the ConsumerObserver: the receive
// span is a root span of its own trace, linked to the producer's span.
func TestReceiveLinksToProducerSpan(t *testing.T) {
	p := newRig(t)
	ev := event(producer.OpSend, 3)
	props := p.sendOK(context.Background(), ev)
	require.Len(t, p.spans.Ended(), 1)
	send := p.spans.Ended()[0].SpanContext()

	r := newConsumerRig(t)
	m := message(3, 4, props)
	r.obs.OnReceive(m)

	ended := r.spans.Ended()
	require.Len(t, ended, 1)
	s := ended[0]
	assert.Equal(t, "receive "+testTopic, s.Name())
	assert.Equal(t, trace.SpanKindClient, s.SpanKind())
	assert.Equal(t, codes.Unset, s.Status().Code)
	assert.Equal(t, kotel.ScopeName, s.InstrumentationScope().Name)
	assert.False(t, s.Parent().IsValid(), "the receive span has no parent")
	assert.NotEqual(t, send.TraceID(), s.SpanContext().TraceID())
	require.Len(t, s.Links(), 1)
	link := s.Links()[0].SpanContext
	assert.Equal(t, send.TraceID(), link.TraceID())
	assert.Equal(t, send.SpanID(), link.SpanID())
	assert.True(t, link.IsRemote())
	assert.ElementsMatch(t, consumerAttrs("receive", "receive", attribute.String("messaging.message.id", m.ID.String())), s.Attributes())
	assert.Equal(t, "east-1/3/17:4:0", m.ID.String())
}

// TestContextFromContinuesProducerTrace: a span started from ContextFrom
// is a child of the producer's span; a link made from it points there.
func TestContextFromContinuesProducerTrace(t *testing.T) {
	p := newRig(t)
	props := p.sendOK(context.Background(), event(producer.OpSendAsync, 3))
	send := p.spans.Ended()[0].SpanContext()
	r := newConsumerRig(t)
	m := message(3, 4, props)

	ctx := r.obs.ContextFrom(context.Background(), m)
	sc := trace.SpanContextFromContext(ctx)
	assert.True(t, sc.IsRemote())
	assert.Equal(t, send.SpanID(), sc.SpanID())

	_, span := p.tp.Tracer("app").Start(ctx, "process")
	span.End()
	process := p.spans.Ended()[1]
	assert.Equal(t, send.TraceID(), process.SpanContext().TraceID())
	assert.Equal(t, send.SpanID(), process.Parent().SpanID())

	assert.Equal(t, send.SpanID(), trace.LinkFromContext(r.obs.ContextFrom(context.Background(), m)).SpanContext.SpanID())
}

// TestContextFromNothingToRead keeps ctx's span when the message carries
// none, and leaves the message's map alone.
func TestContextFromNothingToRead(t *testing.T) {
	r := newConsumerRig(t)
	tp := sdktrace.NewTracerProvider()
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ctx, parent := tp.Tracer("app").Start(context.Background(), "handler")
	defer parent.End()
	props := map[string]string{"tenant": "acme"}
	got := r.obs.ContextFrom(ctx, message(0, 1, props))
	assert.Equal(t, parent.SpanContext(), trace.SpanContextFromContext(got))
	assert.Equal(t, map[string]string{"tenant": "acme"}, props)
	assert.Equal(t, ctx, r.obs.ContextFrom(ctx, nil))
}

func TestReceiveWithoutTraceContext(t *testing.T) {
	r := newConsumerRig(t)
	r.obs.OnReceive(message(3, 1, nil))
	r.obs.OnReceive(message(3, 2, map[string]string{"traceparent": "garbage"}))
	ended := r.spans.Ended()
	require.Len(t, ended, 2)
	for _, s := range ended {
		assert.Empty(t, s.Links())
	}
}

// TestConsumerCounts checks every counter's points: consumed per
// partition, acks, nacks, and failed acks by error.type.
func TestConsumerCounts(t *testing.T) {
	r := newConsumerRig(t)
	for i := range 5 {
		m := message(3, int64(i), nil)
		r.obs.OnReceive(m)
		switch i {
		case 0, 1:
			r.obs.OnAck(m.ID, nil)
		case 2:
			r.obs.OnNack(m.ID)
		case 3:
			r.obs.OnAck(m.ID, context.DeadlineExceeded)
		case 4:
			r.obs.OnAck(m.ID, fmt.Errorf("wrapped: %w", errors.New("consumer state is closed")))
		}
	}
	r.obs.OnReceive(message(0, 9, nil))

	part0 := consumerAttrs("receive", "receive")
	part0[5] = attribute.String("messaging.destination.partition.id", "0")
	assert.Equal(t, map[attribute.Distinct]int64{
		set(consumerAttrs("receive", "receive")...): 5,
		set(part0...): 1,
	}, r.counts(t, consumedName))
	failed := func(errType string) attribute.Distinct {
		return set(consumerAttrs("ack", "settle", attribute.String("error.type", errType))...)
	}
	assert.Equal(t, map[attribute.Distinct]int64{
		set(consumerAttrs("ack", "settle")...):  2,
		set(consumerAttrs("nack", "settle")...): 1,
		failed("deadline_exceeded"):             1,
		failed("*errors.errorString"):           1,
	}, r.counts(t, settleName))
	assert.Len(t, r.spans.Ended(), 6, "one receive span per message, none for settlements")
}

type ackErr struct{}

func (ackErr) Error() string { return "ack" }

func TestAckErrorType(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{context.Canceled, "canceled"},
		{&consumer.ClusterError{Cluster: "east-1", Op: "ack", Err: context.DeadlineExceeded}, "deadline_exceeded"},
		{&consumer.ClusterError{Cluster: "east-1", Op: "ack", Err: consumer.ErrClosed}, "closed"},
		{&consumer.ClusterError{Cluster: "east-1", Op: "ack", Err: ackErr{}}, "github.com/keyroute/keyroute/plugin/kotel_test.ackErr"},
		{errors.New("x"), "*errors.errorString"},
	} {
		r := newConsumerRig(t)
		r.obs.OnAck(message(3, 1, nil).ID, tc.err)
		assert.Equal(t, map[attribute.Distinct]int64{
			set(consumerAttrs("ack", "settle", attribute.String("error.type", tc.want))...): 1,
		}, r.counts(t, settleName), "%v", tc.err)
	}
}

// TestConsumerWithoutOptions: without topic, subscription and topology the
// attributes they give are left out and the span is named "receive".
func TestConsumerWithoutOptions(t *testing.T) {
	r := newConsumerRigWith(t)
	m := message(1, 1, nil)
	m.ID.Cluster = "west-2"
	r.obs.OnReceive(m)
	want := []attribute.KeyValue{
		attribute.String("messaging.system", "pulsar"),
		attribute.String("messaging.operation.name", "receive"),
		attribute.String("messaging.operation.type", "receive"),
		attribute.String("messaging.destination.partition.id", "1"),
		attribute.String("keyroute.cluster", "west-2"),
	}
	assert.Equal(t, map[attribute.Distinct]int64{set(want...): 1}, r.counts(t, consumedName))
	s := r.spans.Ended()[0]
	assert.Equal(t, "receive", s.Name())
	assert.ElementsMatch(t, append(want, attribute.String("messaging.message.id", "west-2/1/17:1:0")), s.Attributes())
}

func TestConsumerServerAddressFromTopology(t *testing.T) {
	r := newConsumerRig(t)
	m := message(1, 1, nil)
	m.ID.Cluster = "west-2"
	r.obs.OnReceive(m)
	got := attribute.NewSet(r.spans.Ended()[0].Attributes()...)
	host, _ := got.Value("server.address")
	port, _ := got.Value("server.port")
	assert.Equal(t, "b1.west.example", host.AsString())
	assert.Equal(t, int64(6650), port.AsInt64())

	m.ID.Cluster = "north" // not in the topology
	r.obs.OnReceive(m)
	got = attribute.NewSet(r.spans.Ended()[1].Attributes()...)
	assert.False(t, got.HasValue("server.address"))
	assert.False(t, got.HasValue("server.port"))
}

// TestConsumerNoSpans: with tracing off or trace/noop's tracer no span is
// started and the messages are still counted; ContextFrom still reads.
func TestConsumerNoSpans(t *testing.T) {
	for name, opt := range map[string]kotel.ConsumerOpt{
		"tracing off": kotel.WithTracing(false),
		"noop tracer": kotel.WithTracerProvider(tracenoop.NewTracerProvider()),
	} {
		t.Run(name, func(t *testing.T) {
			p := newRig(t)
			props := p.sendOK(context.Background(), event(producer.OpSend, 3))
			r := newConsumerRig(t, opt)
			m := message(3, 1, props)
			r.obs.OnReceive(m)
			assert.Empty(t, r.spans.Ended())
			assert.Equal(t, map[attribute.Distinct]int64{set(consumerAttrs("receive", "receive")...): 1}, r.counts(t, consumedName))
			assert.Equal(t, p.spans.Ended()[0].SpanContext().SpanID(), trace.SpanContextFromContext(r.obs.ContextFrom(context.Background(), m)).SpanID())
		})
	}
}

// TestConsumerConcurrent exercises the site cache from many goroutines
// (run with -race) and checks that nothing is lost or double counted.
func TestConsumerConcurrent(t *testing.T) {
	r := newConsumerRig(t, kotel.WithTracing(false))
	const goroutines, perG, parts = 8, 500, 7
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range perG {
				m := message((g+i)%parts, int64(i), nil)
				r.obs.OnReceive(m)
				if i%2 == 0 {
					r.obs.OnAck(m.ID, nil)
				} else {
					r.obs.OnNack(m.ID)
				}
			}
		})
	}
	wg.Wait()
	consumed, settled := r.counts(t, consumedName), r.counts(t, settleName)
	assert.Len(t, consumed, parts)
	assert.Equal(t, int64(goroutines*perG), total(consumed))
	assert.Len(t, settled, parts*2)
	assert.Equal(t, int64(goroutines*perG), total(settled))
}

// total returns the sum of counts' values.
func total(counts map[attribute.Distinct]int64) (n int64) {
	for _, v := range counts {
		n += v
	}
	return n
}
