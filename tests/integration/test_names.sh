#!/usr/bin/env bash
# Names people read (issue 14): C++ demangled in every file, -t matching any
# name at an address, read back by the real readers.
source "$(dirname "$0")/lib.sh"

ALL=(names_cxx_pprof_demangled names_cxx_pprof_system_name names_cxx_split
	names_cxx_gperftools names_cxx_xray names_cxx_folded names_jit_cxx_pprof names_jit_cxx_xray
	names_jit_cxx_folded names_trace_free_alias names_trace_alias_once names_pprof_svg
	names_all_no_program names_go_split names_go_lines names_go_new_split names_go_new_lines)
require_bpf "${ALL[@]}"

# Sum of flat% of the -top rows whose name contains STR (names hold spaces).
flat_of() { # STR < pprof -top output
	awk -v f="$1" '$2 ~ /%$/ && index($0, f) { sub("%", "", $2); s += $2 } END { print s + 0 }'
}

# cxxsplit: void geo::inner::sweep<int>(std::vector<int, ...>&, unsigned
# long) 6, sweep<double> 3, geo::Box<long>::turn(std::__cxx11::basic_string
# ...) 1.
"$REC" -q -F 499 -o "$TMP/cxx" -- "$WL/cxxsplit" 3 >/dev/null 2>"$TMP/cxx.err"
P=$TMP/cxx/profile.pb.gz
# pprof -raw's locations: "ID: ADDR M=N NAME FILE:LINE s=START(SYSTEM_NAME)",
# the system name shown where it differs from the name.
"$PPROF" -raw "$P" 2>/dev/null | sed -n '/^Locations/,/^Mappings/p' > "$TMP/cxx.raw"
t=names_cxx_pprof_demangled
names=$(sed 's/ s=[0-9]*(.*)$//; s/ s=[0-9]*$//' "$TMP/cxx.raw")
if grep -q 'void geo::inner::sweep<int>(std::vector<int, std::allocator<int> >&, unsigned long)' <<<"$names" &&
	grep -q 'geo::Box<long>::turn(std::' <<<"$names" && ! grep -q '_Z' <<<"$names"; then
	pass $t
else
	fail $t "want demangled geo:: names with std:: and no _Z in the functions' names"
	grep -m5 'geo\|_Z' "$TMP/cxx.raw" >&2
fi
t=names_cxx_pprof_system_name
if grep -q 'sweep<int>.*s=[0-9]*(_ZN3geo5inner5sweepIiEEvRSt6vectorIT_SaIS3_EEm)' "$TMP/cxx.raw" &&
	grep -q 'Box<long>::turn.*s=[0-9]*(_ZN3geo3BoxIlE4turnE' "$TMP/cxx.raw"; then
	pass $t
else
	fail $t "the mangled names are not the functions' system_name"
	grep -m5 'geo' "$TMP/cxx.raw" >&2
fi
t=names_cxx_split
"$PPROF" -top -nodecount=20 "$P" > "$TMP/cxx.top" 2>&1
a=$(flat_of 'geo::inner::sweep<int>(' < "$TMP/cxx.top")
b=$(flat_of 'geo::inner::sweep<double>(' < "$TMP/cxx.top")
c=$(flat_of 'geo::Box<long>::turn(' < "$TMP/cxx.top")
if within "$a" 60 6 && within "$b" 30 5 && within "$c" 10 5; then pass $t; else
	fail $t "sweep<int> $a% sweep<double> $b% turn $c% (want 60/30/10)"; sed -n 1,12p "$TMP/cxx.top" >&2; fi

# The gperftools file holds addresses: its readers demangle by themselves
# (short names, the two sweep<> instances as one).
t=names_cxx_gperftools
if require_tool google-pprof $t; then
	prof=$(ls "$TMP"/cxx/cpu-*.prof)
	google-pprof --text "$WL/cxxsplit" "$prof" > "$TMP/cxx.gp" 2>/dev/null
	"$PPROF" -top "$WL/cxxsplit" "$prof" > "$TMP/cxx.sp" 2>/dev/null
	a=$(gpprof_flat geo::inner::sweep < "$TMP/cxx.gp")
	b=$(pprof_flat geo::inner::sweep < "$TMP/cxx.sp")
	if within "$a" 90 6 && within "$b" 90 6 && ! grep -q _Z "$TMP/cxx.gp" "$TMP/cxx.sp"; then
		pass $t
	else
		fail $t "geo::inner::sweep $a% (google-pprof), $b% (pprof); want 90, no _Z"
		sed -n 1,8p "$TMP/cxx.gp" >&2
	fi
