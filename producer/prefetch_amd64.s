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
