#!/usr/bin/env bash
# Names at the edges of a binary (issue 21), in every file that names
# frames: the vdso's functions by its own symbols, PLT stubs as func@plt,
# glibc's signal trampoline as __restore_rt. The edges workload spends a
# third of its time in each (tests/workloads/edges.c).
source "$(dirname "$0")/lib.sh"

ALL=(edges_vdso edges_plt edges_restore_rt edges_no_wrong_name edges_xray_map edges_flame
	edges_gperftools_vdso edges_gperftools_plt edges_gperftools_restore_rt edges_gperftools_fde)
require_bpf "${ALL[@]}"

"$REC" -q -F 499 -o "$TMP/e" -- "$WL/edges" 3 2>"$TMP/e.err"
P=$TMP/e/profile.pb.gz
F=$TMP/e/stacks.folded
"$PPROF" -top -nodecount=40 -relative_percentages -tagfocus=comm=edges "$P" > "$TMP/top" 2>&1
"$PPROF" -traces -tagfocus=comm=edges "$P" > "$TMP/traces" 2>&1
grep '^edges;' "$F" > "$TMP/folded"

# Every sample under a function: its share of all of edges' samples in the
# folded stacks (each line ends in its count).
share() { # REGEX
	awk -v re="$1" '{ n = $NF; t += n; if ($0 ~ re) s += n } END { print t ? 100 * s / t : 0 }' "$TMP/folded"
}

# A third of the time is the vdso_phase's, most of it in the vdso.
t=edges_vdso
v=$(pprof_flat __vdso_clock_gettime < "$TMP/top")
vf=$(share ';__vdso_clock_gettime( |;)')
if at_least "$v" 10 && at_least "$vf" 10; then pass $t; else
	fail $t "__vdso_clock_gettime: $v% flat (pprof), $vf% (folded); want >= 10"; sed -n 1,15p "$TMP/top" >&2; fi

# lib_nop() in a loop: its stub is the leaf of some samples, always
# called by plt_phase.
t=edges_plt
p=$(pprof_flat lib_nop@plt < "$TMP/top")
bad=$(grep -c ';lib_nop@plt' "$TMP/folded" | tr -d ' ')
good=$(grep -c ';plt_phase;lib_nop@plt' "$TMP/folded" | tr -d ' ')
if at_least "$p" 2 && [ "$good" -gt 0 ] && [ "$good" = "$bad" ]; then pass $t; else
	fail $t "lib_nop@plt $p% flat; $good of $bad folded stacks have it under plt_phase"; fi

# Every stack through the handler has __restore_rt as its caller, in both
# files (all of them, not a share).
t=edges_restore_rt
all=$(grep -c ';on_signal' "$TMP/folded" | tr -d ' ')
rt=$(grep -c ';__restore_rt;on_signal' "$TMP/folded" | tr -d ' ')
s=$(share ';on_signal')
pt=$(awk '/-----------/ { if (h && !r) bad++; h = r = 0; next } $NF == "on_signal" { h = 1; getline; if ($NF == "__restore_rt") r = 1 } END { print bad + 0 }' "$TMP/traces")
if at_least "$s" 10 && [ "$all" -gt 0 ] && [ "$rt" = "$all" ] && [ "$pt" = 0 ]; then pass $t; else
	fail $t "on_signal $s% of samples; $rt of $all folded stacks and all but $pt pprof traces have __restore_rt under it"
	grep ';on_signal' "$TMP/folded" | grep -v '__restore_rt;on_signal' | head -3 >&2
fi

# What they were named before: the object, or the symbol before the stub.
# A whole frame so named: "x;NAME;y" or "x;NAME 12" in the folded stacks,
# a line of its own in pprof -traces (_dl_init is another function).
t=edges_no_wrong_name
wrong='(\[vdso\]|_init|libc\.so\.6\+0x[0-9a-f]+)'
if ! grep -Eq ";$wrong( [0-9]+\$|;)" "$TMP/folded" && ! grep -Eq "^ +([0-9.]+[a-z]*s +)?$wrong\$" "$TMP/traces"; then
	pass $t
else
	fail $t "[vdso], _init or libc.so.6+0x... still names a frame"
	grep -Eo ";$wrong( [0-9]+\$|;)" "$TMP/folded" | sort | uniq -c >&2
fi

# The XRay map's symbol table (what llvm-xray names the timelines by).
t=edges_xray_map
pid=$(ls "$TMP"/e/xray-*.map 2>/dev/null | head -1)
if [ -n "$pid" ] && nm "$pid" > "$TMP/nm" 2>&1 &&
	grep -q ' __vdso_clock_gettime$' "$TMP/nm" && grep -q ' lib_nop@plt$' "$TMP/nm" &&
	grep -q ' __restore_rt$' "$TMP/nm" && ! grep -q '\[vdso\]\| _init$' "$TMP/nm"; then
	pass $t
else
	fail $t "the XRay map does not name __vdso_clock_gettime, lib_nop@plt and __restore_rt"
fi

