"""Reads `pprof -raw` output (stdin) of a recording of
tests/workloads/pywork.py and prints what test_python.sh checks, over ALL
of the process's samples (weighted by their value):

offsplit PID: "waits=MS py=PCT six=PCT three=PCT one=PCT" of an --off-cpu
  recording of mode waits: over ALL of the process's off-CPU time (the
  offcpu value), the share with a Python frame; and wait_six's, wait_three's
  and wait_one's shares of the time under waits.
split PID: "py=PCT six=PCT three=PCT one=PCT": the share of samples with a
  Python frame (a frame of pywork.py's functions, of <module>, or any
  frame pprof names with a Python file: below, frames named by the
  test's own functions and the interpreter's module-level code), and each
  function's cumulative share.
churn PID EVEN ODD: "right=N wrong=N": frames f_N under churn at the line
  of N's parity (EVEN or ODD), and those not.
perf PID: "samples=N py=PCT agree=PCT paired=PCT edge=PCT" (weighted) of a
  recording of python3.12 -X perf: agree, the share where the Python
  functions named by the interpreter's own perf map (its trampolines'
  frames, "py::QUALNAME:FILE") and the Python frames of the BPF walk (the
  frames with no mapping), each innermost first, are the same sequence;
  paired, where each trampoline has its own function's frame, and only
  that, leafward of it (up to the next trampoline), or (the innermost
  only) none: the call entering or leaving that frame (in the trampoline,
  or in the evaluation loop's native frame), which the thread's state
  does not link then (edge: those); py: the share with any; clear, the
  share agreeing of the clearn samples taken as a function's call (not
  a generator's resumption) clears and pops its frame
  (_PyEvalFrameClearAndPop leafward of the innermost trampoline);
  unentered, the samples whose leaf is a native evaluation frame left
  unnamed in its call's prologue (3.12.1's, by its lines) right under its
  trampoline, of those whose walk did not fault (the walk there may also
  end at once, on the same stale values as below); faulted, the samples
  whose Python walk faulted (their stack cut at [truncated]: 3.12's
  prologue publishes its cframe, tstate->cframe, some 30 instructions
  before it writes the cframe's previous and current frame, and a walk
  there starts from the last call's values, which nothing in memory
  corrects until then). The first samples not paired go to stderr.
deep PID DEPTH: "samples=N module=PCT whole=PCT trunc=PCT eval=N" over ALL
  of the main thread's samples (the thread PID) of mode deep DEPTH, a
  recursion of DEPTH frames of deep: module, the share with <module>
  rootward of the deep frames; whole, the share with all DEPTH deep frames
  and <module> under them; trunc, the share whose stack ends in
  [truncated]; eval, the samples with a _PyEval_EvalFrameDefault frame
  left in them rootward of a Python frame (one not replaced by the Python
  frames it ran: unnamed). The innermost evaluation frame, with no Python
  frame leafward of it, stays native as its call enters or leaves its
  frame (func_one's calls), and is not counted.
evalroot PID: "samples=N bad=N bare=N": of ALL the process's samples (PID
  "all": every process's), those whose outermost evaluation frame (of
  the Python frames and the native _PyEval_EvalFrameDefault frames) is a
  native _PyEval_EvalFrameDefault, unnamed: bad, with Python frames
  elsewhere in the stack; bare, with none (the thread ran no Python frame
  then: the interpreter's start, before its first frame is linked); init,
  those of bad under the interpreter's initialization (Py_Initialize*,
  pyinit_*): the start-up's frozen modules run once and their code objects
  are freed, and a frame whose object is gone (or another's) by the drain's
  read is left native, never named after what is there now (CI: 3.8's
  frozen importlib under pycore_interp_init, 3.11's under
  Py_InitializeFromConfig, 1 sample in 15-20 thousand).
shapes PID QUAL: one word per shape found in some sample, of: recursion
  (300 recurse frames and <module> under them), method (Worker.method when
  QUAL=1, else method), generator (gen), lambda (<lambda>), target
  (thread_target), deflate (deflate leafward of compress_loop, with only
  native frames between them).
"""
import re
import sys

PY_NAMES = {"func_six", "func_three", "func_one", "split", "recurse", "Worker.method",
            "method", "gen", "<lambda>", "compress_loop", "thread_target", "shapes",
            "<module>", "run", "Thread.run", "_bootstrap", "Thread._bootstrap",
            "_bootstrap_inner", "Thread._bootstrap_inner", "waits", "wait_six",
            "wait_three", "wait_one"}