fi

# The XRay map's symbols: llvm-xray demangles what it prints by itself, but
# the map's symbol table is read by other tools too (nm, without -C).
t=names_cxx_xray
if require_tool llvm-xray $t; then
	pid=$(ls "$TMP"/cxx/xray-*.map | sed 's/.*xray-\([0-9]*\)\.map/\1/')
	llvm-xray account -m "$TMP/cxx/xray-$pid.map" "$TMP/cxx/xray-$pid.fdr" > "$TMP/cxx.acc" 2>&1
	nm "$TMP/cxx/xray-$pid.map" > "$TMP/cxx.nm" 2>&1
	if grep -q 'void geo::inner::sweep<double>(std::vector<double' "$TMP/cxx.acc" &&
		grep -q 'geo::Box<long>::turn(std::' "$TMP/cxx.nm" && ! grep -q '_Z' "$TMP/cxx.nm"; then
		pass $t
	else
		fail $t "the XRay map holds no demangled geo:: names, or a _Z one"
		head -5 "$TMP/cxx.acc" >&2
		grep -m3 'geo\|_Z' "$TMP/cxx.nm" >&2
	fi
fi

# stacks.folded: the names as profile.pb.gz has them.
t=names_cxx_folded
if grep -q ';void geo::inner::sweep<int>(std::vector<int, std::allocator<int> >&, unsigned long) [0-9]*$' "$TMP/cxx/stacks.folded" &&
	! grep -q '_Z' "$TMP/cxx/stacks.folded"; then
	pass $t
else
	fail $t "stacks.folded has no demangled geo::inner::sweep<int> leaf, or a _Z name"
	grep -m3 'geo\|_Z' "$TMP/cxx/stacks.folded" >&2
fi

# JIT code that a perf map names with a C++ mangled name: demangled as
# symbols are, the same in every file, the mangled one the system name.
# pprof -symbolize=none: the file's own names, not pprof's demangling.
exec {fd}< <(exec "$WL/jitspin")
p=$!
read -r -u $fd addr
printf '%s 2 _ZN2ns3Jit7hotLoopEv\n' "$addr" > "/tmp/perf-$p.map"
"$REC" -q -F 199 -d 1 -o "$TMP/jit" -p "$p" 2>"$TMP/jit.err"
kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; rm -f "/tmp/perf-$p.map"
"$PPROF" -raw -symbolize=none "$TMP/jit/profile.pb.gz" 2>/dev/null | sed -n '/^Locations/,/^Mappings/p' > "$TMP/jit.raw"
t=names_jit_cxx_pprof
if grep -q ' ns::Jit::hotLoop() :0 s=[0-9]*(_ZN2ns3Jit7hotLoopEv)$' "$TMP/jit.raw"; then
	pass $t
else
	fail $t "want the JIT frame named ns::Jit::hotLoop(), system name _ZN2ns3Jit7hotLoopEv"
	cat "$TMP/jit.raw" "$TMP/jit.err" >&2
fi
t=names_jit_cxx_xray
if require_tool llvm-xray $t; then
	nm "$TMP/jit/xray-$p.map" > "$TMP/jit.nm" 2>&1
	llvm-xray account -m "$TMP/jit/xray-$p.map" "$TMP/jit/xray-$p.fdr" > "$TMP/jit.acc" 2>&1
	if grep -q ' T ns::Jit::hotLoop()$' "$TMP/jit.nm" && ! grep -q '_Z' "$TMP/jit.nm" &&
		grep -q ' ns::Jit::hotLoop()$' "$TMP/jit.acc"; then
		pass $t
	else
		fail $t "the XRay map does not name the JIT code ns::Jit::hotLoop(), or has a _Z name"
		cat "$TMP/jit.nm" >&2
	fi
