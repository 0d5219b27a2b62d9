#!/usr/bin/env bash
# The HotSpot walk's cost (a benchmark, not a test): tests/workloads/JSplit.java
# stack (one thread spinning DEPTH, default 50, Java frames deep, once warm)
# under the machine's java, with the HotSpot walk and without it
# (BPFTRACE_REC_NO_FEATURES=jvm: the native walk, which stops where compiled
# code keeps no rbp), paired: scripts/lib.sh's walk_bench says what is
# measured (ROUNDS, default 5, SECONDS_REC, default 4; BUILDS, trees to
# compare). One JVM for all the recordings (ONE_TARGET): the stack's
# interpreted frames and the nmethods' code are then the same in each.
# Target: at most 1.5 us of BPF time added per sample.
# Usage: bash scripts/bench-jvm.sh   (as root, after make; java and javac)
#        BUILDS="/path/to/main ." bash scripts/bench-jvm.sh   (two builds, alternated)
set -eu
cd "$(dirname "$0")/.."
DEPTH=${DEPTH:-50}
ONE_TARGET=${ONE_TARGET:-1}
source scripts/lib.sh
bench_begin bench-jvm java javac
javac -d "$TMP" tests/workloads/JSplit.java

start_target() {
	java -cp "$TMP" JSplit 3600 stack "$DEPTH" > /dev/null 2>&1 &
	TARGET_PID=$!
	sleep 4 # warm: C2 has compiled the loop
}
walk_bench jvm jvm
