//go:build !purego

package producer

import "unsafe"

// prefetch issues PREFETCHT0 for every cache line of the n > 0 bytes at p
// (prefetch_amd64.s).
//
//go:noescape
func prefetch(p unsafe.Pointer, n uintptr)
