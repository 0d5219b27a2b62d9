"""Reads `pprof -raw` output (stdin) of a recording of a JVM and prints what
test_jvm.sh checks, over ALL the samples of the threads named (weighted by
their count):

split PID: of tests/workloads/JSplit.java's threads split-0 and split-1:
  "n=N java=PCT main=PCT six=PCT three=PCT one=PCT inl=PCT": the share of
  split-1's samples with a Java frame (a frame the HotSpot walk named: a
  system name with a signature; split-1 is a thread Java started, each of
  its samples is in Java code or under it), the same of split-0's (the
  main thread: the VM's start-up before any Java code is in it too),
  six's, three's and one's cumulative shares of the samples under any of
  them, and of the samples in spin, the share named under six, three or one
  with JSplit.java lines (spin is inlined into them once C2 compiles them).
deep PID ROOTS: of thread deep: "n=N java=PCT whole=PCT": the share with a
  Java frame, and of the samples in deepLeaf, those with 200 deep frames
  under it and a root (one of ROOTS, comma-separated) at the end.
park PID: of an --off-cpu recording of JSplit park, threads park-0 and
  park-1: "ms=MS java=PCT six=PCT three=PCT one=PCT": their off-CPU time,
  the share under a Java frame, and parkSix's, parkThree's and parkOne's
  shares of the time under the three.
churn PID EVEN ODD RUN_A RUN_B: of tests/workloads/JChurn.java (its two
  Worker classes loaded and unloaded in turn): "right=N wrong=N": frames
  named Worker.evenSpin at line EVEN under Worker.run at RUN_A, or
  Worker.oddSpin at ODD under Worker.run at RUN_B (a line 0, not known,
  or a caller not named, is not wrong), and those named
  otherwise (one class's method at the other's line or caller: named after
  the object at its address when read, not the one sampled).
expect FILE [T0 T1]: the shares six, three and one took of their time, as
  JSplit measured it ("split MS SIX THREE ONE" lines, a second's ns each),
  over the seconds within [T0, T1] (wall-clock ms; all of them without):
  "SIX THREE ONE" in percent.
jfrcmp JFR_TEXT JFR_THREAD RAW PID COMM [T0 T1]: (T0, T1: our recording's
  window, seconds of the day UTC, JFR's samples outside it left out) the peer, JDK Flight Recorder's
  `jfr print --events jdk.ExecutionSample` of the same run, against this
  recording's `pprof -raw` (RAW): the samples of one thread (JFR_THREAD by
  its Java name, COMM by its comm here) whose innermost user frame is Java
  (what JFR's execution samples are: threads running Java code), those
  with fewer than 60 Java frames on both sides (JFR keeps 64 frames of a
  stack, and records javac's deeper ones far less often than they are
  here: 0.6 % of its samples against 8 % in one run, whole stacks of
  visitors to main); the 8 methods JFR
  finds in the most samples, each one's share of the samples here and
  there: "ok ..." when all are within 3 points (or three standard errors
  of the difference, where the samples are few), else "differ ...".
phases PHASES RAW PID COMM T0 T1 JFR_TEXT JFR_THREAD: the truth for
  tests/workloads/JavacPhases.java's run, javac's own account of its
  thread's CPU time (PHASES, its "phases" lines; T0, T1: our recording's
  window, wall-clock ms), against this recording's samples of the thread
  (all of them: CPU time) and JFR's: each phase's share, parse
  (JavacParser.parseCompilationUnit), analyze (JavaCompiler.attribute and
  flow) and generate (JavaCompiler.genCode), as "ours=ok|off jfr=ok|off
  oracle=P/A/G ours=P/A/G jfr=P/A/G": ok where all three are within 3
  points of the oracle's.
"""
import re
import sys


