#!/usr/bin/env bash
# The in-interrupt cost of each sampler, seen from the interrupted thread (a
# benchmark, not a test): build/interrupt-gaps, pinned to CPU 1, measures the
# time it loses to gaps of 1-100 us (interrupts; longer ones are the host
# taking the vCPU) while each tool samples all CPUs at 999 Hz. The tools'
# own processes are not in it: bench-capture.py measures those.
# Prints, per tool, the medians over RUNS rounds (default 5) of the time lost
# per second and per sample, and the part beyond the sampler-only run
# (bpftrace's empty profile:hz:999 probe: the interrupt they all share).
# Usage: bash scripts/bench-gaps.sh   (as root, after make bench-helpers)
set -eu
cd "$(dirname "$0")/.."
GAPS=build/interrupt-gaps
RUNS=${RUNS:-5}
SECS=${SECS:-4}
HZ=999
[ "$(id -u)" = 0 ] || { echo "bench-gaps: run as root" >&2; exit 1; }
[ -x $GAPS ] && [ -x bpftrace-rec ] || { echo "bench-gaps: make && make bench-helpers first" >&2; exit 1; }
for t in bpftrace perf; do
	command -v $t > /dev/null || { echo "bench-gaps: $t not found (make test-deps)" >&2; exit 1; }
done
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"; jobs -p | xargs -r kill 2>/dev/null' EXIT

NAMES=(alone sampler-only bpftrace-rec bpftrace-rec-dwarf perf-g perf-dwarf bpftrace-stacks)
tool() { # NAME: runs the tool until killed
	case $1 in
	alone) exec sleep 1000 ;;
	sampler-only) exec bpftrace -e 'profile:hz:999 { }' ;;
	bpftrace-rec) exec ./bpftrace-rec -q -a -F $HZ --call-graph fp -o "$TMP/rec" ;;
	bpftrace-rec-dwarf) exec ./bpftrace-rec -q -a -F $HZ --call-graph dwarf -o "$TMP/recd" ;;
	perf-g) exec perf record -q -a -g -F $HZ -o "$TMP/perf.data" ;;
	perf-dwarf) exec perf record -q -a --call-graph dwarf,8192 -F $HZ -o "$TMP/perfd.data" ;;
	bpftrace-stacks) exec bpftrace -e 'profile:hz:999 { @[kstack, ustack] = count(); }' ;;
	esac
}
declare -A vals
# Rounds over all tools: the host's noise drifts over minutes.
for _ in $(seq "$RUNS"); do
	for name in "${NAMES[@]}"; do
		tool "$name" > /dev/null 2>&1 &
		pid=$!
		sleep 2 # bpftrace takes a second to attach
		vals[$name]+="$($GAPS "$SECS" 1 | awk '{ print $8 }') "
		kill -TERM "$pid" # INT: ignored by the jobs of a script run in the background
		wait "$pid" 2>/dev/null || true
		sleep 0.5
	done
done
python3 - "$HZ" "${NAMES[@]}" <<PY
import statistics, sys
hz = int(sys.argv[1])
vals = {$(for n in "${NAMES[@]}"; do printf '"%s": [%s], ' "$n" "$(echo ${vals[$n]} | tr ' ' ',')"; done)}
med = {k: statistics.median(v) for k, v in vals.items()}
print(f"{'tool':20} {'lost ms/s':>10} {'range':>15} {'us/sample':>10} {'beyond sampler':>15}")
for k in sys.argv[2:]:
    per = (med[k] - med["alone"]) * 1000 / hz
    beyond = (med[k] - med["sampler-only"]) * 1000 / hz
    rng = f"{min(vals[k]):.1f}-{max(vals[k]):.1f}"
    print(f"{k:20} {med[k]:10.1f} {rng:>15} {per if k != 'alone' else 0:10.2f} {beyond if k not in ('alone', 'sampler-only') else 0:15.2f}")
PY
