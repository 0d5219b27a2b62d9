#!/usr/bin/env bash
# Stacks at any depth (issue 21): user stacks are walked to their root up
# to --max-stack frames (default 1024, bpf_loop in blocks of frames; on
# kernels without bpf_loop, the tail-call budget, said in the degraded
# list), and a stack cut there ends in a frame named [truncated] in every
# output, counted in summary.json. Every sample counts (pprof -traces).
source "$(dirname "$0")/lib.sh"

ALL=(deep_600_main deep_2000_main deep_root_table_late deep_5000_truncated
	deep_truncated_outputs deep_truncated_counted deep_truncated_gperftools deep_compat_budget)
require_bpf "${ALL[@]}"

# recurse DEPTH SECONDS DELAY: gcc -O2 without frame pointers, DEPTH frames
# of down() over spin() (SECONDS of CPU time), after DELAY asleep (the
# tables loaded by then, on a loaded machine too: before, a sample is copied
# for DWARF, 8 KiB of stack, and unwound that far).
# Before: every stack cut at 127 frames (MAX_FRAMES), 0% reached main.
deep_case() { # TEST DEPTH [REC-OPTIONS...]
	local t=$1 d=$2
	shift 2
	"$REC" -q -F 499 "$@" -o "$TMP/d$d" -- "$WL/recurse" "$d" 1.5 1.5 2>"$TMP/d$d.err"
	# The root (_start; the loader's entry before main), through main for
	# the samples in spin, under the whole recursion.
	read -r r h u < <(stack_shares "$TMP/d$d/profile.pb.gz" "_start,[ld-linux-x86-64.so.2]" spin 2>"$TMP/d$d.bad")
	if at_least "$r" 99 && at_least "$h" 90; then pass $t; else fail $t "$r% of all samples reach the root ($h% in spin)"; cat "$TMP/d$d.bad" "$TMP/d$d.err" >&2; fi
}
deep_case deep_600_main 600
deep_case deep_2000_main 2000 --max-stack 4096

# The root's library without a table (libc's: as in the first samples after
# ld.so maps it, which under emulation last seconds; the hook holds it back
# for good): the walk's frames are kept and the copy for DWARF starts at
# libc's frame, not at the leaf. Before: 16 KiB of copy from the leaf, every
# stack cut inside the recursion, 0 % at the root.
# spin's clock_gettime is libc's too: a sample taken in it (or in the kernel
# below it) has its first table-less frame at the leaf, and the copy from
# there, 16 KiB, holds ~510 of the 600 frames: such a stack is cut by the
# copy's size, by design. Rare on an idle machine; beside
# two busy loops 0.9-1.6 % (preempted on the syscall's way back: 12 of 770
# samples, every one of the root share's misses, 98.4 % in a stress run).
# They are left out of the root share (pprof -ignore), and their share said.
t=deep_root_table_late
BPFTRACE_REC_NO_TABLES=libc.so.6 "$REC" -q -F 499 -o "$TMP/dl" -- "$WL/recurse" 600 1.5 0.5 2>"$TMP/dl.err"
"$PPROF" -proto -ignore='^clock_gettime$' "$TMP/dl/profile.pb.gz" > "$TMP/dl-mid.pb.gz" 2>/dev/null
read -r r h u < <(stack_shares "$TMP/dl-mid.pb.gz" "_start,[ld-linux-x86-64.so.2]" spin 2>"$TMP/dl.bad")
leafc=$(cum_share "$TMP/dl/profile.pb.gz" samples clock_gettime)
to_dwarf=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["cfi_walk"]["to_dwarf"])' "$TMP/dl/summary.json" 2>/dev/null)
if at_least "$r" 99 && at_least "$h" 90 && [ "${to_dwarf:-0}" -gt 100 ]; then pass $t; else
	fail $t "$r% of the samples not in clock_gettime reach the root ($h% in spin; $leafc% in clock_gettime left out), ${to_dwarf:-no} walks went to DWARF"
	cat "$TMP/dl.bad" "$TMP/dl.err" >&2
fi

