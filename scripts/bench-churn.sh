#!/usr/bin/env bash
# Process churn under -a (a benchmark, not a test): a shell starts `true`
# every 10 ms (cron jobs, health checks) while bpftrace-rec records the whole
# system at -F 999 for DURATION seconds; its RSS and open fds are read from
# /proc every second and printed at the given marks (seconds).
# Usage: bash scripts/bench-churn.sh [DURATION [MARK...]]   (root, after make)
#   default: 600 s, marks 60 300 590 (minutes 1, 5 and 10: the recording
#   ends at 600 s, and the loop, a second plus its reads per turn, drifts:
#   a read at 595 already saw the files being written)
set -eu
cd "$(dirname "$0")/.."
source scripts/lib.sh
DUR=${1:-600}
shift || true
MARKS=("$@")
((${#MARKS[@]})) || MARKS=(60 300 590)
[ "$(id -u)" = 0 ] || { echo "bench-churn: run as root" >&2; exit 1; }
[ -x ./bpftrace-rec ] || { echo "bench-churn: make first" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'kill $CHURN_PID 2>/dev/null; rm -rf "$TMP"' EXIT
churn_start
./bpftrace-rec -q -a -F 999 -d "$DUR" -o "$TMP/out" & rec=$!
peak_fd=0
printf '%8s %10s %6s %8s\n' second rss_kib fds peak_fd
for ((s = 1; s <= DUR; s++)); do
	sleep 1
	[ -d /proc/$rec ] || break
	rss=$(awk '/^VmRSS/ {print $2}' /proc/$rec/status 2>/dev/null || echo 0)
	fds=$(ls /proc/$rec/fd 2>/dev/null | wc -l)
	((fds > peak_fd)) && peak_fd=$fds
	for m in "${MARKS[@]}"; do
		[ "$s" = "$m" ] && printf '%8d %10d %6d %8d\n' "$s" "$rss" "$fds" "$peak_fd"
	done
done
kill $CHURN_PID 2>/dev/null
wait $rec
python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print("processes in summary.json: %d, samples %d, lost %d" % (len(s["processes"]), s["samples"], s["lost_samples"]))' "$TMP/out/summary.json"
