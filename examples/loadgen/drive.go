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
	warmup   time.Duration
	duration time.Duration
	progress io.Writer // nil: no progress lines
	label    string    // prefix of progress lines
	names    []string  // cluster names, recorder order
}

// drive runs cfg.senders goroutines against the target for warmup then
// duration (the measured window), printing progress once a second, and
// returns the per-second series once the senders have stopped. It does not
// wait for outstanding messages: the caller flushes. When ctx ends early
// the window ends there and interrupted is true.
func drive(ctx context.Context, d driveSpec) (series []second, interrupted bool) {
	cfg := d.cfg
	var stop atomic.Bool
	var senders sync.WaitGroup
	start := time.Now()
	perSender := cfg.rate / float64(cfg.senders)
	for i := range cfg.senders {
		senders.Add(1)
		go func() {
			defer senders.Done()
			keys := newKeyChooser(cfg.keyDist, cfg.keys, cfg.zipfS, cfg.seed, uint64(i))
			pace := newPacer(perSender, start)
			for !stop.Load() {
				due, ok := pace.wait(ctx)
				if !ok || stop.Load() {
					return
				}
				from := int64(-1)
				if cfg.intended {
					from = d.rec.at(due)
				}
				if !d.tgt.send(ctx, i, keys.next(), from) {
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
		for {
			select {
			case <-ticks:
				return
			case now := <-t.C:
				s := d.rec.tick(now, cfg.size)
				s.T = now.Sub(start).Seconds()
				// Decided by the clock, not by the phase flag, which races
				// with a tick that lands on the end of the warm-up.
				s.Warmup = now.Sub(start) <= d.warmup+time.Second/2
				series = append(series, s)
				if d.progress != nil {
					printProgress(d.progress, d.label, s, d.names)
				}
			}
		}
	}()

	sleep := func(dur time.Duration) bool {
		if dur <= 0 {
			return ctx.Err() == nil
		}
		tm := time.NewTimer(dur)
		defer tm.Stop()
		select {
		case <-tm.C:
			return true
		case <-ctx.Done():
			return false
		}
	}
	if sleep(d.warmup) {
		d.rec.beginWindow(time.Now())
		if !sleep(d.duration) {
			interrupted = true
		}
	} else {
		interrupted = true
	}
	d.rec.endWindow(time.Now())
	stop.Store(true)
	senders.Wait()
	close(ticks)
	ticker.Wait()
	return series, interrupted
}
