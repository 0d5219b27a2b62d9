#!/usr/bin/env bash
# The HotSpot walk's cost (a benchmark, not a test): tests/workloads/JSplit.java
# stack (one thread spinning 50 Java frames deep, once warm) under the
# machine's java, recorded with -p at 999 Hz for SECONDS (default 4) with
# the HotSpot walk and without it (BPFTRACE_REC_NO_FEATURES=jvm: the native
# walk alone, the same process, which steps JIT frames by rbp and stops
# where compiled code keeps none), alternating, ROUNDS times (default 5).
# For each: the sampler's BPF time per sample (its run_time_ns / run_cnt,
# kernel.bpf_stats_enabled, from summary.json; the tail-called walkers'
# time is the sampler's) and the drain's CPU per sample after the first
# second (methods and nmethods cached by then). Prints the medians and the
# walk's added BPF time per sample (target: at most 1.5 us).
# Usage: bash scripts/bench-jvm.sh   (as root, after make; java and javac)
set -eu
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
SECONDS_=${SECONDS_REC:-4}
DEPTH=${DEPTH:-50}
[ "$(id -u)" = 0 ] || { echo "bench-jvm: run as root" >&2; exit 1; }
[ -x bpftrace-rec ] || { echo "bench-jvm: make first" >&2; exit 1; }
command -v javac > /dev/null || { echo "bench-jvm: no javac (make test-deps)" >&2; exit 1; }
source scripts/lib.sh
bpf_stats_begin
javac -d "$TMP" tests/workloads/JSplit.java

# NAME [ENV...]: one recording; prints "bpf_ns_per_sample drain_ns_per_sample samples".
measure() {
	local name=$1 pid
	shift
	java -cp "$TMP" JSplit 600 stack "$DEPTH" > /dev/null 2>&1 &
	pid=$!
	sleep 4 # warm: C2 has compiled the loop
	env "$@" ./bpftrace-rec -F 999 -d "$SECONDS_" -p $pid -o "$TMP/$name" > /dev/null 2>&1
	kill $pid 2> /dev/null || true
	wait $pid 2> /dev/null || true
	python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
d = s["drain_after_1s"]
print("%.0f %.0f %d" % (s["sampler_run_time_ns"] / max(s["sampler_run_cnt"], 1),
                       d["cpu_ns"] / max(d["samples"], 1), s["samples"]))' "$TMP/$name/summary.json"
}

for r in $(seq "$ROUNDS"); do
	echo "jvm $(measure jvm$r)" >> "$TMP/all"
	echo "native $(measure native$r BPFTRACE_REC_NO_FEATURES=jvm)" >> "$TMP/all"
done
python3 - "$TMP/all" << 'PYEOF'
import statistics, sys
rows = {}
for ln in open(sys.argv[1]):
    k, b, d, n = ln.split()
    rows.setdefault(k, []).append((float(b), float(d), int(n)))
med = {k: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v),
           statistics.median(x[2] for x in v)) for k, v in rows.items()}
for k in ("jvm", "native"):
    print("%-7s BPF %6.0f ns/sample  drain %6.0f ns/sample  samples %d" % ((k,) + med[k]))
print("HotSpot walk added: %.0f ns of BPF time per sample (%.2fx), %.0f ns of drain CPU per sample"
      % (med["jvm"][0] - med["native"][0], med["jvm"][0] / med["native"][0],
         med["jvm"][1] - med["native"][1]))
PYEOF
