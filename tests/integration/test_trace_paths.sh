#!/usr/bin/env bash
# -t a user can trust (issue 21): the file it probes is the one that runs.
# The command is resolved once, as execvp does, for the exec and for -t; an
# OBJ given as a path is compared with the mapped files as the kernel
# resolves it (by device and inode), so a symlink names its target.
source "$(dirname "$0")/lib.sh"

ALL=(trace_path_empty_entry trace_obj_command trace_obj_symlink trace_pid_program_named
	trace_counts_listed trace_shared_warning trace_alloc_failure)
require_bpf "${ALL[@]}"

# calls ROUNDS: mid runs 2*ROUNDS times (tests/workloads/calls.c).
traced() { # SUMMARY.JSON: the calls traced
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
if [ $st = 0 ] && [ "$n" = 10 ]; then pass $t; else
	fail $t "exit $st, $n calls traced (want 0, 10)"; head -3 "$TMP/pe.err" >&2; fi

# OBJ naming the command `--` runs (on PATH, not a library): -t looked for
# a library of that name ("library h21calls not found"); -t usdt: found it.
# One resolver now (target_probe_object) for both.
t=trace_obj_command
(cd "$TMP/bin" && PATH="$TMP/bin:/usr/bin:/bin" "$REC" -q -o "$TMP/oc" -t h21calls:mid -- h21calls 5 >/dev/null 2>"$TMP/oc.err")
st=$?
n=$(traced "$TMP/oc/summary.json")
if [ $st = 0 ] && [ "$n" = 10 ]; then pass $t; else
	fail $t "exit $st, $n calls traced (want 0, 10)"; head -3 "$TMP/oc.err" >&2; fi

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
	fail $t "exit $st, $n calls traced"; head -3 "$TMP/sl.err" >&2; fi

# -p with a function of the main program: the program is opened through
# /proc/PID/exe, and that link's name ("exe") named it in the list at the
# end, summary.json's object and the XRay map's source (llvm-xray's
# "exe:0:0: mid"). Named by its file everywhere now. A copy without debug
# info, so that the XRay map's source is the file's name, not calls.c's.
t=trace_pid_program_named
objcopy --strip-debug "$WL/calls" "$TMP/bin/h21named"
"$TMP/bin/h21named" 0 & pid=$!
sleep 0.2
"$REC" -d 0.5 -o "$TMP/pn" -t mid -p $pid >/dev/null 2>"$TMP/pn.err"
st=$?
kill $pid 2>/dev/null; wait $pid 2>/dev/null
obj=$(python3 -c 'import json,sys; print(*sorted({f["object"] for f in json.load(open(sys.argv[1]))["traced_functions"]}))' \
	"$TMP/pn/summary.json" 2>/dev/null)
acc=$(llvm-xray account -m "$TMP/pn/xray-$pid.map" "$TMP/pn/xray-trace-$pid.fdr" 2>&1 | awk '$NF == "mid" { print $(NF - 1) }')
if [ $st = 0 ] && [ "$obj" = h21named ] && [ "$acc" = h21named:0:0: ] &&
	grep -q 'mid  *[0-9]* calls  (h21named)$' "$TMP/pn.err"; then pass $t; else
	fail $t "exit $st; object: $obj; llvm-xray: $acc (want h21named)"; grep -- ' calls ' "$TMP/pn.err" >&2; fi

# Each function traced is listed at the end with its calls, and one never
# called is flagged: edges calls each phase's function once, and
# inlined_twice only as inlined copies (its own body never runs). In
# summary.json, traced_calls counts calls, traced_events entries and returns.
t=trace_counts_listed
"$REC" -o "$TMP/tc" -t vdso_phase -t plt_phase -t inlined_twice -- "$WL/edges" 0.3 >/dev/null 2>"$TMP/tc.err"
st=$?
got=$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
f = {x["name"]: x["calls"] for x in d["traced_functions"]}
print(f.get("vdso_phase"), f.get("plt_phase"), f.get("inlined_twice"), d["traced_calls"], d["traced_events"])' \
	"$TMP/tc/summary.json" 2>/dev/null)
if [ $st = 0 ] && [ "$got" = "1 1 0 2 4" ] &&
	grep -q 'vdso_phase  *1 calls' "$TMP/tc.err" && grep -q 'plt_phase  *1 calls' "$TMP/tc.err" &&
	grep -q 'warning: -t: inlined_twice (edges) was never called' "$TMP/tc.err"; then
	pass $t
else
	fail $t "exit $st; vdso_phase, plt_phase, inlined_twice, traced_calls, traced_events: $got (want 1 1 0 2 4)"
	grep -- '-t' "$TMP/tc.err" >&2
fi

# Uprobes are per file: probing a function of a file other processes map
# slows them too. Two copies of calls run; -p one of them: the other is
# named, by count, at attach time (this build's calls binary is ours alone).
# The command alone (edges above, mapped by no one else) draws no warning.
t=trace_shared_warning
"$WL/calls" 0 >/dev/null & a=$!
"$WL/calls" 0 >/dev/null & b=$!
sleep 0.2
"$REC" -q -d 0.3 -o "$TMP/sw" -t mid -p $a >/dev/null 2>"$TMP/sw.err"
kill $a $b 2>/dev/null; wait $a $b 2>/dev/null
if grep -q "warning: -t mid: .*calls is mapped by 1 other process: uprobes are per file" "$TMP/sw.err" &&
	! grep -q "mapped by" "$TMP/tc.err"; then pass $t; else
	fail $t "no warning naming 1 other process (or one for edges alone)"; cat "$TMP/sw.err" >&2; fi

# A failed allocation while attaching: the arrays of links and fds were
# grown by x = realloc(x, ...), which on failure lost them while their counts
# stayed, and the detach then read them through NULL (a crash, status 139).
# The shim (build/tests/libfailrealloc.so) fails the Nth realloc called from
# attach_one: the 2nd is the first attach's fds, the 3rd the second's (with
# the old arrays; those grown by doubling need none). Each run must end in
# an error that says so, or succeed, never crash.
t=trace_alloc_failure
if [ "${SANITIZE:-}" = 1 ]; then
	skip $t "the shim cannot come before ASan's allocator"
else
	read -r off size < <(nm -S "$REC" | awk '$4 == "attach_one" { print $1, $2 }')
	res=""
	for n in 2 3; do
		rm -f "$TMP/fr.log"
		FAILREALLOC_FROM=$off FAILREALLOC_SIZE=$size FAILREALLOC_NTH=$n FAILREALLOC_LOG=$TMP/fr.log \
			LD_PRELOAD=$BUILD/tests/libfailrealloc.so \
			"$REC" -q -o "$TMP/fr$n" -t leaf -t mid -- "$WL/calls" 5 >/dev/null 2>"$TMP/fr$n.err"
		st=$?
		if [ -s "$TMP/fr.log" ]; then
			grep -q 'out of memory' "$TMP/fr$n.err" && [ $st = 1 ] && res+="$n:failed-cleanly " ||
				res+="$n:status-$st "
		else
			[ $st = 0 ] && res+="$n:not-needed " || res+="$n:status-$st "
		fi
	done
	if [ -n "$off" ] && [[ $res == "2:failed-cleanly "* ]] && [[ $res != *status* ]]; then pass $t; else
		fail $t "$res(want 2 failed cleanly, 3 failed cleanly or not needed)"; fi
fi
