//go:build !purego

#include "textflag.h"

// func prefetchRecord(p unsafe.Pointer, observed bool)
// PREFETCHT0 (SSE, so on every amd64) of the lines of the inflightBytes
// (320) at p, unrolled: the five lines from p, and the line of the last
// byte, a sixth when p is not at a line's start (a slab under 32 KiB; see
// minSlab). With observed, those of the observedBytes (512) at p: the
// Event's lines after them. One call of a few instructions, where a loop
// over the lines took 25 and two calls did not inline.
TEXT ·prefetchRecord(SB), NOSPLIT|NOFRAME, $0-9
	MOVQ	p+0(FP), AX
	PREFETCHT0	(AX)
	PREFETCHT0	64(AX)
	PREFETCHT0	128(AX)
	PREFETCHT0	192(AX)
	PREFETCHT0	256(AX)
	PREFETCHT0	319(AX)
	CMPB	observed+8(FP), $0
	JEQ	done
	PREFETCHT0	320(AX)
	PREFETCHT0	384(AX)
	PREFETCHT0	448(AX)
	PREFETCHT0	511(AX)
done:
	RET
