"""Reads `pprof -raw` output (stdin) of a recording of a JVM and prints what
test_jvm.sh checks, over ALL the samples of the threads named (weighted by
their count):

split PID: of tests/workloads/JSplit.java's threads split-0 and split-1:
  "n=N java=PCT six=PCT three=PCT one=PCT inl=PCT": the share with a Java
  frame (a frame the HotSpot walk named: a system name with a signature),
  six's, three's and one's cumulative shares of the samples under any of
  them, and of the samples in spin, the share named under six, three or one
  with JSplit.java lines (spin is inlined into them once C2 compiles them).
deep PID ROOTS: of thread deep: "n=N java=PCT whole=PCT": the share with a
  Java frame, and of the samples in deepLeaf, those with 200 deep frames
  under it and a root (one of ROOTS, comma-separated) at the end.
top PID THREAD N: the N methods with the largest inclusive share of the
  samples of THREAD that carry a Java frame, "NAME PCT" a line (the peer's
  side is jfr_top.py's).
"""
import re
import sys


def parse(text):
    """[(count, [(name, file, line, sysname)] leaf first, labels)]."""
    locs, samples, part, last = {}, [], None, None
    for ln in text.splitlines():
        if ln.startswith(("Samples:", "Locations", "Mappings")):
            part = ln.split()[0].rstrip(":")
            continue
        if part == "Samples":
            m = re.match(r"\s+(\d+)\s+\d+:((?: \d+)*)\s*$", ln)
            if m:
                last = [int(m.group(1)), [int(x) for x in m.group(2).split()], {}]
                samples.append(last)
                continue
            for k, v in re.findall(r"(\w+):\[([^\]]*)\]", ln):
                if last:
                    last[2][k] = v.split()[0] if k != "comm" else v
        elif part == "Locations":
            m = re.match(r"\s+(\d+): 0x[0-9a-f]+ (?:M=\d+ )?(.*?) (\S*):(-?\d+) s=\d+(?:\((.*)\))?$", ln)
            if m:
                locs[int(m.group(1))] = (m.group(2), m.group(3), int(m.group(4)), m.group(5) or "")
    return [(w, [locs.get(i, ("?", "", 0, "")) for i in ids], lab) for w, ids, lab in samples]


def is_java(f):
    # The walk's frames: a signature in the system name ("JSplit.six()J").
    return "(" in f[3] and f[3].endswith(tuple("VZBCSIJFD;[")) or f[1].endswith(".java")


def pct(a, b):
    return 100.0 * a / b if b else 0.0


def main():
    mode, pid = sys.argv[1], sys.argv[2]
    rows = [r for r in parse(sys.stdin.read()) if r[2].get("pid") == pid]
    if mode == "split":
        rows = [r for r in rows if r[2].get("comm") in ("split-0", "split-1")]
        n = sum(w for w, _, _ in rows)
        java = sum(w for w, fr, _ in rows if any(is_java(f) for f in fr))
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
        print("n=%d java=%.2f six=%.2f three=%.2f one=%.2f inl=%.2f" % (
            n, pct(java, n), pct(cum["six"], under), pct(cum["three"], under), pct(cum["one"], under),
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
    elif mode == "top":
        thread, k = sys.argv[3], int(sys.argv[4])
        rows = [r for r in rows if r[2].get("comm") == thread and any(is_java(f) for f in r[1])]
        n = sum(w for w, _, _ in rows)
        inc = {}
        for w, fr, _ in rows:
            for name in {f[0] for f in fr if is_java(f)}:
                inc[name] = inc.get(name, 0) + w
        for name, v in sorted(inc.items(), key=lambda x: -x[1])[:k]:
            print("%s %.2f" % (name, pct(v, n)))


if __name__ == "__main__":
    main()
