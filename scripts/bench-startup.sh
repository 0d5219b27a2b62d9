#!/bin/bash
# Start-up, paired with perf (a benchmark, not a test): from launch to the
# first sample, and to the "recording" line, for bpftrace-rec and
# `perf record -g` alternated in one run, idle and under two busy loops.
#
#   launch        CLOCK_MONOTONIC read just before the recorder is started
#   recording     the moment its "recording ..." line is read from stderr
#   first sample  the first sample's own timestamp, CLOCK_MONOTONIC in both:
#                 bpftrace-rec -v prints its BPF timestamp (bpf_ktime_get_ns),
#                 perf record -k CLOCK_MONOTONIC stamps its samples with it
#                 (the smallest time of `perf script`)
#
# Cases: cpu-p (-p of a running two-thread spin), cpu-cmd (`-- spin`),
# offcpu (--off-cpu -p), trace (-t run -p) and python (-p of a CPython busy
# loop). Each case's peer is `perf record -g` of the same target (perf has
# no off-CPU or call-trace mode of the same kind: the CPU sampling start-up
# is the bar). Per case and load: the medians over the rounds and the median
# of the per-round ratios (bpftrace-rec / perf); --rec2 BIN adds a second
# bpftrace-rec build in the same rounds (a before/after, paired).
#
# Usage: scripts/bench-startup.sh [--rounds N] [--cases a,b] [--loads idle,busy2]
#                                 [--rec2 BIN]     (as root, after make)
cd "$(dirname "$0")/.." || exit 1
exec python3 - "$@" << 'EOF'
import argparse, os, re, signal, statistics, subprocess, sys, tempfile, threading, time

ROOT = os.getcwd()
SPIN = os.path.join(ROOT, "build/workloads/spin")
ap = argparse.ArgumentParser()
ap.add_argument("--rounds", type=int, default=5)
ap.add_argument("--cases", default="cpu-p,cpu-cmd,offcpu,trace,python")
ap.add_argument("--loads", default="idle,busy2")
ap.add_argument("--rec", default=os.path.join(ROOT, "bpftrace-rec"))
ap.add_argument("--rec2", help="a second bpftrace-rec, measured in the same rounds")
a = ap.parse_args()
mono = lambda: time.clock_gettime(time.CLOCK_MONOTONIC)
tmp = tempfile.mkdtemp()


def target(case):
    """A running target for -p (started before the recorder), or None."""
    if case == "cpu-cmd":
        return None
    if case == "python":
        return subprocess.Popen(["python3", "-c", "while True: pass"])
    return subprocess.Popen([SPIN, "100000000000"])


def cmd_of(case, pid):
    # `--`: a spin of about a second, long enough for any start-up measured.
    return ["-p", str(pid)] if pid else ["--", SPIN, "400000000"]


def run_rec(binary, case, pid):
    """(launch->recording s, launch->first sample s) of one bpftrace-rec run."""
    args = [binary, "-v", "-o", os.path.join(tmp, "rec")]
    args += {"offcpu": ["--off-cpu"], "trace": ["-t", "run"]}.get(case, [])
    args += ["-d", "1"] if pid else []
    args += cmd_of(case, pid)
    t0 = mono()
    p = subprocess.Popen(args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    rec = first = None
    for line in p.stderr:
        if rec is None and re.search(r": recording ", line):
            rec = mono() - t0
        m = re.search(r"first sample: .*CLOCK_MONOTONIC (\d+) ns", line)
        if m and first is None:
            first = int(m.group(1)) / 1e9 - t0
    p.wait()
    return rec, first


def run_perf(case, pid):
    out = os.path.join(tmp, "perf.data")
    args = ["perf", "record", "-q", "-k", "CLOCK_MONOTONIC", "-g", "-F", "99", "-o", out]
    args += ["-p", str(pid), "--", "sleep", "1"] if pid else ["--", SPIN, "400000000"]
    t0 = mono()
    subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    s = subprocess.run(["perf", "script", "-i", out, "-F", "time"], capture_output=True,
                       text=True).stdout.split()
    ts = [float(x.rstrip(":")) for x in s if re.match(r"^\d+\.\d+:?$", x)]
    return None, (min(ts) - t0) if ts else None


busy = []
res = {}
tools = [("rec", a.rec)] + ([("rec2", a.rec2)] if a.rec2 else []) + [("perf", None)]
try:
    for load in a.loads.split(","):
        for b in busy:
            b.kill()
        busy = [subprocess.Popen(["sh", "-c", "while :; do :; done"])
                for _ in range(2 if load == "busy2" else 0)]
        for case in a.cases.split(","):
            for rnd in range(a.rounds):
                # Alternated, the order turned each round: neither always first.
                order = tools if rnd % 2 == 0 else tools[::-1]
                for name, binary in order:
                    t = target(case)
                    time.sleep(0.3)  # the target running, its libraries mapped
                    pid = t.pid if t else 0
                    r = run_rec(binary, case, pid) if binary else run_perf(case, pid)
                    if t:
                        t.kill()
                        t.wait()
                    res.setdefault((load, case, name), []).append(r)
finally:
    for b in busy:
        b.kill()


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else float("nan")


print(f"# scripts/bench-startup.sh --rounds {a.rounds}: medians in ms; "
      "ratio: median of the rounds' bpftrace-rec/perf, first sample")
hdr = "load   case      rec:recording  rec:first"
if a.rec2:
    hdr += "  rec2:recording  rec2:first"
print(hdr + "  perf:first  ratio" + ("  ratio2" if a.rec2 else ""))
for (load, case, name) in list(res):
    if name != "rec":
        continue
    r, p = res[(load, case, "rec")], res[(load, case, "perf")]
    ratio = lambda rr: med([x[1] / y[1] if x[1] and y[1] else None for x, y in zip(rr, p)])
    line = (f"{load:6} {case:8} {med(x[0] for x in r) * 1e3:14.0f} "
            f"{med(x[1] for x in r) * 1e3:10.0f}")
    if a.rec2:
        r2 = res[(load, case, "rec2")]
        line += f" {med(x[0] for x in r2) * 1e3:15.0f} {med(x[1] for x in r2) * 1e3:11.0f}"
    line += f" {med(x[1] for x in p) * 1e3:11.0f} {ratio(r):6.2f}"
    if a.rec2:
        line += f" {ratio(res[(load, case, 'rec2')]):7.2f}"
    print(line, flush=True)
subprocess.run(["rm", "-rf", tmp])
EOF
