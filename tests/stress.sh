#!/usr/bin/env bash
# The stress pass (make test-stress): the integration suites most sensitive
# to timing run beside two busy loops, so that on 2 cores every recording
# competes for the CPU as it does on a loaded machine (CI's runners, a
# developer's build). A test that holds only on an idle machine fails here.
# STRESS_TESTS chooses the suites (tests/run.sh's TESTS words; "all" runs
# every test, the whole `make test`). Prints tests/run.sh's lines, its last
# "N passed, N failed, N skipped". Issue #34's check, the whole suite passing
# three times in a row beside the two loops, is
#   for i in 1 2 3; do make test-stress STRESS_TESTS=all || break; done
# (~30 min a run on 2 cores); CI runs the default subset below, its time
# budget being spent.
set -u
cd "$(dirname "$0")/.."
# What they time: a recording's start and stop against its signals and the
# target's exit (capture, stop), sample-count floors from a run's own
# duration (capture), windows closing while processes come and go (window),
# one directory's lock between two runs (outdir), the waits that off-CPU
# sums over exits (offcpu), a churn of short-lived processes (churn).
export TESTS=${STRESS_TESTS:-test_capture test_stop test_window test_outdir test_offcpu.sh test_churn}
[ "$TESTS" = all ] && TESTS= # tests/run.sh: no words, every test
busy=()
stop_busy() { ((${#busy[@]})) && kill "${busy[@]}" 2> /dev/null; }
trap stop_busy EXIT
for _ in 1 2; do
	sh -c 'while :; do :; done' &
	busy+=($!)
done
echo "stress: two busy loops (pids ${busy[*]}) beside: ${TESTS:-all tests}"
bash tests/run.sh
