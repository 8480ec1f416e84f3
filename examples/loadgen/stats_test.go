package main

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recordAt records a latency of lat for cluster c.
func recordAt(r *recorder, c int, lat time.Duration, err error) {
	r.addSent(0)
	r.done(c, r.now()-int64(lat), -1, err)
}

func TestPercentilesFromKnownLatencies(t *testing.T) {
	r := newRecorder([]string{"a", "b"}, 1, time.Now())
	r.beginWindow(time.Now())
	// 1..1000 ms on cluster a, once each.
	for i := 1; i <= 1000; i++ {
		recordAt(r, 0, time.Duration(i)*time.Millisecond, nil)
	}
	overall, per, all, acc := r.results(100)
	require.Len(t, per, 2)
	a := per[0]
	assert.EqualValues(t, 1000, a.Messages)
	assert.EqualValues(t, 1000, all.TotalCount())
	// HDR with 3 significant digits: within 0.1% (plus the ~us of timing
	// noise between now() calls).
	assert.InDelta(t, 500, a.Latency.P50, 1)
	assert.InDelta(t, 950, a.Latency.P95, 1.5)
	assert.InDelta(t, 990, a.Latency.P99, 1.5)
	assert.InDelta(t, 999, a.Latency.P999, 1.5)
	assert.InDelta(t, 1000, a.Latency.Max, 1.5)
	assert.InDelta(t, 500.5, a.Latency.Mean, 1)
	assert.Equal(t, a.Latency, overall.Latency)
	assert.Zero(t, per[1].Messages)
	assert.Zero(t, per[1].Latency.P99)
	assert.True(t, acc.Balanced)
	assert.EqualValues(t, 1000, acc.Sent)
}

func TestWarmupAndDrainAreExcludedButAccounted(t *testing.T) {
	r := newRecorder([]string{"a"}, 1, time.Now())
	recordAt(r, 0, time.Millisecond, nil) // warm-up
	recordAt(r, 0, time.Millisecond, errors.New("boom"))
	r.beginWindow(time.Now())
	recordAt(r, 0, 2*time.Millisecond, nil)
	recordAt(r, 0, 2*time.Millisecond, errors.New("boom"))
	r.endWindow(time.Now())
	recordAt(r, 0, 3*time.Millisecond, nil) // drain
	overall, per, _, acc := r.results(10)
	assert.EqualValues(t, 1, overall.Messages)
	assert.EqualValues(t, 1, overall.Errors)
	assert.InDelta(t, 2, overall.Latency.P50, 0.05)
	assert.Equal(t, accounting{Sent: 5, Acked: 3, Failed: 2, Balanced: true}, acc)
	assert.Equal(t, map[string]int64{"boom": 2}, per[0].ErrorKind)
}

func TestAccountingDetectsMissingOutcomes(t *testing.T) {
	r := newRecorder([]string{"a"}, 2, time.Now())
	r.addSent(0)
	r.addSent(1)
	r.done(0, r.now(), -1, nil)
	_, _, _, acc := r.results(1)
	assert.False(t, acc.Balanced)
	assert.EqualValues(t, 2, acc.Sent)
}

func TestTickReportsTheLastSecondAndResets(t *testing.T) {
	t0 := time.Now()
	r := newRecorder([]string{"a", "b"}, 1, t0)
	for range 300 {
		recordAt(r, 0, time.Millisecond, nil)
	}
	for range 100 {
		recordAt(r, 1, 10*time.Millisecond, nil)
	}
	r.addSent(0) // one in flight
	recordAt(r, 1, 0, errors.New("x"))
	s := r.tick(t0.Add(time.Second), 1000)
	assert.True(t, s.Warmup)
	assert.InDelta(t, 400, s.MsgPerSec, 0.01)
	assert.InDelta(t, 0.4, s.MBPerSec, 1e-6)
	assert.InDelta(t, 1, s.P50Ms, 0.05)
	assert.InDelta(t, 10, s.P99Ms, 0.05)
	assert.EqualValues(t, 1, s.Errors)
	assert.EqualValues(t, 1, s.InFlight)
	assert.InDelta(t, 75, s.ClusterPct[0], 1e-9)
	assert.InDelta(t, 25, s.ClusterPct[1], 1e-9)

	s = r.tick(t0.Add(2*time.Second), 1000)
	assert.Zero(t, s.MsgPerSec)
	assert.Zero(t, s.P99Ms)
	assert.Zero(t, s.Errors)
}

func TestWindowRate(t *testing.T) {
	t0 := time.Now()
	r := newRecorder([]string{"a"}, 1, t0)
	r.beginWindow(t0)
	for range 500 {
		recordAt(r, 0, time.Millisecond, nil)
	}
	r.endWindow(t0.Add(2 * time.Second))
	overall, per, _, _ := r.results(1000)
	assert.InDelta(t, 250, overall.MsgPerSec, 1e-9)
	assert.InDelta(t, 0.25, overall.MBPerSec, 1e-9)
	assert.InDelta(t, 250, per[0].MsgPerSec, 1e-9)
	assert.Equal(t, 2*time.Second, r.window())
}

func TestDoneDoesNotAllocate(t *testing.T) {
	r := newRecorder([]string{"a"}, 1, time.Now())
	r.beginWindow(time.Now())
	allocs := testing.AllocsPerRun(1000, func() {
		r.addSent(0)
		r.done(0, r.now()-1000, -1, nil)
	})
	assert.Zero(t, allocs)
}

func TestLatencyIsClamped(t *testing.T) {
	r := newRecorder([]string{"a"}, 1, time.Now())
	r.beginWindow(time.Now())
	recordAt(r, 0, time.Hour, nil)
	recordAt(r, 0, -time.Second, nil) // clock oddities never panic or drop
	overall, _, _, _ := r.results(1)
	assert.EqualValues(t, 2, overall.Messages)
	assert.InDelta(t, float64(histMaxUs)/1000, overall.Latency.Max, float64(histMaxUs)/1000*0.001)
}

func TestCommas(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 12: "12", 999: "999", 1000: "1,000", 1234567: "1,234,567", -4500: "-4,500"} {
		assert.Equal(t, want, commas(n))
	}
}

func TestPacerKeepsTheRate(t *testing.T) {
	start := time.Now()
	p := newPacer(2000, start)
	for range 200 {
		_, ok := p.wait(t.Context())
		require.True(t, ok)
	}
	// 200 messages at 2000/s: the last is due at 99.5 ms.
	el := time.Since(start)
	assert.GreaterOrEqual(t, el, 99*time.Millisecond)
	assert.Less(t, el, time.Second)
}

func TestPacerStopsOnCtx(t *testing.T) {
	p := newPacer(0.5, time.Now())
	_, ok := p.wait(t.Context()) // first message is due at once
	require.True(t, ok)
	ctx, cancel := contextWithCancel(t)
	cancel()
	_, ok = p.wait(ctx)
	assert.False(t, ok)
}

func TestUnpacedNeverWaits(t *testing.T) {
	p := newPacer(0, time.Now())
	due, ok := p.wait(t.Context())
	assert.True(t, ok)
	assert.True(t, due.IsZero())
}
