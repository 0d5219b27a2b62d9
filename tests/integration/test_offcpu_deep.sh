#!/usr/bin/env bash
# Off-CPU stacks at any depth (issues 21 and 22): where the CFI walk is on
# and the kernel has bpf_loop, a new off-CPU stack's user part is walked in
# BPF by the unwind tables up to --max-stack frames, as the CPU samples are.
# Every wait counts, by its time (pprof -sample_index=offcpu -traces).
source "$(dirname "$0")/lib.sh"

ALL=(offcpu_deep_600_root offcpu_deep_truncated offcpu_deep_summary)
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
# The traces under wait_bottom that do not end so.
n=$("$PPROF" -traces -sample_index=offcpu "$TMP/c/profile.pb.gz" 2>/dev/null | awk '
	function done() { if (hold && (last != "[truncated]" || k < 1490 || k > 1499)) bad++; k = hold = 0; last = "" }
	/^-----/ { done(); next } /^ +[a-z]+: / { next }
	NF { k += $NF == "down"; hold += $NF == "wait_bottom"; last = $NF }
	END { done(); print bad + 0 }')
if [ $rc = 0 ] && at_least "$r" 99 && at_least "$h" 40 && [ "$n" = 0 ]; then pass $t; else fail $t "rc $rc, $h% of the off-CPU time under wait_bottom, $n of its traces not cut after 1,500 user frames"; cat "$TMP/c.bad" "$TMP/c.err" >&2; fi
