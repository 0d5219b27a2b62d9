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
  under any of the three (6:3:1 by construction), of n, and split, ok
  when each is within 3 points (or 3 standard errors of a share of n
  samples, where they are few) of 60/30/10, else off; deep, of the
  samples in hotLoop under recurse, the share with its 201 frames
  (recurse(200) down to recurse(0)) then run, of N, and root, those with a
  thread's root at the end; nmethod and holder,
  the samples with a frame named nmethod (as V8's own --cpu-prof names a
  class method: its SharedFunctionInfo's name) and Holder.nmethod; hotline,
  of the samples whose innermost JavaScript frame is hotLoop, the share at
  its loop's line (10), of N.

cpuprof CPUPROFILE MARKS PID: V8's own profiler against ours, in the same
  run of tests/workloads/tscdrive.js (node --cpu-prof, recorded by -p): the
  .cpuprofile's samples (JSON: nodes with their callFrame and children,
  samples and timeDeltas in microseconds of CLOCK_MONOTONIC) within MARKS'
  window (its "go T" and "end T"), and ours of PID's main thread (tid
  PID) in `pprof -raw` (stdin), all of them: the recording ran from before
  go to after end, and the driver waits idle outside them. Samples in V8's
  garbage collector are left out on both sides: V8's profiler counts them
  apart, at its root, as "(garbage collector)" (not under the JavaScript
  that allocated), and by wall-clock time (a GC's waits for its helper
  threads too: 12 % of its samples against our 3 % of CPU). A function is
  (name, script's base name, first line): V8's lineNumber + 1, our s=.
  The TOP functions with the most samples under them in the .cpuprofile,
  each one's share there, of its samples and of their time (DevTools'
  reading: each sample lasts to the next one's timestamp), and of our
  samples here: "ok ..." when ours is within 3 points of the two (of the
  range between them), else "differ ...". The two readings of V8's agree
  on a quiet machine; under load they part (51.1 and 60.0 for tsc's
  getSemanticDiagnostics at load 15-18, ours 54.6): V8's sampler is one
  of node's threads, and the GC's helper threads take its CPU, and its
  ticks, in the phases where they run.

phases CPUPROFILE MARKS PID: the truth for the same run, the driver's own
  account of its main thread's time on a CPU in each phase (MARKS'
  "phases total NS program NS check NS emit NS semantic NS"), against ours (all the
  main thread's samples: the GC's are under the JavaScript that allocated)
  and V8's (its samples in the window, the GC's left out: it has no
  JavaScript under them): the share of samples under phaseProgram,
  phaseCheck, phaseEmit and phaseSemantic (the type checker's part of the
  check), as "ours=ok|off v8=ok|off truth=P/C/E/S ours=P/C/E/S
  v8=P/C/E/S": ok where all four are within 3 points of the truth's;
  nearer=ours|v8, the profile whose four shares are off the truth's by
  fewer points in all.
