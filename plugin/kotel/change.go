package kotel

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/keyroute/keyroute/producer"
)

// The change metrics: the semantic conventions define none for a topology
// change, so kotel names its own in keyroute.producer.*, as it does
// keyroute.consumer.settle.operations.
const (
	changesName    = "keyroute.producer.changes"
	changesUnit    = "{change}"
	changesDesc    = "Number of topology and partition changes whose hand-overs ended."
	changeDurName  = "keyroute.producer.change.duration"
	changeDurDesc  = "Time from a change to the release or decision of its last hand-over (producer.Change.Stall)."
	slotsName      = "keyroute.producer.change.moved.slots"
	slotsUnit      = "{slot}"
	slotsDesc      = "Number of routing slots (of 65536) whose cluster changed; a partition change moves keys but no slot."
	keysName       = "keyroute.producer.change.moved.keys"
	keysUnit       = "1"
	keysDesc       = "Share of the key space (0 to 1 per change) whose keys a change moved to another cluster or partition (producer.Change.KeysMoved)."
	markersName    = "keyroute.producer.change.sent.markers"
	markersUnit    = "{marker}"
	markersDesc    = "Number of hand-over markers written on the old owner partitions."
	heldName       = "keyroute.producer.change.held.messages"
	heldUnit       = "{message}"
	heldDesc       = "Number of moved keys' messages held until their hand-over ended."
	forcedName     = "keyroute.producer.change.forced.handovers"
	forcedUnit     = "{handover}"
	forcedDesc     = "Number of hand-overs whose marker was not acknowledged within HandoverTimeout, decided by OnClusterDown."
	kindTopology   = "topology"
	kindPartitions = "partitions"
	outcomeHanded  = "handed_over"
	outcomeForced  = "forced"
)

// ChangeKindKey is the attribute of the change metrics that says what
// changed: "topology" (Update) or "partitions" (a cluster's partition
// count grew; ClusterKey names the cluster).
const ChangeKindKey = attribute.Key("keyroute.change.kind")

// ChangeOutcomeKey is the attribute of the change metrics that says how
// the change's hand-overs ended: "handed_over" when no hand-over was
// forced, "forced" when at least one was decided by OnClusterDown
// (producer.Change.Forced > 0).
const ChangeOutcomeKey = attribute.Key("keyroute.change.outcome")

// changeBuckets are the bucket boundaries (seconds) of
// keyroute.producer.change.duration: from a change that moves nothing
// written (microseconds) to one decided at HandoverTimeout (by default
// SendTimeout + DownAfter) plus DownWait.
var changeBuckets = [...]float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}

// seenChanges is how many ended changes OnChange remembers to tell a
// repeated report from a new change.
const seenChanges = 64

// changeKey identifies a change that ended, among the reports of the
// Producers an Observer observes: Change names no Producer, so the epoch
// with the change's own figures stands for it, Stall (to the nanosecond)
// most of all.
type changeKey struct {
	epoch                  uint64
	stall                  time.Duration
	slots, markers, forced int
	grown                  string
	before, after          int
}

// changeMetrics holds the change instruments and the ended changes seen.
type changeMetrics struct {
	changes, slots, markers, held, forced metric.Int64Counter
	dur                                   metric.Float64Histogram
	keys                                  metric.Float64Counter

	mu   sync.Mutex // guards seen and next
	seen [seenChanges]changeKey
	next int // the slot of seen to write next; seen grows from 0
	n    int // how many of seen are in use
}

func newChangeMetrics(meter metric.Meter) (*changeMetrics, error) {
	m := &changeMetrics{}
	var err error
	for _, c := range []struct {
		inst             *metric.Int64Counter
		name, unit, desc string
	}{
		{&m.changes, changesName, changesUnit, changesDesc},
		{&m.slots, slotsName, slotsUnit, slotsDesc},
		{&m.markers, markersName, markersUnit, markersDesc},
		{&m.held, heldName, heldUnit, heldDesc},
		{&m.forced, forcedName, forcedUnit, forcedDesc},
	} {
		if *c.inst, err = meter.Int64Counter(c.name, metric.WithUnit(c.unit), metric.WithDescription(c.desc)); err != nil {
			return nil, fmt.Errorf("kotel: %s: %w", c.name, err)
		}
	}
	m.keys, err = meter.Float64Counter(keysName, metric.WithUnit(keysUnit), metric.WithDescription(keysDesc))
	if err != nil {
		return nil, fmt.Errorf("kotel: %s: %w", keysName, err)
	}
	m.dur, err = meter.Float64Histogram(changeDurName, metric.WithUnit("s"), metric.WithDescription(changeDurDesc),
		metric.WithExplicitBucketBoundaries(changeBuckets[:]...))
	if err != nil {
		return nil, fmt.Errorf("kotel: %s: %w", changeDurName, err)
	}
	return m, nil
}

// first reports whether k is a change not seen before, and remembers it.
func (m *changeMetrics) first(k changeKey) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.seen[:m.n] {
		if s == k {
			return false
		}
	}
	m.seen[m.next] = k
	m.next = (m.next + 1) % seenChanges
	m.n = min(m.n+1, seenChanges)
	return true
}

var _ producer.ChangeObserver = (*Observer)(nil)

// OnChange records a change once its hand-overs have ended (c.Done): one
// in keyroute.producer.changes, its Stall in
// keyroute.producer.change.duration, and its SlotsMoved, KeysMoved,
// Markers, Held and Forced in their counters. Reports of a change still under way (applied,
// a hand-over forced) record nothing: the ended report carries their
// figures, and Forced is the number of hand-overs decided.
//
// The Producer may report an ended change twice (a change that owed no
// marker is done when applied, and the last forced decision may end it):
// OnChange counts the repeat once, telling it by its epoch and figures,
// Stall to the nanosecond, among the last 64 ended changes it saw.
func (o *Observer) OnChange(c producer.Change) {
	if !c.Done {
		return
	}
	k := changeKey{epoch: c.Epoch, stall: c.Stall, slots: c.SlotsMoved, markers: c.Markers, forced: c.Forced,
		grown: c.Grown, before: c.PartitionsBefore, after: c.PartitionsAfter}
	if !o.chg.first(k) {
		return
	}
	attrs := make([]attribute.KeyValue, 0, 4)
	attrs = append(attrs, semconv.MessagingSystemPulsar)
	if c.Grown != "" {
		attrs = append(attrs, ChangeKindKey.String(kindPartitions), ClusterKey.String(c.Grown))
	} else {
		attrs = append(attrs, ChangeKindKey.String(kindTopology))
	}
	outcome := outcomeHanded
	if c.Forced > 0 {
		outcome = outcomeForced
	}
	attrs = append(attrs, ChangeOutcomeKey.String(outcome))
	set := metric.WithAttributeSet(attribute.NewSet(attrs...))
	ctx := context.Background()
	m := o.chg
	m.changes.Add(ctx, 1, set)
	m.dur.Record(ctx, c.Stall.Seconds(), set)
	m.slots.Add(ctx, int64(c.SlotsMoved), set)
	m.keys.Add(ctx, c.KeysMoved, set)
	m.markers.Add(ctx, int64(c.Markers), set)
	m.held.Add(ctx, c.Held, set)
	m.forced.Add(ctx, int64(c.Forced), set)
}
