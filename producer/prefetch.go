package producer

import "unsafe"

// An inflight is reused after thousands of other messages (see minSlab), so
// by then it is in no cache near the core that reuses it, and the last
// goroutine to write it (the callback goroutine, which cleared it) may have
// run on another core. Filling it then stalls the sender on each of its
// cache lines. pprof of BenchmarkSendAsyncOverhead put toPulsar, the first
// writes to an inflight, at 99 ns/msg with 5 clusters and 32 with 1: with
// 5 clusters a sender walks 25 partitions' inflights in turn, five times
// the records in flight, in more interleaved runs (which of the two costs
// more was not measured). So the partition asks for the lines of the
// inflight it will hand out next when it hands out one (takeLocked), and
// the callback goroutine for those of the next
// outcome while it reports one (dispatcher.run): they arrive while the
// current message is handled. toPulsar then took 13 ns/msg with 5 clusters,
// and in-process A/B runs (7 rounds each, the same binary with the
// prefetches switched off) measured the SDK's added CPU per message 62 and
// 67 ns lower with 5 clusters, 7 and 13 ns lower with 1.
//
// An observed cluster's inflights carry their Event right after them
// (observedInflight), so the same prefetch brings it: a do-nothing
// Observer then added 23 to 50 ns/msg less than with Events in a slab of
// their own (three A/B runs).
//
// A prefetch is a hint: it never faults, whatever the address, and changes
// nothing a program can observe but time.

// prefetch asks the CPU to bring f's cache lines near the core: with an
// observed cluster, those of the Event that follows f in its slab too
// (observedInflight). f may be any inflight: for one whose Event is
// elsewhere, the hint is only wasted.
func (c *cluster) prefetch(f *inflight) {
	prefetchRecord(unsafe.Pointer(f), c.obs != nil)
}

// The sizes that prefetchRecord covers, unrolled in assembly: a change to
// inflight or Event that changes them fails to compile here (a constant
// out of range) until the assembly follows. Unrolled into one call, the
// two prefetches of a message take 20 instructions where a loop over the
// lines took 50 (make bench-ir: 981 to 941 in keyroute's frames with 1
// cluster, 1,307 to 1,230 observed).
const (
	inflightBytes = 320
	observedBytes = 512
)

var (
	_ = [1]struct{}{}[unsafe.Sizeof(inflight{})-inflightBytes]
	_ = [1]struct{}{}[inflightBytes-unsafe.Sizeof(inflight{})]
	_ = [1]struct{}{}[unsafe.Sizeof(observedInflight{})-observedBytes]
	_ = [1]struct{}{}[observedBytes-unsafe.Sizeof(observedInflight{})]
)