"""
import json
import math
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jvm_traces import parse, pct  # noqa: E402

ROOTS = ("__clone3", "clone3", "clone", "_start", "start_thread")


def is_js(f):
    return f[1].endswith(".js") or f[1].startswith("node:")


def split(text, pid):
    by_tid, under, deep = {}, {"fnA": 0, "fnB": 0, "fnC": 0}, [0, 0, 0]
    any_abc, nm, holder, hot = 0, 0, 0, [0, 0]
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
        js = [f[0] for f in fr if is_js(f)]
        jsf = [f for f in fr if is_js(f)]
        if jsf and jsf[0][0] == "hotLoop":
            hot[1] += w
            hot[0] += w if jsf[0][2] == 10 else 0
        if js[:2] == ["hotLoop", "recurse"]:
            deep[1] += w
            if js[1:203] == ["recurse"] * 201 + ["run"]:
                deep[0] += w
            deep[2] += w if fr[-1][0] in ROOTS else 0
        nm += w if "nmethod" in names else 0
        holder += w if "Holder.nmethod" in names else 0
    js = min((pct(t[1], t[0]) for t in by_tid.values()), default=0.0)
    shares = [pct(under[f], any_abc) for f in ("fnA", "fnB", "fnC")]
    ok = any_abc > 0
    for got, want in zip(shares, (60, 30, 10)):
        se = 100 * math.sqrt(want / 100 * (1 - want / 100) / max(any_abc, 1))
        ok = ok and abs(got - want) <= max(3, 3 * se)
    print("threads=%d js=%.1f a=%.1f b=%.1f c=%.1f n=%d split=%s deep=%.1f/%d root=%.1f "
          "nmethod=%d holder=%d hotline=%.1f/%d" %
          (len(by_tid), js, shares[0], shares[1], shares[2], any_abc, "ok" if ok else "off",
           pct(deep[0], deep[1]), deep[1], pct(deep[2], deep[1]), nm, holder,
           pct(hot[0], hot[1]), hot[1]))


# Our frames in V8's garbage collector, on the thread that allocated (as
# V8 enters its GC state): a scavenge or a full GC, or a step of the
# incremental marking.
GC = re.compile(r"v8::internal::(Heap::CollectGarbage|Heap::CollectAllGarbage|"
                r"Heap::PerformGarbageCollection|IncrementalMarking::(Step|AdvanceOnAllocation)|"
                r"Heap::FinalizeIncrementalMarking)")
TOP = 20


def cpuprofile(path, t0, t1):
    """The function keys of each of the .cpuprofile's samples taken within
    [t0, t1], but those in its garbage collector, with its time (to the
    next sample's timestamp, as DevTools counts it)."""
    p = json.load(open(path))
    nodes = {n["id"]: n for n in p["nodes"]}
    parent = {c: n["id"] for n in p["nodes"] for c in n.get("children", [])}
    ts, t = [], p["startTime"]
    for dt in p["timeDeltas"]:
        t += dt
        ts.append(t)
    out = []
    for i, sid in enumerate(p["samples"]):
        if not t0 <= ts[i] <= t1 or nodes[sid]["callFrame"]["functionName"] == "(garbage collector)":
            continue
        keys, j = set(), sid
        while j in nodes:
            cf = nodes[j]["callFrame"]
            if cf["url"]:
                keys.add((cf["functionName"] or "<anonymous>", os.path.basename(cf["url"]),
                          cf["lineNumber"] + 1))
            j = parent.get(j)
        out.append((keys, max((ts[i + 1] if i + 1 < len(ts) else p["endTime"]) - ts[i], 0)))
    return out


def cpuprof(text, path, marks, pid):
    mk = dict(ln.split() for ln in open(marks) if len(ln.split()) == 2)
    if "go" not in mk or "end" not in mk:
        return "differ: no window in %s" % marks
    theirs = cpuprofile(path, int(mk["go"]), int(mk["end"]))
    ours = []
    for w, fr, lab in parse(text):
        if lab.get("pid") != pid or lab.get("tid") != pid or any(GC.search(f[0]) for f in fr):
            continue
        ours.append((w, {(f[0], os.path.basename(f[1]), f[5]) for f in fr if f[5]}))
    nt, no, tt = len(theirs), sum(w for w, _ in ours), sum(d for _, d in theirs)
    if nt < 1000 or no < 1000 or not tt:
        return "differ: too few samples (cpuprofile %d, ours %d)" % (nt, no)
    inc, inct = {}, {}
    for keys, d in theirs:
        for k in keys:
            inc[k] = inc.get(k, 0) + 1
            inct[k] = inct.get(k, 0) + d
    rows, ok, worst = [], True, 0.0
    for k, c in sorted(inc.items(), key=lambda x: (-x[1], x[0]))[:TOP]:
        a, at = pct(c, nt), pct(inct[k], tt)
        b = pct(sum(w for w, keys in ours if k in keys), no)
        off = max(min(a, at) - b, b - max(a, at), 0)
        ok = ok and off <= 3
        worst = max(worst, off)
        rows.append("%s@%s:%d v8=%.1f/%.1f ours=%.1f" % (k[0], k[1], k[2], a, at, b))
    return "%s (cpuprofile %d samples, ours %d, worst %.1f points) %s" % (
        "ok" if ok else "differ", nt, no, worst, "; ".join(rows))


PHASES = ("phaseProgram", "phaseCheck", "phaseEmit", "phaseSemantic")


def phases(text, path, marks, pid):
    acct = None
    for ln in open(marks):
        f = ln.split()
        if f and f[0] == "phases":
            acct = {f[i]: int(f[i + 1]) for i in range(1, len(f) - 1, 2)}
    mk = dict(ln.split() for ln in open(marks) if len(ln.split()) == 2)
    if not acct or not acct.get("total") or "go" not in mk or "end" not in mk:
        return "off: no account in %s" % marks
    truth = [pct(acct[k], acct["total"]) for k in ("program", "check", "emit", "semantic")]
    ours = []
    for w, fr, lab in parse(text):
        if lab.get("pid") == pid and lab.get("tid") == pid:
            ours.append((w, {f[0] for f in fr}))
    theirs = [(1, {k[0] for k in keys}) for keys, _ in cpuprofile(path, int(mk["go"]), int(mk["end"]))]

    def shares(st):
        n = sum(w for w, _ in st) or 1
        return [pct(sum(w for w, s in st if name in s), n) for name in PHASES]
    o, v = shares(ours), shares(theirs)
    fmt = lambda x: "/".join("%.1f" % y for y in x)
    ok = lambda x: all(abs(a - b) <= 3.0 for a, b in zip(x, truth))
    off = lambda x: sum(abs(a - b) for a, b in zip(x, truth))
    return ("ours=%s v8=%s nearer=%s truth=%s ours=%s v8=%s (off by %.1f and %.1f points in all; "
            "main thread %.2f s on a CPU, ours %d samples, v8 %d)") % (
        "ok" if ok(o) else "off", "ok" if ok(v) else "off", "ours" if off(o) < off(v) else "v8",
        fmt(truth), fmt(o), fmt(v), off(o), off(v), acct["total"] / 1e9, sum(w for w, _ in ours),
        len(theirs))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "split":
        split(sys.stdin.read(), sys.argv[2])
    elif len(sys.argv) == 5 and sys.argv[1] == "cpuprof":
        print(cpuprof(sys.stdin.read(), *sys.argv[2:]))
    elif len(sys.argv) == 5 and sys.argv[1] == "phases":
        print(phases(sys.stdin.read(), *sys.argv[2:]))
    else:
        sys.exit("usage: v8_traces.py split PID < pprof-raw\n"
                 "       v8_traces.py cpuprof CPUPROFILE MARKS PID < pprof-raw\n"
                 "       v8_traces.py phases CPUPROFILE MARKS PID < pprof-raw")
