#!/usr/bin/env bash
# -t a user can trust (issue 21): the file it probes is the one that runs.
# The command is resolved once, as execvp does, for the exec and for -t; an
# OBJ given as a path is compared with the mapped files as the kernel
# resolves it (by device and inode), so a symlink names its target.
source "$(dirname "$0")/lib.sh"

ALL=(trace_path_empty_entry trace_obj_symlink)
require_bpf "${ALL[@]}"

# calls ROUNDS: mid runs 2*ROUNDS times (tests/workloads/calls.c).
traced() { # SUMMARY.JSON: the traced entries and returns
	python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["traced_calls"])' "$1" 2>/dev/null || echo -1
}

# An empty PATH entry is the current directory for execvp (and for the
# shell): -t looked the command up without it, and found nothing.
t=trace_path_empty_entry
mkdir -p "$TMP/bin"
cp "$WL/calls" "$TMP/bin/h21calls"
(cd "$TMP/bin" && PATH=":/usr/bin:/bin" "$REC" -q -o "$TMP/pe" -t mid -- h21calls 5 >/dev/null 2>"$TMP/pe.err")
st=$?
n=$(traced "$TMP/pe/summary.json")
if [ $st = 0 ] && [ "$n" = 20 ]; then pass $t; else
	fail $t "exit $st, $n traced entries and returns (want 0, 20)"; head -3 "$TMP/pe.err" >&2; fi

# -p with OBJ a symlink to the running program (Debian's
# /usr/bin/redis-server -> redis-check-rdb): "not mapped" before.
t=trace_obj_symlink
ln -s "$WL/calls" "$TMP/link-to-calls"
"$WL/calls" 0 & pid=$!
sleep 0.2
"$REC" -q -d 1 -o "$TMP/sl" -t "$TMP/link-to-calls:mid" -p $pid >/dev/null 2>"$TMP/sl.err"
st=$?
kill $pid 2>/dev/null; wait $pid 2>/dev/null
n=$(traced "$TMP/sl/summary.json")
if [ $st = 0 ] && [ "$n" -gt 0 ]; then pass $t; else
	fail $t "exit $st, $n traced entries and returns"; head -3 "$TMP/sl.err" >&2; fi
