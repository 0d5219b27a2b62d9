#!/bin/bash
# From the stop to the exit (a benchmark, not a test): bpftrace-rec -p of a
# 600-deep stack (build/workloads/deep 600 64) at 499 Hz, -d SHORT and -d LONG
# alternated in one run. "stop" is the moment the -v line "stopping: -d" is
# read from its stderr, "exit" the moment the process has exited: what a
# user waits for at the end, naming and writing included. Medians over the
# rounds and the median of the per-round ratios long/short; it should not
# grow with the recording's length (issue #35).
# Usage: scripts/bench-stop.sh [--rounds N] [--short S] [--long S]   (as root)
cd "$(dirname "$0")/.." || exit 1
exec python3 - "$@" << 'EOF'
import argparse, os, re, statistics, subprocess, tempfile, time

ap = argparse.ArgumentParser()
ap.add_argument("--rounds", type=int, default=3)
ap.add_argument("--short", type=int, default=10)
ap.add_argument("--long", type=int, default=60)
ap.add_argument("--rec", default="./bpftrace-rec")
a = ap.parse_args()
tmp = tempfile.mkdtemp()
mono = lambda: time.clock_gettime(time.CLOCK_MONOTONIC)


def one(d):
    t = subprocess.Popen(["build/workloads/deep", "600", "64", str(d + 30)])
    time.sleep(0.5)
    p = subprocess.Popen([a.rec, "-v", "-F", "499", "-p", str(t.pid), "-d", str(d),
                          "-o", os.path.join(tmp, "o")], stderr=subprocess.PIPE,
                         stdout=subprocess.DEVNULL, text=True)
    stop = None
    for line in p.stderr:
        if stop is None and "stopping: -d" in line:
            stop = mono()
    p.wait()
    end = mono()
    t.kill()
    t.wait()
    return end - stop if stop else float("nan")


res = {a.short: [], a.long: []}
for rnd in range(a.rounds):
    for d in ([a.short, a.long] if rnd % 2 == 0 else [a.long, a.short]):
        res[d].append(one(d))
s, l = res[a.short], res[a.long]
print(f"# scripts/bench-stop.sh --rounds {a.rounds}: stop to exit, s (median; rounds)")
print(f"-d {a.short}: {statistics.median(s):.3f}  {' '.join('%.3f' % x for x in s)}")
print(f"-d {a.long}: {statistics.median(l):.3f}  {' '.join('%.3f' % x for x in l)}")
print(f"ratio long/short (median of rounds): {statistics.median(y / x for x, y in zip(s, l)):.2f}")
subprocess.run(["rm", "-rf", tmp])
EOF
