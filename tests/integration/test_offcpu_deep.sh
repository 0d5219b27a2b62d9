#!/usr/bin/env bash
# Off-CPU stacks at any depth (issues 21 and 22): where the CFI walk is on
# and the kernel has bpf_loop, a new off-CPU stack's user part is walked in
# BPF by the unwind tables up to --max-stack frames, as the CPU samples are.
# Every wait counts, by its time (pprof -sample_index=offcpu -traces).
source "$(dirname "$0")/lib.sh"

ALL=(offcpu_deep_600_root offcpu_deep_truncated offcpu_deep_summary offcpu_deep_tables_late)
require_bpf "${ALL[@]}"

# recurse 600 1.5 1.5 wait: gcc -O2 without frame pointers, asleep 1.5 s
# (the tables load meanwhile), then 600 frames of down() over wait_bottom,
# which blocks in nanosleep 10 ms at a time for 1.5 s: half of the
# process's off-CPU time is under the recursion. Before: its stacks were
# copied for DWARF (8 KiB, ~250 of the 600 frames) and cut inside the
# recursion: 50 % of the off-CPU time reached the root.
ROOTS="_start,[ld-linux-x86-64.so.2]"
"$REC" -q --off-cpu -F 99 -o "$TMP/d" -- "$WL/recurse" 600 1.5 1.5 wait 2>"$TMP/d.err"
rc=$?
read -r r h u < <(stack_shares "$TMP/d/profile.pb.gz" "$ROOTS" wait_bottom offcpu 2>"$TMP/d.bad")
t=offcpu_deep_600_root
if [ $rc = 0 ] && at_least "$r" 99 && at_least "$h" 40; then pass $t; else fail $t "rc $rc, $r% of the off-CPU time reaches the root ($h% under wait_bottom)"; cat "$TMP/d.bad" "$TMP/d.err" >&2; fi

# summary.json counts the stacks walked in BPF: every new stack but the
# sleeper's at the start (unwound by user space), and the few that met a
# mapping without its table yet (the first wait, before the tables load).
t=offcpu_deep_summary
if python3 - "$TMP/d/summary.json" <<'PY'; then pass $t; else fail $t; fi
import json, sys
o = json.load(open(sys.argv[1]))["offcpu"]
assert o["cfi_walked"] + o["sleepers_at_start"] >= o["stacks"] >= 2, o
assert o["cfi_to_dwarf"] < o["cfi_walked"], o
PY

# 2,000 deep with --max-stack 1500: each wait under the recursion ends in
# [truncated] right above 1,500 user frames (wait_bottom's, nanosleep's and
# down's 1,49x). Before: the copy for DWARF was unwound to ~550 frames,
# short of the limit and not cut.
"$REC" -q --off-cpu -F 99 --max-stack 1500 -o "$TMP/c" -- "$WL/recurse" 2000 1.5 1.5 wait 2>"$TMP/c.err"
rc=$?
t=offcpu_deep_truncated
read -r r h u < <(stack_shares "$TMP/c/profile.pb.gz" "$ROOTS,[truncated]" wait_bottom offcpu 2>"$TMP/c.bad")
# The share of wait_bottom's time in traces that do not end so: at most
# 5 %, the waits walked before libc's table loaded (a loaded machine's
# first waits: their stack is cut where the DWARF copy ends, and the place
# is walked again once the table is in; offcpu_deep_tables_late).
n=$("$PPROF" -traces -sample_index=offcpu -unit=ms "$TMP/c/profile.pb.gz" 2>/dev/null | awk '
	function done() { if (hold) { all += v; if (last != "[truncated]" || k < 1490 || k > 1499) bad += v } k = hold = n = 0; last = "" }
	/^-----/ { done(); next } /^ +[a-z]+: / { next }
	NF { if (!n++) { v = $1; sub("ms$", "", v) } k += $NF == "down"; hold += $NF == "wait_bottom"; last = $NF }
	END { done(); printf "%.2f", all ? 100 * bad / all : 100 }')
if [ $rc = 0 ] && at_least "$r" 99 && at_least "$h" 40 && ! at_least "$n" 5; then pass $t; else fail $t "rc $rc, $h% of the off-CPU time under wait_bottom, $n% of it not cut after 1,500 user frames"; cat "$TMP/c.bad" "$TMP/c.err" >&2; fi

# libc's table built a second late (BPFTRACE_REC_SLOW_TABLES, a test hook:
# as under emulation, or on a loaded machine): the first waits under the
# recursion meet libc without a table and are cut where the DWARF copy
# ends. The place is walked again once the tables have changed. Before,
# its first stack was kept for every later wait there: 14 % of the off-CPU
# time reached the root (the start's sleep alone), 85 % after.
t=offcpu_deep_tables_late
BPFTRACE_REC_SLOW_TABLES=libc.so.6@1 "$REC" -q --off-cpu -F 99 -o "$TMP/l" -- "$WL/recurse" 600 3 0.5 wait 2>"$TMP/l.err"
rc=$?
read -r r h u < <(stack_shares "$TMP/l/profile.pb.gz" "$ROOTS" wait_bottom offcpu 2>"$TMP/l.bad")
late=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["offcpu"]["cfi_to_dwarf"])' "$TMP/l/summary.json" 2>/dev/null)
if [ $rc = 0 ] && at_least "$r" 60 && at_least "$h" 60 && [ "${late:-0}" -ge 1 ]; then pass $t; else fail $t "rc $rc, $r% of the off-CPU time reaches the root ($h% under wait_bottom), ${late:-no} walks met libc without its table"; cat "$TMP/l.bad" "$TMP/l.err" >&2; fi
