# Shared by the benchmark scripts (source it after `cd` to the tree).

# bench_begin NAME [COMMAND...]: a benchmark's checks (root, the tree
# built, each COMMAND on PATH), then bpf_stats_begin.
bench_begin() {
	local name=$1 c
	shift
	[ "$(id -u)" = 0 ] || { echo "$name: run as root" >&2; exit 1; }
	[ -x bpftrace-rec ] || { echo "$name: make first" >&2; exit 1; }
	for c in "$@"; do
		command -v "$c" > /dev/null || { echo "$name: no $c (make test-deps)" >&2; exit 1; }
	done
	bpf_stats_begin
}

# bpf_stats_begin: a temporary directory in TMP and kernel.bpf_stats_enabled
# on (programs' run_time_ns and run_cnt), both undone when the script exits.
bpf_stats_begin() {
	TMP=$(mktemp -d)
	BPF_STATS_OLD=$(cat /proc/sys/kernel/bpf_stats_enabled)
	echo 1 > /proc/sys/kernel/bpf_stats_enabled
	trap 'echo "$BPF_STATS_OLD" > /proc/sys/kernel/bpf_stats_enabled; rm -rf "$TMP"; jobs -p | xargs -r kill 2>/dev/null' EXIT
	trap 'exit 130' INT TERM
}

