#!/bin/bash
# From the stop to the exit (a benchmark, not a test): bpftrace-rec -p of a
# 600-deep stack (build/workloads/deep 600 64) at 499 Hz, -d SHORT and -d LONG
# alternated in one run. "stop" is the moment the -v line "stopping: -d" is
# read from its stderr, "exit" the moment the process has exited: what a
# user waits for at the end, naming and writing included; and the CPU the
# recorder used over the same span (its /proc/PID/stat utime + stime at the
# stop line, 10 ms ticks, against its rusage at the exit): on a loaded host
# the clock's figure is mostly the wait for a CPU. Medians over the
# rounds and the median of the per-round ratios long/short; it should not
# grow with the recording's length (issue #35). --rec2 BIN measures a second
# build in the same rounds (a before/after, paired: each round runs both,
# the order turned each round).
# Usage: scripts/bench-stop.sh [--rounds N] [--short S] [--long S] [--rec2 BIN]   (as root)
cd "$(dirname "$0")/.." || exit 1
exec python3 - "$@" << 'EOF'
import argparse, os, re, statistics, subprocess, tempfile, time

ap = argparse.ArgumentParser()
ap.add_argument("--rounds", type=int, default=3)
ap.add_argument("--short", type=int, default=10)
ap.add_argument("--long", type=int, default=60)
ap.add_argument("--rec", default="./bpftrace-rec")
ap.add_argument("--rec2", help="a second bpftrace-rec, measured in the same rounds")
a = ap.parse_args()
tmp = tempfile.mkdtemp()
mono = lambda: time.clock_gettime(time.CLOCK_MONOTONIC)


def one(rec, d):
    t = subprocess.Popen(["build/workloads/deep", "600", "64", str(d + 30)])
    time.sleep(0.5)
    p = subprocess.Popen([rec, "-v", "-F", "499", "-p", str(t.pid), "-d", str(d),
                          "-o", os.path.join(tmp, "o")], stderr=subprocess.PIPE,
                         stdout=subprocess.DEVNULL, text=True)
    stop = cpu0 = None
    for line in p.stderr:
        if stop is None and "stopping: -d" in line:
            stop = mono()
            f = open(f"/proc/{p.pid}/stat").read().rsplit(")", 1)[1].split()
            cpu0 = (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
    _, _, ru = os.wait4(p.pid, 0)
    end = mono()
    t.kill()
    t.wait()
    if stop is None:
        return float("nan"), float("nan")
    return end - stop, ru.ru_utime + ru.ru_stime - cpu0


recs = [("rec", a.rec)] + ([("rec2", a.rec2)] if a.rec2 else [])
res = {(n, d): [] for n, _ in recs for d in (a.short, a.long)}
for rnd in range(a.rounds):
    runs = [(n, b, d) for n, b in recs for d in (a.short, a.long)]
    for n, b, d in (runs if rnd % 2 == 0 else runs[::-1]):
        res[(n, d)].append(one(b, d))
print(f"# scripts/bench-stop.sh --rounds {a.rounds}: stop to exit, s: clock and the "
      "recorder's CPU (median; rounds)")
for n, b in recs:
    print(f"{n} ({b})")
    for k, what in ((0, "clock"), (1, "CPU")):
        s = [x[k] for x in res[(n, a.short)]]
        l = [x[k] for x in res[(n, a.long)]]
        print(f"  {what:5} -d {a.short}: {statistics.median(s):.3f} "
              f"({' '.join('%.3f' % x for x in s)})  -d {a.long}: {statistics.median(l):.3f} "
              f"({' '.join('%.3f' % x for x in l)})  long/short (median of rounds): "
              f"{statistics.median(y / x if x else float('nan') for x, y in zip(s, l)):.2f}")
subprocess.run(["rm", "-rf", tmp])
EOF
