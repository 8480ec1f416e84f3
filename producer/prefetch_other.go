//go:build !amd64

package producer

import "unsafe"

// prefetch does nothing on this architecture: only amd64 has the
// instruction written (prefetch_amd64.s). The CPU's own prefetchers and
// the inflight slabs still apply.
func prefetch(unsafe.Pointer, uintptr) {}
