package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// ombResult is OpenMessaging Benchmark's result JSON: the public fields of
// io.openmessaging.benchmark.TestResult (openmessaging/benchmark commit
// 8559989, benchmark-framework/src/main/java/io/openmessaging/benchmark/
// TestResult.java), with OMB's units: publish and end-to-end latencies in
// milliseconds, publish delay in microseconds, rates per second, one
// list entry per reporting interval (10 s in OMB) of the measured window,
// warm-up excluded. bin/create_charts.py plots it as it plots OMB's own.
// testdata/omb_testresult_fields.txt lists the Java fields; a test keeps
// the two equal.
type ombResult struct {
	Workload          string `json:"workload"`
	Driver            string `json:"driver"`
	MessageSize       int64  `json:"messageSize"`
	Topics            int    `json:"topics"`
	Partitions        int    `json:"partitions"`
	ProducersPerTopic int    `json:"producersPerTopic"`
	ConsumersPerTopic int    `json:"consumersPerTopic"`

	PublishRate      []float64 `json:"publishRate"`
	PublishErrorRate []float64 `json:"publishErrorRate"`
	ConsumeRate      []float64 `json:"consumeRate"`
	Backlog          []int64   `json:"backlog"`

	PublishLatencyAvg     []float64 `json:"publishLatencyAvg"`
	PublishLatency50pct   []float64 `json:"publishLatency50pct"`
	PublishLatency75pct   []float64 `json:"publishLatency75pct"`
	PublishLatency95pct   []float64 `json:"publishLatency95pct"`
	PublishLatency99pct   []float64 `json:"publishLatency99pct"`
	PublishLatency999pct  []float64 `json:"publishLatency999pct"`
	PublishLatency9999pct []float64 `json:"publishLatency9999pct"`
	PublishLatencyMax     []float64 `json:"publishLatencyMax"`

	PublishDelayLatencyAvg     []float64 `json:"publishDelayLatencyAvg"`
	PublishDelayLatency50pct   []int64   `json:"publishDelayLatency50pct"`
	PublishDelayLatency75pct   []int64   `json:"publishDelayLatency75pct"`
	PublishDelayLatency95pct   []int64   `json:"publishDelayLatency95pct"`
	PublishDelayLatency99pct   []int64   `json:"publishDelayLatency99pct"`
	PublishDelayLatency999pct  []int64   `json:"publishDelayLatency999pct"`
	PublishDelayLatency9999pct []int64   `json:"publishDelayLatency9999pct"`
	PublishDelayLatencyMax     []int64   `json:"publishDelayLatencyMax"`

	AggregatedPublishLatencyAvg     float64 `json:"aggregatedPublishLatencyAvg"`
	AggregatedPublishLatency50pct   float64 `json:"aggregatedPublishLatency50pct"`
	AggregatedPublishLatency75pct   float64 `json:"aggregatedPublishLatency75pct"`
	AggregatedPublishLatency95pct   float64 `json:"aggregatedPublishLatency95pct"`
	AggregatedPublishLatency99pct   float64 `json:"aggregatedPublishLatency99pct"`
	AggregatedPublishLatency999pct  float64 `json:"aggregatedPublishLatency999pct"`
	AggregatedPublishLatency9999pct float64 `json:"aggregatedPublishLatency9999pct"`
	AggregatedPublishLatencyMax     float64 `json:"aggregatedPublishLatencyMax"`

	AggregatedPublishDelayLatencyAvg     float64 `json:"aggregatedPublishDelayLatencyAvg"`
	AggregatedPublishDelayLatency50pct   int64   `json:"aggregatedPublishDelayLatency50pct"`
	AggregatedPublishDelayLatency75pct   int64   `json:"aggregatedPublishDelayLatency75pct"`
	AggregatedPublishDelayLatency95pct   int64   `json:"aggregatedPublishDelayLatency95pct"`
	AggregatedPublishDelayLatency99pct   int64   `json:"aggregatedPublishDelayLatency99pct"`
	AggregatedPublishDelayLatency999pct  int64   `json:"aggregatedPublishDelayLatency999pct"`
	AggregatedPublishDelayLatency9999pct int64   `json:"aggregatedPublishDelayLatency9999pct"`
	AggregatedPublishDelayLatencyMax     int64   `json:"aggregatedPublishDelayLatencyMax"`

	AggregatedPublishLatencyQuantiles      quantiles `json:"aggregatedPublishLatencyQuantiles"`
	AggregatedPublishDelayLatencyQuantiles quantiles `json:"aggregatedPublishDelayLatencyQuantiles"`

	EndToEndLatencyAvg     []float64 `json:"endToEndLatencyAvg"`
	EndToEndLatency50pct   []float64 `json:"endToEndLatency50pct"`
	EndToEndLatency75pct   []float64 `json:"endToEndLatency75pct"`
	EndToEndLatency95pct   []float64 `json:"endToEndLatency95pct"`
	EndToEndLatency99pct   []float64 `json:"endToEndLatency99pct"`
	EndToEndLatency999pct  []float64 `json:"endToEndLatency999pct"`
	EndToEndLatency9999pct []float64 `json:"endToEndLatency9999pct"`
	EndToEndLatencyMax     []float64 `json:"endToEndLatencyMax"`

	AggregatedEndToEndLatencyQuantiles quantiles `json:"aggregatedEndToEndLatencyQuantiles"`

	AggregatedEndToEndLatencyAvg     float64 `json:"aggregatedEndToEndLatencyAvg"`
	AggregatedEndToEndLatency50pct   float64 `json:"aggregatedEndToEndLatency50pct"`
	AggregatedEndToEndLatency75pct   float64 `json:"aggregatedEndToEndLatency75pct"`
	AggregatedEndToEndLatency95pct   float64 `json:"aggregatedEndToEndLatency95pct"`
	AggregatedEndToEndLatency99pct   float64 `json:"aggregatedEndToEndLatency99pct"`
	AggregatedEndToEndLatency999pct  float64 `json:"aggregatedEndToEndLatency999pct"`
	AggregatedEndToEndLatency9999pct float64 `json:"aggregatedEndToEndLatency9999pct"`
	AggregatedEndToEndLatencyMax     float64 `json:"aggregatedEndToEndLatencyMax"`
}

