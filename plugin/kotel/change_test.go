package kotel_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/keyroute/keyroute/plugin/kotel"
	"github.com/keyroute/keyroute/producer"
	"github.com/keyroute/keyroute/producer/producertest"
)

// changeAttrs are the attributes of a change's points.
func changeAttrs(kind, outcome string, extra ...attribute.KeyValue) []attribute.KeyValue {
	return append([]attribute.KeyValue{
		attribute.String("messaging.system", "pulsar"),
		kotel.ChangeKindKey.String(kind),
		kotel.ChangeOutcomeKey.String(outcome),
	}, extra...)
}

// changeCount returns the value of counter name's point with attrs.
func changeCount(t *testing.T, m map[string]metricdata.Aggregation, name string, attrs []attribute.KeyValue) int64 {
	t.Helper()
	sum, ok := m[name].(metricdata.Sum[int64])
	require.True(t, ok, "%s: type %T", name, m[name])
	assert.True(t, sum.IsMonotonic, name)
	return pointWith(t, sum.DataPoints, func(dp metricdata.DataPoint[int64]) attribute.Set { return dp.Attributes }, attrs).Value
}

// changeHist returns keyroute.producer.change.duration's point with attrs.
func changeHist(t *testing.T, m map[string]metricdata.Aggregation, attrs []attribute.KeyValue) metricdata.HistogramDataPoint[float64] {
	t.Helper()
	hist, ok := m["keyroute.producer.change.duration"].(metricdata.Histogram[float64])
	require.True(t, ok, "type %T", m["keyroute.producer.change.duration"])
	return pointWith(t, hist.DataPoints, func(dp metricdata.HistogramDataPoint[float64]) attribute.Set { return dp.Attributes }, attrs)
}

// assertChange checks that the metrics hold one change, ch, with attrs,
// and with only, no point of other attributes.
func assertChange(t *testing.T, m map[string]metricdata.Aggregation, ch producer.Change, attrs []attribute.KeyValue, only bool) {
	t.Helper()
	for name, want := range map[string]int64{
		"keyroute.producer.changes":                 1,
		"keyroute.producer.change.moved.slots":      int64(ch.SlotsMoved),
		"keyroute.producer.change.sent.markers":     int64(ch.Markers),
		"keyroute.producer.change.held.messages":    ch.Held,
		"keyroute.producer.change.forced.handovers": int64(ch.Forced),
	} {
		assert.Equal(t, want, changeCount(t, m, name, attrs), name)
		if only {
			assert.Len(t, m[name].(metricdata.Sum[int64]).DataPoints, 1, name)
		}
	}
	keys, ok := m["keyroute.producer.change.moved.keys"].(metricdata.Sum[float64])
	require.True(t, ok, "type %T", m["keyroute.producer.change.moved.keys"])
	assert.True(t, keys.IsMonotonic)
	assert.InDelta(t, ch.KeysMoved, pointWith(t, keys.DataPoints, func(dp metricdata.DataPoint[float64]) attribute.Set { return dp.Attributes }, attrs).Value, 1e-12)
	dp := changeHist(t, m, attrs)
	assert.Equal(t, uint64(1), dp.Count)
	assert.Equal(t, ch.Stall.Seconds(), dp.Sum)
	assert.Equal(t, []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}, dp.Bounds)
}

// sendKeys sends one message with value v on each key, asynchronously;
// the func returned waits for their outcomes and returns their errors.
func sendKeys(p *producer.Producer, keys []string, v string) func() map[string]error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	errs := map[string]error{}
	for _, k := range keys {
		wg.Add(1)
		p.SendAsync(context.Background(), &producer.Message{Key: k, Value: []byte(v)}, func(_ producer.ID, _ *producer.Message, err error) {
			mu.Lock()
			errs[k] = err
			mu.Unlock()
			wg.Done()
		})
	}
	return func() map[string]error {
		wg.Wait()
		return errs
	}
}

// owners returns each key's cluster.
func owners(p *producer.Producer, keys []string) map[string]string {
	out := map[string]string{}
	for _, k := range keys {
		out[k], _ = p.Placement(k)
	}
	return out
}

// tap is the rig's Observer, which it passes every report to, and a
// channel of the ended changes' reports.
type tap struct {
	*kotel.Observer
	ended chan producer.Change
}

func (t *tap) OnChange(c producer.Change) {
	t.Observer.OnChange(c)
	if c.Done {
		select {
		case t.ended <- c:
		default:
		}
	}
}

