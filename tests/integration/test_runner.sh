#!/usr/bin/env bash
# tests/run.sh itself: TESTS=pattern that names no test is a mistake (a
# typo, "a|b" taken for a regular expression), not a green run of nothing.
# Run on an empty build directory, so that the real one's fault table and
# test times are left alone.
source "$(dirname "$0")/lib.sh"

t=runner_no_match_fails
TESTS='no_such_test|test_docs' BPFTRACE_REC_BUILD=$TMP/build bash "$ROOT/tests/run.sh" > "$TMP/out" 2>&1
st=$?
if [ $st != 0 ] && grep -q "matches no test" "$TMP/out"; then
	pass $t
else
	fail $t "status $st: $(tail -2 "$TMP/out" | tr '\n' ' ')"
fi
