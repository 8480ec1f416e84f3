package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// jsonKind is the JSON kind Jackson writes for a Java type.
func jsonKind(javaType string) string {
	switch {
	case strings.HasPrefix(javaType, "List<"):
		return "array"
	case strings.HasPrefix(javaType, "Map<"):
		return "object"
	case javaType == "String":
		return "string"
	default: // int, long, double
		return "number"
	}
}

func kindOf(v any) string {
	switch v.(type) {
	case []any:
		return "array"
	case map[string]any:
		return "object"
	case string:
		return "string"
	case float64:
		return "number"
	}
	return "other"
}

// sampleOMB is a result with two intervals and data in every histogram.
func sampleOMB() *ombResult {
	pub, delay, e2e := newHist(), newHist(), newHist()
	for i := int64(1); i <= 1000; i++ {
		_ = pub.RecordValue(i * 10)    // 10 us .. 10 ms
		_ = delay.RecordValue(i)       // 1 .. 1000 us
		_ = e2e.RecordValue(i*10 + 50) // 60 us .. 10.05 ms
	}
	iv := ombInterval{publishRate: 100, consumeRate: 200, backlog: 3, pub: statsOf(pub), delay: statsOf(delay), e2e: statsOf(e2e)}
	m := ombMeta{workload: "w", driver: "keyroute-2-clusters", messageSize: 100, topics: 1, partitions: 3, producers: 2, consumers: 1}
	return buildOMB(m, []ombInterval{iv, iv}, pub, delay, e2e)
}

func TestOMBJSONHasTestResultsFields(t *testing.T) {
	fields := readFixture(t, "testdata/omb_testresult_fields.txt")
	b, err := json.Marshal(sampleOMB())
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, json.Unmarshal(b, &got))
	for _, f := range fields {
		v, ok := got[f.name]
		if assert.True(t, ok, "field %s (%s) missing", f.name, f.typ) {
			assert.Equal(t, jsonKind(f.typ), kindOf(v), "field %s (%s)", f.name, f.typ)
		}
		delete(got, f.name)
	}
	assert.Empty(t, got, "fields TestResult does not have")
}

func TestOMBJSONValues(t *testing.T) {
	r := sampleOMB()
	assert.Equal(t, []float64{100, 100}, r.PublishRate)
	assert.Equal(t, []float64{200, 200}, r.ConsumeRate)
	assert.Equal(t, []int64{3, 3}, r.Backlog)
	// Publish latency in ms, publish delay in us, as OMB.
	assert.InDelta(t, 5.0, r.PublishLatency50pct[0], 0.01)
	assert.InDelta(t, 9.9, r.PublishLatency99pct[0], 0.01)
	assert.InDelta(t, 10.0, r.AggregatedPublishLatencyMax, 0.01)
	assert.InDelta(t, 5.005, r.AggregatedPublishLatencyAvg, 0.01)
	assert.EqualValues(t, 500, r.PublishDelayLatency50pct[0])
	assert.EqualValues(t, 990, r.AggregatedPublishDelayLatency99pct)
	assert.InDelta(t, 500.5, r.AggregatedPublishDelayLatencyAvg, 0.5)
	assert.InDelta(t, 5.05, r.AggregatedEndToEndLatency50pct, 0.01)
	// Quantile maps run from 0 to 100 and never go down.
	for _, q := range []quantiles{r.AggregatedPublishLatencyQuantiles, r.AggregatedPublishDelayLatencyQuantiles, r.AggregatedEndToEndLatencyQuantiles} {
		require.NotEmpty(t, q)
		assert.Equal(t, 0.0, q[0].P)
		assert.Equal(t, 100.0, q[len(q)-1].P)
		for i := 1; i < len(q); i++ {
			assert.Greater(t, q[i].P, q[i-1].P)
			assert.GreaterOrEqual(t, q[i].V, q[i-1].V)
		}
	}
	assert.InDelta(t, 10.0, r.AggregatedPublishLatencyQuantiles[len(r.AggregatedPublishLatencyQuantiles)-1].V, 0.01)
}

func TestOMBQuantilesAreWrittenAsJackson(t *testing.T) {
	q := quantiles{{P: 0, V: 0.5}, {P: 50, V: 1}, {P: 99.90234375, V: 12.25}, {P: 100, V: 1e-4}}
	b, err := json.Marshal(q)
	require.NoError(t, err)
	assert.Equal(t, `{"0.0":0.5,"50.0":1.0,"99.90234375":12.25,"100.0":1.0E-4}`, string(b))
	b, err = json.Marshal(quantiles{{P: 50, V: 17, integer: true}})
	require.NoError(t, err)
	assert.Equal(t, `{"50.0":17}`, string(b))
	var back quantiles
	require.NoError(t, json.Unmarshal([]byte(`{"100.0":3,"0.0":1,"50.0":2}`), &back))
	assert.Equal(t, quantiles{{P: 0, V: 1}, {P: 50, V: 2}, {P: 100, V: 3}}, back)
}