// changeRig opens a Producer observed by a rig's Observer (through a tap,
// returned) on the fake's clusters named, with opts; keys are 300 keys.
func changeRig(t *testing.T, fake *producertest.Clusters, clusters []string, opts ...producer.Opt) (*rig, *tap, *producer.Producer, []string) {
	t.Helper()
	r := newRig(t)
	tp := &tap{Observer: r.obs, ended: make(chan producer.Change, 8)}
	opts = append([]producer.Opt{producer.Topic("t"), fake.Opt(), producer.Observe(tp)}, opts...)
	p, err := producer.New(context.Background(), producertest.Topology(clusters...), opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	keys := make([]string, 300)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%d", i)
	}
	return r, tp, p, keys
}

// closeAndCollect closes p, which waits for its goroutines, the one that
// reports a change's end among them, and returns p's last change and the
// metrics.
func closeAndCollect(t *testing.T, r *rig, p *producer.Producer) (producer.Change, map[string]metricdata.Aggregation) {
	t.Helper()
	require.NoError(t, p.Close(context.Background()))
	ch, ok := p.LastChange()
	require.True(t, ok)
	require.True(t, ch.Done)
	return ch, r.collect(t)
}

// A cluster added while the old ones hold their acknowledgements: the
// moved keys' new messages are held until the markers are acknowledged,
// and the change's figures are recorded once, when it ends.
func TestChangeMetricsThroughUpdate(t *testing.T) {
	fake := producertest.New(producertest.Partitions(2))
	r, _, p, keys := changeRig(t, fake, []string{"c1", "c2"})
	before := owners(p, keys)
	for _, c := range []string{"c1", "c2"} {
		fake.Cluster(c).Hold()
	}
	round1 := sendKeys(p, keys, "1")
	require.NoError(t, p.Update(context.Background(), producertest.Topology("c1", "c2", "c3")))
	var moved []string
	for k, c := range owners(p, keys) {
		if c != before[k] {
			moved = append(moved, k)
		}
	}
	require.NotEmpty(t, moved)
	round2 := sendKeys(p, moved, "2")
	ch, ok := p.LastChange()
	require.True(t, ok)
	require.False(t, ch.Done, "the markers wait behind held acknowledgements")
	assert.Empty(t, r.collect(t)["keyroute.producer.changes"], "nothing recorded before the change ends")

	for _, c := range []string{"c1", "c2"} {
		fake.Cluster(c).Release()
	}
	for k, err := range round1() {
		require.NoError(t, err, k)
	}
	for k, err := range round2() {
		require.NoError(t, err, k)
	}
	ch, m := closeAndCollect(t, r, p)
	assert.Equal(t, int64(len(moved)), ch.Held, "every moved key's new message was held")
	assert.Equal(t, 4, ch.Markers, "a marker on each old partition")
	assert.Zero(t, ch.Forced)
	assertChange(t, m, ch, changeAttrs("topology", "handed_over"), true)
}

// Old owners that never acknowledge their markers: at HandoverTimeout
// each hand-over is forced, and the change is recorded as forced.
func TestChangeMetricsForced(t *testing.T) {
	fake := producertest.New(producertest.Partitions(2))
	r, tp, p, keys := changeRig(t, fake, []string{"c1", "c2", "c3"},
		producer.OnClusterDown(producer.FailFast), producer.HandoverTimeout(time.Millisecond))
	for _, c := range []string{"c1", "c2", "c3"} {
		fake.Cluster(c).Hold()
	}
	round1 := sendKeys(p, keys, "1")
	require.NoError(t, p.Update(context.Background(), producertest.Topology("c1", "c2", "c3", "c4")))
	assert.Equal(t, 6, (<-tp.ended).Forced, "the change ends when every old partition is decided")
	for _, c := range []string{"c1", "c2", "c3"} {
		fake.Cluster(c).Release()
	}
	for k, err := range round1() {
		require.NoError(t, err, k)
	}
	ch, m := closeAndCollect(t, r, p)
	assert.Equal(t, 6, ch.Forced, "every old partition decided")
	assertChange(t, m, ch, changeAttrs("topology", "forced"), true)
}

// A change made before anything was written owes no marker: the Producer
// reports it done when applied and again when it watches it end, and it
// counts once.
func TestChangeMetricsCountAChangeOnce(t *testing.T) {
	fake := producertest.New(producertest.Partitions(2))
	r, _, p, _ := changeRig(t, fake, []string{"c1", "c2"})
	require.NoError(t, p.Update(context.Background(), producertest.Topology("c1", "c2", "c3")))
	ch, m := closeAndCollect(t, r, p)
	require.NotZero(t, ch.SlotsMoved)
	assert.Zero(t, ch.Markers)
	assertChange(t, m, ch, changeAttrs("topology", "handed_over"), true)
}