# prog_stats NAME [PID]: "id run_time_ns run_cnt" of the newest program
# called NAME (perf_event: the newest perf_event program, bpftrace's probe),
# among those process PID holds when it is given (its fds' prog_id: other
# recorders may run on the machine).
prog_stats() {
	local ids=
	[ -n "${2:-}" ] && ids=$(cat /proc/"$2"/fdinfo/* 2> /dev/null | awk '$1 == "prog_id:" {print $2}' | sort -u | tr '\n' ' ')
	bpftool prog show -j | python3 -c '
import json, sys
want, ids = sys.argv[1], set(map(int, sys.argv[2].split()))
ps = [p for p in json.load(sys.stdin) if (not ids or p["id"] in ids) and
      (p.get("type") == "perf_event" if want == "perf_event" else p.get("name") == want)]
if ps:
    p = max(ps, key=lambda p: p["id"])
    print(p["id"], p.get("run_time_ns", 0), p.get("run_cnt", 0))' "$1" "$ids"
}

# churn_start: process churn in the background, as a host's cron jobs and
# health checks make it: a shell starts /bin/true every 10 ms. Sets
# CHURN_PID (the shell's: killing it ends the churn).
churn_start() {
	(while :; do /bin/true; sleep 0.01; done) &
	CHURN_PID=$!
}

# pid_bpf_ns PID: the run_time_ns summed over every BPF program process PID
# holds (its fds' prog_id), with kernel.bpf_stats_enabled on: the cost of
# its programs, which runs in the interrupted task's time, not its own.
pid_bpf_ns() {
	local ids
	ids=$(cat /proc/"$1"/fdinfo/* 2> /dev/null | awk '$1 == "prog_id:" {print $2}' | sort -u | tr '\n' ' ')
	bpftool prog show -j | python3 -c '
import json, sys
ids = set(map(int, sys.argv[1].split()))
print(sum(p.get("run_time_ns", 0) for p in json.load(sys.stdin) if p["id"] in ids))' "$ids"
}

# walk_bench LABEL FEATURE: a runtime walk's cost, paired. The caller
# defines start_target, which starts the workload in the background, waits
# until it is warm and sets TARGET_PID. ROUNDS times (default 5), in turn:
# a recording with -p at 999 Hz for SECONDS_REC (default 4) with the walk,
# and one without it (BPFTRACE_REC_NO_FEATURES=FEATURE: the native walk
# alone, which steps JIT frames by rbp), of each tree in BUILDS (default
# ".": its ./bpftrace-rec; several trees alternate, the same way). With
# ONE_TARGET=1 every recording is of one target, started once (the same
# compiled code and stack for all: a JIT's state differs from one process
# to the next); else each of a new one. For each: the sampler's BPF time
# per recorded sample (run_time_ns from summary.json, with bpf_stats_begin;
# tail-called walkers' time is the sampler's) and the drain's CPU per
# sample after the first second (the runtime's names cached by then).
# Prints the medians and the walk's added BPF time per sample, by tree.
#
# Per recorded sample, not per run: -p's perf events are per CPU, and
# run_cnt counts every CPU's samples, the other processes' and the idle
# ones too, which the sampler leaves at once. Divided by run_cnt, the
# walk's cost was scaled by the target's share of the CPUs' samples (half
# on an idle host of 2 CPUs, less under load), which moved the same build
# by 2x between runs. What is left of theirs in the figure (240-300 ns
# each at load 10, measured on a sleeping target; (1 - share) / share of
# them a sample) is alike in both walks, paired, and cancels in the added
# time; the share is printed.
walk_bench() {
	local label=$1 feature=$2 r b k n=0
	[ "${ONE_TARGET:-}" = 1 ] && start_target
	for r in $(seq "${ROUNDS:-5}"); do
		for b in ${BUILDS:-.}; do
			n=$((n + 1))
			k=$([ "${BUILDS:-.}" = . ] && echo "" || echo "@$b")
			echo "$label$k $(walk_measure "$b" "$label$n")" >> "$TMP/all"
			echo "native$k $(walk_measure "$b" "native$n" BPFTRACE_REC_NO_FEATURES="$feature")" >> "$TMP/all"
		done
	done
	[ "${ONE_TARGET:-}" = 1 ] && walk_target_stop
	python3 - "$TMP/all" "$label" ${BUILDS:-.} << 'PYEOF'
import statistics, sys
rows, label, builds = {}, sys.argv[2], sys.argv[3:]
for ln in open(sys.argv[1]):
    k, b, d, n, sh = ln.split()
    rows.setdefault(k, []).append((float(b), float(d), int(n), float(sh)))
med = {k: tuple(statistics.median(x[i] for x in v) for i in range(4)) for k, v in rows.items()}
for t in builds:
    k = "" if builds == ["."] else "@" + t
    if k:
        print(t)
    for m in (label, "native"):
        print("%-7s BPF %6.0f ns/sample  drain %6.0f ns/sample  samples %d  share %.2f"
              % ((m,) + med[m + k]))
    a, nat = med[label + k], med["native" + k]
    print("%s walk added: %.0f ns of BPF time per sample (%.2fx), %.0f ns of drain CPU per sample"
          % (label, a[0] - nat[0], a[0] / nat[0], a[1] - nat[1]))
PYEOF
}

# walk_target_stop: the end of start_target's workload.
walk_target_stop() {
	kill "$TARGET_PID" 2> /dev/null || true
	wait "$TARGET_PID" 2> /dev/null || true
}

# walk_measure TREE NAME [ENV...]: one recording by TREE's bpftrace-rec (of
# a new target, from start_target, unless ONE_TARGET=1); prints
# "bpf_ns_per_sample drain_ns_per_sample samples share" (share: the
# target's samples of all the sampler's runs).
walk_measure() {
	local tree=$1 name=$2
	shift 2
	[ "${ONE_TARGET:-}" = 1 ] || start_target
	env "$@" "$tree/bpftrace-rec" -F 999 -d "${SECONDS_REC:-4}" -p "$TARGET_PID" -o "$TMP/$name" > /dev/null 2>&1
	[ "${ONE_TARGET:-}" = 1 ] || walk_target_stop
	python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
d = s["drain_after_1s"]
n = max(s["samples"] + s.get("lost_samples", 0), 1)
print("%.0f %.0f %d %.2f" % (s["sampler_run_time_ns"] / n, d["cpu_ns"] / max(d["samples"], 1),
                             s["samples"], n / max(s["sampler_run_cnt"], 1)))' "$TMP/$name/summary.json"
}
