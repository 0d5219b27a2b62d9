#!/usr/bin/env bash
# The demo: records the bundled workload (three functions doing 6:3:1 of the
# work, one in a shared library, on two threads) for a few seconds and
# prints its top functions with pprof. Run `make demo` (it builds first).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-demo.out}
rm -rf "$out"
echo "+ ./bpftrace-rec -F 499 -o $out -- build/workloads/split 3"
./bpftrace-rec -F 499 -o "$out" -- build/workloads/split 3
echo
echo "+ tools/pprof -top -nodecount=10 $out/profile.pb.gz"
tools/pprof -top -nodecount=10 "$out/profile.pb.gz"
