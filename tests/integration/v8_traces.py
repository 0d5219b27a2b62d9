"""Reads `pprof -raw` output (stdin) of a recording of
tests/workloads/nsplit.js and prints what test_node.sh checks, over ALL the
samples of its JavaScript threads in process PID (weighted by their count;
PID -: any process's):

split PID: the threads running its driver (a frame named run in
  nsplit.js: the main thread and the worker), then
  "threads=N js=PCT a=PCT b=PCT c=PCT deep=PCT/N nmethod=N holder=N":
  js, the least share over those threads of their samples with a
  JavaScript frame (one whose file is a script, *.js, or node's own,
  node:*); a, b, c: fnA's, fnB's and fnC's cumulative shares of the samples
  under any of the three (6:3:1 by construction); deep, of the samples
  under recurse, the share with its 201 frames (recurse(200) down to
  recurse(0)) and a thread's root at the end, of N; nmethod and holder,
  the samples with a frame named nmethod (as V8's own --cpu-prof names a
  class method: its SharedFunctionInfo's name) and Holder.nmethod.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jvm_traces import parse, pct  # noqa: E402

ROOTS = ("__clone3", "clone3", "clone", "_start", "start_thread")


def is_js(f):
    return f[1].endswith(".js") or f[1].startswith("node:")


def split(text, pid):
    by_tid, under, deep = {}, {"fnA": 0, "fnB": 0, "fnC": 0}, [0, 0]
    any_abc, nm, holder = 0, 0, 0
    samples = [s for s in parse(text) if pid in ("-", s[2].get("pid"))]
    drivers = {(lab.get("pid"), lab.get("tid")) for w, fr, lab in samples
               if any(f[0] == "run" and f[1].endswith("nsplit.js") for f in fr)}
    for w, fr, lab in samples:
        if (lab.get("pid"), lab.get("tid")) not in drivers:
            continue
        t = by_tid.setdefault((lab.get("pid"), lab.get("tid")), [0, 0])
        t[0] += w
        t[1] += w if any(is_js(f) for f in fr) else 0
        names = {f[0] for f in fr}
        hit = names & set(under)
        if hit:
            any_abc += w
            for n in hit:
                under[n] += w
        if "recurse" in names:
            deep[1] += w
            n = sum(1 for f in fr if f[0] == "recurse")
            if n == 201 and fr[-1][0] in ROOTS:
                deep[0] += w
        nm += w if "nmethod" in names else 0
        holder += w if "Holder.nmethod" in names else 0
    js = min((pct(t[1], t[0]) for t in by_tid.values()), default=0.0)
    print("threads=%d js=%.1f a=%.1f b=%.1f c=%.1f deep=%.1f/%d nmethod=%d holder=%d" %
          (len(by_tid), js, pct(under["fnA"], any_abc), pct(under["fnB"], any_abc),
           pct(under["fnC"], any_abc), pct(deep[0], deep[1]), deep[1], nm, holder))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "split":
        split(sys.stdin.read(), sys.argv[2])
    else:
        sys.exit("usage: v8_traces.py split PID < pprof-raw")
