#!/usr/bin/env bash
# The Python walk's cost (a benchmark, not a test): tests/workloads/pywork.py
# deep (one thread spinning 20 Python frames deep, 22 with <module> and the
# leaf) under Debian's python3.11, with the Python walk and without it
# (BPFTRACE_REC_NO_FEATURES=python), paired: scripts/lib.sh's walk_bench
# says what is measured (ROUNDS, default 5, SECONDS_REC, default 4).
# Usage: bash scripts/bench-python.sh   (as root, after make)
set -eu
cd "$(dirname "$0")/.."
PY=${PY:-/usr/bin/python3.11}
source scripts/lib.sh
bench_begin bench-python

start_target() {
	"$PY" tests/workloads/pywork.py deep > "$TMP/ready" &
	TARGET_PID=$!
	for _ in $(seq 100); do grep -q ready "$TMP/ready" && break; sleep 0.05; done
	rm -f "$TMP/ready"
}
walk_bench py python
