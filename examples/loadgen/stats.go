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

// clampUs converts ns to the histograms' microseconds, within their range.
func clampUs(ns int64) int64 {
	return min(max(ns/int64(time.Microsecond), histMinUs), histMaxUs)
}

// Phases of a run. Outcomes reported during phaseMeasure count in the
// results; all outcomes count in the accounting (sent == acked + failed).
const (
	phaseWarmup int32 = iota
	phaseMeasure
	phaseDrain
)

// clusterStats collects the outcomes of the messages routed to one cluster
// and the messages received from it.
type clusterStats struct {
	name string

	// mu guards the send side below. It is taken once per outcome by the
	// goroutine that reports it (the cluster's callback goroutine in async
	// mode, the senders in sync mode) and once a second by the progress
	// ticker, so it is barely contended.
	mu sync.Mutex
	// The current second, reset by tick: send-to-ack latency and publish
	// delay (how late a paced message was handed over).
	sec       *hdr.Histogram
	secDelay  *hdr.Histogram
	secAcked  int64
	secFailed int64
	// The measured window.
	win       *hdr.Histogram
	winDelay  *hdr.Histogram
	winAcked  int64
	winFailed int64
	// The whole run, for the accounting.
	acked  int64
	failed int64
	// Distinct error texts and how often each was seen (first 20 kinds).
	errs map[string]int64

	// cmu guards the receive side: taken once per message received by the
	// consumer goroutines and once a second by the ticker.
	cmu      sync.Mutex
	e2eSec   *hdr.Histogram // end-to-end latency, the current second
	e2eWin   *hdr.Histogram // and the measured window
	recvSec  int64
	recvWin  int64
	received int64 // the whole run
}

// recorder collects outcomes for all clusters. Its methods are safe for
// concurrent use.
type recorder struct {
	base     time.Time // monotonic origin of the int64 timestamps
	clusters []*clusterStats
	index    map[string]int // read-only after newRecorder
	phase    atomic.Int32

	// subscriptions is how many times each acknowledged message should be
	// received (subscriptions per topic); 0 without consumers.
	subscriptions int

	// sent counts messages handed to the producer, one slot per sender so
	// that senders never share a cache line.
	sent []paddedCount

	// Owned by the ticker (one goroutine): the last second's histograms
	// over all clusters, and per cluster when keepClusterSec is set
	// (for -histogram-file).
	allSec, allDelaySec, allE2ESec *hdr.Histogram
	keepClusterSec                 bool
	clusterSec, clusterE2ESec      []*hdr.Histogram
	lastTick                       time.Time

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
		allSec: newHist(), allDelaySec: newHist(), allE2ESec: newHist(), lastTick: now}
	for i, name := range clusters {
		r.clusters = append(r.clusters, &clusterStats{name: name, sec: newHist(), win: newHist(),
			secDelay: newHist(), winDelay: newHist(), e2eSec: newHist(), e2eWin: newHist(), errs: map[string]int64{}})
		r.index[name] = i
	}
	return r
}

// keepPerCluster makes tick keep each cluster's last second (clusterSec,
// clusterE2ESec). Call it before the ticker starts.
func (r *recorder) keepPerCluster() {
	r.keepClusterSec = true
	for range r.clusters {
		r.clusterSec = append(r.clusterSec, newHist())
		r.clusterE2ESec = append(r.clusterE2ESec, newHist())
	}
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

// done records the outcome of a message routed to cluster c, handed over
// at start (recorder clock) delay ns after it was due (-1: not paced). A
// cluster index out of range (an error that names no cluster) counts for
// the first cluster. It allocates nothing on success.
func (r *recorder) done(c int, start, delay int64, err error) {
	lat := clampUs(r.now() - start)
	measuring := r.phase.Load() == phaseMeasure
	if c < 0 || c >= len(r.clusters) {
		c = 0
	}
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
		if delay >= 0 {
			_ = cs.secDelay.RecordValue(clampUs(delay))
		}
		if measuring {
			cs.winAcked++
			_ = cs.win.RecordValue(lat)
			if delay >= 0 {
				_ = cs.winDelay.RecordValue(clampUs(delay))
			}
		}
	}
	cs.mu.Unlock()
}

