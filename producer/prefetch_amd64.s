//go:build !purego

#include "textflag.h"

// func prefetch(p unsafe.Pointer, n uintptr)
// PREFETCHT0 (SSE, so on every amd64) of each 64-byte line from the one
// holding p to the one holding p+n-1.
TEXT ·prefetch(SB), NOSPLIT|NOFRAME, $0-16
	MOVQ	p+0(FP), AX
	MOVQ	n+8(FP), BX
	LEAQ	-1(AX)(BX*1), BX
	ANDQ	$~63, AX
loop:
	PREFETCHT0	(AX)
	ADDQ	$64, AX
	CMPQ	AX, BX
	JLS	loop
	RET

// func prefetch2(p unsafe.Pointer, n uintptr, q unsafe.Pointer, m uintptr)
// prefetch of two ranges in one call: the n > 0 bytes at p, then the m > 0
// bytes at q.
TEXT ·prefetch2(SB), NOSPLIT|NOFRAME, $0-32
	MOVQ	p+0(FP), AX
	MOVQ	n+8(FP), BX
	LEAQ	-1(AX)(BX*1), BX
	ANDQ	$~63, AX
first:
	PREFETCHT0	(AX)
	ADDQ	$64, AX
	CMPQ	AX, BX
	JLS	first
	MOVQ	q+16(FP), AX
	MOVQ	m+24(FP), BX
	LEAQ	-1(AX)(BX*1), BX
	ANDQ	$~63, AX
second:
	PREFETCHT0	(AX)
	ADDQ	$64, AX
	CMPQ	AX, BX
	JLS	second
	RET