fi
t=names_jit_cxx_folded
if grep -q '^jitspin;.*;ns::Jit::hotLoop() [0-9]*$' "$TMP/jit/stacks.folded" && ! grep -q '_Z' "$TMP/jit/stacks.folded"; then
	pass $t
else
	fail $t "stacks.folded has no ns::Jit::hotLoop() leaf, or a _Z name"
	cat "$TMP/jit/stacks.folded" >&2
fi

# -t 'libc.so.6:free': libc's .dynsym has __libc_free, free@@GLIBC_2.2.5
# and cfree at one address; only one name was kept ("no function
# matches"). Counted against bpftrace's uprobe on the same calls, both
# attached before the workload's N frees start.
N=5000
LIBC=$(ldd "$WL/frees" | awk '$1 == "libc.so.6" { print $3 }')
# Runs frees N under bpftrace's uprobe on free and bpftrace-rec -v with the
# -t options given, both attached before the frees start; sets bt and rec
# to their counts, and the record's output in $TMP/NAME.
count_frees() { # NAME -t SPEC...
	local name=$1 wpid btpid recpid
	shift
	exec 3< <("$WL/frees" $N; echo done)
	read -r -u 3 _ready wpid
	bpftrace -e "uprobe:$LIBC:free /pid == $wpid/ { @n = count(); }" > "$TMP/$name.bt" 2>&1 &
	btpid=$!
	"$REC" -v -o "$TMP/$name" "$@" -p "$wpid" > "$TMP/$name.out" 2>&1 &
	recpid=$!
	for _ in $(seq 100); do
		grep -q Attaching "$TMP/$name.bt" && grep -q 'recording' "$TMP/$name.out" && break
		sleep 0.1
	done
	kill -USR1 "$wpid"
	read -r -u 3 _done
	exec 3<&-
	wait "$recpid"
	# A background job of a script starts with SIGINT ignored, and
	# bpftrace still attaching has no handler yet: an INT then is lost
	# and the wait never ends (a CI run hung here). SIGTERM after 5 s
	# (bpftrace prints its maps on either).
	kill -INT "$btpid"
	for _ in $(seq 50); do kill -0 "$btpid" 2>/dev/null || break; sleep 0.1; done
	kill -TERM "$btpid" 2>/dev/null
	wait "$btpid"
	bt=$(awk '/^@n:/ { print $2 }' "$TMP/$name.bt")
	rec=$(llvm-xray account -m "$TMP"/$name/xray-*.map "$TMP"/$name/xray-trace-*.fdr 2>/dev/null |
		awk '$NF == "free" || $NF == "__libc_free" { n += $2 } END { print n + 0 }')
}
t=names_trace_free_alias
if ! require_tool bpftrace $t; then
	:
elif [ -z "$LIBC" ]; then
	fail $t "no libc.so.6 in ldd $WL/frees"
else
	count_frees free -t 'libc.so.6:free'
	# -v names what was attached: the function and its offset in libc.
	if [ -n "$bt" ] && [ "$bt" = "$rec" ] && at_least "$bt" $N &&
		grep -q -- "-t free: __libc_free at 0x[0-9a-f]* (file offset) in .*libc.so.6" "$TMP/free.out"; then
		pass $t
	else
		fail $t "bpftrace counted ${bt:-nothing}, -t ${rec:-nothing} calls of free (want equal, >= $N)"
		grep -i 'free\|error' "$TMP/free.out" >&2
	fi
fi
# One probe per address, whatever the names and patterns naming it: the
# default version's name (free@@GLIBC_2.2.5), an old version's alias
# (cfree@GLIBC_2.2.5, by its bare name) and the internal one.
t=names_trace_alias_once
if require_tool bpftrace $t && [ -n "$LIBC" ]; then
	count_frees once -t 'libc.so.6:free@@GLIBC_2.2.5' -t 'libc.so.6:cfree' -t 'libc.so.6:__libc_free'
	probes=$(grep -c -- "-t .*: __libc_free at" "$TMP/once.out")
	if [ -n "$bt" ] && [ "$bt" = "$rec" ] && at_least "$bt" $N && [ "$probes" = 1 ]; then
		pass $t
	else
		fail $t "bpftrace counted ${bt:-nothing}, -t ${rec:-nothing} calls; $probes probes on free (want equal counts, 1 probe)"
		grep -i 'free\|error' "$TMP/once.out" >&2
	fi
