package main

import (
	"sync"
	"sync/atomic"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Latencies are recorded in microseconds from 1 us to 10 minutes with three
// significant digits.
const (
	histMinUs  = 1
	histMaxUs  = int64(10 * time.Minute / time.Microsecond)
	histDigits = 3
)

func newHist() *hdr.Histogram { return hdr.New(histMinUs, histMaxUs, histDigits) }

// Phases of a run. Outcomes reported during phaseMeasure count in the
// results; all outcomes count in the accounting (sent == acked + failed).
const (
	phaseWarmup int32 = iota
	phaseMeasure
	phaseDrain
)

// clusterStats collects the outcomes of the messages routed to one cluster.
type clusterStats struct {
	name string

	// mu guards everything below. It is taken once per outcome by the
	// goroutine that reports it (the cluster's callback goroutine in async
	// mode, the senders in sync mode) and once a second by the progress
	// ticker, so it is barely contended.
	mu sync.Mutex
	// The current second, reset by tick.
	sec       *hdr.Histogram
	secAcked  int64
	secFailed int64
	// The measured window.
	win       *hdr.Histogram
	winAcked  int64
	winFailed int64
	// The whole run, for the accounting.
	acked  int64
	failed int64
	// Distinct error texts and how often each was seen (first 20 kinds).
	errs map[string]int64
}

// recorder collects outcomes for all clusters. Its methods are safe for
// concurrent use.
type recorder struct {
	base     time.Time // monotonic origin of the int64 timestamps
	clusters []*clusterStats
	index    map[string]int
	phase    atomic.Int32

	// sent counts messages handed to the producer, one slot per sender so
	// that senders never share a cache line.
	sent []paddedCount

	// Owned by the ticker (one goroutine).
	allSec   *hdr.Histogram
	lastTick time.Time

	winMu    sync.Mutex // guards winStart and winEnd
	winStart time.Time
	winEnd   time.Time
}

type paddedCount struct {
	n atomic.Int64
	_ [56]byte
}

func newRecorder(clusters []string, senders int, now time.Time) *recorder {
	r := &recorder{base: now, index: make(map[string]int, len(clusters)), sent: make([]paddedCount, senders),
		allSec: newHist(), lastTick: now}
	for i, name := range clusters {
		r.clusters = append(r.clusters, &clusterStats{name: name, sec: newHist(), win: newHist(), errs: map[string]int64{}})
		r.index[name] = i
	}
	return r
}

// now returns the monotonic time since base in nanoseconds.
func (r *recorder) now() int64 { return int64(time.Since(r.base)) }

// at converts t to the recorder's clock.
func (r *recorder) at(t time.Time) int64 { return int64(t.Sub(r.base)) }

// addSent counts one message handed over by sender s.
func (r *recorder) addSent(s int) { r.sent[s].n.Add(1) }

// totalSent sums the per-sender counts.
func (r *recorder) totalSent() int64 {
	var n int64
	for i := range r.sent {
		n += r.sent[i].n.Load()
	}
	return n
}

// done records the outcome of a message routed to cluster c and handed over
// at start (recorder clock). It allocates nothing on success.
func (r *recorder) done(c int, start int64, err error) {
	lat := (r.now() - start) / int64(time.Microsecond)
	lat = max(lat, histMinUs)
	lat = min(lat, histMaxUs)
	measuring := r.phase.Load() == phaseMeasure
	cs := r.clusters[c]
	cs.mu.Lock()
	if err != nil {
		cs.failed++
		cs.secFailed++
		if measuring {
			cs.winFailed++
		}
		if len(cs.errs) < 20 {
			cs.errs[err.Error()]++
		} else if _, ok := cs.errs[err.Error()]; ok {
			cs.errs[err.Error()]++
		}
	} else {
		cs.acked++
		cs.secAcked++
		_ = cs.sec.RecordValue(lat)
		if measuring {
			cs.winAcked++
			_ = cs.win.RecordValue(lat)
		}
	}
	cs.mu.Unlock()
}

// beginWindow starts the measured window.
func (r *recorder) beginWindow(now time.Time) {
	r.winMu.Lock()
	r.winStart = now
	r.winMu.Unlock()
	r.phase.Store(phaseMeasure)
}

// endWindow ends the measured window, if it had begun; outcomes after it
// only count in the accounting.
func (r *recorder) endWindow(now time.Time) {
	if r.phase.CompareAndSwap(phaseMeasure, phaseDrain) {
		r.winMu.Lock()
		r.winEnd = now
		r.winMu.Unlock()
		return
	}
	r.phase.Store(phaseDrain)
}

// window returns the measured window's length (zero if it never began).
func (r *recorder) window() time.Duration {
	r.winMu.Lock()
	defer r.winMu.Unlock()
	if r.winStart.IsZero() {
		return 0
	}
	if r.winEnd.IsZero() {
		return time.Since(r.winStart)
	}
	return r.winEnd.Sub(r.winStart)
}

// second is one point of the per-second series.
type second struct {
	T          float64   `json:"t"` // seconds since the start of the run
	Warmup     bool      `json:"warmup"`
	MsgPerSec  float64   `json:"msgPerSec"`
	MBPerSec   float64   `json:"mbPerSec"`
	P50Ms      float64   `json:"p50Ms"`
	P99Ms      float64   `json:"p99Ms"`
	InFlight   int64     `json:"inFlight"`
	Errors     int64     `json:"errors"`
	ClusterPct []float64 `json:"clusterPct"` // share of this second's acks, in topology order
}

// tick closes the current second: it returns its figures and resets the
// per-second state. Only one goroutine may call it.
func (r *recorder) tick(now time.Time, size int) second {
	dt := now.Sub(r.lastTick).Seconds()
	r.lastTick = now
	s := second{T: now.Sub(r.base).Seconds(), Warmup: r.phase.Load() == phaseWarmup,
		ClusterPct: make([]float64, len(r.clusters))}
	r.allSec.Reset()
	var acked, done int64
	perCluster := make([]int64, len(r.clusters))
	for i, cs := range r.clusters {
		cs.mu.Lock()
		perCluster[i] = cs.secAcked
		acked += cs.secAcked
		s.Errors += cs.secFailed
		done += cs.acked + cs.failed
		r.allSec.Merge(cs.sec)
		cs.sec.Reset()
		cs.secAcked, cs.secFailed = 0, 0
		cs.mu.Unlock()
	}
	if dt > 0 {
		s.MsgPerSec = float64(acked) / dt
		s.MBPerSec = s.MsgPerSec * float64(size) / 1e6
	}
	s.P50Ms = usToMs(r.allSec.ValueAtQuantile(50))
	s.P99Ms = usToMs(r.allSec.ValueAtQuantile(99))
	s.InFlight = max(r.totalSent()-done, 0)
	for i, n := range perCluster {
		if acked > 0 {
			s.ClusterPct[i] = 100 * float64(n) / float64(acked)
		}
	}
	return s
}

func usToMs(us int64) float64 { return float64(us) / 1000 }

// latency holds the percentiles the report prints, in milliseconds.
type latency struct {
	P50  float64 `json:"p50"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p99_9"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

func latencyOf(h *hdr.Histogram) latency {
	return latency{
		P50:  usToMs(h.ValueAtQuantile(50)),
		P95:  usToMs(h.ValueAtQuantile(95)),
		P99:  usToMs(h.ValueAtQuantile(99)),
		P999: usToMs(h.ValueAtQuantile(99.9)),
		Max:  usToMs(h.Max()),
		Mean: h.Mean() / 1000,
	}
}

// summary is the measured-window result of one cluster or of all.
type summary struct {
	Cluster   string           `json:"cluster,omitempty"`
	Messages  int64            `json:"messages"` // acknowledged in the window
	Errors    int64            `json:"errors"`   // failed in the window
	MsgPerSec float64          `json:"msgPerSec"`
	MBPerSec  float64          `json:"mbPerSec"`
	Latency   latency          `json:"latencyMs"`
	ErrorKind map[string]int64 `json:"errorKinds,omitempty"` // whole run
}

// accounting checks that every message handed to the producer has exactly
// one outcome.
type accounting struct {
	Sent     int64 `json:"sent"`
	Acked    int64 `json:"acked"`
	Failed   int64 `json:"failed"`
	Balanced bool  `json:"balanced"` // acked + failed == sent
}

// results returns the window summaries (overall first, then per cluster),
// the merged window histogram and the whole-run accounting. Call it once
// every outcome is in (after Close) for a final answer.
func (r *recorder) results(size int) (summary, []summary, *hdr.Histogram, accounting) {
	win := r.window().Seconds()
	all := newHist()
	var overall summary
	overall.Cluster = "total"
	var acc accounting
	per := make([]summary, 0, len(r.clusters))
	for _, cs := range r.clusters {
		cs.mu.Lock()
		s := summary{Cluster: cs.name, Messages: cs.winAcked, Errors: cs.winFailed, Latency: latencyOf(cs.win)}
		if len(cs.errs) > 0 {
			s.ErrorKind = make(map[string]int64, len(cs.errs))
			for k, v := range cs.errs {
				s.ErrorKind[k] = v
			}
		}
		all.Merge(cs.win)
		acc.Acked += cs.acked
		acc.Failed += cs.failed
		cs.mu.Unlock()
		overall.Messages += s.Messages
		overall.Errors += s.Errors
		per = append(per, s)
	}
	overall.Latency = latencyOf(all)
	for _, s := range append([]*summary{&overall}, ptrs(per)...) {
		if win > 0 {
			s.MsgPerSec = float64(s.Messages) / win
			s.MBPerSec = s.MsgPerSec * float64(size) / 1e6
		}
	}
	acc.Sent = r.totalSent()
	acc.Balanced = acc.Acked+acc.Failed == acc.Sent
	return overall, per, all, acc
}

func ptrs(s []summary) []*summary {
	out := make([]*summary, len(s))
	for i := range s {
		out[i] = &s[i]
	}
	return out
}