def parse(text, value="samples"):
    """[(weight, [(name, file, line, sysname, addr, start)] leaf first, labels)]:
    weight, the sample's value of that type; start, the function's first
    line (pprof's s=)."""
    locs, samples, part, last, col = {}, [], None, None, 0
    for ln in text.splitlines():
        if ln.startswith(("Samples:", "Locations", "Mappings")):
            part = ln.split()[0].rstrip(":")
            continue
        if part == "Samples":
            if "/" in ln and not re.search(r"\d:", ln):
                types = [t.split("/")[0] for t in ln.split()]
                col = types.index(value) if value in types else 0
                continue
            m = re.match(r"\s+((?:\d+\s+)*\d+):((?: \d+)*)\s*$", ln)
            if m:
                last = [int(m.group(1).split()[col]), [int(x) for x in m.group(2).split()], {}]
                samples.append(last)
                continue
            for k, v in re.findall(r"(\w+):\[([^\]]*)\]", ln):
                if last:
                    last[2][k] = v.split()[0] if k != "comm" else v
        elif part == "Locations":
            m = re.match(r"\s+(\d+): 0x([0-9a-f]+) (?:M=\d+ )?(.*?) (\S*):(-?\d+) s=(\d+)(?:\((.*)\))?$", ln)
            if m:
                locs[int(m.group(1))] = (m.group(3), m.group(4), int(m.group(5)), m.group(7) or "",
                                         int(m.group(2), 16), int(m.group(6)))
    return [(w, [locs.get(i, ("?", "", 0, "", 0, 0)) for i in ids], lab) for w, ids, lab in samples]


def kernel(f):
    return f[4] >= 0xffff800000000000


def jfr_stacks(path, thread, t0=None, t1=None):
    """The Java frames (method names, innermost first) of each execution
    sample of thread in `jfr print` output; with T0 and T1 (seconds of the
    day, UTC, as jfr prints its startTime), those taken between them."""
    out, cur, th, inside, when = [], None, None, False, None
    for ln in open(path, errors="replace"):
        s = ln.strip()
        if s.startswith("jdk.ExecutionSample"):
            cur, th, inside, when = [], None, False, None
        elif s.startswith("startTime = "):
            m = re.match(r"startTime = (\d+):(\d+):([\d.]+)", s)
            if m:
                when = int(m.group(1)) * 3600 + int(m.group(2)) * 60 + float(m.group(3))
        elif s.startswith("sampledThread = "):
            m = re.match(r'sampledThread = "(.*)" \(', s)
            th = m.group(1) if m else None
        elif s.startswith("stackTrace = ["):
            inside = True
        elif inside and s == "]":
            inside = False
        elif inside and cur is not None and s not in ("...",):
            m = re.match(r"(.+?)\(", s)
            if m:
                cur.append(m.group(1))
        elif s == "}" and cur is not None:
            if th == thread and cur and (t0 is None or when is None or t0 <= when <= t1):
                out.append(cur)
            cur = None
    return out


def is_java(f):
    # The walk's frames: a signature in the system name ("JSplit.six()J").
    return "(" in f[3] and f[3].endswith(tuple("VZBCSIJFD;[")) or f[1].endswith(".java")


def stub(f):
    # A code-cache stub the HotSpot walk names by its blob (no signature).
    return f[0].startswith(("StubRoutines", "vtable chunks", "itable stub", "I2C/C2I"))


def pct(a, b):
    return 100.0 * a / b if b else 0.0


def jfrcmp(jfr_text, jfr_thread, raw, pid, comm, t0=None, t1=None):
    # JFR's samples within our recording's window (jcmd starts and stops
    # it a second or so outside ours, and javac's phases change as its
    # code is compiled).
    t0, t1 = (None, None) if t0 is None else (float(t0), float(t1))
    # Every stack whole on both sides (the JVM's JFR stack depth is raised
    # for it): a cut at a length fell inside the bulk of javac's attribute
    # stacks (40-65 frames), where a frame more or less on one side moved
    # the share by 5 points (JFR's default depth, 64, and both sides' stacks
    # of 60 or more left out: attribute 48.8 against ours 43.4, both 56-57
    # over whole stacks).
    theirs = jfr_stacks(jfr_text, jfr_thread, t0, t1)
    ours = []
    for w, fr, lab in parse(open(raw).read()):
        if lab.get("pid") != pid or lab.get("comm") != comm:
            continue
        user = [f for f in fr if not kernel(f)]
        # Java code: JFR's sampler drops a sample whose top frame is a stub
        # (JfrGetCallTrace::find_top_frame: is_stub_frame, or a frame size
        # of 0, as StubRoutines' arraycopy), and one whose pc has no scope.
        if not user or not is_java(user[0]):
            continue
        ours.append((w, [f[0] for f in user if is_java(f)]))
    nt, no = len(theirs), sum(w for w, _ in ours)
    if nt < 100 or no < 100:
        return "differ: too few samples (jfr %d, ours %d)" % (nt, no)
    inc = {}
    for s in theirs:
        for name in set(s):
            if "$$Lambda" not in name:
                inc[name] = inc.get(name, 0) + 1
    top = sorted(inc.items(), key=lambda x: -x[1])[:8]
    rows, ok = [], True
    for name, c in top:
        a = pct(c, nt)
        b = pct(sum(w for w, s in ours if name in s), no)
        p = (a + b) / 200
        tol = max(3.0, 300 * (p * (1 - p) * (1.0 / nt + 1.0 / no)) ** 0.5)
        ok = ok and abs(a - b) <= tol
        rows.append("%s jfr=%.1f ours=%.1f (+-%.1f)" % (name, a, b, tol))
    return ("ok " if ok else "differ ") + "(jfr %d samples, ours %d) " % (nt, no) + "; ".join(rows)