fi

# pprof -svg (and -http's graph) run graphviz's dot, which make deps installs.
t=names_pprof_svg
if require_tool dot $t; then
	"$PPROF" -svg "$P" > "$TMP/cxx.svg" 2>"$TMP/svg.err"
	if grep -q '<svg' "$TMP/cxx.svg" && grep -q 'geo::inner::sweep' "$TMP/cxx.svg"; then
		pass $t
	else
		fail $t "pprof -svg made no SVG naming geo::inner::sweep"
		head -3 "$TMP/svg.err" >&2
	fi
fi

# -a: a profile of every process has no program; pprof named the first
# mapping's ("File: gzip", whatever had the most samples). -- and -p keep
# theirs (test_capture's profile_names_program).
t=names_all_no_program
"$WL/split" 3 >/dev/null &
wpid=$!
"$REC" -q -a -F 99 -d 1 -o "$TMP/all" 2>"$TMP/all.err"
wait $wpid
"$PPROF" -top -nodecount=5 "$TMP/all/profile.pb.gz" > "$TMP/all.top" 2>&1
split=$(pprof_flat func_six < "$TMP/all.top")
if ! grep -q '^File:' "$TMP/all.top" && grep -q '^Type: cpu' "$TMP/all.top" && at_least "$split" 1; then
	pass $t
else
	fail $t "$(grep '^File:' "$TMP/all.top"), func_six $split%"
	head -4 "$TMP/all.top" >&2
fi

# Go: names from .symtab, file and line from .gopclntab (libdw reads no line
# of Go's DWARF). gowork: main.funcB 3 units (its loop on gowork.go lines
# 30-31), main.funcA 1. Built by Debian's Go 1.19 (gowork, names_go_*) and by
# the newer Go at /usr/local/go (gowork-go-new, names_go_new_*), whose table
# no longer holds its text start (the Makefile's GO119 and GO_NEW).
go_names() { # BINARY TEST-PREFIX
	local bin=$1 p=$2 t G b a in_loop
	if [ ! -x "$bin" ]; then
		for t in ${p}_split ${p}_lines; do
			if [ "${CI:-}" = true ]; then fail $t "no $bin"; else skip $t "no $bin (make deps; GO_NEW=)"; fi
		done
		return
	fi
	"$REC" -q -F 499 -o "$TMP/$p" -- "$bin" 3 >/dev/null 2>"$TMP/$p.err"
	G=$TMP/$p/profile.pb.gz
	t=${p}_split
	"$PPROF" -top -nodecount=10 "$G" > "$TMP/$p.top" 2>&1
	b=$(pprof_flat main.funcB < "$TMP/$p.top")
	a=$(pprof_flat main.funcA < "$TMP/$p.top")
	if within "$b" 75 6 && within "$a" 25 6; then pass $t; else
		fail $t "main.funcB $b% main.funcA $a% (want 75/25)"; sed -n 1,10p "$TMP/$p.top" >&2; fi
	t=${p}_lines
	# pprof -list: "ROUTINE ... main.funcB in .../gowork.go", then a row
	# per line, "FLAT CUM LINE: SOURCE"; the loop's two lines hold funcB's
	# samples.
	"$PPROF" -list '^main\.funcB$' "$G" > "$TMP/$p.list" 2>&1
	in_loop=$(awk '$3 == "30:" || $3 == "31:" { if ($1 != ".") n++ } END { print n + 0 }' "$TMP/$p.list")
	if grep -q 'ROUTINE.*main.funcB in .*tests/workloads/gowork.go' "$TMP/$p.list" &&
		[ "$in_loop" = 2 ] && grep -q 'x += uint64(i)' "$TMP/$p.list"; then
		pass $t
	else
		fail $t "pprof -list main.funcB shows no samples on gowork.go:30-31"
		head -12 "$TMP/$p.list" >&2
	fi
}
go_names "$WL/gowork" names_go
go_names "$WL/gowork-go-new" names_go_new
