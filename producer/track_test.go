package producer

import "testing"

// handTo plays a hand-over of an accepted message with a callback to pt,
// as hand does under mu: f is Send's own when given, else a pooled one.
func handTo(pt *partition, f *inflight) *inflight {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	if f == nil {
		f = pt.takeLocked()
	}
	f.cb, f.accepted = func(ID, *Message, error) {}, true
	pt.trackLocked(f)
	return f
}

// reportUpTo plays the callback goroutine: every message of pt numbered
// after the watermark and up to seq is reported, and the watermark says so.
func reportUpTo(pt *partition, seq uint64) {
	from := pt.reported.Load()
	for _, tr := range pt.track[pt.head:] {
		if tr.seq > from && tr.seq <= seq {
			tr.f.done(true)
		}
	}
	pt.reported.Store(seq)
}

// TestTrackTrimsInRuns: reported messages leave track when the free list
// runs dry or track is full, not one per send. Track then stays as long as
// the messages in flight, pooled inflights are reused rather than
// allocated again, Send's own leave track, and an unreported message stops
// the trim (with those after it).
func TestTrackTrimsInRuns(t *testing.T) {
	pt := &partition{c: &cluster{}, maxFree: minFree}
	const burst = 300
	all := map[*inflight]bool{} // every inflight handed out or free
	var allocated int           // after the first burst
	for round := range 20 {
		for range burst {
			all[handTo(pt, nil)] = true
		}
		reportUpTo(pt, pt.seq)
		if round == 0 {
			for _, f := range pt.free {
				all[f] = true
			}
			allocated = len(all)
		}
	}
	if live := len(pt.track) - pt.head; live > 2*burst {
		t.Fatalf("track holds %d messages after bursts of %d", live, burst)
	}
	if cap(pt.track) > 4*burst {
		t.Fatalf("track grew to %d for bursts of %d", cap(pt.track), burst)
	}
	if len(all) != allocated {
		t.Fatalf("%d inflights allocated after the first burst; the later bursts should reuse its %d", len(all)-allocated, allocated)
	}

	// Send's own inflight (not pooled) is dropped when trimmed; a pending
	// message stops the trim, and the reported ones after it stay.
	pt.mu.Lock()
	pt.free = pt.free[:0]
	pt.trimLocked() // all reported: track starts again
	pt.mu.Unlock()
	own := handTo(pt, &inflight{})
	pending := handTo(pt, nil)
	var after []*inflight
	for range 8 {
		after = append(after, handTo(pt, nil))
	}
	reportUpTo(pt, own.seq) // own is reported; the others are not
	for _, f := range after {
		f.done(true) // reported early: still behind pending
	}
	pt.mu.Lock()
	pt.free = pt.free[:0]
	pt.trimLocked()
	pt.mu.Unlock()
	for _, tr := range pt.track[:cap(pt.track)] {
		if tr.f == own {
			t.Fatal("Send's own inflight still referenced by track once trimmed")
		}
	}
	got := pt.track[pt.head:]
	if len(got) != 1+len(after) || got[0].f != pending {
		t.Fatalf("track after the trim holds %d messages; want the pending one and the %d after it", len(got), len(after))
	}
	if len(pt.free) != 0 {
		t.Fatalf("the trim freed %d inflights; want none (Send's own is not pooled, the rest wait behind a pending one)", len(pt.free))
	}
}
