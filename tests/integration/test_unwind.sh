#!/usr/bin/env bash
# Whole stacks (issue 5): Debian's own gzip and sort (built without frame
# pointers) are DWARF-unwound from copied stacks; the callers of a gcc
# program's frameless leaves are put back; proportions hold in every mode.
source "$(dirname "$0")/lib.sh"

ALL=(unwind_gzip_reaches_root unwind_container_reaches_root unwind_stripped_functions unwind_sort_reaches_root unwind_leaf_callers_default
	unwind_fp_records_small unwind_split_dwarf_mode unwind_split_dwarf_root unwind_source_lines
	unwind_gperftools_deep unwind_fp_deep_chain unwind_fp_deep_in_bpf unwind_fp_depth_limit)
require_bpf "${ALL[@]}"

# Share (relative %) of COMM's samples whose stack holds one of the root
# functions: the thread's start (__libc_start_call_main, start_thread).
root_share() { # PROFILE COMM
	"$PPROF" -top -cum -nodecount=200 -relative_percentages -tagfocus=comm="$2" "$1" 2>/dev/null |
		awk '$NF == "__libc_start_call_main" || $NF == "start_thread" { sub("%", "", $5); s += $5 } END { print s + 0 }'
}

head -c 64000000 /dev/urandom > "$TMP/rnd"
t=unwind_gzip_reaches_root
"$REC" -q -F 499 -o "$TMP/gz" -- gzip -c "$TMP/rnd" > /dev/null 2>"$TMP/gz.err"
r=$(root_share "$TMP/gz/profile.pb.gz" gzip)
mode=$(python3 -c 'import json,sys; print([p["unwinding"] for p in json.load(open(sys.argv[1]))["processes"] if p["comm"]=="gzip"][0])' "$TMP/gz/summary.json")
if [ "$mode" = cfi ] && at_least "$r" 99; then pass $t; else fail $t "$mode unwinding, $r% reach __libc_start_call_main"; fi

# The same gzip in a container: a private mount namespace whose root is a
# tmpfs holding gzip (at a path the host does not have), its libraries and
# its input, so that its files are only visible through /proc/PID/root.
# Recorded by pid. Before, the unwinder opened the modules by their paths
# here: every stack ended at gzip's first frame.
t=unwind_container_reaches_root
cat > "$TMP/ctr.sh" <<'EOS'
set -e
root=$1
mount -t tmpfs ctr "$root"
mkdir -p "$root/opt/ctr"
cp "$(command -v gzip)" "$root/opt/ctr/gzip"
for lib in $(ldd "$(command -v gzip)" | awk '$(NF-1) ~ /^\// { print $(NF-1) }'); do
	mkdir -p "$root$(dirname "$lib")"
	cp "$lib" "$root$lib"
