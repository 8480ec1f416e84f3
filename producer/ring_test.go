package producer

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// ringCluster is a cluster of one partition with a callback goroutine that
// does not run: the test walks the ring itself (walkOnce).
func ringCluster() (*partition, *dispatcher) {
	c := &cluster{name: "c", health: newHealth(time.Now())}
	pt := newPartition(0, c, nil, minFree)
	c.parts = []*partition{pt}
	d := &dispatcher{c: c, signal: make(chan struct{}, 1)}
	d.straggle = time.AfterFunc(time.Hour, func() {})
	d.straggle.Stop()
	c.disp = d
	pt.next = 1
	return pt, d
}

// handTo plays a hand-over of an accepted message to pt, as hand does under
// mu; its callback appends its number to *got.
func handTo(pt *partition, got *[]uint64) *inflight {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	f := pt.takeLocked()
	seq := pt.placed.Load() + 1
	f.cb = func(ID, *Message, error) { *got = append(*got, seq) }
	f.msg, f.part, f.accepted = &Message{}, pt, true
	pt.placeLocked(f, pending)
	return f
}

// walkOnce plays one run of the callback goroutine over pt.
func walkOnce(d *dispatcher, pt *partition) {
	var msgs, bytes int64
	d.walk(pt, &msgs, &bytes)
	pt.reported.Store(pt.next - 1)
}

// ack completes f as pulsar-client-go's callback would.
func ack(pt *partition, f *inflight) {
	pt.c.settle(f, f.state.Load(), nil, nil)
}

// TestRingReportsInOrder: outcomes completed in any order are reported in
// the order the messages were handed over, each once, and one completed
// early waits for those before it.
func TestRingReportsInOrder(t *testing.T) {
	pt, d := ringCluster()
	var got []uint64
	fs := make([]*inflight, 10)
	for i := range fs {
		fs[i] = handTo(pt, &got)
	}
	for _, i := range []int{3, 1, 2} {
		ack(pt, fs[i])
	}
	walkOnce(d, pt)
	if len(got) != 0 {
		t.Fatalf("reported %v before message 1 was completed", got)
	}
	ack(pt, fs[0])
	ack(pt, fs[0]) // a second outcome for the same message counts for nothing
	walkOnce(d, pt)
	if want := []uint64{1, 2, 3, 4}; !slices.Equal(got, want) {
		t.Fatalf("reported %v; want %v", got, want)
	}
	for _, f := range fs[4:] {
		ack(pt, f)
	}
	walkOnce(d, pt)
	if len(got) != 10 || got[9] != 10 {
		t.Fatalf("reported %v; want 1 to 10 once each", got)
	}
}

// TestRingReclaimsInRuns: reported messages leave the ring in runs, when
// the free list is empty; the ring stays as large as the messages in
// flight need, and the inflights are reused rather than allocated again.
func TestRingReclaimsInRuns(t *testing.T) {
	pt, d := ringCluster()
	const burst = 300
	var got []uint64
	all := map[*inflight]bool{} // every inflight handed out or free
	var allocated int           // after the first burst
	for round := range 20 {
		for range burst {
			f := handTo(pt, &got)
			all[f] = true
			ack(pt, f)
		}
		walkOnce(d, pt)
		if round == 0 {
			for _, f := range pt.free {
				all[f] = true
			}
			allocated = len(all)
		}
	}
	if len(got) != 20*burst {
		t.Fatalf("reported %d messages; want %d", len(got), 20*burst)
	}
	if n := len(pt.ring.Load().slots); n != minRing {
		t.Fatalf("the ring grew to %d slots for bursts of %d", n, burst)
	}
	if len(all) != allocated {
		t.Fatalf("%d inflights allocated after the first burst; the later bursts should reuse its %d", len(all)-allocated, allocated)
	}
	if held := pt.placed.Load() - pt.reclaimed; held > 2*burst {
		t.Fatalf("the ring holds %d messages after bursts of %d", held, burst)
	}
}

// TestRingGrowsBehindAPendingMessage: a message without an outcome keeps
// every later one in the ring, which grows past its first size and keeps
// them in order.
func TestRingGrowsBehindAPendingMessage(t *testing.T) {
	pt, d := ringCluster()
	var got []uint64
	first := handTo(pt, &got)
	old := pt.ring.Load()
	n := 3 * minRing
	for range n {
		ack(pt, handTo(pt, &got))
	}
	if r := pt.ring.Load(); r == old || len(r.slots) < n+1 {
		t.Fatalf("the ring has %d slots for %d messages", len(r.slots), n+1)
	}
	walkOnce(d, pt)
	if len(got) != 0 {
		t.Fatalf("reported %d messages before the first was completed", len(got))
	}
	ack(pt, first)
	walkOnce(d, pt)
	if len(got) != n+1 {
		t.Fatalf("reported %d messages; want %d", len(got), n+1)
	}
	for i, seq := range got {
		if seq != uint64(i+1) {
			t.Fatalf("report %d was message %d", i, seq)
		}
	}
}

