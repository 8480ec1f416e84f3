package ordercheck

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestCheckCountsLostDuplicatedReordered(t *testing.T) {
	l := NewLedger()
	var pay [][]byte
	for range 4 {
		s, p := l.Next("p1", "k")
		l.Done(s, time.Now(), nil)
		pay = append(pay, p)
	}
	s, failed := l.Next("p2", "k") // failed, never delivered: not lost
	l.Done(s, time.Now(), errors.New("x"))
	_ = failed
	now := time.Now()
	got := []Got{{pay[0], now}, {pay[2], now}, {pay[1], now}, {pay[2], now}, {[]byte("junk"), now}}
	r := Check(l, got)
	require.Equal(t, 5, r.Sent)
	require.Equal(t, 4, r.Acked)
	require.Equal(t, 1, r.Failed)
	require.Equal(t, 1, r.Lost, "#4")
	require.Equal(t, 1, r.Duplicated)
	require.Equal(t, 1, r.Reordered, "#2 after #3")
	require.Equal(t, 1, r.Unknown)

	ok := Check(l, []Got{{pay[0], now}, {pay[1], now}, {pay[2], now}, {pay[3], now}})
	require.Zero(t, ok.Lost+ok.Duplicated+ok.Reordered+ok.Unknown, ok.String())
}

func TestMovedAndRate(t *testing.T) {
	keys := []string{"a", "b", "c", "d"}
	moved, frac := Moved(keys, func(string) int { return 1 }, func(k string) int {
		if k == "a" {
			return 2
		}
		return 1
	})
	require.Equal(t, map[string]bool{"a": true}, moved)
	require.InDelta(t, 0.25, frac, 1e-9)

	l := NewLedger()
	t0 := time.Unix(100, 0)
	for i := range 10 {
		s, _ := l.Next("p", "b")
		l.Done(s, t0.Add(time.Duration(i)*100*time.Millisecond), nil)
	}
	require.InDelta(t, 10.0, Rate(l, func(string) bool { return true }, t0, t0.Add(time.Second)), 1e-9)
	require.Zero(t, Rate(l, func(k string) bool { return k == "a" }, t0, t0.Add(time.Second)))
	require.Equal(t, 100*time.Millisecond, MaxGap(l, func(string) bool { return true }, t0, t0.Add(time.Second)))
	require.Equal(t, 2*time.Second, MaxGap(l, func(string) bool { return true }, t0.Add(2*time.Second), t0.Add(4*time.Second)))
	require.Zero(t, Offered(l, func(string) bool { return true }, t0, t0.Add(time.Second)), "sent now, not at t0")
}

func TestStallIsWorstLatencyLessBaseline(t *testing.T) {
	l := NewLedger()
	_, p1 := l.Next("p", "a")
	_, p2 := l.Next("p", "a")
	sent, _ := Parse(p1)
	sent2, _ := Parse(p2)
	got := []Got{{p1, sent.SentAt.Add(5 * time.Millisecond)}, {p2, sent2.SentAt.Add(30 * time.Millisecond)}}
	h := Stall(got, func(string) bool { return true }, sent.SentAt, sent.SentAt.Add(time.Hour), 2*time.Millisecond)
	require.Equal(t, int64(1), h.TotalCount())
	require.InDelta(t, 28000, h.Max(), 28) // 3 significant digits
}
