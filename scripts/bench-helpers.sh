#!/usr/bin/env bash
# What a sample costs in BPF, piece by piece (a benchmark, not a test): each
# program of scripts/helper-cost/helper_cost.bpf.c alone on cpu-clock at
# 999 Hz on every CPU while build/workloads/spin runs (user mode, shallow
# stacks), its run_time_ns / run_cnt (kernel.bpf_stats_enabled). Prints the
# median of RUNS runs (default 3) and the range, in ns per run.
# Usage: bash scripts/bench-helpers.sh   (as root, after make bench-helpers)
set -eu
cd "$(dirname "$0")/.."
BIN=build/helper-cost
SPIN=build/workloads/spin
RUNS=${RUNS:-3}
[ "$(id -u)" = 0 ] || { echo "bench-helpers: run as root" >&2; exit 1; }
[ -x $BIN ] && [ -x $SPIN ] || { echo "bench-helpers: make bench-helpers first" >&2; exit 1; }
old=$(cat /proc/sys/kernel/bpf_stats_enabled)
echo 1 > /proc/sys/kernel/bpf_stats_enabled
trap 'echo "$old" > /proc/sys/kernel/bpf_stats_enabled' EXIT
PROGS=(empty user_stack kernel_stack read_user_16 read_user_512 read_user_4096 ringbuf_128
	ringbuf_640 ringbuf_output_128 ringbuf_dynptr_128 lru_hash_lookup array_lookup ktime comm
	comm_loads)
declare -A vals
# Rounds over all programs, not all runs of one program in a row: the cost of
# everything drifts by up to 2x over minutes on these VMs, and interleaving
# spreads that drift over every program alike.
for _ in $(seq "$RUNS"); do
	for prog in "${PROGS[@]}"; do
		exec 3< <($BIN "$prog")
		pid=$!
		read -r id <&3
		sleep 0.5
		$SPIN 300000000
		vals[$prog]+="$(bpftool prog show id "$id" -j |
			python3 -c 'import json,sys; p=json.load(sys.stdin); print(p["run_time_ns"] // max(p["run_cnt"], 1))') "
		kill "$pid"
		wait "$pid" 2>/dev/null || true
		exec 3<&-
	done
done
for prog in "${PROGS[@]}"; do
	printf '%-18s %s\n' "$prog" "$(printf '%s\n' ${vals[$prog]} | sort -n |
		awk '{v[NR] = $1} END {printf "median %d ns (%d-%d)", v[int((NR + 1) / 2)], v[1], v[NR]}')"
done
