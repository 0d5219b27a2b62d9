#!/usr/bin/env bash
# Continuous mode on a churning host (a benchmark, not a test): a shell
# starts `true` every 10 ms while bpftrace-rec records the whole system with
# --window WINDOW at -F FREQ for DURATION seconds (PUSH=URL adds --push URL);
# its RSS and its CPU time (user + system, from /proc) are printed every
# STEP seconds: RSS flat after the first windows, CPU per STEP as a share of
# one core.
# Usage: bash scripts/bench-continuous.sh [DURATION [STEP [WINDOW [FREQ]]]]
#   default: 1800 s, every 60 s, 60 s windows, 99 Hz (root, after make)
set -eu
cd "$(dirname "$0")/.."
DUR=${1:-1800} STEP=${2:-60} WIN=${3:-60} FREQ=${4:-99}
[ "$(id -u)" = 0 ] || { echo "bench-continuous: run as root" >&2; exit 1; }
[ -x ./bpftrace-rec ] || { echo "bench-continuous: make first" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'kill $churn 2>/dev/null; rm -rf "$TMP"' EXIT
(while :; do /bin/true; sleep 0.01; done) & churn=$!
./bpftrace-rec -q -a -F "$FREQ" --window "$WIN" --retain count=3 -d "$DUR" -o "$TMP/out" \
	${PUSH:+--push "$PUSH"} & rec=$!
tck=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' /proc/$rec/stat 2>/dev/null || echo 0; }
printf '%8s %10s %12s\n' second rss_kib cpu_pct_core
last=$(cpu)
for ((s = STEP; s <= DUR; s += STEP)); do
	sleep "$STEP"
	[ -d /proc/$rec ] || break
	rss=$(awk '/^VmRSS/ {print $2}' /proc/$rec/status 2>/dev/null || echo 0)
	now=$(cpu)
	printf '%8d %10d %12.2f\n' "$s" "$rss" "$(echo "($now - $last) * 100 / $tck / $STEP" | bc -l)"
	last=$now
done
kill $churn 2>/dev/null
wait $rec
echo "windows kept (--retain count=3): $(ls -d "$TMP"/out/window-* | wc -l)"
