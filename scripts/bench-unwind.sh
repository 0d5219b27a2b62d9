#!/usr/bin/env bash
# The unwinding modes, paired on the same workloads in alternating rounds (a
# benchmark, not a test): for each, the sampler's BPF cost per sample
# (run_time_ns / run_cnt of on_sample with kernel.bpf_stats_enabled; the CFI
# walker's tail calls run inside it), the record bytes per sample and the
# recorder's own CPU per sample (utime + stime over the run), and the share of
# samples whose stack reaches the thread's root.
#   - deep: deep DEEP_N 256 on both CPUs (frame pointers everywhere: the
#     frame-pointer walk is whole there, the fair peer of the CFI walk),
#     against bpftrace's ustack probe;
#   - gzip: Debian's gzip (no frame pointers: only cfi and dwarf are whole).
# Prints medians of RUNS rounds (default 3) with their range; the modes of a
# round run back to back, as the host's speed drifts over minutes.
# Also per mode: samples lost (the ring buffer full; all CPUs at 999 Hz) and,
# for cfi, the share of walks sent the DWARF way (a process or library whose
# table was not loaded yet: 16 KB records).
#   - churn: a shell running short processes (ls, sort, true: new processes
#     of binaries whose tables are already built, the case of a build).
# SCOPE=cmd (the default) records the workload alone, as `-- sh -c WORKLOAD`
# (deep and gzip: two processes, one per CPU, so that nearly every sample is
# the workload's; processes they fork are recorded too): the BPF cost is then
# that of the workload's own samples, and the other processes of a loaded
# machine (their first samples sent the DWARF way) stay out of it. Its BPF
# figures are the sampler's run_time_ns / run_cnt over the whole recording
# (summary.json, read at the stop; run_cnt counts too the early returns of
# other processes' samples). SCOPE=all records the whole system (-a), as
# before, with the BPF window around the workload.
# Record bytes: mean and median per sample (summary.json); user CPU: the drain
# thread's CPU per sample (summary.json's drain_cpu_ns, from the first poll
# to the stop: no set-up, no writing), the same from 1 s into the recording
# (drain_after_1s: after the first sights' kallsyms, symbols and maps), and
# the CFI worker's total (table builds and map loads, per binary and per
# process).
# Usage: bash scripts/bench-unwind.sh   (as root, after make and make workloads)
#   RUNS=N, MODES="cfi fp dwarf bpftrace", KINDS="deep gzip churn" pick a subset;
#   a mode MODE@PATH runs the recorder at PATH (another build, paired with
#   this one in the same rounds: MODES="cfi cfi@/work/main/bpftrace-rec fp").
#   DEEP_S: seconds of each deep process (default 4); DEEP_N: its depth
#   (default 60; 20 and 600 for issue 21's shallow and deep figures).
set -eu
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
MODES=${MODES:-cfi fp dwarf bpftrace}
REC=${REC:-./bpftrace-rec} # another build, to compare
KINDS=${KINDS:-deep gzip churn}
SCOPE=${SCOPE:-cmd}
DEEP_S=${DEEP_S:-4}
DEEP_N=${DEEP_N:-60} # deep's recursion: frames of level() per stack
case $SCOPE in cmd | all) ;; *) echo "bench-unwind: SCOPE is cmd or all" >&2; exit 1 ;; esac
DEEP=build/workloads/deep
PPROF=${PPROF:-tools/pprof}
[ "$(id -u)" = 0 ] || { echo "bench-unwind: run as root" >&2; exit 1; }
[ -x "$REC" ] && [ -x $DEEP ] || { echo "bench-unwind: make && make workloads first" >&2; exit 1; }
command -v bpftrace > /dev/null || { echo "bench-unwind: bpftrace not found (make test-deps)" >&2; exit 1; }
source scripts/lib.sh
bpf_stats_begin
head -c 48000000 /dev/urandom > "$TMP/rnd"

# The workload as a shell command (under SCOPE=cmd, the one recorded); deep
# and gzip on both CPUs (under SCOPE=all gzip once, as before).
workload_cmd() { # KIND
	case $1 in
	deep) echo "$DEEP $DEEP_N 256 $DEEP_S > /dev/null & $DEEP $DEEP_N 256 $DEEP_S > /dev/null; wait" ;;
	gzip)
		if [ "$SCOPE" = cmd ]; then
			echo "gzip -c $TMP/rnd > /dev/null & gzip -c $TMP/rnd > /dev/null; wait"
		else
			echo "gzip -c $TMP/rnd > /dev/null"
		fi
		;;
	churn) echo 'for _ in $(seq 150); do ls -l /usr/bin > /dev/null; sort /etc/services > /dev/null; true; done' ;;
	esac
}
workload() { sh -c "$(workload_cmd "$1")"; }

declare -A vals
add() { vals[$1]+="$2 "; }

