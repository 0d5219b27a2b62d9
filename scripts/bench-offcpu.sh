#!/usr/bin/env bash
# --off-cpu's cost (a benchmark, not a test): `perf bench sched pipe` (two
# threads handing a byte back and forth: a context switch per hand-over)
# alone, under bpftrace-rec --off-cpu -a, under bpftrace running what
# offcputime does (scripts/offcputime.bt: both stacks at the switch-out, the
# time at the switch-in, @[kstack, ustack, comm] = sum; Debian ships no
# offcputime.bt) and under bcc's offcputime-bpfcc where it can run, in the
# same run, alternating, ROUNDS times (default 5). For each: the
# benchmark's time (its slowdown against alone: ratio of medians) and the
# switch program's BPF time per run (kernel.bpf_stats_enabled):
# bpftrace-rec's on_switch, bpftrace's sched_switch, offcputime's oncpu.
# All system-wide, so that each sees every switch; plus bpftrace-rec
# recording the benchmark alone (-- CMD, with the per-wait events of the
# XRay timelines). Prints medians, ratios and what was lost.
# Usage: bash scripts/bench-offcpu.sh   (as root, after make; needs linux-perf,
# bpftrace and bpfcc-tools: make deps)
set -eu
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
LOOPS=${LOOPS:-100000}
[ "$(id -u)" = 0 ] || { echo "bench-offcpu: run as root" >&2; exit 1; }
[ -x bpftrace-rec ] || { echo "bench-offcpu: make first" >&2; exit 1; }
command -v perf > /dev/null || { echo "bench-offcpu: perf not found (make deps)" >&2; exit 1; }
command -v bpftrace > /dev/null || { echo "bench-offcpu: bpftrace not found (make deps)" >&2; exit 1; }
# bpftrace's tracepoints need tracefs (not mounted on some machines).
if [ ! -e /sys/kernel/tracing/events/sched/sched_switch ]; then
	mount -t tracefs nodev /sys/kernel/tracing ||
		{ echo "bench-offcpu: cannot mount tracefs for bpftrace" >&2; exit 1; }
fi
OFFCPUTIME=$(command -v offcputime-bpfcc || true)
# bcc compiles its C at run time against the running kernel's headers: a
# kernel without them (no /lib/modules/RELEASE/build, no CONFIG_IKHEADERS)
# cannot run offcputime; its error is printed and the figures are the
# others'.
BCC=
if [ -n "$OFFCPUTIME" ]; then
	if timeout 60 "$OFFCPUTIME" 1 > /dev/null 2> /tmp/bench-offcpu-bcc.err; then
		BCC=1
	else
		echo "bench-offcpu: offcputime-bpfcc cannot run here: $(grep -m1 -E 'modules|headers|rror' /tmp/bench-offcpu-bcc.err)" >&2
	fi
	rm -f /tmp/bench-offcpu-bcc.err
else
	echo "bench-offcpu: offcputime-bpfcc not found (make deps): measuring without it" >&2
fi
source scripts/lib.sh
bpf_stats_begin


bench() { # the benchmark's time in seconds
	perf bench sched pipe -l "$LOOPS" 2>&1 | awk '/Total time/ { print $3 }'
}

# NAME PROG TOOL...: starts the tool, waits for its program, runs the
# benchmark; prints "NAME seconds ns_per_run runs".
measure() {
	local name=$1 prog=$2 pid a b i secs
	shift 2
	"$@" > "$TMP/$name.out" 2> "$TMP/$name.err" &
	pid=$!
	for i in $(seq 300); do
		a=$(prog_stats "$prog")
		[ -n "$a" ] && break
		sleep 0.1
	done
	[ -n "$a" ] || { echo "bench-offcpu: $name: no $prog program" >&2; cat "$TMP/$name.err" >&2; exit 1; }
	sleep 0.5
	a=$(prog_stats "$prog")
	secs=$(bench)
	b=$(prog_stats "$prog")
	kill -INT $pid 2>/dev/null || true
	wait $pid || true
	set -- $a $b
	echo "$name $secs $((($5 - $2) / ($6 - $3 ? $6 - $3 : 1))) $(($6 - $3))"
}

# bpftrace-rec recording the benchmark itself (-- CMD): the slowdown only
# (its program is gone when the run ends).
measure_cmd() {
	./bpftrace-rec -q --off-cpu -F 99 -o "$TMP/cmd" -- perf bench sched pipe -l "$LOOPS" > "$TMP/cmd.out" 2> "$TMP/cmd.err"
	lost "$TMP/cmd"
	echo "rec-cmd $(awk '/Total time/ { print $3 }' "$TMP/cmd.out") 0 0"
}

lost() { # OUTDIR: bpftrace-rec's losses, to $TMP/lost
	python3 -c 'import json,sys; o=json.load(open(sys.argv[1]))["offcpu"]; print(sys.argv[2], "lost waits", o["lost_waits"], "lost stacks", o["lost_stacks"], "of", o["waits"], "waits", o["stacks"], "stacks")' "$1/summary.json" "$(basename "$1")" >> "$TMP/lost"
}

for r in $(seq "$ROUNDS"); do
	echo "alone $(bench) 0 0"
	measure rec-a on_switch ./bpftrace-rec -q -a --off-cpu -F 99 -o "$TMP/a"
	lost "$TMP/a"
	measure bpftrace sched_switch bpftrace scripts/offcputime.bt
	[ -z "$BCC" ] || measure bcc oncpu "$OFFCPUTIME" -f 120
	measure_cmd
done | tee "$TMP/all" >&2

echo "bpftrace-rec runs (a: -a, cmd: -- CMD):" >&2
cat "$TMP/lost" >&2
python3 - "$TMP/all" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    name, secs, ns, runs = line.split()
    rows.setdefault(name, []).append((float(secs), int(ns), int(runs)))
base = statistics.median(s for s, _, _ in rows["alone"])
print(f"perf bench sched pipe, median of {len(rows['alone'])} alternating rounds:")
for name in ("alone", "rec-a", "bpftrace", "bcc", "rec-cmd"):
    r = rows.get(name)
    if not r:
        continue
    secs = statistics.median(s for s, _, _ in r)
    ns = statistics.median(n for _, n, _ in r)
    runs = statistics.median(n for _, _, n in r)
    print(f"  {name:8s} {secs:7.3f} s  x{secs / base:5.2f}" +
          (f"  {ns:6.0f} ns per switch ({runs:.0f} switches)" if ns else ""))
PY