# JavacPhases' phases, and the frames that run them (javac's TaskEvents:
# PARSE around JavacParser.parseCompilationUnit, ANALYZE from attribute's
# start to flow's end, GENERATE around genCode).
PHASES = (("PARSE", ("com.sun.tools.javac.parser.JavacParser.parseCompilationUnit",)),
          ("ANALYZE", ("com.sun.tools.javac.main.JavaCompiler.attribute",
                       "com.sun.tools.javac.main.JavaCompiler.flow")),
          ("GENERATE", ("com.sun.tools.javac.main.JavaCompiler.genCode",)))


def phases(path, raw, pid, comm, t0, t1, jfr_text, jfr_thread):
    t0, t1 = int(t0), int(t1)
    rows = []
    for ln in open(path):
        f = ln.split()
        if len(f) > 3 and f[0] == "phases":
            rows.append((int(f[1]), {f[i]: int(f[i + 1]) for i in range(2, len(f) - 1, 2)}))
    # The totals' lines around the window (one a compilation, ~60 ms).
    a = [r for r in rows if r[0] <= t0]
    b = [r for r in rows if r[0] >= t1]
    if not a or not b or b[0][1]["total"] <= a[-1][1]["total"]:
        return "off: no javac account around the window (%d lines)" % len(rows)
    a, b = a[-1][1], b[0][1]
    tot = b["total"] - a["total"]
    oracle = [pct(b[k] - a[k], tot) for k, _ in PHASES]
    ours = []
    for w, fr, lab in parse(open(raw).read()):
        if lab.get("pid") == pid and lab.get("comm") == comm:
            ours.append((w, set(f[0] for f in fr)))
    # JFR's window in its clock (seconds of the day, UTC).
    theirs = [(1, set(s)) for s in jfr_stacks(jfr_text, jfr_thread, (t0 / 1000.0) % 86400,
                                             (t1 / 1000.0) % 86400)]

    def shares(st):
        n = sum(w for w, _ in st) or 1
        return [pct(sum(w for w, s in st if any(x in s for x in names)), n) for _, names in PHASES]
    o, j = shares(ours), shares(theirs)
    fmt = lambda v: "/".join("%.1f" % x for x in v)
    ok = lambda v: all(abs(x - y) <= 3.0 for x, y in zip(v, oracle))
    return "ours=%s jfr=%s oracle=%s ours=%s jfr=%s (javac %.1f s of CPU, ours %d samples, jfr %d)" % (
        "ok" if ok(o) else "off", "ok" if ok(j) else "off", fmt(oracle), fmt(o), fmt(j), tot / 1e9,
        sum(w for w, _ in ours), len(theirs))


def parse_off(pid):
    rows = parse(sys.stdin.read(), value="offcpu")  # in ns
    return [r for r in rows if r[2].get("pid") == pid]


def expect(path, t0=None, t1=None):
    tot = [0, 0, 0]
    for ln in open(path, errors="replace"):
        f = ln.split()
        if len(f) != 5 or f[0] != "split":
            continue
        ms = int(f[1])
        if t0 is not None and (ms - 1000 < t0 or ms > t1):
            continue
        for i in range(3):
            tot[i] += int(f[2 + i])
    s = sum(tot)
    return " ".join("%.2f" % pct(x, s) for x in tot) if s else "0 0 0"


