package producer

import (
	"bytes"
	"testing"
	"unsafe"
)

// TestPrefetch checks that prefetch, a hint, returns for every length and
// alignment, whatever the address (a line of its own, the end of a buffer,
// nil), and writes nothing.
func TestPrefetch(t *testing.T) {
	buf := make([]byte, 4096)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	want := bytes.Clone(buf)
	for off := range 130 {
		for _, n := range []int{1, 2, 63, 64, 65, 127, 128, 129, 328, 1000} {
			if off+n > len(buf) {
				continue
			}
			prefetch(unsafe.Pointer(&buf[off]), uintptr(n))
		}
	}
	prefetch(unsafe.Pointer(&buf[len(buf)-1]), 1)
	prefetch(nil, 64) // a prefetch of an unmapped address does not fault
	if !bytes.Equal(buf, want) {
		t.Fatal("prefetch changed the bytes it was given")
	}
	slab := make([]inflight, 3)
	slab[1].cost = 42
	prefetchInflight(&slab[1])
	if slab[1].cost != 42 || slab[0].cost != 0 || slab[2].cost != 0 {
		t.Fatal("prefetchInflight changed an inflight")
	}
}