// received records a message received from cluster c, e2e ns after it
// was sent. It allocates nothing.
func (r *recorder) received(c int, e2e int64) {
	v := clampUs(e2e)
	measuring := r.phase.Load() == phaseMeasure
	cs := r.clusters[c]
	cs.cmu.Lock()
	cs.received++
	cs.recvSec++
	_ = cs.e2eSec.RecordValue(v)
	if measuring {
		cs.recvWin++
		_ = cs.e2eWin.RecordValue(v)
	}
	cs.cmu.Unlock()
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

	// With consumers: messages received per second, end-to-end latency,
	// the backlog (subscriptions x acknowledged - received, whole run),
	// and each cluster's end-to-end p99.
	RecvPerSec    float64   `json:"recvPerSec,omitempty"`
	E2EP50Ms      float64   `json:"e2eP50Ms,omitempty"`
	E2EP99Ms      float64   `json:"e2eP99Ms,omitempty"`
	Backlog       int64     `json:"backlog,omitempty"`
	ClusterE2EP99 []float64 `json:"clusterE2eP99Ms,omitempty"`

	// Raw counts of the second, for the OMB intervals.
	dt                    float64
	acked, failed, recv   int64
	totalAcked, totalRecv int64
}

// tick closes the current second: it returns its figures, leaves its
// merged histograms in allSec, allDelaySec and allE2ESec, and resets the
// per-second state. Only one goroutine may call it.
func (r *recorder) tick(now time.Time, size int) second {
	dt := now.Sub(r.lastTick).Seconds()
	r.lastTick = now
	s := second{T: now.Sub(r.base).Seconds(), Warmup: r.phase.Load() == phaseWarmup,
		ClusterPct: make([]float64, len(r.clusters)), dt: dt}
	r.allSec.Reset()
	r.allDelaySec.Reset()
	r.allE2ESec.Reset()
	var done int64
	perCluster := make([]int64, len(r.clusters))
	if r.subscriptions > 0 {
		s.ClusterE2EP99 = make([]float64, len(r.clusters))
	}
	for i, cs := range r.clusters {
		cs.mu.Lock()
		perCluster[i] = cs.secAcked
		s.acked += cs.secAcked
		s.failed += cs.secFailed
		s.totalAcked += cs.acked
		done += cs.acked + cs.failed
		r.allSec.Merge(cs.sec)
		r.allDelaySec.Merge(cs.secDelay)
		if r.keepClusterSec {
			r.clusterSec[i].Reset()
			r.clusterSec[i].Merge(cs.sec)
		}
		cs.sec.Reset()
		cs.secDelay.Reset()
		cs.secAcked, cs.secFailed = 0, 0
		cs.mu.Unlock()

		cs.cmu.Lock()
		s.recv += cs.recvSec
		s.totalRecv += cs.received
		r.allE2ESec.Merge(cs.e2eSec)
		if s.ClusterE2EP99 != nil {
			s.ClusterE2EP99[i] = usToMs(cs.e2eSec.ValueAtQuantile(99))
		}
		if r.keepClusterSec {
			r.clusterE2ESec[i].Reset()
			r.clusterE2ESec[i].Merge(cs.e2eSec)
		}
		cs.e2eSec.Reset()
		cs.recvSec = 0
		cs.cmu.Unlock()
	}
	s.Errors = s.failed
	if dt > 0 {
		s.MsgPerSec = float64(s.acked) / dt
		s.MBPerSec = s.MsgPerSec * float64(size) / 1e6
		s.RecvPerSec = float64(s.recv) / dt
	}
	s.P50Ms = usToMs(r.allSec.ValueAtQuantile(50))
	s.P99Ms = usToMs(r.allSec.ValueAtQuantile(99))
	s.E2EP50Ms = usToMs(r.allE2ESec.ValueAtQuantile(50))
	s.E2EP99Ms = usToMs(r.allE2ESec.ValueAtQuantile(99))
	s.InFlight = max(r.totalSent()-done, 0)
	s.Backlog = r.backlog(s.totalAcked, s.totalRecv)
	for i, n := range perCluster {
		if s.acked > 0 {
			s.ClusterPct[i] = 100 * float64(n) / float64(s.acked)
		}
	}
	return s
}

// backlog is OMB's: subscriptions x acknowledged - received, at least 0.
func (r *recorder) backlog(acked, received int64) int64 {
	return max(int64(r.subscriptions)*acked-received, 0)
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
		Mean: mean(h) / 1000,
	}
}

// mean is h's mean, 0 for an empty histogram.
func mean(h *hdr.Histogram) float64 {
	if h.TotalCount() == 0 {
		return 0
	}
	return h.Mean()
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
	// With consumers: messages received in the window and end-to-end
	// latency (send -> receive).
	Received   int64    `json:"received,omitempty"`
	RecvPerSec float64  `json:"recvPerSec,omitempty"`
	EndToEnd   *latency `json:"endToEndMs,omitempty"`
}

