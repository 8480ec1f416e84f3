//go:build !amd64 || purego

package producer

import "unsafe"

// prefetchRecord does nothing here: only amd64 has the instruction
// written (prefetch_amd64.s), and the purego build tag (as in xxhash)
// leaves out assembly. The CPU's own prefetchers and the inflight slabs
// still apply.
func prefetchRecord(unsafe.Pointer, bool) {}
