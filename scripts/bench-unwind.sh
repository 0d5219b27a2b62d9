#!/usr/bin/env bash
# The unwinding modes, paired on the same workloads in alternating rounds (a
# benchmark, not a test): for each, the sampler's BPF cost per sample
# (run_time_ns / run_cnt of on_sample with kernel.bpf_stats_enabled; the CFI
# walker's tail calls run inside it), the record bytes per sample and the
# recorder's own CPU per sample (utime + stime over the run), and the share of
# samples whose stack reaches the thread's root.
#   - deep: deep 60 256 on both CPUs (frame pointers everywhere: the
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
# Usage: bash scripts/bench-unwind.sh   (as root, after make and make workloads)
#   RUNS=N, MODES="cfi fp dwarf bpftrace", KINDS="deep gzip churn" pick a subset;
#   a mode MODE@PATH runs the recorder at PATH (another build, paired with
#   this one in the same rounds: MODES="cfi cfi@/work/main/bpftrace-rec fp").
set -eu
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
MODES=${MODES:-cfi fp dwarf bpftrace}
REC=${REC:-./bpftrace-rec} # another build, to compare
KINDS=${KINDS:-deep gzip churn}
DEEP=build/workloads/deep
PPROF=${PPROF:-tools/pprof}
[ "$(id -u)" = 0 ] || { echo "bench-unwind: run as root" >&2; exit 1; }
[ -x "$REC" ] && [ -x $DEEP ] || { echo "bench-unwind: make && make workloads first" >&2; exit 1; }
command -v bpftrace > /dev/null || { echo "bench-unwind: bpftrace not found (make deps)" >&2; exit 1; }
source scripts/lib.sh
bpf_stats_begin
head -c 48000000 /dev/urandom > "$TMP/rnd"


workload() { # KIND
	case $1 in
	deep)
		$DEEP 60 256 2 > /dev/null &
		$DEEP 60 256 2 > /dev/null
		wait $!
		;;
	gzip) gzip -c "$TMP/rnd" > /dev/null ;;
	churn)
		for _ in $(seq 150); do
			ls -l /usr/bin > /dev/null
			sort /etc/services > /dev/null
			true
		done
		;;
	esac
}

declare -A vals
add() { vals[$1]+="$2 "; }

# MODE KIND: the recorder under -a for one run of the workload.
measure() {
	local label=$1 kind=$2 pid a b i t0 t1 cpu comm mode=${1%%@*} rec=$REC out
	comm=$(case $kind in deep) echo deep ;; gzip) echo gzip ;; *) echo ls ;; esac)
	[ "$label" != "$mode" ] && rec=${label#*@}
	out=$TMP/$(echo "$label" | tr / _)
	if [ "$mode" = bpftrace ]; then
		bpftrace -e 'profile:hz:999 { @[kstack, ustack] = count(); }' > /dev/null 2>&1 &
		pid=$!
	else
		"$rec" -q -a -F 999 --call-graph "$mode" -o "$out" &
		pid=$!
	fi
	for i in $(seq 100); do
		a=$(prog_stats "$([ "$mode" = bpftrace ] && echo perf_event || echo on_sample)" $pid)
		[ -n "$a" ] && break
		sleep 0.1
	done
	sleep 0.5
	a=$(prog_stats "$([ "$mode" = bpftrace ] && echo perf_event || echo on_sample)" $pid)
	t0=$(awk '{print $14 + $15}' /proc/$pid/stat)
	workload "$kind"
	t1=$(awk '{print $14 + $15}' /proc/$pid/stat)
	b=$(prog_stats "$([ "$mode" = bpftrace ] && echo perf_event || echo on_sample)" $pid)
	kill -INT "$pid"
	wait "$pid" 2> /dev/null || true
	add "$label $kind bpf_ns" "$(python3 -c 'import sys; a, b = sys.argv[1].split(), sys.argv[2].split()
n = int(b[2]) - int(a[2]); print((int(b[1]) - int(a[1])) // n if n > 0 and a[0] == b[0] else "-")' "$a" "$b")"
	[ "$mode" = bpftrace ] && return
	# Per sample of the whole run: bytes of ring buffer, the recorder's CPU
	# while the workload ran (clock ticks of 10 ms, over its samples), and
	# the workload's samples reaching the root.
	python3 - "$out/summary.json" "$((t1 - t0))" > "$TMP/per" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
n = max(s["samples"], 1)
c = s.get("cfi_walk") or {}
dw = "%.2f" % (100 * c["to_dwarf"] / c["walks"]) if c.get("walks") else "-"
print(s["sample_bytes"] // n, int(int(sys.argv[2]) * 10_000_000 / n), s["lost_samples"], dw)
EOF
	read -r bytes cpu lost dw < "$TMP/per"
	add "$label $kind bytes" "$bytes"
	add "$label $kind cpu_ns" "$cpu"
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
printf '%-6s %-12s %-22s %-22s %-22s %-18s %-10s %s\n' workload mode "BPF ns/sample" "bytes/sample (mean)" \
	"user CPU ns/sample" "% reaching root" lost "% walks to DWARF"
for kind in $KINDS; do
	for mode in $MODES; do
		[ -n "${vals[$mode $kind bpf_ns]:-}" ] || continue
		printf '%-6s %-12s %-22s %-22s %-22s %-18s %-10s %s\n' $kind $mode "$(med "${vals[$mode $kind bpf_ns]}")" \
			"$(med "${vals[$mode $kind bytes]:--}")" "$(med "${vals[$mode $kind cpu_ns]:--}")" \
			"$(med "${vals[$mode $kind root]:--}")" "$(med "${vals[$mode $kind lost]:--}")" \
			"$(med "${vals[$mode $kind dwarf_pct]:--}")"
	done
done
