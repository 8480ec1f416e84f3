//go:build unix

package producer_test

import (
	"syscall"
	"time"
)

// used is what the process has used so far: CPU time (user and system),
// system time alone, and context switches (voluntary and not).
type used struct {
	cpu, sys time.Duration
	switches int64
}

// usage reads used. The system time and the switches say how much of a
// side's CPU went to the kernel (threads sleeping and waking among it)
// rather than to the code.
func usage() used {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return used{
		cpu:      time.Duration(ru.Utime.Nano() + ru.Stime.Nano()),
		sys:      time.Duration(ru.Stime.Nano()),
		switches: int64(ru.Nvcsw + ru.Nivcsw),
	}
}