def main():
    mode = sys.argv[1]
    if mode == "expect":
        print(expect(sys.argv[2], *(int(x) for x in sys.argv[3:5])))
        return
    if mode == "jfrcmp":
        print(jfrcmp(*sys.argv[2:9]))
        return
    if mode == "phases":
        print(phases(*sys.argv[2:10]))
        return
    pid = sys.argv[2]
    if mode == "park":
        rows = []
    else:
        rows = [r for r in parse(sys.stdin.read()) if r[2].get("pid") == pid]
    if mode == "split":
        rows = [r for r in rows if r[2].get("comm") in ("split-0", "split-1")]
        n = sum(w for w, _, _ in rows)
        share = {}
        for thread in ("split-0", "split-1"):
            t = [(w, fr) for w, fr, lab in rows if lab.get("comm") == thread]
            share[thread] = pct(sum(w for w, fr in t if any(is_java(f) for f in fr)),
                                sum(w for w, _ in t))
        cum = {k: 0 for k in ("six", "three", "one")}
        spin = inl = 0
        for w, fr, _ in rows:
            names = [f[0] for f in fr]
            for k in cum:
                if "JSplit." + k in names:
                    cum[k] += w
            if names and names[0] == "JSplit.spin":
                spin += w
                if (len(fr) > 1 and fr[1][0] in ("JSplit.six", "JSplit.three", "JSplit.one") and
                        fr[0][1] == fr[1][1] == "JSplit.java" and fr[0][2] > 0 and fr[1][2] > 0):
                    inl += w
        under = sum(cum.values())
        print("n=%d java=%.2f main=%.2f six=%.2f three=%.2f one=%.2f inl=%.2f" % (
            n, share["split-1"], share["split-0"], pct(cum["six"], under), pct(cum["three"], under), pct(cum["one"], under),
            pct(inl, spin)))
    elif mode == "deep":
        roots = set(sys.argv[3].split(","))
        rows = [r for r in rows if r[2].get("comm") == "deep"]
        n = sum(w for w, _, _ in rows)
        java = sum(w for w, fr, _ in rows if any(is_java(f) for f in fr))
        leaf = whole = 0
        for w, fr, _ in rows:
            names = [f[0] for f in fr]
            if "JSplit.deepLeaf" not in names:
                continue
            leaf += w
            if names.count("JSplit.deep") == 200 and names[-1] in roots:
                whole += w
            else:
                print("deep: %d frames, ends %s" % (names.count("JSplit.deep"), names[-3:]),
                      file=sys.stderr)
        print("n=%d java=%.2f whole=%.2f" % (n, pct(java, n), pct(whole, leaf)))
    elif mode == "churn":
        even, odd, run_a, run_b = (int(x) for x in sys.argv[3:7])
        want = {"Worker.evenSpin": (even, run_a), "Worker.oddSpin": (odd, run_b)}
        right = wrong = 0
        for w, fr, _ in rows:
            for i, f in enumerate(fr):
                # A Worker frame of no method Worker has (a name read from
                # a class unloaded: "Worker." with an empty name, or a
                # source file read as a method's name): wrong.
                if f[0].startswith("Worker.") and f[0] not in want and f[0] not in (
                        "Worker.run", "Worker.<init>") or f[0].startswith("Worker.") and f[1] not in ("Worker.java", ""):
                    wrong += w
                    print("wrong: %s (%s)" % (f[0], f[1]), file=sys.stderr)
                    continue
                if f[0] not in want:
                    continue
                line, run = want[f[0]]
                caller = fr[i + 1] if i + 1 < len(fr) else ("", "", 0, "", 0)
                # Line 0: not known (a pc with no PcDesc), not wrong; nor a
                # caller not named (a walk cut at a frame it could not step).
                # line - 1: its first (`long x = 0;`), a pc in its prologue;
                # line + 1: its `return x;`, a pc past the loop (CI: 1 of
                # 3379, oddSpin:15 under run:8, called wrong before).
                if f[2] in (line, line - 1, line + 1, 0) and (caller[0] == "Worker.run" and caller[2] in (run, 0) or
                                          caller[0] != "Worker.run" and not is_java(caller)):
                    right += w
                else:
                    wrong += w
                    print("wrong: %s:%d under %s:%d" % (f[0], f[2], caller[0], caller[2]),
                          file=sys.stderr)
        print("right=%d wrong=%d" % (right, wrong))
    elif mode == "park":
        rows = [r for r in parse_off(pid) if r[2].get("comm") in ("park-0", "park-1")]
        n = sum(w for w, _, _ in rows)
        java = sum(w for w, fr, _ in rows if any(is_java(f) for f in fr))
        cum = {k: 0 for k in ("parkSix", "parkThree", "parkOne")}
        for w, fr, _ in rows:
            names = [f[0] for f in fr]
            for k in cum:
                if "JSplit." + k in names:
                    cum[k] += w
        under = sum(cum.values())
        print("ms=%.0f java=%.2f six=%.2f three=%.2f one=%.2f" % (
            n / 1e6, pct(java, n), pct(cum["parkSix"], under), pct(cum["parkThree"], under),
            pct(cum["parkOne"], under)))


if __name__ == "__main__":
    main()