t=edges_flame
H=$TMP/e/flamegraph.html
if grep -q '__vdso_clock_gettime' "$H" && grep -q 'lib_nop@plt' "$H" && grep -q '__restore_rt' "$H" &&
	! grep -q '\[vdso\]' "$H"; then pass $t; else
	fail $t "flamegraph.html does not name the three"; fi

# cpu-PID.prof holds addresses, named by its readers from the files its
# mapping lines point to: the vdso's image is written as vdso-PID.so for
# them (they pick either alias: clock_gettime or __vdso_clock_gettime).
t=edges_gperftools_vdso
if require_tool google-pprof $t; then
	prof=$(ls "$TMP"/e/cpu-*.prof | head -1)
	google-pprof --text "$WL/edges" "$prof" > "$TMP/gp" 2>/dev/null
	v=$(awk '($NF == "clock_gettime" || $NF == "__vdso_clock_gettime") && $2 ~ /%$/ { sub("%", "", $2); s += $2 } END { print s + 0 }' "$TMP/gp")
	if at_least "$v" 10 && ! grep -q ' 0x0000' "$TMP/gp"; then pass $t; else
		fail $t "the vdso's function has $v% flat in google-pprof --text, or an address is unnamed"; head -8 "$TMP/gp" >&2; fi
fi

# Its PLT stubs are named by names-PID.so, which the mapping lines point to
# over the binary's PLT: every sample whose user leaf is the stub in the
# folded stacks is lib_nop@plt's, in both readers. Before, they read _init
# (the symbol before .plt), the stub's own name nowhere.
t=edges_gperftools_plt
if require_tool google-pprof $t; then
	prof=$(ls "$TMP"/e/cpu-*.prof | head -1)
	want=$(awk '{ n = $NF; sub(/ [0-9]+$/, ""); k = split($0, f, ";"); while (k > 0 && f[k] ~ /_\[k\]$/) k--
		if (f[k] == "lib_nop@plt") s += n } END { print s + 0 }' "$TMP/folded")
	google-pprof --text "$WL/edges" "$prof" > "$TMP/gp" 2>/dev/null
	"$PPROF" -top -sample_index=samples "$WL/edges" "$prof" > "$TMP/gtop" 2>/dev/null
	g=$(awk '$NF == "lib_nop@plt" { print $1 }' "$TMP/gp")
	pp=$(awk '$NF == "lib_nop@plt" { print $1 }' "$TMP/gtop")
	if [ "$want" -gt 0 ] && [ "$g" = "$want" ] && [ "$pp" = "$want" ] &&
		! grep -q ' _init$' "$TMP/gp" "$TMP/gtop"; then pass $t; else
		fail $t "lib_nop@plt: ${g:-no} samples in google-pprof, ${pp:-no} in pprof, $want in the folded stacks (or _init names a frame)"
		head -8 "$TMP/gp" "$TMP/gtop" >&2
	fi
fi

# glibc's signal trampoline too: every sample through it, in both readers
# (its cumulative count). Before, pprof read [libc.so.6] (libc has no
# symbol for it; google-pprof found one in libc's debug file).
t=edges_gperftools_restore_rt
if require_tool google-pprof $t; then
	want=$(awk '{ n = $NF; if ($0 ~ /;__restore_rt(;| [0-9]+$)/) s += n } END { print s + 0 }' "$TMP/folded")
	g=$(awk '$NF == "__restore_rt" { print $4 }' "$TMP/gp")
	pp=$(awk '$NF == "__restore_rt" { print $4 }' "$TMP/gtop")
	if [ "$want" -gt 0 ] && [ "$g" = "$want" ] && [ "$pp" = "$want" ]; then pass $t; else
		fail $t "__restore_rt: ${g:-no} samples in google-pprof, ${pp:-no} in pprof, $want in the folded stacks"; fi
fi

# A stripped library's functions that no symbol covers are named by their
# FDE's start in profile.pb.gz (libz.so.1+0x4710), and in cpu-PID.prof by
# names-PID.so, whose functions cover their FDEs' ranges. Before, pprof read
# [libz.so.1.2.13] and google-pprof the .dynsym symbol before them
# (crc32_combine_op@@ZLIB_1.2.12 for deflate's internals): wrong names.
# Every name both readers show is one profile.pb.gz shows (or an alias at
# its address, or a name of a build-id debug file: the readers read those,
# libc6-dbg's, and unfold inlined calls, which profile.pb.gz does not), and
# each FDE-named function's samples (cumulative) agree in all three.
t=edges_gperftools_fde
if require_tool google-pprof $t && require_tool /usr/bin/python3 $t; then
	"$REC" -q -F 499 -o "$TMP/z" -- /usr/bin/python3 -c '
