#!/usr/bin/env bash
# Hostile inputs from the production-hardening issue: JIT files made to cost
# time and memory, names that are not text (terminal escapes, invalid UTF-8,
# a comm of raw bytes), and a FIFO planted where a debug file is looked for.
# Each case is a row of the fault table (fault_case).
source "$(dirname "$0")/lib.sh"

ALL=(hostile_perfmap_sparse_10g hostile_perfmap_sparse_hole hostile_names_pprof
	hostile_names_gperftools hostile_names_jit_elf hostile_names_xray hostile_names_stderr
	hostile_comm_json hostile_jitdump_quadratic hostile_debug_fifo)
require_bpf "${ALL[@]}"
TIME=/usr/bin/time
if [ ! -x $TIME ]; then
	for t in "${ALL[@]}"; do skip "$t" "/usr/bin/time missing (make test-deps)"; done
	exit 0
fi

# clean_text FILE: no ESC or other control byte but newline and tab, and valid UTF-8.
clean_text() {
	python3 - "$1" <<'PY'
import sys
b = open(sys.argv[1], "rb").read()
b.decode("utf-8")  # raises on invalid UTF-8
bad = [c for c in b if (c < 0x20 and c not in (9, 10)) or c == 0x7f]
sys.exit(1 if bad else 0)
PY
}
# jit_pid: starts the JIT stand-in (comm from $1 if given); sets p and addr.
jit_pid() {
	exec {fd}< <(exec "$WL/jitspin" "$@")
	p=$!
	read -r -u $fd addr
}
stop_pid() { kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; rm -f "/tmp/perf-$p.map"; }

# --- a 10 GB sparse perf map: refused by its size, at no cost -------------------
# record RUN ARGS...: a -d 1 recording of $p under /usr/bin/time: $wall s, $rss KiB, $rc.
record() {
	run=$1
	shift
	$TIME -f '%e %M' -o "$TMP/$run.time" "$REC" -q -F 199 -d 1 -o "$TMP/$run" -p "$p" "$@" \
		2> "$TMP/$run.err"
	rc=$?
	read -r wall rss < <(tail -1 "$TMP/$run.time")
}
fast_small() { [ "$rc" = 0 ] && within_lt "$wall" "$1" && [ "$rss" -lt 204800 ] ||
	{ echo "rc=$rc wall=${wall}s maxrss=${rss}KiB; stderr:" >&2; cat "$TMP/$run.err" >&2; return 1; }; }
within_lt() { awk -v v="$1" -v m="$2" 'BEGIN { exit !(v < m) }'; }

jit_pid
truncate -s 10G "/tmp/perf-$p.map"
record sparse10g
fault_case hostile_perfmap_sparse_10g "/tmp/perf-PID.map: a 10 GB sparse file (truncate -s 10G)" \
	"one warning naming the file, its size and the 1 GiB cap; not read; -d 1 within 10 s and 200 MB" \
	eval 'fast_small 10 && grep -q "perf-$p.map: 10737418240 bytes, more than the 1073741824-byte cap" "$TMP/$run.err"'
stop_pid

# --- under the cap: a real line, then a 900 MB hole -------------------------------
jit_pid
printf '%s 2 jit_spin_loop\n' "$addr" > "/tmp/perf-$p.map"
truncate -s 900M "/tmp/perf-$p.map"
record hole
"$PPROF" -top -nodecount=10 "$TMP/hole/profile.pb.gz" > "$TMP/hole.top" 2>&1
fault_case hostile_perfmap_sparse_hole "/tmp/perf-PID.map: one line, then a 900 MB hole" \
	"the hole is not read into memory: the line names the frame, 200 MB" \
	eval 'fast_small 10 && grep -q jit_spin_loop "$TMP/hole.top"'
stop_pid

# --- names that are not text: a perf-map name and the comm -----------------------
COMM=$'\xff\xfe"\\\x01'
jit_pid "$COMM"
printf '%s 2 evil\x1b[2J\x1b]0;title\x07name\xff\xfe\xc0\xc2\x9b end\n' "$addr" > "/tmp/perf-$p.map"
"$REC" -v -F 199 -d 1 -o "$TMP/names" -p "$p" > /dev/null 2> "$TMP/names.err"
stop_pid
pid=$p
"$PPROF" -top -nodecount=10 "$TMP/names/profile.pb.gz" > "$TMP/names.top" 2>&1
google-pprof --text "$WL/jitspin" "$TMP/names/cpu-$pid.prof" > "$TMP/names.g" 2>/dev/null
nm "$TMP/names/jit-$pid.so" > "$TMP/names.nm" 2>&1
llvm-xray account -m "$TMP/names/xray-$pid.map" "$TMP/names/xray-$pid.fdr" > "$TMP/names.xray" 2>&1
# named_clean FILE: the name is there (escaped), with no control byte or bad UTF-8
named_clean() { grep -q 'evil.*name.* end' "$1" && clean_text "$1" ||
	{ echo "$1:" >&2; head -c 2000 "$1" | od -c | head -20 >&2; return 1; }; }
