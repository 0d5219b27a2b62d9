#!/usr/bin/env bash
# Runs every test: the unit tests of formats/ (build/tests/test_*), then the
# integration tests (tests/integration/test_*.sh), which record real
# workloads with BPF and read the files back with pprof, google-pprof and
# llvm-xray. Each test prints "PASS name", "FAIL name" or "SKIP name: why";
# this script counts them and ends with "N passed, N failed, N skipped".
# Run it after `make` (`make test` does both). TESTS=pattern runs a subset
# (the tests whose file name holds it, or one of its words: TESTS="window
# stop"; one that names none fails the run).
# BPFTRACE_REC_BUILD (build directory, default build) and BPFTRACE_REC (the
# binary, default ./bpftrace-rec) choose the build under test; SANITIZE=1 says
# it is the sanitizer build (make test SANITIZE=1).
set -u
cd "$(dirname "$0")/.."
pass=0 fail=0 skip=0
failed=()
times=()
pattern=${TESTS:-}
export BPFTRACE_REC_BUILD=${BPFTRACE_REC_BUILD:-build}
export BPFTRACE_REC=${BPFTRACE_REC:-bpftrace-rec}
build=$BPFTRACE_REC_BUILD
# Rows of the fault table (tests/integration/lib.sh: fault_case).
mkdir -p "$build" && : > "$build/faults.tsv"

# Sanitizer build: a report stops the program with status 99, and is also
# written under $build/san-reports/, because several integration tests expect
# the tool to fail and would take any non-zero status for the failure they
# provoked; any file there at the end fails the run.
san_dir=
if [ "${SANITIZE:-}" = 1 ]; then
	san_dir=$(cd "$build" && pwd)/san-reports
	rm -rf "$san_dir" && mkdir -p "$san_dir"
	# A 16 MiB quarantine of freed memory (default 256): recent frees
	# are still caught, and memory-flatness tests (the flight recorder)
	# measure the tool rather than ASan holding every freed chunk.
	export ASAN_OPTIONS="halt_on_error=1:exitcode=99:detect_leaks=1:quarantine_size_mb=16:log_path=$san_dir/asan"
	export UBSAN_OPTIONS="halt_on_error=1:exitcode=99:print_stacktrace=1:log_path=$san_dir/ubsan"
fi

# Left out of the sanitizer pass (make test SANITIZE=1, CI's second pass):
# tests of what the kernel side does (what BPF walks, which features load)
# and test_jitguide, whose recorder paths test_jit runs; the recorder code
# they drive runs in every other test's recordings. ~70 s of CI. And
# test_fleet_faults, 1.5 minutes of wall time (a 20 s and an 8 s outage):
# the push code's refusals, retries and spool run under the sanitizers in
# test_fleet (a 401, a receiver down), test_pyroscope and test_spool. The
# normal pass runs them all.
# test_heap too: its totals are estimates from samples the drain must keep
# up with, and under ASan it fell behind (lost samples, counted: -20 % of the
# bytes in a CI check run); its parsers' and writer's unit tests
# (test_heap_sample, test_pprof) run under the sanitizers.
san_leave=" test_cfi_bpf test_stacks test_kernel_features test_jitguide test_fleet_faults test_heap "

read -ra words <<< "$pattern" # no glob: "test_*" is a part of a name too
wanted() { # FILE: whether TESTS names it (one of its words is a part of its name)
	local w
	((${#words[@]})) || return 0
	for w in "${words[@]}"; do
		[[ $1 == *"$w"* ]] && return 0
	done
	return 1
}
run_one() { # NAME CMD...: runs a test program and tallies its lines
	local name=$1 line status=missing saw_fail=0 t0=$SECONDS
	shift
	if [ -n "$san_dir" ] && [[ $san_leave == *" $name "* ]]; then
		echo "== $name: left to the normal pass (not run under SANITIZE=1)"
		return
	fi
	echo "== $name"
	while IFS= read -r line; do
		case "$line" in
		__exit\ *) status=${line#__exit }; continue ;;
		esac
		echo "$line"
		case "$line" in
		PASS\ *) pass=$((pass + 1)) ;;
		FAIL\ *) fail=$((fail + 1)); saw_fail=1; failed+=("$name: ${line#FAIL }") ;;
		SKIP\ *) skip=$((skip + 1)) ;;
		esac
	done < <("$@"; s=$?; echo; echo "__exit $s")
	# A program that dies without saying FAIL (a crash) fails as a whole.
	if [ "$status" != 0 ] && [ $saw_fail = 0 ]; then
		echo "FAIL $name: exited with status $status"
		fail=$((fail + 1))
		failed+=("$name: exit status $status")
	fi
	times+=("$((SECONDS - t0))s $name")
}

for t in "$build"/tests/test_*; do
	[ -x "$t" ] || continue
	wanted "$t" || continue
	run_one "$(basename "$t")" "$t"
done
for t in tests/integration/test_*.sh; do
	[ -f "$t" ] || continue
	wanted "$t" || continue
	run_one "$(basename "$t" .sh)" bash "$t"
done

# A word that names no test (a typo, "a|b" read as a regular expression)
# would pass having run nothing of it.
for w in "${words[@]}"; do
	for t in "$build"/tests/test_* tests/integration/test_*.sh; do
		[[ $t == *"$w"* ]] && continue 2
	done
	echo "FAIL TESTS: $w matches no test (a part of a test's file name, no regular expression)"
	fail=$((fail + 1))
	failed+=("TESTS: $w matches no test")
done
if [ -n "$san_dir" ]; then
	for r in "$san_dir"/*; do
		[ -f "$r" ] || continue
		echo "FAIL sanitizer report $r:"
		sed -n 1,40p "$r"
		fail=$((fail + 1))
		failed+=("sanitizer: $(basename "$r")")
	done
fi
# Where the time went: the slowest tests first (all of them in
# $build/test-times.txt).
printf '%s\n' "${times[@]}" | sed '/^$/d' | sort -rn > "$build/test-times.txt"
echo "Time by test ($((SECONDS / 60)) min $((SECONDS % 60)) s in all):"
head -8 "$build/test-times.txt" | sed 's/^/  /'
if ((${#failed[@]})); then
	echo "Failed:"
	printf '  %s\n' "${failed[@]}"
fi
echo "$pass passed, $fail failed, $skip skipped"
[ $fail = 0 ]
