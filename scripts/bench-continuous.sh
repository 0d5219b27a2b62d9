#!/usr/bin/env bash
# Soak (a benchmark, not a test; issue 25): bpftrace-rec -a in continuous
# mode (--window WINDOW seconds, default 10) at FREQ Hz (default 99),
# pushing every window to the test OpenTelemetry Collector (tests/fleet,
# built by its build.sh, on a loopback port of its own), on a churning host
# (scripts/lib.sh's churn_start, as bench-churn.sh), for MINUTES minutes
# (default 30), then SIGTERM (which closes and sends the last window).
#
# Each minute: the recorder's RSS; its CPU over that minute (user + system
# of all its threads) and its BPF programs' run time (kernel.bpf_stats_enabled:
# they run in the interrupted tasks' time, not the recorder's), each as % of
# one core; the Collector's batches so far; the anonymous part of the RSS
# (RssAnon: the heap, against files and the ring buffer mapped). Then the
# targets, each "met" or "NOT met" (exit status 1 if one is not):
#   - RSS flat: every minute from minute 2 on within 10% of minute 2's;
#   - RSS under 64 MiB throughout;
#   - CPU, its own and its BPF programs', at most 1% of one core (the mean
#     from minute 2 on; the first minute loads BTF and the tables).
# Usage: bash scripts/bench-continuous.sh [MINUTES]   (root, after make)
#   PLAIN=1: a plain `-a` run instead (one profile, pushed at the end), for a
#   build without --window: it measures the same.
set -eu
cd "$(dirname "$0")/.."
source scripts/lib.sh
source tests/integration/fleet_lib.sh # collector_start
MINUTES=${1:-30}
WINDOW=${WINDOW:-10}
FREQ=${FREQ:-99}
[ "$(id -u)" = 0 ] || { echo "bench-continuous: run as root" >&2; exit 1; }
[ -x ./bpftrace-rec ] || { echo "bench-continuous: make first" >&2; exit 1; }
MODE=(--window "$WINDOW")
if [ -n "${PLAIN:-}" ]; then
	MODE=()
elif ! ./bpftrace-rec --help 2>&1 | grep -q -- --window; then
	echo "bench-continuous: this bpftrace-rec has no --window (continuous mode); PLAIN=1 measures a plain -a run" >&2
	exit 1
fi
OTELCOL=$(bash tests/fleet/build.sh)
bpf_stats_begin # TMP, and bpf_stats_enabled undone at the exit
REC= CHURN_PID= COL_PID=
trap 'echo "$BPF_STATS_OLD" > /proc/sys/kernel/bpf_stats_enabled; kill $REC $CHURN_PID $COL_PID 2>/dev/null; rm -rf "$TMP"' EXIT
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
collector_start "$PORT" "$TMP/got"
churn_start
./bpftrace-rec -q -a -F "$FREQ" ${MODE[@]+"${MODE[@]}"} -o "$TMP/out" \
	--push "otlp=http://127.0.0.1:$PORT" --service-name soak > "$TMP/rec.log" 2>&1 &
REC=$!
HZ=$(getconf CLK_TCK)
cpu_ticks() { awk '{ sub(/.*\) /, ""); print $12 + $13 }' /proc/"$1"/stat; } # utime + stime
echo "bench-continuous: -a -F $FREQ ${MODE[*]:-(plain)} for $MINUTES min, pushing to 127.0.0.1:$PORT (pid $REC)"
printf '%6s %10s %8s %8s %8s %10s\n' minute rss_kib cpu_pct bpf_pct batches anon_kib | tee "$TMP/minutes"
t0=$(date +%s%N)
last_cpu=$(cpu_ticks $REC)
last_bpf=$(pid_bpf_ns $REC)
last_t=$t0
for ((m = 1; m <= MINUTES; m++)); do
	sleep $(((t0 + m * 60000000000 - $(date +%s%N)) / 1000000000)) 2> /dev/null || true
	[ -d /proc/$REC ] || { echo "bench-continuous: bpftrace-rec ended early:" >&2; cat "$TMP/rec.log" >&2; exit 1; }
	now=$(date +%s%N)
	cpu=$(cpu_ticks $REC)
	bpf=$(pid_bpf_ns $REC)
	rss=$(awk '/^VmRSS/ {print $2}' /proc/$REC/status)
	anon=$(awk '/^RssAnon/ {print $2}' /proc/$REC/status) # the heap's part of rss
	batches=$(ls "$TMP/got" | grep -c 'summary.json$' || true)
	awk -v m=$m -v rss="$rss" -v dc=$((cpu - last_cpu)) -v db=$((bpf - last_bpf)) -v hz="$HZ" \
		-v dt=$((now - last_t)) -v b="$batches" -v anon="$anon" \
		'BEGIN { printf "%6d %10d %8.3f %8.3f %8d %10d\n", m, rss, 100 * dc / hz / (dt / 1e9), 100 * db / dt, b, anon }' |
		tee -a "$TMP/minutes"
	last_cpu=$cpu last_bpf=$bpf last_t=$now
done
kill -TERM $REC
wait $REC || echo "bench-continuous: bpftrace-rec exited with status $?: $(head -c 500 "$TMP/rec.log")" >&2
REC=
kill $CHURN_PID 2>/dev/null
echo "the Collector got $(ls "$TMP/got" | grep -c 'summary.json$' || true) batches"
python3 - "$TMP/minutes" <<'PY'
import sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1]).readlines()[1:]]
after = [r for r in rows if r[0] >= 2]
ok = True
def target(met, what):
    global ok
    ok &= met
    print("%s: %s" % ("met" if met else "NOT met", what))
if after:
    base = after[0][1]
    dev = max([(r[1] - base) / base for r in after], key=abs)
    target(abs(dev) <= 0.10, "RSS within 10%% of minute 2's (%d KiB) from minute 2 on: at most %+.1f%%"
           % (base, 100 * dev))
    cpu = sum(r[2] for r in after) / len(after)
    bpf = sum(r[3] for r in after) / len(after)
    target(cpu + bpf <= 1.0, "CPU from minute 2 on: %.3f%% of one core (its own %.3f%%, BPF %.3f%%), at most 1%%"
           % (cpu + bpf, cpu, bpf))
peak = max(r[1] for r in rows)
target(peak < 64 * 1024, "RSS at most %d KiB, under 64 MiB" % peak)
sys.exit(0 if ok else 1)
PY
