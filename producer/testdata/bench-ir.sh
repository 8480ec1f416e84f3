#!/usr/bin/env bash
# bench-ir: the instructions per message that keyroute's own frames
# (producer, router, xxhash) execute on sides of BenchmarkSendAsyncOverhead,
# counted by valgrind's cachegrind on one P (GOMAXPROCS=1). A count is the
# slope between a run of 100k messages and one of 300k, so setup and
# teardown drop out. Repeat runs agree within about 30 instructions: the
# goroutines' interleaving, and with it the work per batch, varies.
#
# Unlike CPU time, the count does not move with the load of a shared
# machine: it judges a change of a few nanoseconds that paired CPU medians
# on this project's 2-core VM cannot (identical sides there differ by up to
# 60 ns in a noisy hour). It does not see cache misses, atomics or the GC,
# so fewer instructions is not less time until CPU time agrees.
#
# Usage (from the repository root): producer/testdata/bench-ir.sh [side ...]
# Sides default to clusters=1 clusters=5 clusters=1/observed; TOP=n also
# prints the n functions with the most instructions a message.
set -euo pipefail
for tool in valgrind cg_annotate; do
	command -v "$tool" >/dev/null || { echo "bench-ir: $tool not found (Debian: apt-get install valgrind)" >&2; exit 1; }
done
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
go test -c -o "$dir/producer.test" ./producer/
sides=("$@")
[ ${#sides[@]} -gt 0 ] || sides=(clusters=1 clusters=5 clusters=1/observed)
lo=100000
hi=300000

# frames SIDE N: keyroute's instructions by function for N messages of SIDE.
frames() {
	GOMAXPROCS=1 valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file="$dir/cg.out" \
		"$dir/producer.test" -test.run '^$' -test.bench "SendAsyncOverhead/$1/round" \
		-test.benchtime "${2}x" -rounds 1 >/dev/null 2>&1
	# The function list only: it ends at the next rule of dashes (read on:
	# an early exit would fail the pipe).
	cg_annotate --threshold=0 "$dir/cg.out" | awk '
		/file:function/ { on = 1; getline; next }
		on && /^---/ { on = 0 }
		on && /keyroute\/producer\.|keyroute\/router\.|cespare\/xxhash/ && !/producertest|_test/ {
			n = $NF; sub(/.*:/, "", n); v = $1; gsub(",", "", v); by[n] += v
		}
		END { for (n in by) print n, by[n] }' | LC_ALL=C sort
}

for side in "${sides[@]}"; do
	frames "$side" "$lo" >"$dir/lo"
	frames "$side" "$hi" >"$dir/hi"
	LC_ALL=C join -a 2 -e 0 -o 0,1.2,2.2 "$dir/lo" "$dir/hi" |
		awk -v d=$((hi - lo)) '{ print ($3 - $2) / d, $1 }' | sort -rn >"$dir/slope"
	printf '%-22s %5.0f instructions/msg\n' "$side" "$(awk '{ s += $1 } END { print s }' "$dir/slope")"
	if [ "${TOP:-0}" -gt 0 ]; then
		head -n "$TOP" "$dir/slope" | awk '{ printf "    %6.1f  %s\n", $1, $2 }'
	fi
done