// Reports heard directly: only ended changes count, a repeat counts
// once, two Producers' changes of one epoch count twice, and a partition
// change names its cluster.
func TestOnChange(t *testing.T) {
	r := newRig(t)
	applied := producer.Change{Epoch: 1, SlotsMoved: 100, Markers: 2}
	r.obs.OnChange(applied)
	r.obs.OnChange(producer.Change{Epoch: 1, SlotsMoved: 100, Markers: 2, Forced: 1})
	assert.Empty(t, r.collect(t))

	a := producer.Change{Epoch: 1, SlotsMoved: 100, Markers: 2, Held: 7, Done: true, Stall: 1500 * time.Millisecond, Forced: 1}
	r.obs.OnChange(a)
	r.obs.OnChange(a)
	b := a // another Producer's first change
	b.Stall, b.Held, b.Forced = 20*time.Millisecond, 3, 0
	r.obs.OnChange(b)
	grown := producer.Change{Epoch: 2, KeysMoved: 0.25, Markers: 4, Held: 9, Done: true, Stall: 3 * time.Millisecond,
		Grown: "east", PartitionsBefore: 4, PartitionsAfter: 8}
	r.obs.OnChange(grown)
	r.obs.OnChange(grown)

	m := r.collect(t)
	assertChange(t, m, producer.Change{SlotsMoved: 100, Markers: 2, Held: 7, Stall: a.Stall, Forced: 1}, changeAttrs("topology", "forced"), false)
	forced := changeHist(t, m, changeAttrs("topology", "forced"))
	assert.Equal(t, []uint64{0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0}, forced.BucketCounts, "1.5 s in (1, 2.5]")

	handed := changeAttrs("topology", "handed_over")
	assert.Equal(t, int64(1), changeCount(t, m, "keyroute.producer.changes", handed))
	assert.Equal(t, int64(3), changeCount(t, m, "keyroute.producer.change.held.messages", handed))
	assert.Equal(t, int64(0), changeCount(t, m, "keyroute.producer.change.forced.handovers", handed))

	part := changeAttrs("partitions", "handed_over", attribute.String("keyroute.cluster", "east"))
	assert.Equal(t, int64(1), changeCount(t, m, "keyroute.producer.changes", part))
	assert.Equal(t, int64(0), changeCount(t, m, "keyroute.producer.change.moved.slots", part))
	keys := m["keyroute.producer.change.moved.keys"].(metricdata.Sum[float64])
	assert.Equal(t, 0.25, pointWith(t, keys.DataPoints, func(dp metricdata.DataPoint[float64]) attribute.Set { return dp.Attributes }, part).Value)
	assert.Equal(t, int64(9), changeCount(t, m, "keyroute.producer.change.held.messages", part))
	assert.Equal(t, 0.003, changeHist(t, m, part).Sum)
}

// A cluster's partitions grown while the producer runs: the partition
// change is recorded with its kind and the cluster.
func TestChangeMetricsPartitionGrowth(t *testing.T) {
	fake := producertest.New(producertest.Partitions(2))
	r, tp, p, keys := changeRig(t, fake, []string{"c1", "c2"}, producer.PartitionsAutoDiscoveryInterval(time.Millisecond))
	for k, err := range sendKeys(p, keys, "1")() {
		require.NoError(t, err, k)
	}
	fake.Cluster("c1").Grow(4)
	got := <-tp.ended
	assert.Equal(t, "c1", got.Grown)
	ch, m := closeAndCollect(t, r, p)
	assert.Equal(t, got.Epoch, ch.Epoch, "one change")
	assert.Equal(t, 2, ch.PartitionsBefore)
	assert.Equal(t, 4, ch.PartitionsAfter)
	assert.Equal(t, 2, ch.Markers, "a marker on each of c1's old partitions")
	assert.Zero(t, ch.SlotsMoved, "a growth moves no slot")
	assert.InDelta(t, 0.25, ch.KeysMoved, 0.02, "2 -> 4 partitions moves half of c1's keys, about half of all")
	assertChange(t, m, ch, changeAttrs("partitions", "handed_over", attribute.String("keyroute.cluster", "c1")), true)
}

// WithDurations keeps the message durations inside kotel; the changes
// are still recorded with the MeterProvider.
func TestOnChangeWithDurations(t *testing.T) {
	r := newRigWith(t, sdktrace.AlwaysSample(), kotel.WithDurations(kotel.NewDurations()))
	c := producer.Change{Epoch: 1, SlotsMoved: 10, Held: 2, Done: true, Stall: time.Millisecond}
	r.obs.OnChange(c)
	assertChange(t, r.collect(t), c, changeAttrs("topology", "handed_over"), true)
}