// ombPercentiles are the percentiles OMB reports per interval and in
// aggregate, in its field order: 50, 75, 95, 99, 99.9, 99.99.
var ombPercentiles = [6]float64{50, 75, 95, 99, 99.9, 99.99}

// hstats is one histogram's OMB figures, in the histogram's unit
// (microseconds): mean, the ombPercentiles, max.
type hstats struct {
	avg  float64
	pcts [6]int64
	max  int64
}

func statsOf(h *hdr.Histogram) hstats {
	s := hstats{avg: mean(h), max: h.Max()}
	if h.TotalCount() == 0 {
		s.max = 0
	}
	for i, p := range ombPercentiles {
		s.pcts[i] = h.ValueAtQuantile(p)
	}
	return s
}

// ombInterval is one reporting interval of the measured window.
type ombInterval struct {
	publishRate, errorRate, consumeRate float64
	backlog                             int64
	pub, delay, e2e                     hstats
}

// ombCollector groups the seconds of the measured window into OMB's
// reporting intervals. It runs on the ticker goroutine (drive's onTick),
// reading the recorder's last-second histograms.
type ombCollector struct {
	rec   *recorder
	every int // seconds per interval
	n     int // seconds in the current interval

	dt                  float64
	acked, failed, recv int64
	backlog             int64
	pub, delay, e2e     *hdr.Histogram

	intervals []ombInterval
}

// ombIntervalSeconds returns OMB's 10 s reporting interval scaled as -omb-minute
// scales the minute (a sixth of it), in whole seconds, at least one.
func ombIntervalSeconds(minute time.Duration) int {
	return max(1, int(math.Round(minute.Seconds()/6)))
}

func newOMBCollector(rec *recorder, every int) *ombCollector {
	return &ombCollector{rec: rec, every: every, pub: newHist(), delay: newHist(), e2e: newHist()}
}

// tick adds one second (drive's onTick).
func (c *ombCollector) tick(s second, measured bool) {
	if !measured {
		return
	}
	c.n++
	c.dt += s.dt
	c.acked += s.acked
	c.failed += s.failed
	c.recv += s.recv
	c.backlog = s.Backlog
	c.pub.Merge(c.rec.allSec)
	c.delay.Merge(c.rec.allDelaySec)
	c.e2e.Merge(c.rec.allE2ESec)
	if c.n >= c.every {
		c.flush()
	}
}

// finish closes a last, shorter interval. Call it after drive returns.
func (c *ombCollector) finish() {
	if c.n > 0 {
		c.flush()
	}
}

func (c *ombCollector) flush() {
	iv := ombInterval{backlog: c.backlog, pub: statsOf(c.pub), delay: statsOf(c.delay), e2e: statsOf(c.e2e)}
	if c.dt > 0 {
		iv.publishRate = float64(c.acked) / c.dt
		iv.errorRate = float64(c.failed) / c.dt
		iv.consumeRate = float64(c.recv) / c.dt
	}
	c.intervals = append(c.intervals, iv)
	c.n, c.dt, c.acked, c.failed, c.recv = 0, 0, 0, 0, 0
	c.pub.Reset()
	c.delay.Reset()
	c.e2e.Reset()
}

