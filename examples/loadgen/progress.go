package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// printProgress writes one line for one second of the run:
//
//	[  7s warmup] 153,201 msg/s  19.61 MB/s  p50 2.104 ms  p99 9.870 ms  in-flight 4,210  err 0  | local-1 20% local-2 19% ...
func printProgress(w io.Writer, label string, s second, names []string) {
	var b strings.Builder
	phase := ""
	if s.Warmup {
		phase = " warmup"
	}
	if label != "" {
		label += " "
	}
	fmt.Fprintf(&b, "[%s%3.0fs%s] %9s msg/s %7.2f MB/s  p50 %7.3f ms  p99 %8.3f ms  in-flight %7s  err %s",
		label, s.T, phase, commas(int64(s.MsgPerSec+0.5)), s.MBPerSec, s.P50Ms, s.P99Ms,
		commas(s.InFlight), commas(s.Errors))
	if s.ClusterE2EP99 != nil {
		fmt.Fprintf(&b, "  | recv %9s msg/s  e2e p50 %7.3f p99 %8.3f ms  backlog %s",
			commas(int64(s.RecvPerSec+0.5)), s.E2EP50Ms, s.E2EP99Ms, commas(s.Backlog))
	}
	if len(names) > 1 {
		b.WriteString("  |")
		for i, n := range names {
			fmt.Fprintf(&b, " %s %.0f%%", n, s.ClusterPct[i])
			if s.ClusterE2EP99 != nil {
				fmt.Fprintf(&b, " e2e p99 %.1f", s.ClusterE2EP99[i])
			}
		}
	}
	b.WriteByte('\n')
	io.WriteString(w, b.String())
}

// commas formats n with thousands separators: 1234567 -> "1,234,567".
func commas(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	lead := len(s) % 3
	if lead == 0 {
		lead = 3
	}
	b.WriteString(s[:lead])
	for i := lead; i < len(s); i += 3 {
		b.WriteByte(',')
		b.WriteString(s[i : i+3])
	}
	return b.String()
}
