#!/usr/bin/env bash
# The V8 walk's cost (a benchmark, not a test): tests/workloads/ndeep.js (one
# thread spinning DEPTH, default 50, JavaScript frames deep, once warm)
# under the machine's node, started with no flag, with the V8 walk and
# without it (BPFTRACE_REC_NO_FEATURES=v8: the native walk alone, which
# steps the same frames by rbp and records no function), paired:
# scripts/lib.sh's walk_bench says what is measured (ROUNDS, default 5,
# SECONDS_REC, default 4). Also prints the JavaScript frames a sample
# carries (summary.json's v8 frames per sample with frames, the last round).
# Target: at most 1 us of BPF time added per sample.
# Usage: bash scripts/bench-node.sh   (as root, after make; node)
set -eu
cd "$(dirname "$0")/.."
DEPTH=${DEPTH:-50}
source scripts/lib.sh
bench_begin bench-node node

start_target() {
	node tests/workloads/ndeep.js "$DEPTH" 600 > /dev/null &
	TARGET_PID=$!
	sleep 4 # warm: Turbofan has compiled the recursion
}
walk_bench v8 v8
python3 -c '
import json, sys
v = json.load(open(sys.argv[1]))["v8"]
print("v8 frames recorded per sample with frames: %.1f" %
      (v["frames_recorded"] / max(v["samples_with_frames"], 1)))' "$TMP/v8${ROUNDS:-5}/summary.json"
