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
# bpftrace and bpfcc-tools: make test-deps); `bash scripts/bench-offcpu.sh server`
# for the cost at server scale against libbpf-tools' offcputime, `... python`
# for the Python walk's (below).
set -eu
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
LOOPS=${LOOPS:-100000}
[ "$(id -u)" = 0 ] || { echo "bench-offcpu: run as root" >&2; exit 1; }
[ -x bpftrace-rec ] || { echo "bench-offcpu: make first" >&2; exit 1; }
command -v perf > /dev/null || { echo "bench-offcpu: perf not found (make test-deps)" >&2; exit 1; }
command -v bpftrace > /dev/null || { echo "bench-offcpu: bpftrace not found (make test-deps)" >&2; exit 1; }
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
	echo "bench-offcpu: offcputime-bpfcc not found (make test-deps): measuring without it" >&2
fi
source scripts/lib.sh
bpf_stats_begin

# `bench-offcpu.sh python`: what walking Python frames at each switch costs
# (issue 23). tests/workloads/pywork.py waits (two threads sleeping 6, 3 and
# 1 ms in three Python functions) under pyenv's newest python3.12 (PY to
# choose), recorded with -p --off-cpu for SECS seconds (default 5) with the
# walk and without it (BPFTRACE_REC_NO_FEATURES=python: native frames only),
# alternating, ROUNDS times. For each: the switch program's BPF time per wait
# of the process (its run_time_ns over the waits summary.json counts: the
# program also runs, and returns at once, at every other switch of the
# machine) and the share of the off-CPU time with a Python frame.
if [ "${1:-}" = python ]; then
	SECS=${SECS:-5}
	PY=${PY:-$(ls -d "$(pyenv root 2> /dev/null || echo /root/.pyenv)"/versions/3.12.*/bin/python3.12 | tail -n 1)}
	"$PY" tests/workloads/pywork.py waits > "$TMP/py.out" 2>&1 &
	wpid=$!
	for _ in $(seq 100); do grep -q '^ready' "$TMP/py.out" && break; sleep 0.05; done
	one() { # NAME ENV...: "NAME ns_per_wait waits py_share"
		local name=$1 tool a b
		shift
		env "$@" ./bpftrace-rec -q --off-cpu -F 49 -p $wpid -d "$SECS" -o "$TMP/$name" > /dev/null 2>&1 &
		tool=$!
		for _ in $(seq 300); do a=$(prog_stats on_switch $tool) && [ -n "$a" ] && break; sleep 0.05; done
		b=$a
		while kill -0 $tool 2> /dev/null; do
			c=$(prog_stats on_switch $tool) || true
			[ -n "$c" ] && b=$c
			sleep 0.2
		done
		wait $tool || true
		set -- $a $b
		python3 - "$name" "$5" "$2" "$TMP/$name" "$wpid" <<'PY'
import json, subprocess, sys
name, t1, t0, d, pid = sys.argv[1:]
waits = json.load(open(d + "/summary.json"))["offcpu"]["waits"]
raw = subprocess.run(["tools/pprof", "-raw", d + "/profile.pb.gz"], capture_output=True, text=True).stdout
split = subprocess.run(["python3", "tests/integration/py_traces.py", "offsplit", pid], input=raw,
                       capture_output=True, text=True).stdout.split()
py = [x.split("=")[1] for x in split if x.startswith("py=")]
print(name, (int(t1) - int(t0)) / max(waits, 1), waits, py[0] if py else "?")
PY
	}
	for r in $(seq "$ROUNDS"); do
		one walk
		one native BPFTRACE_REC_NO_FEATURES=python
	done | tee "$TMP/cost" >&2
	kill $wpid
	python3 - "$TMP/cost" "$SECS" "$PY" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) == 4:
        rows.setdefault(f[0], []).append((float(f[1]), int(f[2]), f[3]))
print(f"pywork.py waits under {sys.argv[3]}, -p --off-cpu {sys.argv[2]} s, median of {len(rows['walk'])} alternating rounds:")
for name in ("walk", "native"):
    r = rows[name]
    print(f"  {name:6s} {statistics.median(x[0] for x in r):.0f} ns of on_switch per wait "
          f"({statistics.median(x[1] for x in r):.0f} waits), Python frames in {', '.join(x[2] for x in r)} % of the off-CPU time")
print(f"  the walk adds {statistics.median(x[0] for x in rows['walk']) - statistics.median(x[0] for x in rows['native']):.0f} ns per wait")
PY
	exit 0
fi

