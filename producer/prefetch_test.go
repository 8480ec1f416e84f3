package producer

import (
	"bytes"
	"context"
	"testing"
	"unsafe"
)

// TestPrefetch runs the prefetches at every alignment, whatever the
// address (the end of a buffer, nil). A hint has no effect to observe:
// what this catches is an instruction that faults and an encoding that
// writes.
func TestPrefetch(t *testing.T) {
	buf := make([]byte, 4096)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	want := bytes.Clone(buf)
	for off := range 130 {
		prefetchRecord(unsafe.Pointer(&buf[off]), false)
		prefetchRecord(unsafe.Pointer(&buf[off]), true)
	}
	prefetchRecord(unsafe.Pointer(&buf[len(buf)-inflightBytes]), false)
	prefetchRecord(unsafe.Pointer(&buf[len(buf)-observedBytes]), true)
	prefetchRecord(nil, true) // a prefetch of an unmapped address does not fault
	if !bytes.Equal(buf, want) {
		t.Fatal("a prefetch changed the bytes it was given")
	}
	slab := make([]inflight, 3)
	slab[1].cost = 42
	(&cluster{}).prefetch(&slab[1])
	observed := make([]observedInflight, 2)
	observed[0].ev.Bytes = 7
	(&cluster{obs: silentObserver{}}).prefetch(&observed[0].f)
	if slab[1].cost != 42 || slab[0].cost != 0 || slab[2].cost != 0 || observed[0].ev.Bytes != 7 {
		t.Fatal("a prefetch changed an inflight or its Event")
	}
}

// TestObservedSlabsPairInflightAndEvent checks that an observed cluster's
// inflights come with their Event right after them, which is what its
// prefetch reaches, and an unobserved cluster's with none.
func TestObservedSlabsPairInflightAndEvent(t *testing.T) {
	for _, observed := range []bool{false, true} {
		fs := appendSlab([]*inflight{nil}, minSlab, observed)
		if len(fs) != 1+minSlab || fs[0] != nil {
			t.Fatalf("appendSlab(%d) appended %d inflights", minSlab, len(fs)-1)
		}
		for i, f := range fs[1:] {
			if i > 0 && uintptr(unsafe.Pointer(f)) >= uintptr(unsafe.Pointer(fs[i])) {
				t.Fatalf("inflight %d is not before the one appended before it: the slab's first would not be taken first", i)
			}
			switch {
			case f.slabEvent != observed:
				t.Fatalf("inflight %d: slabEvent %v in a slab observed %v", i, f.slabEvent, observed)
			case observed && uintptr(unsafe.Pointer(eventFor(f))) != uintptr(unsafe.Pointer(f))+unsafe.Offsetof(observedInflight{}.ev):
				t.Fatalf("an observed cluster's inflight %d is not followed by its Event", i)
			}
		}
	}
}

type silentObserver struct{}

func (silentObserver) OnStart(context.Context, *Event) map[string]string { return nil }
func (silentObserver) OnDone(*Event)                                     {}

// TestInflightsFillWholeLines checks that a large slab starts on a cache
// line, so that its inflights, whole lines long, each start one (see
// minSlab). Their sizes, 320 and 512 bytes, are pinned where they are
// compiled (prefetch.go: inflightBytes, observedBytes).
func TestInflightsFillWholeLines(t *testing.T) {
	if inflightBytes%64 != 0 || observedBytes%64 != 0 {
		t.Fatalf("inflights of %d and %d bytes are not whole 64-byte lines", inflightBytes, observedBytes)
	}
	for _, observed := range []bool{false, true} {
		fs := appendSlab(nil, maxSlab, observed)
		first := fs[len(fs)-1] // appended last, taken first
		if a := uintptr(unsafe.Pointer(first)) % 64; a != 0 {
			t.Errorf("a slab of %d inflights (observed %v) starts %d bytes into a line", maxSlab, observed, a)
		}
	}
}
