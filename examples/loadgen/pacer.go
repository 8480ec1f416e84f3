package main

import (
	"context"
	"time"
)

// pacer spaces one sender's messages at a fixed rate. Message i is due at
// start + i/rate; wait sleeps until the next message is due. A sender that
// falls behind (a slow send, a late wake-up) catches up by sending the
// overdue messages back to back, so the average rate is exact while
// individual sleeps may be coarse. It allocates nothing per message (one
// reused timer). A zero rate means no pacing. Not safe for concurrent use:
// each sender owns one.
type pacer struct {
	start    time.Time
	interval float64 // nanoseconds between messages
	n        int64   // messages released so far
	timer    *time.Timer
}

// newPacer returns a pacer for rate messages per second starting now.
func newPacer(rate float64, now time.Time) *pacer {
	p := &pacer{start: now}
	if rate > 0 {
		p.interval = 1e9 / rate
		p.timer = time.NewTimer(time.Hour)
		p.timer.Stop()
	}
	return p
}

// due returns when the next message is due (the zero time without a rate).
func (p *pacer) due() time.Time {
	if p.interval == 0 {
		return time.Time{}
	}
	return p.start.Add(time.Duration(float64(p.n) * p.interval))
}

// wait blocks until the next message is due and releases it. It returns
// the intended send time (the zero time without a rate) and false when ctx
// ended while waiting. Without a rate it never waits and never fails.
func (p *pacer) wait(ctx context.Context) (time.Time, bool) {
	if p.interval == 0 {
		return time.Time{}, true
	}
	due := p.due()
	if d := time.Until(due); d > 0 {
		p.timer.Reset(d)
		select {
		case <-p.timer.C:
		case <-ctx.Done():
			p.timer.Stop()
			return due, false
		}
	}
	p.n++
	return due, true
}
