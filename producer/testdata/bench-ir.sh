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
# With MISSES=1 it also counts, in those frames, the data misses a message
# costs in cachegrind's model of a 1 MiB cache (this machine's L2, 16-way),
# which the memory traffic of a change shows in without the noise of CPU
# time. The model has one core and no prefetcher, and a prefetch
# instruction does nothing in it (checked: a loop that prefetches every
# line ahead misses as often as one that does not). So it counts the lines
# a message touches that have left the cache since, prefetched or not,
# and not the time they cost: a miss it removes on a line the code
# prefetches anyway may save no time.
#
# Usage (from the repository root): producer/testdata/bench-ir.sh [side ...]
# Sides default to clusters=1 clusters=5 clusters=1/observed; TOP=n also
# prints the n functions with the most instructions a message (with
# MISSES=1: the most misses, each function's misses after its count).
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

# pattern SIDE: the -test.bench pattern of SIDE's rounds alone, each level
# anchored, so that a side does not also run the sides its name prefixes.
pattern() {
	local p=^BenchmarkSendAsyncOverhead$ part
	local -a parts
	IFS=/ read -ra parts <<<"$1"
	for part in "${parts[@]}"; do p+="/^$part\$"; done
	echo "$p/^round="
}

# frames SIDE N: keyroute's instructions (and modelled misses) by function
# for N messages of SIDE.
sim=(--cache-sim=no)
[ "${MISSES:-0}" = 1 ] && sim=(--cache-sim=yes --LL=1048576,16,64)
frames() {
	GOMAXPROCS=1 valgrind --tool=cachegrind "${sim[@]}" --cachegrind-out-file="$dir/cg.out" \
		"$dir/producer.test" -test.run '^$' -test.bench "$(pattern "$1")" \
		-test.benchtime "${2}x" -rounds 1 >/dev/null 2>&1
	# The function list only: it ends at the next rule of dashes (read on:
	# an early exit would fail the pipe). Percentages go first: a zero
	# count has none, so they would shift the columns. With the cache
	# model the columns are Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw.
	cg_annotate --threshold=0 "$dir/cg.out" | sed -E 's/\([^)]*\)//g' | awk -v misses="${MISSES:-0}" '
		/file:function/ { on = 1; getline; next }
		on && /^---/ { on = 0 }
		on && /keyroute\/producer\.|keyroute\/router\.|cespare\/xxhash/ && !/producertest|_test/ {
			n = $NF; sub(/.*:/, "", n)
			for (i = 1; i < NF; i++) { v[i] = $i; gsub(",", "", v[i]) }
			ir[n] += v[1]; if (misses == 1) ll[n] += v[6] + v[9]
		}
		END { for (n in ir) print n, ir[n], ll[n] + 0 }' | LC_ALL=C sort
}

# total COLUMN: the sum of a column of the slope (2 instructions, 3 misses).
total() { awk -v c="$1" '{ s += $c } END { print s }' "$dir/slope"; }

for side in "${sides[@]}"; do
	frames "$side" "$lo" >"$dir/lo"
	frames "$side" "$hi" >"$dir/hi"
	# name instructions misses, per message
	LC_ALL=C join -a 2 -e 0 -o 0,1.2,1.3,2.2,2.3 "$dir/lo" "$dir/hi" |
		awk -v d=$((hi - lo)) '{ print $1, ($4 - $2) / d, ($5 - $3) / d }' >"$dir/slope"
	if [ "${MISSES:-0}" = 1 ]; then
		printf '%-22s %5.0f instructions/msg %6.2f misses/msg\n' "$side" "$(total 2)" "$(total 3)"
		by=3
	else
		printf '%-22s %5.0f instructions/msg\n' "$side" "$(total 2)"
		by=2
	fi
	if [ "${TOP:-0}" -gt 0 ]; then
		sort -k"$by" -gr "$dir/slope" >"$dir/top"
		head -n "$TOP" "$dir/top" | awk -v m="${MISSES:-0}" '{
			printf "    %6.1f", $2; if (m == 1) printf " %6.2f", $3; print "  " $1 }'
	fi
done
