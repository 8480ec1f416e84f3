package ordercheck

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Sent is one message a producer handed over.
type Sent struct {
	Producer, Key string
	Seq           uint64 // from 1, per producer and key
	At            time.Time
	AckAt         time.Time // zero until acknowledged
	Failed        bool      // its sender got an error
}

type pk struct{ producer, key string }

// Ledger records what producers sent. It is safe for concurrent use.
type Ledger struct {
	mu   sync.Mutex
	next map[pk]uint64
	sent map[pk][]*Sent // by Seq-1
}

// NewLedger returns an empty Ledger.
func NewLedger() *Ledger {
	return &Ledger{next: map[pk]uint64{}, sent: map[pk][]*Sent{}}
}

// Next records the next message of producer's key, sent now, and returns
// its record and its payload, which names producer, key, sequence and send
// time. Producer and key must not contain '|'.
func (l *Ledger) Next(producer, key string) (*Sent, []byte) {
	now := time.Now()
	l.mu.Lock()
	k := pk{producer, key}
	l.next[k]++
	s := &Sent{Producer: producer, Key: key, Seq: l.next[k], At: now}
	l.sent[k] = append(l.sent[k], s)
	l.mu.Unlock()
	return s, []byte(producer + "|" + key + "|" + strconv.FormatUint(s.Seq, 10) + "|" + strconv.FormatInt(now.UnixNano(), 10))
}

// Done records s's outcome: acknowledged at at when err is nil, else
// failed.
func (l *Ledger) Done(s *Sent, at time.Time, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		s.Failed = true
		return
	}
	s.AckAt = at
}

// All returns every record, by producer, key and sequence.
func (l *Ledger) All() []Sent {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Sent
	for _, ss := range l.sent {
		for _, s := range ss {
			out = append(out, *s)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Producer != b.Producer {
			return a.Producer < b.Producer
		}
		if a.Key != b.Key {
			return a.Key < b.Key
		}
		return a.Seq < b.Seq
	})
	return out
}

// Got is one delivered message: its payload and when it was delivered.
type Got struct {
	Payload []byte
	At      time.Time
}

// Parsed is a payload of Next read back.
type Parsed struct {
	Producer, Key string
	Seq           uint64
	SentAt        time.Time
}

// Parse reads a payload written by Next.
func Parse(payload []byte) (Parsed, error) {
	f := strings.Split(string(payload), "|")
	if len(f) != 4 {
		return Parsed{}, fmt.Errorf("ordercheck: payload %q: not producer|key|seq|time", payload)
	}
	seq, err := strconv.ParseUint(f[2], 10, 64)
	if err != nil {
		return Parsed{}, fmt.Errorf("ordercheck: payload %q: sequence: %w", payload, err)
	}
	ns, err := strconv.ParseInt(f[3], 10, 64)
	if err != nil {
		return Parsed{}, fmt.Errorf("ordercheck: payload %q: time: %w", payload, err)
	}
	return Parsed{Producer: f[0], Key: f[1], Seq: seq, SentAt: time.Unix(0, ns)}, nil
}

// Result counts what Check found. Examples hold a few of each for the
// failure message.
type Result struct {
	Sent, Acked, Failed, Delivered int
	Lost                           int // acknowledged, never delivered
	Duplicated                     int // delivered again
	Reordered                      int // delivered after a later message of its key and producer
	Unknown                        int // a payload no Ledger record matches
	Examples                       []string
}

func (r Result) String() string {
	return fmt.Sprintf("sent %d (acked %d, failed %d), delivered %d: lost %d, duplicated %d, reordered %d, unknown %d",
		r.Sent, r.Acked, r.Failed, r.Delivered, r.Lost, r.Duplicated, r.Reordered, r.Unknown)
}

func (r *Result) example(format string, a ...any) {
	if len(r.Examples) < 5 {
		r.Examples = append(r.Examples, fmt.Sprintf(format, a...))
	}
}

// Check compares got, in delivery order, with what l recorded. A message
// that failed but was delivered anyway (its outcome was unknown) is
// neither lost nor unknown.
func Check(l *Ledger, got []Got) Result {
	l.mu.Lock()
	defer l.mu.Unlock()
	var r Result
	seen := map[pk]map[uint64]bool{}
	top := map[pk]uint64{}
	for _, g := range got {
		p, err := Parse(g.Payload)
		k := pk{p.Producer, p.Key}
		if err != nil || p.Seq == 0 || p.Seq > uint64(len(l.sent[k])) {
			r.Unknown++
			r.example("unknown payload %q", g.Payload)
			continue
		}
		r.Delivered++
		if seen[k] == nil {
			seen[k] = map[uint64]bool{}
		}
		switch {
		case seen[k][p.Seq]:
			r.Duplicated++
			r.example("duplicate %s/%s #%d", p.Producer, p.Key, p.Seq)
		case p.Seq < top[k]:
			r.Reordered++
			r.example("reordered %s/%s #%d after #%d", p.Producer, p.Key, p.Seq, top[k])
		}
		seen[k][p.Seq] = true
		top[k] = max(top[k], p.Seq)
	}
	for k, ss := range l.sent {
		for _, s := range ss {
			r.Sent++
			switch {
			case s.Failed:
				r.Failed++
			case !s.AckAt.IsZero():
				r.Acked++
				if !seen[k][s.Seq] {
					r.Lost++
					r.example("lost %s/%s #%d", s.Producer, s.Key, s.Seq)
				}
			}
		}
	}
	return r
}

