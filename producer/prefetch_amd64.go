//go:build !purego

package producer

import "unsafe"

// prefetchRecord issues PREFETCHT0 for every cache line of the
// inflightBytes at p, or with observed of the observedBytes
// (prefetch_amd64.s).
//
//go:noescape
func prefetchRecord(p unsafe.Pointer, observed bool)