def traces(text, pid, lines=False, mapped=False, value="cpu", tid=None):
    """(weight, [frames leaf first]) of the samples of pid, from `pprof
    -raw`: its names as the profile holds them (pprof's other reports
    shorten names, cutting out what they take for C++ template
    arguments). weight: the sample's value of that type; tid: that
    thread's samples only."""
    locs, samples, part = {}, [], None
    last, col = None, None
    for ln in text.splitlines():
        if ln.startswith(("Samples:", "Locations", "Mappings")):
            part = ln.split()[0].rstrip(":")
            continue
        if part == "Samples":
            if col is None and "/" in ln:
                types = [t.split("/")[0] for t in ln.split()]
                col = types.index(value)
                continue
            m = re.match(r"\s+((?:\d+\s+)*\d+):((?: \d+)*)\s*$", ln)
            if m and col is not None:
                last = [int(m.group(1).split()[col]), [int(x) for x in m.group(2).split()], None]
                samples.append(last)
            m = re.search(r"pid:\[(\d+) pid\]", ln)
            if m and last:
                last[2] = m.group(1)
            m = re.search(r"tid:\[(\d+) tid\]", ln)
            if m and last and tid is not None and m.group(1) != tid:
                last[2] = None
        elif part == "Locations":
            # "ID: ADDR M=N NAME FILE:LINE s=START(SYSTEM_NAME)": pprof
            # shows a shortened name and, where it differs, the system
            # name in parentheses (empty for Python's functions, which
            # have none: the name is then the profile's own).
            m = re.match(r"\s+(\d+): 0x[0-9a-f]+ (M=\d+ )?(.*?) ((?:<[^>]*>|\S*):-?\d+) s=\d+(?:\((.*)\))?$", ln)
            if m:
                locs[int(m.group(1))] = (m.group(5) or m.group(3), m.group(4), bool(m.group(2)))
    if mapped:
        return [(w, [locs.get(i, ("?", "", True)) for i in ids]) for w, ids, p in samples if p == pid]
    if lines:
        return [(w, [locs.get(i, ("?", ""))[:2] for i in ids]) for w, ids, p in samples if p == pid]
    return [(w, [locs.get(i, ("?",))[0] for i in ids]) for w, ids, p in samples if p == pid]


