#!/usr/bin/env bash
# bpftrace-rec's own BPF programs, timed while they record (a benchmark, not a
# test): run_time_ns / run_cnt (kernel.bpf_stats_enabled) over a workload's
# run, for the settings whose cost was chosen by measurement:
#   - the ring buffer's size (on_sample, fp and dwarf, spin on both CPUs);
#   - deep frame-pointer chains (two `deep 60 256` on both CPUs), against
#     bpftrace's kstack/ustack probe on the same workload;
#   - the exec and exit handlers, over 300 runs of /bin/true under -a.
# Prints the median of RUNS rounds (default 3) and the range, in ns per run.
# Usage: bash scripts/bench-bpf.sh   (as root, after make and make workloads)
set -eu
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
SPIN=build/workloads/spin
DEEP=build/workloads/deep
[ "$(id -u)" = 0 ] || { echo "bench-bpf: run as root" >&2; exit 1; }
[ -x bpftrace-rec ] && [ -x $SPIN ] && [ -x $DEEP ] || { echo "bench-bpf: make && make workloads first" >&2; exit 1; }
command -v bpftrace > /dev/null || { echo "bench-bpf: bpftrace not found (make test-deps)" >&2; exit 1; }
source scripts/lib.sh
bpf_stats_begin


workload() { # KIND
	case $1 in
	spin) $SPIN 300000000 > /dev/null ;;
	deep)
		$DEEP 60 256 2 > /dev/null &
		$DEEP 60 256 2 > /dev/null
		wait $! # not the tool, also a job of this shell
		;;
	exec) for _ in $(seq 300); do /bin/true; done ;;
	esac
}

# NAME PROG KIND TOOL...: starts the tool, waits for its program, times PROG
# over one run of the workload.
measure() {
	local name=$1 prog=$2 kind=$3 pid a b i
	shift 3
	"$@" > /dev/null 2>&1 &
	pid=$!
	for i in $(seq 100); do
		a=$(prog_stats "$prog")
		[ -n "$a" ] && break
		sleep 0.1
	done
	sleep 0.5
	a=$(prog_stats "$prog")
	workload "$kind"
	b=$(prog_stats "$prog")
	kill -TERM "$pid"
	wait "$pid" 2> /dev/null || true
	vals[$name]+="$(python3 -c 'import sys; a, b = sys.argv[1].split(), sys.argv[2].split()
n = int(b[2]) - int(a[2]); print((int(b[1]) - int(a[1])) // n if n > 0 and a[0] == b[0] else "-")' "$a" "$b") "
}

declare -A vals
NAMES=()
config() { NAMES+=("$1"); }
config "on_sample fp, 1 MiB ring"
config "on_sample fp, 16 MiB ring"
config "on_sample dwarf, 1 MiB ring"
config "on_sample dwarf, 2 MiB ring"
config "on_sample dwarf, 4 MiB ring"
config "on_sample dwarf, 16 MiB ring"
config "on_sample fp, deep 60x256 B"
config "bpftrace, deep 60x256 B"
config "on_exec, /bin/true"
config "on_exit, /bin/true"
REC=(./bpftrace-rec -q -a -F 999 -o "$TMP/out")
# Rounds over all settings: the host's speed drifts over minutes.
for _ in $(seq "$RUNS"); do
	measure "${NAMES[0]}" on_sample spin "${REC[@]}" --call-graph fp --ringbuf-size 1
	measure "${NAMES[1]}" on_sample spin "${REC[@]}" --call-graph fp --ringbuf-size 16
	measure "${NAMES[2]}" on_sample spin "${REC[@]}" --call-graph dwarf --ringbuf-size 1
	measure "${NAMES[3]}" on_sample spin "${REC[@]}" --call-graph dwarf --ringbuf-size 2
	measure "${NAMES[4]}" on_sample spin "${REC[@]}" --call-graph dwarf --ringbuf-size 4
	measure "${NAMES[5]}" on_sample spin "${REC[@]}" --call-graph dwarf --ringbuf-size 16
	measure "${NAMES[6]}" on_sample deep "${REC[@]}" --call-graph fp
	measure "${NAMES[7]}" perf_event deep bpftrace -e 'profile:hz:999 { @[kstack, ustack] = count(); }'
	measure "${NAMES[8]}" on_exec exec "${REC[@]}"
	measure "${NAMES[9]}" on_exit exec "${REC[@]}"
done
for name in "${NAMES[@]}"; do
	printf '%-30s %s\n' "$name" "$(printf '%s\n' ${vals[$name]} | sort -n |
		awk '{v[NR] = $1} END {printf "median %s ns (%s-%s)", v[int((NR + 1) / 2)], v[1], v[NR]}')"
done