# `bench-offcpu.sh server`: the cost of the whole tool at server scale.
# PostgreSQL (initdb'd here, on a loopback port of its own) under pgbench
# with 8 clients; bpftrace-rec --off-cpu -a and libbpf-tools' offcputime
# (system-wide, all stacks kept: --stack-storage-size 65536) each record
# SECS seconds (default 10), alternating, ROUNDS times. For each: CPU per
# second of recording, the process's (user + system, /usr/bin/time) plus
# its switch program's BPF time (kernel.bpf_stats_enabled), and its peak
# RSS. Targets (issue 22): at most 2x offcputime's CPU, RSS under 64 MiB.
if [ "${1:-}" = server ]; then
	SECS=${SECS:-10}
	command -v offcputime > /dev/null || { echo "bench-offcpu: offcputime not found (libbpf-tools: make test-deps)" >&2; exit 1; }
	PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
	port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	pg=$TMP/pg
	mkdir -p "$pg" && chown postgres: "$pg" && chmod 711 "$TMP"
	as_pg() { runuser -u postgres -- "$@"; }
	as_pg "$PGBIN/initdb" -D "$pg/data" -A trust -U postgres > "$pg/initdb.out" 2>&1
	as_pg "$PGBIN/pg_ctl" -D "$pg/data" -l "$pg/log" -w \
		-o "-p $port -k $pg -c listen_addresses=127.0.0.1 -c fsync=off" start > /dev/null
	trap 'as_pg "$PGBIN/pg_ctl" -D "$pg/data" -m immediate stop > /dev/null 2>&1; echo "$BPF_STATS_OLD" > /proc/sys/kernel/bpf_stats_enabled; rm -rf "$TMP"' EXIT
	pgb() { as_pg pgbench -h 127.0.0.1 -p "$port" -U postgres "$@"; }
	pgb -i -s 2 postgres > "$pg/init.out" 2>&1
	pgb -c 8 -j 2 -T $((ROUNDS * (2 * SECS + 12) + 10)) postgres > "$pg/bench.out" 2>&1 &
	sleep 2
	# NAME PROG CMD...: "NAME cpu_s_per_s rss_kib bpf_s user_sys_s".
	cost() {
		local name=$1 prog=$2 pid a= b= c
		shift 2
		/usr/bin/time -f '%U %S %M' -o "$TMP/$name.time" "$@" > /dev/null 2> "$TMP/$name.err" &
		pid=$!
		# The tool's own switch program, among those its process (time's
		# child) holds: other recorders may run on the machine. Its BPF
		# time from the load on (the whole run), as the process's.
		local tool=
		for _ in $(seq 300); do
			tool=${tool:-$(pgrep -P $pid | head -1)}
			[ -n "$tool" ] && a=$(prog_stats "$prog" "$tool") && [ -n "$a" ] && break
			sleep 0.05
		done
		b=$a
		while kill -0 $pid 2> /dev/null; do
			c=$(prog_stats "$prog" "$tool") || true
			[ -n "$c" ] && b=$c
			sleep 0.2
		done
		wait $pid || true
		# No program seen (a run too short to catch it): BPF time 0.
		[ -n "$a" ] && [ -n "$b" ] || a="0 0 0" b="0 0 0"
		set -- $a $b $(cat "$TMP/$name.time")
		echo "$name $(python3 -c "print(($7 + $8 + ($5 - $2) / 1e9) / $SECS)") $9 $(python3 -c "print(($5 - $2) / 1e9)") $(python3 -c "print($7 + $8)")"
	}
	for r in $(seq "$ROUNDS"); do
		cost rec on_switch ./bpftrace-rec -q -a --off-cpu -F 49 -d "$SECS" -o "$TMP/rec"
		python3 -c 'import json,sys; o=json.load(open(sys.argv[1]))["offcpu"]; print("  rec: waits", o["waits"], "lost", o["lost_waits"], "stacks", o["stacks"], "stacks lost", o["lost_stacks"], file=sys.stderr)' "$TMP/rec/summary.json"
		cost offcputime sched_switch offcputime -m 0 --stack-storage-size 65536 "$SECS"
	done | tee "$TMP/cost" >&2
	python3 - "$TMP/cost" "$SECS" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) == 5:
        rows.setdefault(f[0], []).append(tuple(map(float, f[1:])))
print(f"PostgreSQL 15 under pgbench -c 8 -j 2, {sys.argv[2]} s recordings, median of {len(rows['rec'])} alternating rounds:")
for name in ("rec", "offcputime"):
    r = rows[name]
    cpu, rss, bpf, us = (statistics.median(x[i] for x in r) for i in range(4))
    print(f"  {name:10s} CPU {cpu:.3f} s/s (process {us / float(sys.argv[2]):.3f}, BPF {bpf / float(sys.argv[2]):.3f}), peak RSS {rss / 1024:.1f} MiB")
a = statistics.median(x[0] for x in rows["rec"]); b = statistics.median(x[0] for x in rows["offcputime"])
print(f"  CPU ratio bpftrace-rec / offcputime: {a / b:.2f}")
PY
	exit 0
fi


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