// ombMeta is what the result says about the load.
type ombMeta struct {
	workload, driver                         string
	messageSize                              int64
	topics, partitions, producers, consumers int
}

func usMs(v int64) float64 { return float64(v) / 1000 }

// buildOMB assembles the result from the intervals and the measured
// window's histograms (publish latency, publish delay, end-to-end; all in
// microseconds).
func buildOMB(m ombMeta, ivs []ombInterval, pub, delay, e2e *hdr.Histogram) *ombResult {
	r := &ombResult{Workload: m.workload, Driver: m.driver, MessageSize: m.messageSize, Topics: m.topics,
		Partitions: m.partitions, ProducersPerTopic: m.producers, ConsumersPerTopic: m.consumers}
	msLists := func(s hstats, avg *[]float64, lists ...*[]float64) {
		*avg = append(*avg, s.avg/1000)
		for i, l := range lists[:6] {
			*l = append(*l, usMs(s.pcts[i]))
		}
		*lists[6] = append(*lists[6], usMs(s.max))
	}
	for _, iv := range ivs {
		r.PublishRate = append(r.PublishRate, iv.publishRate)
		r.PublishErrorRate = append(r.PublishErrorRate, iv.errorRate)
		r.ConsumeRate = append(r.ConsumeRate, iv.consumeRate)
		r.Backlog = append(r.Backlog, iv.backlog)
		msLists(iv.pub, &r.PublishLatencyAvg, &r.PublishLatency50pct, &r.PublishLatency75pct, &r.PublishLatency95pct,
			&r.PublishLatency99pct, &r.PublishLatency999pct, &r.PublishLatency9999pct, &r.PublishLatencyMax)
		msLists(iv.e2e, &r.EndToEndLatencyAvg, &r.EndToEndLatency50pct, &r.EndToEndLatency75pct, &r.EndToEndLatency95pct,
			&r.EndToEndLatency99pct, &r.EndToEndLatency999pct, &r.EndToEndLatency9999pct, &r.EndToEndLatencyMax)
		r.PublishDelayLatencyAvg = append(r.PublishDelayLatencyAvg, iv.delay.avg)
		for i, l := range []*[]int64{&r.PublishDelayLatency50pct, &r.PublishDelayLatency75pct, &r.PublishDelayLatency95pct,
			&r.PublishDelayLatency99pct, &r.PublishDelayLatency999pct, &r.PublishDelayLatency9999pct} {
			*l = append(*l, iv.delay.pcts[i])
		}
		r.PublishDelayLatencyMax = append(r.PublishDelayLatencyMax, iv.delay.max)
	}
	p := statsOf(pub)
	r.AggregatedPublishLatencyAvg = p.avg / 1000
	for i, f := range []*float64{&r.AggregatedPublishLatency50pct, &r.AggregatedPublishLatency75pct, &r.AggregatedPublishLatency95pct,
		&r.AggregatedPublishLatency99pct, &r.AggregatedPublishLatency999pct, &r.AggregatedPublishLatency9999pct} {
		*f = usMs(p.pcts[i])
	}
	r.AggregatedPublishLatencyMax = usMs(p.max)
	d := statsOf(delay)
	r.AggregatedPublishDelayLatencyAvg = d.avg
	for i, f := range []*int64{&r.AggregatedPublishDelayLatency50pct, &r.AggregatedPublishDelayLatency75pct, &r.AggregatedPublishDelayLatency95pct,
		&r.AggregatedPublishDelayLatency99pct, &r.AggregatedPublishDelayLatency999pct, &r.AggregatedPublishDelayLatency9999pct} {
		*f = d.pcts[i]
	}
	r.AggregatedPublishDelayLatencyMax = d.max
	e := statsOf(e2e)
	r.AggregatedEndToEndLatencyAvg = e.avg / 1000
	for i, f := range []*float64{&r.AggregatedEndToEndLatency50pct, &r.AggregatedEndToEndLatency75pct, &r.AggregatedEndToEndLatency95pct,
		&r.AggregatedEndToEndLatency99pct, &r.AggregatedEndToEndLatency999pct, &r.AggregatedEndToEndLatency9999pct} {
		*f = usMs(e.pcts[i])
	}
	r.AggregatedEndToEndLatencyMax = usMs(e.max)
	r.AggregatedPublishLatencyQuantiles = quantilesOf(pub, 1000, false)
	r.AggregatedPublishDelayLatencyQuantiles = quantilesOf(delay, 1, true)
	r.AggregatedEndToEndLatencyQuantiles = quantilesOf(e2e, 1000, false)
	r.fillEmpty()
	return r
}

