#!/usr/bin/env bash
# Runs libFuzzer targets (make fuzz builds them into build/fuzz/fuzz_NAME):
# each for FUZZ_SECONDS (default 30), from the small seeds committed in
# tests/fuzz/corpus/NAME plus seeds gathered here from files on the machine
# (../shared/fixtures, /proc/self/maps, /proc/kallsyms, the build's
# workloads), and the corpus earlier runs grew in build/fuzz/work/NAME.
# The committed seeds: jitdump and xray_fdr files written by the formats' own
# writers, perfmap, procmaps and kallsyms lines written by hand, and two
# 1-2 KB static ELF programs (with .symtab, and stripped) for symbols; the
# gopclntab seeds are the Go workloads' tables, cut out here; the pyline seeds
# are real line tables of CPython 3.8-3.13 (tests/unit/pyline_vectors.txt);
# the pybinary seed is described in fuzz_pybinary.c, and the programs that
# only look like CPython (build/tests/fake_python_*) are gathered here.
# Targets run FUZZ_JOBS at a time (default nproc). Prints "PASS fuzz_NAME"
# or "FAIL fuzz_NAME" per target, in order, then
# "N passed, N failed"; fails when a target found a crash, a leak, a
# sanitizer report or a slow input (the input is in build/fuzz/artifacts/NAME).
set -u
cd "$(dirname "$0")/../.."
secs=${FUZZ_SECONDS:-30}
pass=0 fail=0

gather() { # NAME DIR: seeds that exist only on this machine
	local f
	case $1 in
	jitdump) cp ../shared/fixtures/jitdump/* "$2"/ 2>/dev/null ;;
	perfmap) cp ../shared/fixtures/perfmap/* "$2"/ 2>/dev/null ;;
	procmaps)
		cat /proc/self/maps > "$2/self"
		cat /proc/1/maps > "$2/init" 2>/dev/null
		;;
	kallsyms) head -n 300 /proc/kallsyms > "$2/head" 2>/dev/null ;;
	gopclntab) # the Go programs' tables (Go 1.19's, 1.26's): ~250 KB each, not committed
		for f in build/workloads/gowork build/workloads/gowork-go-new; do
			[ -f "$f" ] && objcopy -O binary --only-section=.gopclntab "$f" "$2/${f##*/}"
		done
		;;
	stapsdt) # probe notes of Debian's own binaries (PostgreSQL, CPython)
		for f in /usr/lib/postgresql/15/bin/postgres /usr/bin/python3.11; do
			[ -f "$f" ] && objcopy --dump-section ".note.stapsdt=$2/${f##*/}" "$f" /dev/null 2>/dev/null
		done
		;;
	pybinary)
		for f in build/tests/fake_python_311 build/tests/fake_python_313; do
			[ -f "$f" ] && cp "$f" "$2/"
		done
		;;
	symbols)
		for f in build/workloads/calls build/workloads/libwork.so build/workloads/leafy; do
			[ -f "$f" ] && cp "$f" "$2/"
		done
		;;
	esac
	return 0
}

# fuzz_one BIN: one target for $secs; its verdict in build/fuzz/NAME.result.
fuzz_one() {
	local bin=$1 name work seeds art dirs rc
	name=${bin##*/fuzz_}
	work=build/fuzz/work/$name seeds=build/fuzz/seeds/$name art=build/fuzz/artifacts/$name
	rm -rf "$seeds" && mkdir -p "$work" "$seeds" "$art"
	gather "$name" "$seeds"
	dirs=("$work" "$seeds")
	[ -d "tests/fuzz/corpus/$name" ] && dirs+=("tests/fuzz/corpus/$name")
	# -timeout: an input a parser takes seconds over is a bug too.
	"$bin" -max_total_time="$secs" -timeout=10 -artifact_prefix="$art/" "${dirs[@]}" \
		> "build/fuzz/$name.log" 2>&1
	rc=$?
	{
		echo "== fuzz_$name (${secs}s)"
		grep -E '^(#[0-9]+ +DONE|Done [0-9]+ runs)' "build/fuzz/$name.log" | tail -n 1
		if [ $rc = 0 ]; then
			echo "PASS fuzz_$name"
		else
			echo "FAIL fuzz_$name: exit status $rc, log build/fuzz/$name.log, input in $art/"
			grep -E 'ERROR|runtime error|SUMMARY' "build/fuzz/$name.log" | head -n 5
		fi
	} > "build/fuzz/$name.result"
}

# The targets run FUZZ_JOBS at a time (default: one per CPU): each is one
# single-threaded process, and each still gets its whole FUZZ_SECONDS.
jobs=${FUZZ_JOBS:-$(nproc)}
mkdir -p build/fuzz
running=0
for bin in "$@"; do
	rm -f "build/fuzz/${bin##*/fuzz_}.result"
	fuzz_one "$bin" &
	running=$((running + 1))
	if [ $running -ge "$jobs" ]; then
		wait -n
		running=$((running - 1))
	fi
done
wait
for bin in "$@"; do
	r=build/fuzz/${bin##*/fuzz_}.result
	if [ -f "$r" ]; then
		cat "$r"
		grep -q '^PASS ' "$r" && pass=$((pass + 1)) || fail=$((fail + 1))
	else
		echo "FAIL fuzz_${bin##*/fuzz_}: no result (the runner died)"
		fail=$((fail + 1))
	fi
done
echo "$pass passed, $fail failed"
[ $fail = 0 ]