# 5,000 deep with --max-stack 1024: cut, and said so.
"$REC" -q -F 499 --max-stack 1024 -o "$TMP/d5k" -- "$WL/recurse" 5000 1.5 1.5 2>"$TMP/d5k.err"
read -r r h u < <(stack_shares "$TMP/d5k/profile.pb.gz" "[truncated]" spin 2>"$TMP/d5k.bad")
t=deep_5000_truncated
# Each sample in the recursion (all but the loader's and exit's few) ends
# in [truncated] right above 1024 user frames: down's, under spin and
# clock_gettime's few; or 1024 down frames, a sample taken while the
# recursion goes down or returns (a few microseconds of the run: one
# such sample failed the check once when it asked 1020-1023).
n=$("$PPROF" -traces "$TMP/d5k/profile.pb.gz" 2>/dev/null | awk '
	function done() { if (last == "[truncated]" && (k < 1020 || k > 1024)) { bad++; ks = ks " " k } k = 0; last = "" }
	/^-----/ { done(); next } /^ +[a-z]+: / { next } NF { k += $NF == "down"; last = $NF }
	END { done(); print bad + 0 (bad ? " (down frames:" ks ")" : "") }')
if at_least "$r" 95 && [ "$n" = 0 ]; then pass $t; else fail $t "$r% of all samples end in [truncated], $n of them not after 1024 user frames"; cat "$TMP/d5k.bad" >&2; fi
t=deep_truncated_outputs
# Every sample in spin but one at most: twice in sanitizer runs (never in
# the normal build's) one sample of ~750 in spin was not cut at 1024 (its
# line is printed on a failure); not explained yet.
folded_ok=$(awk '/spin/ { n += $NF; if ($0 ~ /^recurse;\[truncated\];down;/) ok += $NF } END { print (n > 0 && n - ok <= 1) }' "$TMP/d5k/stacks.folded")
if [ "$folded_ok" = 1 ] && grep -q '\[truncated\]' "$TMP/d5k/flamegraph.html"; then pass $t; else
	fail $t "stacks.folded or flamegraph.html without [truncated]"
	awk '/spin/ && !/^recurse;\[truncated\];down;/ { print substr($0, 1, 200) " ... " substr($0, length($0) - 100) }' "$TMP/d5k/stacks.folded" | head -3 >&2
fi
t=deep_truncated_counted
if python3 - "$TMP/d5k/summary.json" "$TMP/d5k/stacks.folded" <<'PY'; then pass $t; else fail $t; fi
import json, sys
s = json.load(open(sys.argv[1]))
p = [p for p in s["processes"] if p["comm"] == "recurse"][0]
cut = sum(int(l.rsplit(" ", 1)[1]) for l in open(sys.argv[2]) if l.startswith("recurse;[truncated];"))
assert s["max_stack"] == 1024, s["max_stack"]
assert p["max_stack_truncated"] == cut > 0.95 * p["samples"], (p, cut)
assert s["max_stack_truncated"] >= p["max_stack_truncated"], s["max_stack_truncated"]
PY

# cpu-PID.prof too, by both of its readers: [truncated] is a frame of the
# stack (names-PID.so names it) at the root of every cut one. Before, it was
# dropped past 1024 pcs or read as a bare address.
t=deep_truncated_gperftools
prof=$(ls "$TMP"/d5k/cpu-*.prof 2>/dev/null | head -1)
cut=$(python3 -c 'import json, sys; print([p for p in json.load(open(sys.argv[1]))["processes"] if p["comm"] == "recurse"][0]["max_stack_truncated"])' "$TMP/d5k/summary.json" 2>/dev/null)
# Traces in spin not rooted in [truncated], of how many (a sample while the
# recursion goes down or returns, under 1024 frames deep, is whole by right).
read -r bad all < <("$PPROF" -traces "$WL/recurse" "$prof" 2>/dev/null | awk '
	function done() { if (d) { all++; if (last != "[truncated]") bad++ } d = 0; last = "" }
	/^-----/ { done(); next } /^ +[a-z]+: / { next } NF { d += $NF == "spin"; last = $NF }
	END { done(); print bad + 0, all + 0 }')
if require_tool google-pprof $t; then
	google-pprof --text "$WL/recurse" "$prof" > "$TMP/d5k.gp" 2>/dev/null
	# The cut samples, every one: [truncated]'s cumulative count.
	g=$(awk '$NF == "[truncated]" { print $4 }' "$TMP/d5k.gp")
	# One trace in spin at most not rooted in it: the same unexplained
	# sample as deep_truncated_outputs' (1 of 748 in a normal CI run
	# once; google-pprof's count of the cut ones was exact there).
	if [ -n "$cut" ] && [ "${g:-0}" = "$cut" ] && [ "$all" -gt 0 ] && [ "$bad" -le 1 ] &&
		! grep -q ' 0x0' "$TMP/d5k.gp"; then pass $t; else
		fail $t "google-pprof: [truncated] in ${g:-no} of $cut cut samples; pprof: $bad of $all traces through spin not rooted in it"
		head -8 "$TMP/d5k.gp" >&2
	fi
fi

# Without bpf_loop (as on 5.10): as deep as the CFI walker's tail calls
# go, the degraded list says so, and deeper stacks end in [truncated].
t=deep_compat_budget
BPFTRACE_REC_NO_FEATURES=bpf_loop "$REC" -q -F 499 -o "$TMP/dc" -- "$WL/recurse" 600 1.5 1.5 2>"$TMP/dc.err"
read -r r h u < <(stack_shares "$TMP/dc/profile.pb.gz" "[truncated]" spin 2>"$TMP/dc.bad")
if at_least "$r" 95 && python3 - "$TMP/dc/summary.json" <<'PY'; then pass $t; else fail $t "$r% end in [truncated]"; cat "$TMP/dc.bad" "$TMP/dc.err" >&2; fi
import json, sys
s = json.load(open(sys.argv[1]))
d = [d for d in s["degraded"] if d["feature"] == "stack depth"]
assert d and "248 frames" in d[0]["why"], s["degraded"]
assert s["max_stack_truncated"] > 0
PY