# MODE KIND: the recorder (or bpftrace) for one run of the workload.
measure() {
	local label=$1 kind=$2 pid a b i comm mode=${1%%@*} rec=$REC out prog
	comm=$(case $kind in deep) echo deep ;; gzip) echo gzip ;; *) echo ls ;; esac)
	[ "$label" != "$mode" ] && rec=${label#*@}
	out=$TMP/$(echo "$label" | tr / _)
	prog=$([ "$mode" = bpftrace ] && echo perf_event || echo on_sample)
	if [ "$mode" != bpftrace ] && [ "$SCOPE" = cmd ]; then
		"$rec" -q -F 999 --call-graph "$mode" -o "$out" -- sh -c "$(workload_cmd "$kind")"
	else
		if [ "$mode" = bpftrace ]; then
			# SCOPE=cmd: ustack only for the workload's samples.
			bpftrace -e "profile:hz:999 $([ "$SCOPE" = cmd ] && echo "/comm == \"$comm\"/") { @[kstack, ustack] = count(); }" \
				> /dev/null 2>&1 &
		else
			"$rec" -q -a -F 999 --call-graph "$mode" -o "$out" &
		fi
		pid=$!
		for i in $(seq 100); do
			a=$(prog_stats $prog $pid)
			[ -n "$a" ] && break
			sleep 0.1
		done
		sleep 0.5
		a=$(prog_stats $prog $pid)
		workload "$kind"
		b=$(prog_stats $prog $pid)
		kill -INT "$pid"
		wait "$pid" 2> /dev/null || true
		add "$label $kind bpf_ns" "$(python3 -c 'import sys; a, b = sys.argv[1].split(), sys.argv[2].split()
n = int(b[2]) - int(a[2]); print((int(b[1]) - int(a[1])) // n if n > 0 and a[0] == b[0] else "-")' "$a" "$b")"
		[ "$mode" = bpftrace ] && return
	fi
	# Per sample of the whole recording: ring-buffer bytes (mean, median),
	# the drain's CPU; the CFI worker's CPU (ms, in total); the workload's
	# samples reaching the root.
	python3 - "$out/summary.json" > "$TMP/per" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
n = max(s["samples"], 1)
c = s.get("cfi_walk") or {}
dw = "%.2f" % (100 * c["to_dwarf"] / c["walks"]) if c.get("walks") else "-"
bpf = s["sampler_run_time_ns"] // s["sampler_run_cnt"] if s.get("sampler_run_cnt") else "-"
st = s["drain_after_1s"]
print(s["sample_bytes"] // n, s["sample_bytes_median"], s["drain_cpu_ns"] // n,
      st["cpu_ns"] // st["samples"] if st["samples"] else "-",
      "%.1f" % (c.get("worker_cpu_ns", 0) / 1e6) if c else "-", s["lost_samples"], dw, bpf)
EOF
	read -r bytes median cpu steady wcpu lost dw bpf < "$TMP/per"
	[ "$SCOPE" = cmd ] && add "$label $kind bpf_ns" "$bpf"
	add "$label $kind bytes" "$bytes"
	add "$label $kind median" "$median"
	add "$label $kind cpu_ns" "$cpu"
	add "$label $kind steady_ns" "$steady"
	add "$label $kind worker_ms" "$wcpu"
	add "$label $kind lost" "$lost"
	add "$label $kind dwarf_pct" "$dw"
	add "$label $kind root" "$("$PPROF" -top -cum -nodecount=300 -relative_percentages -tagfocus=comm=$comm \
		"$out/profile.pb.gz" 2>/dev/null |
		awk '$NF == "__libc_start_call_main" || $NF == "start_thread" { sub("%", "", $5); s += $5 } END { print s + 0 }')"
}

for _ in $(seq "$RUNS"); do
	for kind in $KINDS; do
		for mode in $MODES; do
			[ $mode = bpftrace ] && [ $kind != deep ] && continue
			measure "$mode" $kind
		done
	done
done
med() { printf '%s\n' $1 | sort -n | awk '{v[NR] = $1} END {printf "%s (%s-%s)", v[int((NR + 1) / 2)], v[1], v[NR]}'; }
echo "SCOPE=$SCOPE RUNS=$RUNS at $(git rev-parse --short HEAD 2> /dev/null || echo '?'), load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-6s %-12s %-22s %-22s %-18s %-22s %-22s %-18s %-18s %-10s %s\n' workload mode "BPF ns/sample" \
	"bytes/sample (mean)" "bytes (median)" "drain CPU ns/sample" "... after 1 s" "worker CPU ms" \
	"% reaching root" lost "% walks to DWARF"
for kind in $KINDS; do
	for mode in $MODES; do
		[ -n "${vals[$mode $kind bpf_ns]:-}" ] || continue
		printf '%-6s %-12s %-22s %-22s %-18s %-22s %-22s %-18s %-18s %-10s %s\n' $kind $mode \
			"$(med "${vals[$mode $kind bpf_ns]}")" "$(med "${vals[$mode $kind bytes]:--}")" \
			"$(med "${vals[$mode $kind median]:--}")" "$(med "${vals[$mode $kind cpu_ns]:--}")" \
			"$(med "${vals[$mode $kind steady_ns]:--}")" \
			"$(med "${vals[$mode $kind worker_ms]:--}")" "$(med "${vals[$mode $kind root]:--}")" \
			"$(med "${vals[$mode $kind lost]:--}")" "$(med "${vals[$mode $kind dwarf_pct]:--}")"
	done
done
# Paired: the median of each round's ratio of BPF ns/sample, the first mode
# over each other (the same round, back to back: the drift of the host's
# speed cancels).
set -- $MODES
first=$1
shift
for kind in $KINDS; do
	for mode in "$@"; do
		[ -n "${vals[$first $kind bpf_ns]:-}" ] && [ -n "${vals[$mode $kind bpf_ns]:-}" ] || continue
		printf '%s %s / %s, BPF ns/sample per round: %s\n' $kind $first $mode "$(python3 -c 'import sys
a, b = sys.argv[1].split(), sys.argv[2].split()
r = sorted(float(x) / float(y) for x, y in zip(a, b) if x != "-" and y != "-")
print("median %.2f (%.2f-%.2f) of %d" % (r[(len(r) - 1) // 2], r[0], r[-1], len(r)) if r else "-")' \
			"${vals[$first $kind bpf_ns]}" "${vals[$mode $kind bpf_ns]}")"
	done
done
