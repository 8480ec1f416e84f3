package kotel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/keyroute/keyroute/plugin/kotel"
	"github.com/keyroute/keyroute/producer"
)

var _ sdkmetric.Producer = (*kotel.Durations)(nil)

// durationsRig is an Observer WithDurations, its Durations registered on
// the reader.
func durationsRig(t *testing.T) *rig {
	t.Helper()
	durs := kotel.NewDurations()
	reader := sdkmetric.NewManualReader(sdkmetric.WithProducer(durs))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	obs, err := kotel.New(kotel.WithMeterProvider(mp), kotel.WithTracerProvider(tracenoop.NewTracerProvider()),
		kotel.WithDurations(durs))
	require.NoError(t, err)
	return &rig{obs: obs, reader: reader}
}

// durationPoints returns every point of the duration histogram, and fails
// unless exactly one instrument of that name was collected.
func durationPoints(t *testing.T, r *rig) []metricdata.HistogramDataPoint[float64] {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, r.reader.Collect(context.Background(), &rm))
	var found []metricdata.HistogramDataPoint[float64]
	n := 0
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "messaging.client.operation.duration" {
				continue
			}
			n++
			assert.Equal(t, "s", m.Unit)
			h, ok := m.Data.(metricdata.Histogram[float64])
			require.True(t, ok, "type %T", m.Data)
			assert.Equal(t, metricdata.CumulativeTemporality, h.Temporality)
			found = h.DataPoints
		}
	}
	require.Equal(t, 1, n, "duration instruments collected")
	return found
}

// The same messages give the same points through Durations as through the
// SDK's synchronous histogram: attributes, bounds, counts per bucket, and
// sum, min and max up to the time between the two OnDone calls.
func TestDurationsMatchTheSDKHistogram(t *testing.T) {
	sdk, own := newRig(t), durationsRig(t)
	now := time.Now()
	failed := errors.New("broker said no")
	for _, m := range []struct {
		age time.Duration
		err error
	}{{time.Millisecond, nil}, {7 * time.Millisecond, nil}, {30 * time.Millisecond, nil},
		{7 * time.Millisecond, nil}, {12 * time.Second, nil}, {60 * time.Millisecond, failed}} {
		for _, r := range []*rig{sdk, own} {
			ev := event(producer.OpSendAsync, 3)
			ev.Start = now.Add(-m.age)
			r.obs.OnStart(context.Background(), ev)
			ev.ID, ev.Err = okID(ev), m.err
			if m.err != nil {
				ev.ID = producer.ID{}
			}
			r.obs.OnDone(ev)
		}
	}
	want, got := durationPoints(t, sdk), durationPoints(t, own)
	require.Len(t, got, 2, "a point for the written messages, one for the failed")
	require.Len(t, want, 2)
	for _, w := range want {
		g := pointWith(t, got, func(p metricdata.HistogramDataPoint[float64]) attribute.Set { return p.Attributes }, w.Attributes.ToSlice())
		assert.Equal(t, w.Count, g.Count)
		assert.Equal(t, w.Bounds, g.Bounds)
		assert.Equal(t, w.BucketCounts, g.BucketCounts)
		assert.InDelta(t, w.Sum, g.Sum, 0.05)
		wmin, _ := w.Min.Value()
		gmin, _ := g.Min.Value()
		assert.InDelta(t, wmin, gmin, 0.01)
		wmax, _ := w.Max.Value()
		gmax, _ := g.Max.Value()
		assert.InDelta(t, wmax, gmax, 0.01)
	}
	ok := pointWith(t, got, func(p metricdata.HistogramDataPoint[float64]) attribute.Set { return p.Attributes }, baseAttrs("send_async"))
	assert.Equal(t, []uint64{1, 2, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, ok.BucketCounts)
	assert.Equal(t, sentCount(t, own.collect(t), baseAttrs("send_async")...), int64(ok.Count))
}

// A reader without the Durations gets no duration histogram at all: the
// Observer records none with the MeterProvider.
func TestDurationsNotRegisteredRecordsNoHistogram(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	obs, err := kotel.New(kotel.WithMeterProvider(mp), kotel.WithDurations(kotel.NewDurations()))
	require.NoError(t, err)
	r := &rig{obs: obs, reader: reader}
	r.sendOK(context.Background(), event(producer.OpSend, 3))
	m := r.collect(t)
	assert.NotContains(t, m, "messaging.client.operation.duration")
	assert.Equal(t, int64(1), sentCount(t, m, baseAttrs("send")...))
}

func TestDurationsEmpty(t *testing.T) {
	sm, err := kotel.NewDurations().Produce(context.Background())
	require.NoError(t, err)
	assert.Empty(t, sm)
}
