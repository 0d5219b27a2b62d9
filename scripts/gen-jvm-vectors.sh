#!/usr/bin/env bash
# Writes tests/unit/jvm_vectors.txt, the real-JVM vectors of
# tests/unit/test_jvm_debuginfo.c: runs JSplit (the Java workload, path in
# $1, default tests/workloads/JSplit.java or /tmp/j/JSplit.java) under
# java with six()'s compiled code printed, waits for its C2 nmethod, and
# has scripts/jvm-vectors.py read the line tables and the nmethod from the
# live process (root: /proc/PID/mem) and check them against javap and
# HotSpot's own printout. Run again for another JDK; the file is checked
# in, so the unit test needs no JVM.
set -eu
cd "$(dirname "$0")/.."
src=${1:-}
[ -n "$src" ] || for src in tests/workloads/JSplit.java /tmp/j/JSplit.java; do [ -f "$src" ] && break; done
[ -f "$src" ] || { echo "no JSplit.java" >&2; exit 1; }
out=tests/unit/jvm_vectors.txt
dir=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$dir"' EXIT
javac -g -d "$dir" "$src"
java -cp "$dir" -XX:+UnlockDiagnosticVMOptions -XX:CompileCommand=quiet \
	-XX:CompileCommand=print,JSplit::six JSplit 60 > "$dir/print.txt" 2>&1 &
pid=$!
for _ in $(seq 1 300); do
	grep -q 'Compiled method (c2).*JSplit::six' "$dir/print.txt" && grep -q '^\[/MachCode\]' <(sed -n '/Compiled method (c2).*JSplit::six/,$p' "$dir/print.txt") && break
	sleep 0.1
done
python3 scripts/jvm-vectors.py "$pid" "$dir/print.txt" "$dir/JSplit.class" > "$dir/vectors.txt"
mv "$dir/vectors.txt" "$out"
echo "wrote $out ($(grep -c '^lnt ' "$out") line tables, $(grep -c '^chain ' "$out") PcDescs)"
