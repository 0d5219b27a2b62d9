#!/usr/bin/env bash
# --heap's cost (issue 36): heapsplit's work (tests/workloads/heapsplit.c,
# ROUNDS rounds of 25,600 malloc/calloc/free calls of 16 B to 1 MiB, ~2.7 GB)
# alone, under `bpftrace-rec --heap` at the default rate (512 KiB), and
# under heaptrack (LD_PRELOAD, every call), paired in one run: the three
# take turns, REPS times, and the medians of the work's own time (printed by
# the workload, so the recorder's start is not in it) are compared. Then
# the tool's own cost: `--heap -p` on the workload (started by SIGUSR1 once
# the recorder says it is recording, so that the workload is not its child
# and not in its figures) under /usr/bin/time: its CPU (user + system: the
# drain, the stacks' unwinding and symbols, the files; the probes' BPF time
# is the target's, in its slowdown above), its peak RSS, and summary.json's
# drain CPU.
#   bash scripts/bench-heap.sh [REPS [ROUNDS]]
set -u
cd "$(dirname "$0")/.."
REPS=${1:-5}
ROUNDS=${2:-10}
WL=build/workloads/heapsplit
T=$(mktemp -d /tmp/bench-heap.XXXXXX)
trap 'rm -rf "$T"' EXIT
work() { awk '$1 == "work_ms" { print $2 }'; }
for i in $(seq "$REPS"); do
	"$WL" "$ROUNDS" 2>/dev/null | work >>"$T/none"
	./bpftrace-rec -q --heap -o "$T/rec" -- "$WL" "$ROUNDS" 2>/dev/null | work >>"$T/heap"
	heaptrack -o "$T/ht.$i" "$WL" "$ROUNDS" 2>/dev/null | work >>"$T/heaptrack"
done
med() { sort -n "$1" | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
n=$(med "$T/none")
printf "%-22s %10s %9s\n" run "work ms" slowdown
for k in none heap heaptrack; do
	m=$(med "$T/$k")
	printf "%-22s %10.1f %8.2fx\n" "$k" "$m" "$(awk -v a="$m" -v b="$n" 'BEGIN { print a / b }')"
done
echo "(median of $REPS paired runs, $ROUNDS rounds; kernel $(uname -r), $(nproc) CPUs)"

# The recorder attached to a heapsplit waiting in its sleep.
for i in $(seq "$REPS"); do
	"$WL" "$ROUNDS" 60 >/dev/null 2>"$T/wl" &
	wpid=$!
	until grep -q "pid" "$T/wl" 2>/dev/null; do sleep 0.05; done
	/usr/bin/time -f "%U %S %M" -o "$T/time" ./bpftrace-rec --heap -p $wpid -o "$T/p.$i" 2>"$T/err" &
	rpid=$!
	until grep -q recording "$T/err" 2>/dev/null; do sleep 0.05; done
	kill -USR1 $wpid
	wait $rpid $wpid
	read -r u s m <"$T/time"
	echo "$u $s" | awk '{ print ($1 + $2) * 1000 }' >>"$T/cpu"
	echo "$m" | awk '{ print $1 / 1024 }' >>"$T/rss"
	python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["drain_cpu_ns"] / 1e6)' \
		"$T/p.$i/summary.json" >>"$T/drain"
done
printf "%-34s %10s\n" "bpftrace-rec --heap -p" median
printf "%-34s %10.0f\n" "CPU ms (user + system)" "$(med "$T/cpu")"
printf "%-34s %10.1f\n" "drain CPU ms (summary.json)" "$(med "$T/drain")"
printf "%-34s %10.1f\n" "peak RSS MiB" "$(med "$T/rss")"