fault_case hostile_names_pprof "perf-map name with ESC [2J, an OSC title, C1 CSI and invalid UTF-8" \
	"escaped as \\xNN when read: pprof -top shows valid UTF-8 without control bytes" \
	named_clean "$TMP/names.top"
fault_case hostile_names_gperftools "the same name, in cpu-PID.prof" \
	"google-pprof --text shows it escaped" named_clean "$TMP/names.g"
fault_case hostile_names_jit_elf "the same name, in jit-PID.so" "nm shows it escaped" \
	named_clean "$TMP/names.nm"
fault_case hostile_names_xray "the same name, in xray-PID.map" "llvm-xray account shows it escaped" \
	named_clean "$TMP/names.xray"
fault_case hostile_names_stderr "the same comm and name on stderr (-v)" "stderr is valid UTF-8 without control bytes" \
	clean_text "$TMP/names.err"
# The comm, escaped (not dropped): \xff\xfe"\ then the escape of \x01.
fault_case hostile_comm_json "comm set to \\xff\\xfe\"\\\\\\x01 (prctl PR_SET_NAME)" \
	"summary.json loads (json.load) with the comm escaped as \\xNN" \
	python3 -c '
import json, sys
d = json.load(open(sys.argv[1], encoding="utf-8"))
c = [q["comm"] for q in d["processes"] if q["pid"] == int(sys.argv[2])]
want = "\\xff\\xfe\"\\" + "\\x01"
sys.exit(0 if c == [want] else print(c, [want]) or 1)' "$TMP/names/summary.json" "$pid"

# --- a jitdump of 100k LOADs over one address and 100k MOVEs of unknown code ---------
python3 - "$TMP/quad.dump" <<'PY'
import struct, sys
out = [struct.pack("<IIIIIIQQ", 0x4A695444, 1, 40, 62, 0, 0, 0, 0)]
name = b"f\0"
for i in range(100000):
    out.append(struct.pack("<IIQIIQQQQ", 0, 16 + 40 + len(name), 1000 + i, 1, 1, 0x10000, 0x10000, 4096, i) + name)
for i in range(100000):
    out.append(struct.pack("<IIQIIQQQQQ", 1, 16 + 48, 200000 + i, 1, 1, 0x20000, 0x30000, 0x40000, 64, 10**9 + i))
open(sys.argv[1], "wb").write(b"".join(out))
PY
jit_pid
record quad --jitdump "$TMP/quad.dump"
# The baseline -d 1 run takes ~1.5 s; the quadratic parser added 4-7 s.
fault_case hostile_jitdump_quadratic "jitdump: 100k LOADs over one address, 100k MOVEs of code never loaded" \
	"parsed in n log n: -d 1 within 4 s" fast_small 4
stop_pid

# --- a FIFO where the build-id debug file of a recorded binary is looked for --------
strip -o "$TMP/spin-stripped" "$WL/spin"
bid=$(readelf -n "$TMP/spin-stripped" | awk '/Build ID/ { print $3 }')
fifo=/usr/lib/debug/.build-id/${bid:0:2}/${bid:2}.debug
if [ -z "$bid" ] || [ -e "$fifo" ]; then
	fail hostile_debug_fifo "no build id, or $fifo exists"
else
	made_dir=
	[ -d "${fifo%/*}" ] || { mkdir -p "${fifo%/*}"; made_dir=${fifo%/*}; }
	trap 'rm -f "$fifo"; [ -n "$made_dir" ] && rmdir "$made_dir"; [ -n "${KEEP:-}" ] || rm -rf "$TMP"; jobs -p | xargs -r kill 2>/dev/null' EXIT
	mkfifo "$fifo"
	"$TMP/spin-stripped" 4000000000 & p=$!
	sleep 0.2
	run=fifo
	$TIME -f '%e %M' -o "$TMP/fifo.time" timeout 20 "$REC" -q -F 199 -d 1 -o "$TMP/fifo" -p "$p" 2> "$TMP/fifo.err"
	rc=$?
	read -r wall rss < <(tail -1 "$TMP/fifo.time")
	stop_pid
	rm -f "$fifo"
	fault_case hostile_debug_fifo "a FIFO at /usr/lib/debug/.build-id/xx/yyyy.debug of a recorded binary" \
		"opened without blocking; a warning that it is not a regular file; -d 1 within 10 s" \
		eval 'fast_small 10 && [ -s "$TMP/fifo/profile.pb.gz" ] && grep -q "$fifo: not a regular file" "$TMP/fifo.err"'
fi