// fillEmpty turns nil lists into empty ones: OMB writes [] for a list it
// never filled, and its chart script takes max() over them.
func (r *ombResult) fillEmpty() {
	for _, l := range []*[]float64{&r.PublishRate, &r.PublishErrorRate, &r.ConsumeRate, &r.PublishLatencyAvg,
		&r.PublishLatency50pct, &r.PublishLatency75pct, &r.PublishLatency95pct, &r.PublishLatency99pct,
		&r.PublishLatency999pct, &r.PublishLatency9999pct, &r.PublishLatencyMax, &r.PublishDelayLatencyAvg,
		&r.EndToEndLatencyAvg, &r.EndToEndLatency50pct, &r.EndToEndLatency75pct, &r.EndToEndLatency95pct,
		&r.EndToEndLatency99pct, &r.EndToEndLatency999pct, &r.EndToEndLatency9999pct, &r.EndToEndLatencyMax} {
		if *l == nil {
			*l = []float64{}
		}
	}
	for _, l := range []*[]int64{&r.Backlog, &r.PublishDelayLatency50pct, &r.PublishDelayLatency75pct,
		&r.PublishDelayLatency95pct, &r.PublishDelayLatency99pct, &r.PublishDelayLatency999pct,
		&r.PublishDelayLatency9999pct, &r.PublishDelayLatencyMax} {
		if *l == nil {
			*l = []int64{}
		}
	}
}

// quantile is one entry of a Java Map<Double, Double> (or Map<Double,
// Long>: integer) of percentile to value.
type quantile struct {
	P, V    float64
	integer bool
}

// quantiles is a percentile -> value map in percentile order, written as
// Jackson writes a TreeMap<Double, ...>: keys as Java's Double.toString.
type quantiles []quantile

// quantilesOf is OMB's histogram.percentiles(100) walk: percentile ->
// value iterated to, the value divided by div.
func quantilesOf(h *hdr.Histogram, div float64, integer bool) quantiles {
	if h.TotalCount() == 0 {
		return quantiles{}
	}
	var out quantiles
	for _, b := range h.CumulativeDistributionWithTicks(100) {
		q := quantile{P: b.Quantile, V: float64(b.ValueAt) / div, integer: integer}
		if n := len(out); n > 0 && out[n-1].P == q.P {
			out[n-1] = q // a map keeps the last value of a key
			continue
		}
		out = append(out, q)
	}
	return out
}

func (q quantiles) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, e := range q {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Quote(javaDouble(e.P)))
		b.WriteByte(':')
		if e.integer {
			b.WriteString(strconv.FormatInt(int64(e.V), 10))
		} else {
			b.WriteString(javaDouble(e.V))
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func (q *quantiles) UnmarshalJSON(b []byte) error {
	var m map[string]float64
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*q = nil
	for k, v := range m {
		p, err := strconv.ParseFloat(k, 64)
		if err != nil {
			return fmt.Errorf("quantile key %q: %w", k, err)
		}
		*q = append(*q, quantile{P: p, V: v})
	}
	sortQuantiles(*q)
	return nil
}

func sortQuantiles(q quantiles) {
	for i := 1; i < len(q); i++ {
		for j := i; j > 0 && q[j].P < q[j-1].P; j-- {
			q[j], q[j-1] = q[j-1], q[j]
		}
	}
}

// javaDouble formats v as Java's Double.toString does: at least one digit
// after the point, and scientific notation ("1.0E-4", "1.2345E7") outside
// [1e-3, 1e7). NaN and infinities, which JSON cannot hold, are written as 0.
func javaDouble(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		v = 0
	}
	if a := math.Abs(v); a == 0 || (a >= 1e-3 && a < 1e7) {
		s := strconv.FormatFloat(v, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(v, 'E', -1, 64) // e.g. 1.2345E+07, 1E-04
	mant, exp, _ := strings.Cut(s, "E")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	e, _ := strconv.Atoi(exp)
	return mant + "E" + strconv.Itoa(e)
}

// writeOMB writes r to path, indented as OMB's writer does.
func writeOMB(path string, r *ombResult) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// ombFileName is OMB's default result file name:
// <workload file base name>-<driver>-<yyyy-MM-dd-HH-mm-ss>.json.
func ombFileName(workloadFile, driver string, t time.Time) string {
	base := workloadFile
	if i := strings.LastIndexByte(base, '/'); i >= 0 {
		base = base[i+1:]
	}
	if i := strings.LastIndexByte(base, '.'); i > 0 {
		base = base[:i]
	}
	return fmt.Sprintf("%s-%s-%s.json", base, driver, t.Format("2006-01-02-15-04-05"))
}