done
cp "$2" "$root/in"
exec chroot "$root" /opt/ctr/gzip -c /in > /dev/null
EOS
mkdir -p "$TMP/ctr"
unshare --mount --pid --fork --propagation private bash "$TMP/ctr.sh" "$TMP/ctr" "$TMP/rnd" & ctr=$!
gz=
for ((i = 0; i < 100 && !${#gz}; i++)); do
	gz=$(pgrep -f '^/opt/ctr/gzip -c /in' | head -1)
	[ -n "$gz" ] || sleep 0.05
done
if [ -z "$gz" ]; then
	fail $t "the container's gzip did not start"
else
	"$REC" -q -F 499 -d 5 -p "$gz" -o "$TMP/ctrout" 2>"$TMP/ctr.err"
	wait $ctr
	r=$(root_share "$TMP/ctrout/profile.pb.gz" gzip)
	if at_least "$r" 99; then pass $t; else fail $t "$r% of the container's gzip samples reach __libc_start_call_main"; fi
fi

# Debian's gzip has no symbols for its own functions: each is named by where
# its .eh_frame FDE starts ("gzip+0x4710"), as readelf lists them, and the
# samples split over several of them rather than all on one "[gzip]".
t=unwind_stripped_functions
readelf -wf "$(command -v gzip)" | awk '/ FDE /{ sub(/^pc=/, "", $NF); sub(/\..*/, "", $NF); print $NF }' > "$TMP/gz.fdes"
"$PPROF" -top -nodecount=200 "$TMP/gz/profile.pb.gz" > "$TMP/gz.top" 2>&1
res=$(python3 - "$TMP/gz.fdes" "$TMP/gz.top" <<'PY'
import sys
fdes = {int(x, 16) for x in open(sys.argv[1]).read().split()}
named = bad = unnamed = 0.0
funcs = set()
for line in open(sys.argv[2]):
    f = line.split()
    if len(f) < 6 or not f[1].endswith("%"):
        continue
    share = float(f[1].rstrip("%"))
    if f[-1].startswith("gzip+0x"):
        funcs.add(f[-1])
        if int(f[-1][7:], 16) in fdes:
            named += share
        else:
            bad += share
    elif f[-1] == "[gzip]":
        unnamed += share
print(f"{named:.1f} {bad:.1f} {unnamed:.1f} {len(funcs)}")
PY
)
read -r named bad unnamed nfuncs <<< "$res"
if awk -v n="$named" -v b="$bad" -v u="$unnamed" -v k="$nfuncs" 'BEGIN { exit !(n >= 80 && b == 0 && u <= 2 && k >= 4) }'; then
	pass $t
else
	fail $t "flat share on FDE starts $named%, elsewhere $bad%, on [gzip] $unnamed%, $nfuncs functions"
fi

t=unwind_sort_reaches_root
od -An -tx4 "$TMP/rnd" | head -c 30000000 > "$TMP/sortin"
"$REC" -q -F 499 -o "$TMP/so" -- sort -o /dev/null "$TMP/sortin" 2>"$TMP/so.err"
r=$(root_share "$TMP/so/profile.pb.gz" sort)
if within "$r" 100 5; then pass $t; else fail $t "$r% of sort's samples reach the thread's start"; fi

# leafy: hot_leaf (no frame) called 2:1 by caller_two and caller_one. The
# frame-pointer walk cannot see a frameless leaf's caller; the CFI walk (the
# default) finds it, with no fix-up in user space.
t=unwind_leaf_callers_default
"$REC" -q -F 499 -o "$TMP/lf" -- "$WL/leafy" 2 2>/dev/null
"$PPROF" -top -cum -nodecount=20 "$TMP/lf/profile.pb.gz" > "$TMP/lf.top" 2>&1
two=$(awk '$NF == "caller_two" { sub("%", "", $5); print $5 }' "$TMP/lf.top")
one=$(awk '$NF == "caller_one" { sub("%", "", $5); print $5 }' "$TMP/lf.top")
read -r n walked < <(python3 -c 'import json,sys; p=[p for p in json.load(open(sys.argv[1]))["processes"] if p["comm"]=="leafy"][0]; print(p["samples"], p["cfi_walked"])' "$TMP/lf/summary.json")
if within "${two:-0}" 66.7 5 && within "${one:-0}" 33.3 5 && [ "${walked:-0}" -gt $((${n:-0} * 9 / 10)) ]; then
	pass $t
else
	fail $t "caller_two ${two:-0}% caller_one ${one:-0}% (want 67/33), ${walked:-0} of ${n:-0} samples walked by CFI"
fi

# --call-graph fp is the pure frame-pointer walk: no stack bytes go with a
# record (the 512 copied at sp are the walk's first window, not sent), so
# records stay at header + frames.
t=unwind_fp_records_small
"$REC" -q -F 499 --call-graph fp -o "$TMP/lffp" -- "$WL/leafy" 2 2>/dev/null
read -r bytes n < <(python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(s["sample_bytes"], s["samples"])' "$TMP/lffp/summary.json")
per=$((bytes / (n > 0 ? n : 1)))
if [ "$n" -gt 0 ] && [ "$per" -lt 300 ]; then pass $t; else fail $t "$per bytes per sample over $n samples (want < 300)"; fi

t=unwind_split_dwarf_mode
"$REC" -q -F 499 --call-graph dwarf -o "$TMP/spd" -- "$WL/split" 3 > /dev/null 2>&1
"$PPROF" -top -nodecount=30 "$TMP/spd/profile.pb.gz" > "$TMP/spd.top" 2>&1
r=$(root_share "$TMP/spd/profile.pb.gz" split)
check_split unwind_split_dwarf_mode "$TMP/spd.top" pprof_flat
t=unwind_split_dwarf_root
if within "$r" 100 3; then pass $t; else fail $t "$r% reach the root"; fi

# File and line from the workload's DWARF (libdw): each function's samples sit
# on lines of its own body, and the callers' on the lines that call them.
t=unwind_source_lines
body() { # FUNC FILE: first and last line of FUNC's definition
	awk -v f="$1" '$0 ~ "void " f "\\(" { s = NR } s && !e && /^}/ { e = NR } END { print s, e }' "$2"
}
"$PPROF" -top -lines -nodecount=60 "$TMP/spd/profile.pb.gz" > "$TMP/spd.lines" 2>&1
bad=""
for fn in func_six func_three; do
	read -r lo hi < <(body $fn "$ROOT/tests/workloads/split.c")
	# The flat share of FUNC on lines inside its body.
	share=$(awk -v f=$fn -v lo="$lo" -v hi="$hi" '$NF ~ /split\.c:[0-9]+$/ && $(NF-1) == f {
		n = $NF; sub(/.*:/, "", n); if (n + 0 >= lo && n + 0 <= hi) { sub("%", "", $2); s += $2 } } END { print s + 0 }' "$TMP/spd.lines")
	case $fn in func_six) want=60 ;; *) want=30 ;; esac
	within "$share" $want 5 || bad="$bad $fn:${share}%@$lo-$hi"
done
# worker's rows: on the lines that call func_six and func_three.
sites=$(grep -nE "(func_six|func_three)\(" "$ROOT/tests/workloads/split.c" | grep -v void | cut -d: -f1 | tr '\n' ' ')
calls=$(awk -v sites=" $sites" '$(NF-1) == "worker" && $NF ~ /split\.c:/ { n = $NF; sub(/.*:/, "", n); if (index(sites, " " n " ")) c++ } END { print c + 0 }' "$TMP/spd.lines")
if [ -z "$bad" ] && [ "$calls" -ge 2 ]; then pass $t; else fail $t "lines:$bad; worker rows on call sites ($sites): $calls (want >= 2)"; fi

# The legacy file keeps deep DWARF stacks: gzip's frames under libc's root.
t=unwind_gperftools_deep
prof=$(ls "$TMP"/gz/cpu-*.prof | grep -E '/cpu-[0-9]+\.prof$' | head -1) # the command's image, not an earlier one's
n=$("$PPROF" -traces /usr/bin/gzip "$prof" 2>/dev/null | grep -c "__libc_start_call_main")
total=$(python3 -c 'import json,sys; print([p["samples"] for p in json.load(open(sys.argv[1]))["processes"] if p["comm"]=="gzip"][0])' "$TMP/gz/summary.json")
if [ "$n" -gt 0 ]; then pass $t; else fail $t "no stack in cpu-PID.prof reaches __libc_start_call_main ($total samples)"; fi

# Frame-pointer chains longer than one read of the stack: 60 frames of 256
# bytes (15 KiB). Every frame is there, and BPF walked them itself (the
# kernel's walk, its fallback, costs several times more per sample).
# traces_depths PROFILE LEAF FUNC: per trace whose leaf is LEAF, its weight
# in ms, how many frames it has and how many of them are FUNC.
traces_depths() {
	"$PPROF" -traces -unit=ms "$1" 2>/dev/null | awk -v leaf="$2" -v f="$3" '
		function out() { if (first == leaf) print w, n, c; n = 0; c = 0; first = "" }
		/^-+\+/ { out(); next }
		/^ +[a-z]+: / { next }
		NF == 2 { w = $1 + 0 }
		NF { name = $NF; if (!n) first = name; n++; if (name == f) c++ }
		END { out() }'
}
t=unwind_fp_deep_chain
"$REC" -q -F 499 --call-graph fp -o "$TMP/deep" -- "$WL/deep" 60 256 2 > /dev/null 2>&1
traces_depths "$TMP/deep/profile.pb.gz" bottom level > "$TMP/deep.depths"
read -r all full < <(awk '{ a += $1 } $3 == 60 { f += $1 } END { printf "%d %d\n", a, f }' "$TMP/deep.depths")
r=$(root_share "$TMP/deep/profile.pb.gz" deep)
if [ "$all" -gt 0 ] && [ $((full * 100)) -ge $((all * 95)) ] && within "$r" 100 3; then
	pass $t
else
	fail $t "$full of $all ms hold all 60 level frames (want >= 95%), $r% reach the root"
fi
t=unwind_fp_deep_in_bpf
read -r kw n < <(python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(s["user_stacks_walked_by_kernel"], s["samples"])' "$TMP/deep/summary.json")
if [ "$n" -gt 0 ] && [ $((kw * 20)) -le "$n" ]; then pass $t; else fail $t "$kw of $n user stacks walked by bpf_get_stack (want <= 5%)"; fi

# A chain deeper than --max-stack is cut at that many user frames, leaf
# first, and ends in a [truncated] frame.
t=unwind_fp_depth_limit
"$REC" -q -F 499 --call-graph fp --max-stack 127 -o "$TMP/deeper" -- "$WL/deep" 300 64 1 > /dev/null 2>&1
read -r all cut over < <(traces_depths "$TMP/deeper/profile.pb.gz" bottom level |
	awk '{ a += $1 } $2 == 128 && $3 == 126 { c += $1 } $2 > 128 { o++ } END { printf "%d %d %d\n", a, c, o }')
tr=$("$PPROF" -traces "$TMP/deeper/profile.pb.gz" 2>/dev/null | grep -c '^ *\[truncated\]$')
if [ "$all" -gt 0 ] && [ $((cut * 100)) -ge $((all * 95)) ] && [ "$over" = 0 ] && [ "$tr" -gt 0 ]; then
	pass $t
else
	fail $t "$cut of $all ms are in traces of bottom + 126 level frames + [truncated] (want >= 95%), $over traces over 128, $tr [truncated]"
fi