import os, time, zlib
d = os.urandom(1 << 15) + bytes(1 << 16)
t = time.time()
while time.time() - t < 2:
    zlib.compress(d, 6)' 2>"$TMP/z.err"
	prof=$(ls "$TMP"/z/cpu-*.prof 2>/dev/null | head -1)
	all=(-nodefraction=0 -nodecount=100000 -sample_index=samples)
	"$PPROF" -top "${all[@]}" "$TMP/z/profile.pb.gz" > "$TMP/z.pb" 2>/dev/null
	"$PPROF" -top "${all[@]}" /usr/bin/python3 "$prof" > "$TMP/z.pp" 2>/dev/null
	google-pprof --text --nodefraction=0 --nodecount=100000 /usr/bin/python3 "$prof" > "$TMP/z.gp" 2>/dev/null
	if out=$(/usr/bin/python3 - "$TMP/z.pb" "$TMP/z.gp" "$TMP/z.pp" "$prof" <<'PY'
import re, subprocess, sys
pb, gp, pp, prof = sys.argv[1:5]

def cums(path):  # name -> cumulative samples, from pprof -top / google-pprof --text
    out = {}
    for l in open(path):
        m = re.match(r'\s*\d+\s+\S+%\s+\S+%\s+(\d+)\s+\S+%\s+(.*\S)\s*$', l)
        if m:
            out[m.group(2)] = int(m.group(1))
    return out

def plain(n):  # memcpy@@GLIBC_2.14, systrim.constprop.0: memcpy, systrim
    return re.sub(r'(\.(constprop|isra|part|cold)\.?[0-9]*)+$', '', re.sub(r'@@?[\w.]+$', '', n))

def short(n):  # as the readers show a name: <...> cut, as C++ templates are
    while True:  # (Python's FileFinder.path_hook.<locals>.f: FileFinder.path_hook..f)
        m = re.sub(r'<[^<>]*>', '', n)
        if m == n:
            return n
        n = m

P, G, Q = cums(pb), cums(gp), cums(pp)
have = {plain(n) for n in P} | {plain(short(n)) for n in P}
known = {plain(n[:-len(' (inline)')]) for n in Q if n.endswith(' (inline)')}
alias = {}
for f in set(re.findall(rb'^[0-9a-f]+-[0-9a-f]+ r.x. \S+ \S+ \d+ +(/\S+)$', open(prof, 'rb').read(), re.M)):
    f = f.decode()
    bid = re.search(r'Build ID: ([0-9a-f]+)', subprocess.run(['readelf', '-n', f], capture_output=True, text=True).stdout)
    for args in (['-D', f], [f'/usr/lib/debug/.build-id/{bid[1][:2]}/{bid[1][2:]}.debug'] if bid else []):
        at = {}
        for l in subprocess.run(['nm', '--defined-only'] + args, capture_output=True, text=True).stdout.splitlines():
            w = l.split()
            if len(w) == 3 and w[1] in 'tTWiw':
                at.setdefault(w[0], set()).add(plain(w[2]))
                if args[0] != '-D':
                    known.add(plain(w[2]))
        for g in at.values():
            for n in g:
                alias.setdefault(n, set()).update(g)
bad = []
maps = re.findall(rb'^([0-9a-f]+)-([0-9a-f]+) (\S+ \S+ \S+ \d+ +\S*)$', open(prof, 'rb').read(), re.M)
for reader, R in (('google-pprof', G), ('pprof', Q)):
    for n in R:
        s = plain(n.removesuffix(' (inline)'))
        # "[libm.so.6]": the reader naming nothing, not a wrong name (seen
        # once in CI, 1 sample in libm: why names-PID.so did not name
        # that frame is not known).
        if re.fullmatch(r'\[[^]]+\]', s):
            continue
        # A bare address (0x00007fc411105504, 1 sample of ~1,000, twice in
        # CI, not reproduced in 5 runs here; cause not found): a failure,
        # said with the cpu-PID.prof mapping line that holds it, if any.
        if re.fullmatch(r'0x[0-9a-f]+', s):
            a = int(s, 16)
            m = [l.decode() for lo, hi, l in maps if int(lo, 16) <= a < int(hi, 16)]
            bad.append(f'{reader} left {s} unnamed ({R[n]} samples; its mapping in the profile: {m[0] if m else "none"})')
            continue
        if s not in have and not alias.get(s, set()) & have and s not in known:
            bad.append(f'{reader} names {n} ({R[n]} samples), which profile.pb.gz does not')
fde = [n for n in P if re.fullmatch(r'\S+\+0x[0-9a-f]+', n)]
# Exact counts for libz's, the library under test (every one of them).
for n in fde:
    if n.startswith('libz.so') and (G.get(n) != P[n] or Q.get(n) != P[n]):
        bad.append(f'{n}: {P[n]} samples in profile.pb.gz, {G.get(n)} in google-pprof, {Q.get(n)} in pprof')
libz = sum(P[n] for n in fde if n.startswith('libz.so'))
if libz < 100:
    bad.append(f'libz.so.1+0x... has {libz} cumulative samples in profile.pb.gz; want >= 100')
print('\n'.join(bad[:8]) or f'{len(fde)} FDE-named functions, {libz} cumulative samples in libz.so.1+0x...')
sys.exit(1 if bad else 0)
PY
	); then pass "$t ($out)"; else
		fail $t "$out"; fi
fi
