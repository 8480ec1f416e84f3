package kotel

import (
	"context"
	"fmt"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/keyroute/keyroute/consumer"
)

// The consumer's hand-over metrics: the semantic conventions define none
// for the hand-over of moving keys, so kotel names its own in
// keyroute.consumer.*, as it does the producer's change metrics.
const (
	handoverEventsName = "keyroute.consumer.handover.events"
	handoverEventsUnit = "{event}"
	handoverEventsDesc = "Number of hand-over events: holds released, as planned or before their origin passed, moved messages not held, bad hand-over properties."
	handoverMsgsName   = "keyroute.consumer.handover.released.messages"
	handoverMsgsUnit   = "{message}"
	handoverMsgsDesc   = "Number of messages the hand-over events delivered."
	handoverHeldName   = "keyroute.consumer.handover.hold.duration"
	handoverHeldDesc   = "Time the first message a hand-over event delivered was held; 0 for a message not held."
)

// HandoverKindKey is the attribute of the consumer's hand-over metrics
// that says what the event reports (consumer.HandoverKind):
// "released" (a hold that went to plan), "hold_timeout", "hold_limit",
// "origin_unread", "unordered", "bad", and
// "_OTHER" for a kind this version of kotel does not know.
const HandoverKindKey = attribute.Key("keyroute.handover.kind")

// handoverKind returns k's value of HandoverKindKey.
func handoverKind(k consumer.HandoverKind) string {
	switch k {
	case consumer.HandoverTimeout:
		return "hold_timeout"
	case consumer.HandoverLimit:
		return "hold_limit"
	case consumer.HandoverUnread:
		return "origin_unread"
	case consumer.HandoverUnordered:
		return "unordered"
	case consumer.HandoverBad:
		return "bad"
	case consumer.HandoverReleased:
		return "released"
	}
	return "_OTHER"
}

// handoverKey names the attribute set of an event: where its message was
// read, and its kind's value.
type handoverKey struct {
	siteKey
	kind string
}

// handoverMetrics holds the hand-over instruments and the measurement
// option of each attribute set seen. The instruments are synchronous: an
// event is rare next to the messages (at most one per message, under a
// producer's Spill or a bad producer), so it need not cost only an
// atomic add as a receive does.
type handoverMetrics struct {
	events, messages metric.Int64Counter
	held             metric.Float64Histogram

	s    *sites   // for where; its topic, subscription and urls are read only
	opts sync.Map // handoverKey -> metric.MeasurementOption; bounded by clusters x partitions x kinds
}

func newHandoverMetrics(meter metric.Meter, s *sites) (*handoverMetrics, error) {
	m := &handoverMetrics{s: s}
	var err error
	if m.events, err = meter.Int64Counter(handoverEventsName, metric.WithUnit(handoverEventsUnit), metric.WithDescription(handoverEventsDesc)); err != nil {
		return nil, fmt.Errorf("kotel: %s: %w", handoverEventsName, err)
	}
	if m.messages, err = meter.Int64Counter(handoverMsgsName, metric.WithUnit(handoverMsgsUnit), metric.WithDescription(handoverMsgsDesc)); err != nil {
		return nil, fmt.Errorf("kotel: %s: %w", handoverMsgsName, err)
	}
	// The change histogram's buckets serve here too: a hold ends at its
	// origin's marker (milliseconds to seconds; longer for a reader
	// catching up on a backlog) or after HoldTimeout without progress (30 s
	// by default), as a producer's hand-over ends at HandoverTimeout.
	m.held, err = meter.Float64Histogram(handoverHeldName, metric.WithUnit("s"), metric.WithDescription(handoverHeldDesc),
		metric.WithExplicitBucketBoundaries(changeBuckets[:]...))
	if err != nil {
		return nil, fmt.Errorf("kotel: %s: %w", handoverHeldName, err)
	}
	return m, nil
}

// attrs returns the measurement option of k's attribute set.
func (m *handoverMetrics) attrs(k handoverKey) metric.MeasurementOption {
	if v, ok := m.opts.Load(k); ok {
		return v.(metric.MeasurementOption)
	}
	where := m.s.where(k.siteKey)
	a := make([]attribute.KeyValue, 0, 2+len(where))
	a = append(append(append(a, semconv.MessagingSystemPulsar), where...), HandoverKindKey.String(k.kind))
	v, _ := m.opts.LoadOrStore(k, metric.WithAttributeSet(attribute.NewSet(a...)))
	return v.(metric.MeasurementOption)
}

var _ consumer.HandoverObserver = (*ConsumerObserver)(nil)

// OnHandover records a hand-over event of the Consumer (see
// consumer.HandoverObserver): one in keyroute.consumer.handover.events,
// e.Messages in keyroute.consumer.handover.released.messages and e.Held
// in keyroute.consumer.handover.hold.duration (seconds; 0 for the events
// of a message delivered without a hold: HandoverUnordered, HandoverBad,
// and HandoverUnread of a moved message whose origin is on a cluster the
// Consumer does not read).
// The points carry the attributes of the consumer's other metrics for
// the cluster and partition the event names (messaging.system,
// messaging.destination.name, messaging.consumer.group.name,
// messaging.destination.partition.id, server.address, server.port,
// keyroute.cluster) and keyroute.handover.kind.
//
// A hold released as planned, once its origin passed, is no event: the
// Consumer reports it in Health (HeldTotal, HoldTime) only.
func (o *ConsumerObserver) OnHandover(e consumer.HandoverEvent) {
	m := o.handover
	opt := m.attrs(handoverKey{siteKey{cluster: e.Cluster, partition: e.Partition}, handoverKind(e.Kind)})
	ctx := context.Background()
	m.events.Add(ctx, 1, opt)
	m.messages.Add(ctx, int64(e.Messages), opt)
	m.held.Record(ctx, e.Held.Seconds(), opt)
}