def main():
    mode, pid = sys.argv[1], sys.argv[2]
    text = sys.stdin.read()
    if mode == "churn":
        # f_N must be called from LINE:even or LINE:odd by N's parity.
        even, odd = int(sys.argv[3]), int(sys.argv[4])
        right = wrong = 0
        for _, f in traces(text, pid, lines=True):
            for i, (name, where) in enumerate(f[:-1]):
                m = re.match(r"f_(\d+)$", name)
                if not m or f[i + 1][0] != "churn":
                    continue
                line = int(f[i + 1][1].rsplit(":", 1)[1])
                if line == (odd if int(m.group(1)) % 2 else even):
                    right += 1
                else:
                    wrong += 1
                    if wrong <= 3:
                        print("wrong: %s under churn at line %d" % (name, line), file=sys.stderr)
        print("right=%d wrong=%d" % (right, wrong))
        return
    if mode == "perf":
        total = agree = paired = edge = py = bad = n = 0
        clear = clear_ok = nclear = nenter = faulted = 0
        for (w, f), (_, fl) in zip(traces(text, pid, mapped=True), traces(text, pid, lines=True)):
            n += 1
            tramp = [n[4:].split(":", 1)[0] for n, _, _ in f if n.startswith("py::")]
            walked = [n for n, _, has_map in f if not has_map]
            total += w
            py += w if tramp or walked else 0
            if tramp == walked:
                agree += w
            # A function's frame being cleared and popped as its call
            # leaves it (_PyEvalFrameClearAndPop leafward of the innermost
            # trampoline), called by no generator's resumption (gen_*
            # between that trampoline and its caller's Python frame): on
            # the thread's data stack, named from there.
            names = [x for x, _, _ in f]
            t = next((i for i, x in enumerate(names) if x.startswith("py::")), None)
            if t is not None and "_PyEvalFrameClearAndPop" in names[:t]:
                up = []
                for x, _, has_map in f[t + 1:]:
                    if not has_map or x.startswith("py::"):
                        break
                    up.append(x)
                if not any(x.startswith("gen_") for x in up):
                    clear += w
                    nclear += 1
                    clear_ok += w if tramp == walked else 0
            # An evaluation call entering its frame, left unnamed: the
            # leaf a native _PyEval_EvalFrameDefault (one named is replaced
            # by its Python frame) in its prologue, before it links its
            # frame, right under its trampoline (Python/ceval.c 655-745 in
            # 3.12.1: the function's first line to its resume_frame label).
            cut = "[truncated]" in names
            faulted += 1 if cut else 0
            if t == 1 and names[0] == "_PyEval_EvalFrameDefault" and not cut:
                m = re.match(r"(?:.*/)?Python/ceval\.c:(\d+)$", fl[0][1])
                nenter += 1 if m and 655 <= int(m.group(1)) < 746 else 0
            # Each trampoline calls one evaluation of its function's
            # frame: the Python frames leafward of it, up to the next
            # trampoline, are that one; or, the innermost only, none and
            # the evaluation loop's native frame, entering or leaving
            # it (its frame not linked into the thread's state).
            ok, at_edge, run, inner = True, False, [], True
            for name, _, has_map in f:
                if name.startswith("py::"):
                    fn = name[4:].split(":", 1)[0]
                    if run != [fn]:
                        if inner and not run:
                            at_edge = True
                        else:
                            ok = False
                    run, inner = [], False
                elif not has_map:
                    run.append(name)
            ok = ok and not run
            paired += w if ok else 0
            edge += w if ok and at_edge else 0
            if not ok:
                bad += 1
                if bad <= 3:
                    print("differ: perf map %s, walked %s" % (tramp, walked), file=sys.stderr)
        print("samples=%d py=%.1f agree=%.2f paired=%.2f edge=%.2f clear=%.2f clearn=%d "
              "unentered=%d faulted=%d" % (
                  n, 100 * py / (total or 1), 100 * agree / (total or 1),
                  100 * paired / (total or 1), 100 * edge / (total or 1),
                  100 * clear_ok / (clear or 1), nclear, nenter, faulted))
        return
    if mode == "deep":
        depth = int(sys.argv[3])
        ts = traces(text, pid, tid=pid, mapped=True)
        total = sum(w for w, _ in ts) or 1
        mod = whole = trunc = ev = 0
        for w, fm in ts:
            f = [x for x, _, _ in fm]
            py = [i for i, (_, _, m) in enumerate(fm) if not m and f[i] != "[truncated]"]
            d = [i for i, x in enumerate(f) if x == "deep"]
            m = bool(d) and "<module>" in f[d[-1]:]
            mod += w if m else 0
            whole += w if m and len(d) == depth else 0
            trunc += w if f and f[-1] == "[truncated]" else 0
            if any(x == "_PyEval_EvalFrameDefault" and py and i > py[0] for i, x in enumerate(f)):
                ev += 1
                if ev <= 3:
                    print("eval frame left: %s" % f[:8], file=sys.stderr)
        print("samples=%d module=%.2f whole=%.2f trunc=%.2f eval=%d" % (
            len(ts), 100 * mod / total, 100 * whole / total, 100 * trunc / total, ev))
        return
    if mode == "evalroot":
        pids = sorted(set(re.findall(r"pid:\[(\d+) pid\]", text))) if pid == "all" else [pid]
        n = bad = bare = init = 0
        for p in pids:
            for w, f in traces(text, p, mapped=True):
                n += 1
                ev = [(name, has_map) for name, _, has_map in f
                      if not has_map or name == "_PyEval_EvalFrameDefault"]
                ev = [e for e in ev if e[0] != "[truncated]"]
                if not ev or not ev[-1][1]:
                    continue
                if any(not m for _, m in ev):
                    if any(x.startswith(("Py_Initialize", "pyinit_")) for x, _, _ in f):
                        init += 1
                        continue
                    bad += 1
                    if bad <= 3:
                        print("unnamed outermost: %s" % [x for x, _, _ in f][-12:], file=sys.stderr)
                else:
                    bare += 1
        print("samples=%d bad=%d bare=%d init=%d" % (n, bad, bare, init))
        return
    if mode == "offsplit":
        ts = traces(text, pid, value="offcpu")
        total = sum(w for w, _ in ts) or 1
        under = sum(w for w, f in ts if "waits" in f) or 1
        print("waits=%d py=%.1f six=%.1f three=%.1f one=%.1f" % (
            under // 1000000, 100 * sum(w for w, f in ts if any(x in PY_NAMES for x in f)) / total,
            *(100 * sum(w for w, f in ts if n in f) / under
              for n in ("wait_six", "wait_three", "wait_one"))))
        return
    ts = traces(text, pid)
    total = sum(w for w, _ in ts) or 1
    if mode == "split":
        def share(pred):
            return 100 * sum(w for w, f in ts if pred(f)) / total
        py = share(lambda f: any(x in PY_NAMES for x in f))
        print("samples=%d py=%.1f six=%.1f three=%.1f one=%.1f" % (
            len(ts), py, share(lambda f: "func_six" in f), share(lambda f: "func_three" in f),
            share(lambda f: "func_one" in f)))
        return
    qual = sys.argv[3] == "1"
    found = set()
    for _, f in ts:
        if f.count("recurse") >= 300 and "<module>" in f[f.index("recurse"):]:
            found.add("recursion")
        if ("Worker.method" if qual else "method") in f:
            found.add("method")
        if "gen" in f:
            found.add("generator")
        if "<lambda>" in f:
            found.add("lambda")
        if "thread_target" in f:
            found.add("target")
        if "deflate" in f and "compress_loop" in f:
            i, j = f.index("deflate"), f.index("compress_loop")
            if i < j and not any(x in PY_NAMES for x in f[i:j]):
                found.add("deflate")
    print(" ".join(sorted(found)))


main()
