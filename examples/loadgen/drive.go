package main

import (
	"context"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// driveSpec describes one timed run of senders against a target.
type driveSpec struct {
	cfg      *config
	tgt      target
	rec      *recorder
	keys     int // number of keys the choosers pick from
	warmup   time.Duration
	duration time.Duration
	progress io.Writer // nil: no progress lines
	label    string    // prefix of progress lines
	names    []string  // cluster names, recorder order
	// onTick, when set, sees every second on the ticker goroutine (and a
	// last, shorter one when the window ends), measured telling whether it
	// lies in the measured window.
	onTick func(s second, measured bool)
}

// drive runs cfg.senders goroutines against the target for warmup then
// duration (the measured window), printing progress once a second, and
// returns the per-second series once the senders have stopped. With
// cfg.numMessages the senders stop after that many messages in all, and
// the window ends there if it is still running. It does not wait for
// outstanding messages: the caller flushes. When ctx ends early the
// window ends there and interrupted is true.
func drive(ctx context.Context, d driveSpec) (series []second, interrupted bool) {
	cfg := d.cfg
	var stop atomic.Bool
	var senders sync.WaitGroup
	start := time.Now()
	perSender := cfg.rate / float64(cfg.senders)

	var budget atomic.Int64
	budget.Store(cfg.numMessages)
	exhausted := make(chan struct{})
	var exhaust sync.Once

	for i := range cfg.senders {
		senders.Add(1)
		go func() {
			defer senders.Done()
			keys := newKeyChooser(cfg.keyDist, d.keys, cfg.zipfS, cfg.seed, uint64(i))
			pace := newPacer(perSender, start)
			for !stop.Load() {
				due, ok := pace.wait(ctx)
				if !ok || stop.Load() {
					return
				}
				if cfg.numMessages > 0 && budget.Add(-1) < 0 {
					exhaust.Do(func() { close(exhausted) })
					return
				}
				at := int64(-1)
				if !due.IsZero() {
					at = d.rec.at(due)
				}
				if !d.tgt.send(ctx, i, keys.next(), at) {
					return
				}
			}
		}()
	}

	ticks := make(chan struct{})
	var ticker sync.WaitGroup
	ticker.Add(1)
	go func() {
		defer ticker.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		last := start
		emit := func(now time.Time) {
			last = now
			s := d.rec.tick(now, cfg.size)
			s.T = now.Sub(start).Seconds()
			// Decided by the clock, not by the phase flag, which races
			// with a tick that lands on the end of the warm-up.
			s.Warmup = now.Sub(start) <= d.warmup+time.Second/2
			series = append(series, s)
			if d.onTick != nil {
				d.onTick(s, !s.Warmup)
			}
			if d.progress != nil {
				printProgress(d.progress, d.label, s, d.names)
			}
		}
		for {
			select {
			case <-ticks:
				// The window's last part, when long enough to tell.
				if now := time.Now(); now.Sub(last) >= 200*time.Millisecond {
					emit(now)
				}
				return
			case now := <-t.C:
				emit(now)
			}
		}
	}()

	// sleep waits for dur; it returns false when the run must end first
	// (ctx ended: interrupted; or -n reached).
	sleep := func(dur time.Duration) bool {
		if dur <= 0 {
			return ctx.Err() == nil
		}
		tm := time.NewTimer(dur)
		defer tm.Stop()
		select {
		case <-tm.C:
			return true
		case <-exhausted:
			return false
		case <-ctx.Done():
			interrupted = true
			return false
		}
	}
	if sleep(d.warmup) {
		d.rec.beginWindow(time.Now())
		sleep(d.duration)
	} else if ctx.Err() != nil {
		interrupted = true
	}
	d.rec.endWindow(time.Now())
	stop.Store(true)
	senders.Wait()
	close(ticks)
	ticker.Wait()
	return series, interrupted
}
