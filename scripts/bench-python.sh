#!/usr/bin/env bash
# The Python walk's cost (a benchmark, not a test): tests/workloads/pywork.py
# deep (one thread spinning 20 Python frames deep, 22 with <module> and the
# leaf) under Debian's python3.11, recorded with -p at 999 Hz for SECONDS
# (default 4) with the Python walk and without it
# (BPFTRACE_REC_NO_FEATURES=python: the native walk alone, the same
# process), alternating, ROUNDS times (default 5). For each: the sampler's
# BPF time per sample (its run_time_ns / run_cnt, kernel.bpf_stats_enabled,
# from summary.json) and the drain's CPU per sample after the first second
# (code objects cached by then). Prints the medians and the Python walk's
# added BPF time per sample.
# Usage: bash scripts/bench-python.sh   (as root, after make)
set -eu
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
SECONDS_=${SECONDS_REC:-4}
PY=${PY:-/usr/bin/python3.11}
[ "$(id -u)" = 0 ] || { echo "bench-python: run as root" >&2; exit 1; }
[ -x bpftrace-rec ] || { echo "bench-python: make first" >&2; exit 1; }
source scripts/lib.sh
bpf_stats_begin

# NAME [ENV...]: one recording; prints "bpf_ns_per_sample drain_ns_per_sample samples".
measure() {
	local name=$1 pid
	shift
	"$PY" tests/workloads/pywork.py deep > "$TMP/$name.ready" &
	pid=$!
	for _ in $(seq 100); do grep -q ready "$TMP/$name.ready" && break; sleep 0.05; done
	env "$@" ./bpftrace-rec -F 999 -d "$SECONDS_" -p $pid -o "$TMP/$name" > /dev/null 2>&1
	kill $pid; wait $pid 2> /dev/null || true
	python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
d = s["drain_after_1s"]
print("%.0f %.0f %d" % (s["sampler_run_time_ns"] / max(s["sampler_run_cnt"], 1),
                       d["cpu_ns"] / max(d["samples"], 1), s["samples"]))' "$TMP/$name/summary.json"
}

for r in $(seq "$ROUNDS"); do
	echo "py $(measure py$r)" >> "$TMP/all"
	echo "native $(measure native$r BPFTRACE_REC_NO_FEATURES=python)" >> "$TMP/all"
done
python3 - "$TMP/all" << 'PYEOF'
import statistics, sys
rows = {}
for ln in open(sys.argv[1]):
    k, b, d, n = ln.split()
    rows.setdefault(k, []).append((float(b), float(d), int(n)))
med = {k: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v),
           statistics.median(x[2] for x in v)) for k, v in rows.items()}
for k in ("py", "native"):
    print("%-7s BPF %6.0f ns/sample  drain %6.0f ns/sample  samples %d" % ((k,) + med[k]))
print("Python walk added: %.0f ns of BPF time per sample (%.2fx), %.0f ns of drain CPU per sample"
      % (med["py"][0] - med["native"][0], med["py"][0] / med["native"][0],
         med["py"][1] - med["native"][1]))
PYEOF