// TestWalkReadsNoSlotPastPlaced: the callback goroutine reports no message
// a sender has put in the ring but not yet published (partition.placed),
// even one that looks completed, and reports it once published.
func TestWalkReadsNoSlotPastPlaced(t *testing.T) {
	pt, d := ringCluster()
	var got []uint64
	ack(pt, handTo(pt, &got))
	walkOnce(d, pt)
	// A sender in the middle of placing message 2, a refusal (completed
	// at once).
	pt.mu.Lock()
	f := pt.takeLocked()
	f.cb, f.msg, f.part = func(ID, *Message, error) { got = append(got, 2) }, &Message{}, pt
	seq := pt.placed.Load() + 1
	f.state.Store(seq<<phaseBits | completed)
	r := pt.ring.Load()
	r.slots[seq&r.mask] = f
	walkOnce(d, pt)
	if len(got) != 1 {
		pt.mu.Unlock()
		t.Fatalf("reported %v before message 2 was published", got)
	}
	pt.placed.Store(seq)
	pt.mu.Unlock()
	walkOnce(d, pt)
	if !slices.Equal(got, []uint64{1, 2}) {
		t.Fatalf("reported %v; want [1 2]", got)
	}
}

// TestRefusalAfterStopIsReportedAtOnce: once the callback goroutine has
// stopped, a refusal gets its outcome on the refusing goroutine.
func TestRefusalAfterStopIsReportedAtOnce(t *testing.T) {
	pt, d := ringCluster()
	var msgs, bytes int64
	d.drain(pt, &msgs, &bytes)
	var got error
	f := pooledInflight()
	f.part, f.cb = pt, func(_ ID, _ *Message, err error) { got = err }
	f.msg = &Message{Key: "k"}
	pt.c.refuse(f, ErrClosed)
	if !errors.Is(got, ErrClosed) {
		t.Fatalf("got %v; want ErrClosed at once", got)
	}
}

// TestLooseMessagesAreReused: messages without a callback take no number,
// are reported where their outcome is fixed, and their inflights are
// reused once reported, as the ring's are.
func TestLooseMessagesAreReused(t *testing.T) {
	pt, _ := ringCluster()
	pt.c.budget = newBudget(1<<20, 1<<30)
	all := map[*inflight]bool{}
	var allocated int
	for round := range 20 {
		var fs []*inflight
		pt.mu.Lock()
		for range 300 {
			f := pt.takeLocked()
			f.msg, f.part, f.accepted = &Message{}, pt, true
			pt.holdLooseLocked(f)
			fs = append(fs, f)
			all[f] = true
		}
		pt.mu.Unlock()
		for _, f := range fs {
			ack(pt, f)
		}
		if round == 0 {
			for _, f := range pt.free {
				all[f] = true
			}
			allocated = len(all)
		}
	}
	if n := pt.placed.Load(); n != 0 {
		t.Fatalf("messages without a callback took %d numbers", n)
	}
	if len(all) != allocated {
		t.Fatalf("%d inflights allocated after the first round; the later rounds should reuse its %d", len(all)-allocated, allocated)
	}
}

// TestDrainWaitsForASettlingMessage: when Close's sweep loses the race to a
// late ack, the message is settling as the callback goroutine drains; it
// is reported once the ack has completed it, not dropped.
func TestDrainWaitsForASettlingMessage(t *testing.T) {
	pt, d := ringCluster()
	var got []uint64
	f := handTo(pt, &got)
	st := f.state.Load()
	if !f.state.CompareAndSwap(st, st|settling) { // the ack, half way
		t.Fatal("not pending")
	}
	if pt.c.settle(f, st, nil, ErrClosed) {
		t.Fatal("the sweep won a message already settling")
	}
	d.onSettling = func(f *inflight) { f.state.Store(st | completed) } // the ack ends
	var msgs, bytes int64
	d.drain(pt, &msgs, &bytes)
	if !slices.Equal(got, []uint64{1}) {
		t.Fatalf("reported %v; want message 1", got)
	}
}