// Moved returns the keys whose placement differs between before and after
// (a key missing from either counts as moved), and their fraction of keys.
func Moved[P comparable](keys []string, before, after func(string) P) (map[string]bool, float64) {
	moved := map[string]bool{}
	for _, k := range keys {
		if before(k) != after(k) {
			moved[k] = true
		}
	}
	if len(keys) == 0 {
		return moved, 0
	}
	return moved, float64(len(moved)) / float64(len(keys))
}

// Latency returns the histogram, in microseconds, of delivery time minus
// send time of the delivered messages of the keys pick accepts that were
// sent in [from, to).
func Latency(got []Got, pick func(key string) bool, from, to time.Time) *hdrhistogram.Histogram {
	h := newHist()
	for _, g := range got {
		p, err := Parse(g.Payload)
		if err != nil || !pick(p.Key) || p.SentAt.Before(from) || !p.SentAt.Before(to) {
			continue
		}
		_ = h.RecordValue(max(g.At.Sub(p.SentAt), 0).Microseconds())
	}
	return h
}

// Stall returns the histogram, in microseconds, of each key's extra
// latency: for each key pick accepts with a message sent in [from, to),
// its largest delivery latency there less baseline (0 at least).
func Stall(got []Got, pick func(key string) bool, from, to time.Time, baseline time.Duration) *hdrhistogram.Histogram {
	worst := map[string]time.Duration{}
	for _, g := range got {
		p, err := Parse(g.Payload)
		if err != nil || !pick(p.Key) || p.SentAt.Before(from) || !p.SentAt.Before(to) {
			continue
		}
		worst[p.Key] = max(worst[p.Key], g.At.Sub(p.SentAt))
	}
	h := newHist()
	for _, d := range worst {
		_ = h.RecordValue(max(d-baseline, 0).Microseconds())
	}
	return h
}

// Rate returns the acknowledged messages per second, in [from, to), of
// the keys pick accepts.
func Rate(l *Ledger, pick func(key string) bool, from, to time.Time) float64 {
	return perSecond(l.times(pick, func(s *Sent) time.Time { return s.AckAt }, from, to), from, to)
}

// Offered returns the messages per second handed to the producer in
// [from, to), of the keys pick accepts: with Rate, it tells a sender held
// back from acknowledgements that come late.
func Offered(l *Ledger, pick func(key string) bool, from, to time.Time) float64 {
	return perSecond(l.times(pick, func(s *Sent) time.Time { return s.At }, from, to), from, to)
}

// MaxGap returns the longest time in [from, to) without an
// acknowledgement of the keys pick accepts (from and to count as
// bounds).
func MaxGap(l *Ledger, pick func(key string) bool, from, to time.Time) time.Duration {
	ts := l.times(pick, func(s *Sent) time.Time { return s.AckAt }, from, to)
	ts = append(ts, from, to)
	sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
	var gap time.Duration
	for i := 1; i < len(ts); i++ {
		gap = max(gap, ts[i].Sub(ts[i-1]))
	}
	return gap
}

// times returns when(s) of the records of keys pick accepts that fall in
// [from, to).
func (l *Ledger) times(pick func(key string) bool, when func(*Sent) time.Time, from, to time.Time) []time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []time.Time
	for k, ss := range l.sent {
		if !pick(k.key) {
			continue
		}
		for _, s := range ss {
			if t := when(s); !t.IsZero() && !t.Before(from) && t.Before(to) {
				out = append(out, t)
			}
		}
	}
	return out
}

func perSecond(ts []time.Time, from, to time.Time) float64 {
	if d := to.Sub(from).Seconds(); d > 0 {
		return float64(len(ts)) / d
	}
	return 0
}

// Figures formats a histogram of microseconds as "p50 .. p99 .. max ..
// (n keys)".
func Figures(h *hdrhistogram.Histogram) string {
	us := func(v int64) time.Duration { return time.Duration(v) * time.Microsecond }
	return fmt.Sprintf("p50 %s p99 %s max %s (n %d)", us(h.ValueAtQuantile(50)), us(h.ValueAtQuantile(99)), us(h.Max()), h.TotalCount())
}

// newHist covers 1 us to 10 minutes at 3 significant digits.
func newHist() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, int64(10*time.Minute/time.Microsecond), 3)
}
