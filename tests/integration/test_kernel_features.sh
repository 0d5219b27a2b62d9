#!/usr/bin/env bash
# The fallbacks for older kernels, on this one: BPFTRACE_REC_NO_FEATURES turns
# probed features off, so the compat sampler (kernels before 5.19) and -t
# without BPF cookies (before 5.15) run here on every change, with the real
# readers. make test-kernels runs them on the real old kernels (in qemu).
source "$(dirname "$0")/lib.sh"

ALL=(compat_sampler_split compat_sampler_degraded_listed cookieless_trace_counts
	cookieless_trace_args full_kernel_nothing_degraded)
require_bpf "${ALL[@]}"
require_tool llvm-xray cookieless_trace_counts || exit 0

OLD=bpf_loop,ringbuf_dynptr,task_btf,task_pt_regs,attach_cookie,iter_task_vma

# --- the compat sampler: bounded loops, bpf_ringbuf_output, bpf_get_stack ----
BPFTRACE_REC_NO_FEATURES=$OLD "$REC" -F 499 -d 3 -o "$TMP/compat" -- "$WL/split" 2.5 > /dev/null 2> "$TMP/compat.err"
"$PPROF" -top -nodecount=30 "$TMP/compat/profile.pb.gz" > "$TMP/compat.top" 2>&1
check_split compat_sampler_split "$TMP/compat.top" pprof_flat
t=compat_sampler_degraded_listed
if python3 - "$TMP/compat/summary.json" <<'PY' && grep -q "degraded on this kernel: sampler" "$TMP/compat.err"; then pass $t; else fail $t; cat "$TMP/compat.err" >&2; fi
import json, sys
s = json.load(open(sys.argv[1]))
feats = {d["feature"]: d["why"] for d in s["degraded"]}
assert "sampler" in feats and "bpf_loop" in feats["sampler"], feats
assert "exit-time mappings" in feats, feats
# the compat sampler's CFI walk (tail calls), to the thread's root; the
# first samples, before the process's tables are in, go the DWARF way whole
# (to_dwarf, up to ~6% here: split's maps may be read when its loader has
# mapped libwork.so and not libc); a walk cut short (truncated) is a wrong
# stack (12% in 1 run in 4 when libc's pcs were walked by frame pointers).
c = s["cfi_walk"]
assert c["walks"] > 0.9 * s["samples"], s
assert c["reached_root"] > 0.85 * c["walks"], c
assert c["truncated"] < 0.02 * c["walks"], c
PY

# --- -t without cookies: functions by address, returns by order -------------
xcount() { awk -v f="$1" '$2 ~ /^[0-9]+$/ { n = split($NF, a, ":"); if (a[n] == f || $NF == f) { print $2; found = 1; exit } } END { if (!found) print 0 }'; }
BPFTRACE_REC_NO_FEATURES=$OLD "$REC" -q -o "$TMP/nocookie" --trace-args 2 -t leaf -t mid -t fib -t run_thread -- "$WL/calls" 200 > /dev/null 2> "$TMP/nocookie.err"
pid=$(python3 -c 'import json,sys; print([p["pid"] for p in json.load(open(sys.argv[1]))["processes"] if p["comm"]=="calls"][0])' "$TMP/nocookie/summary.json" 2>/dev/null)
llvm-xray account -m "$TMP/nocookie/xray-$pid.map" "$TMP/nocookie/xray-trace-$pid.fdr" > "$TMP/nocookie.acc" 2>&1
t=cookieless_trace_counts
got="$(xcount leaf < "$TMP/nocookie.acc") $(xcount mid < "$TMP/nocookie.acc") $(xcount fib < "$TMP/nocookie.acc") $(xcount run_thread < "$TMP/nocookie.acc")"
if [ "$got" = "1200 400 70800 2" ] && grep -q '"feature": "-t function ids"' "$TMP/nocookie/summary.json"; then pass $t; else fail $t "leaf mid fib run_thread = $got, want 1200 400 70800 2"; cat "$TMP/nocookie.acc" "$TMP/nocookie.err" >&2; fi
# The probed address rides after the arguments: the arguments stay right.
t=cookieless_trace_args
llvm-xray convert -f yaml -m "$TMP/nocookie/xray-$pid.map" "$TMP/nocookie/xray-trace-$pid.fdr" 2>/dev/null |
	grep -c "kind: function-enter-arg" > "$TMP/nargs"
if [ "$(cat "$TMP/nargs")" -gt 70000 ]; then pass $t; else fail $t "$(cat "$TMP/nargs") entries with arguments"; fi

# --- this kernel, nothing turned off: nothing is degraded --------------------
# (the host kernel of CI is new enough; an older host lists what it lacks)
t=full_kernel_nothing_degraded
"$REC" -q -d 1 -o "$TMP/full" -- "$WL/split" 0.5 > /dev/null 2>&1
if python3 -c 'import json,re,sys; s=json.load(open(sys.argv[1])); d=[x["feature"] for x in s["degraded"]]; assert not d or tuple(map(int, re.findall(r"\d+", s["kernel"])[:2])) < (6, 16), d' "$TMP/full/summary.json"; then pass $t; else fail $t "$(grep -A3 degraded "$TMP/full/summary.json")"; fi