// accounting checks that every message handed to the producer has exactly
// one outcome and, with consumers, that every acknowledged message was
// received by every subscription.
type accounting struct {
	Sent     int64 `json:"sent"`
	Acked    int64 `json:"acked"`
	Failed   int64 `json:"failed"`
	Balanced bool  `json:"balanced"` // acked + failed == sent

	Consumed *consumed `json:"consumed,omitempty"`
}

// consumed is the receive side of the accounting, whole run.
type consumed struct {
	Subscriptions int64 `json:"subscriptions"` // per topic
	Expected      int64 `json:"expected"`      // subscriptions x acked
	Received      int64 `json:"received"`
	Missing       int64 `json:"missing"`     // expected - received, when positive
	Extra         int64 `json:"extra"`       // received - expected, when positive (redeliveries)
	Redelivered   int64 `json:"redelivered"` // as the consumers counted them
	// PerCluster is each cluster's received and expected, topology order.
	PerCluster []clusterConsumed `json:"perCluster"`
	Complete   bool              `json:"complete"` // nothing missing on any cluster
}

type clusterConsumed struct {
	Cluster  string `json:"cluster"`
	Expected int64  `json:"expected"`
	Received int64  `json:"received"`
}

// results returns the window summaries (overall first, then per cluster),
// the merged window histogram and the whole-run accounting. Call it once
// every outcome is in (after Close) for a final answer.
func (r *recorder) results(size int) (summary, []summary, *hdr.Histogram, accounting) {
	win := r.window().Seconds()
	all, allE2E := newHist(), newHist()
	var overall summary
	overall.Cluster = "total"
	var acc accounting
	var cons consumed
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
		clusterAcked := cs.acked
		cs.mu.Unlock()
		if r.subscriptions > 0 {
			cs.cmu.Lock()
			s.Received = cs.recvWin
			e := latencyOf(cs.e2eWin)
			s.EndToEnd = &e
			allE2E.Merge(cs.e2eWin)
			cc := clusterConsumed{Cluster: cs.name, Expected: int64(r.subscriptions) * clusterAcked, Received: cs.received}
			cs.cmu.Unlock()
			cons.PerCluster = append(cons.PerCluster, cc)
			cons.Received += cc.Received
		}
		overall.Messages += s.Messages
		overall.Errors += s.Errors
		overall.Received += s.Received
		per = append(per, s)
	}
	overall.Latency = latencyOf(all)
	if r.subscriptions > 0 {
		e := latencyOf(allE2E)
		overall.EndToEnd = &e
	}
	for _, s := range append([]*summary{&overall}, ptrs(per)...) {
		if win > 0 {
			s.MsgPerSec = float64(s.Messages) / win
			s.MBPerSec = s.MsgPerSec * float64(size) / 1e6
			s.RecvPerSec = float64(s.Received) / win
		}
	}
	acc.Sent = r.totalSent()
	acc.Balanced = acc.Acked+acc.Failed == acc.Sent
	if r.subscriptions > 0 {
		cons.Subscriptions = int64(r.subscriptions)
		cons.Expected = cons.Subscriptions * acc.Acked
		cons.Missing = max(cons.Expected-cons.Received, 0)
		cons.Extra = max(cons.Received-cons.Expected, 0)
		cons.Complete = true
		for _, c := range cons.PerCluster {
			if c.Received < c.Expected {
				cons.Complete = false
			}
		}
		acc.Consumed = &cons
	}
	return overall, per, all, acc
}

// windowHists returns the measured window's histograms over all clusters:
// publish latency, publish delay and end-to-end latency. Call it once
// every outcome is in.
func (r *recorder) windowHists() (pub, delay, e2e *hdr.Histogram) {
	pub, delay, e2e = newHist(), newHist(), newHist()
	for _, cs := range r.clusters {
		cs.mu.Lock()
		pub.Merge(cs.win)
		delay.Merge(cs.winDelay)
		cs.mu.Unlock()
		cs.cmu.Lock()
		e2e.Merge(cs.e2eWin)
		cs.cmu.Unlock()
	}
	return pub, delay, e2e
}

// receivedTotal returns the messages received from each cluster and the
// acknowledged ones routed there, whole run.
func (r *recorder) receivedTotal() (received, acked int64) {
	for _, cs := range r.clusters {
		cs.cmu.Lock()
		received += cs.received
		cs.cmu.Unlock()
		cs.mu.Lock()
		acked += cs.acked
		cs.mu.Unlock()
	}
	return received, acked
}

func ptrs(s []summary) []*summary {
	out := make([]*summary, len(s))
	for i := range s {
		out[i] = &s[i]
	}
	return out
}