func TestJavaDouble(t *testing.T) {
	for v, want := range map[float64]string{0: "0.0", 1: "1.0", 50: "50.0", 99.9: "99.9", 0.001: "0.001",
		1234567.5: "1234567.5", 1e7: "1.0E7", 12345678: "1.2345678E7", 1e-4: "1.0E-4", -2.5: "-2.5"} {
		assert.Equal(t, want, javaDouble(v), "%v", v)
	}
}

func TestOMBEmptyResultKeepsEveryList(t *testing.T) {
	// A run without consumers or intervals: lists are [], never null.
	r := buildOMB(ombMeta{workload: "w", driver: "d"}, nil, newHist(), newHist(), newHist())
	b, err := json.Marshal(r)
	require.NoError(t, err)
	assert.NotContains(t, string(b), "null")
	assert.Contains(t, string(b), `"endToEndLatency95pct":[]`)
	assert.Contains(t, string(b), `"aggregatedEndToEndLatencyQuantiles":{}`)
}

func TestOMBCollectorGroupsSecondsIntoIntervals(t *testing.T) {
	rec := newRecorder([]string{"a"}, 1, time.Now())
	c := newOMBCollector(rec, 2)
	sec := func(acked int64) second { return second{dt: 1, acked: acked, recv: 2 * acked, Backlog: acked} }
	c.tick(sec(1000), false) // warm-up: left out
	_ = rec.allSec.RecordValue(2000)
	c.tick(sec(100), true)
	c.tick(sec(300), true)
	c.tick(sec(50), true)
	c.finish() // a last, shorter interval
	require.Len(t, c.intervals, 2)
	assert.Equal(t, 200.0, c.intervals[0].publishRate)
	assert.Equal(t, 400.0, c.intervals[0].consumeRate)
	assert.EqualValues(t, 300, c.intervals[0].backlog)
	assert.Equal(t, 50.0, c.intervals[1].publishRate)
	assert.InDelta(t, 2000, c.intervals[0].pub.pcts[0], 2)
}

func TestWriteOMBAndFileName(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.json")
	require.NoError(t, writeOMB(path, sampleOMB()))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var back ombResult
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, "keyroute-2-clusters", back.Driver)
	assert.Len(t, back.AggregatedEndToEndLatencyQuantiles, len(sampleOMB().AggregatedEndToEndLatencyQuantiles))
	at := time.Date(2026, 11, 23, 21, 5, 9, 0, time.UTC)
	assert.Equal(t, "1-topic-1kb-keyroute-5-clusters-2026-11-23-21-05-09.json",
		ombFileName("workloads/1-topic-1kb.yaml", "keyroute-5-clusters", at))
}

func TestHistogramLogReadsBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.hlog")
	start := time.Now()
	rec := newRecorder([]string{"a", "b"}, 1, start)
	rec.subscriptions = 1
	rec.keepPerCluster()
	l, err := openHistLog(path, rec, []string{"a", "b"}, true, start)
	require.NoError(t, err)
	rec.addSent(0)
	rec.done(0, rec.now()-int64(3*time.Millisecond), -1, nil)
	rec.received(1, int64(7*time.Millisecond))
	rec.tick(start.Add(time.Second), 1)
	l.tick(start.Add(time.Second))
	require.NoError(t, l.close())

	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	r := hdr.NewHistogramLogReader(f)
	got := map[string]*hdr.Histogram{}
	for {
		h, err := r.NextIntervalHistogram()
		require.NoError(t, err)
		if h == nil {
			break
		}
		got[h.Tag()] = h
	}
	require.Len(t, got, 6)
	// Nanoseconds, within the microsecond histograms' precision.
	assert.InDelta(t, 3e6, got["publish"].ValueAtQuantile(50), 0.01*3e6)
	assert.InDelta(t, 3e6, got["publish.a"].ValueAtQuantile(50), 0.01*3e6)
	assert.Zero(t, got["publish.b"].TotalCount())
	assert.InDelta(t, 7e6, got["e2e.b"].ValueAtQuantile(50), 0.01*7e6)
	assert.EqualValues(t, 1, got["e2e"].TotalCount())
}
