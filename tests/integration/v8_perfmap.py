"""Compares the names bpftrace-rec's V8 walk gave the frames of a node
started with --perf-basic-prof (the lines BPFTRACE_REC_V8_CROSSCHECK wrote:
"PID PC NAME", each frame's own function) with node's perf map
(/tmp/perf-PID.map: "START SIZE NAME", NAME "JS:*fnA FILE:LINE:COL", its
marker ~ interpreted or baseline, ^ Sparkplug, + Maglev, * Turbofan).
Prints "n=N agree=PCT unmapped=N" and up to 5 disagreements, over the frames
whose pc one entry of the map holds (the last written for it: V8 reuses
freed code space, and the map appends)."""
import re
import sys


def perf_map(path):
    ents = []
    for ln in open(path, errors="replace"):
        parts = ln.rstrip("\n").split(" ", 2)
        if len(parts) == 3:
            ents.append((int(parts[0], 16), int(parts[1], 16), parts[2]))
    return ents


def js_name(entry):
    # "JS:*fnA /path/x.js:13:13" -> "fnA"; "JS:~ /path" (anonymous) -> "".
    m = re.match(r"(?:JS|LazyCompile|Function|Eval):[~^+*]?(\S*)(?: |$)", entry)
    return m.group(1) if m else None


def main(xc_path, map_path):
    ents = perf_map(map_path)
    n = agree = unmapped = 0
    bad = []
    for ln in open(xc_path):
        _, pc, ours = ln.rstrip("\n").split(" ", 2)
        pc = int(pc, 16)
        hit = None
        for start, size, name in reversed(ents):
            if start <= pc < start + size:
                hit = name
                break
        theirs = js_name(hit) if hit else None
        if theirs is None:
            unmapped += 1
            continue
        n += 1
        if theirs == ours or (theirs == "" and ours == "<anonymous>"):
            agree += 1
        elif len(bad) < 5:
            bad.append("%x ours %s, map %s" % (pc, ours, hit))
    print("n=%d agree=%.1f unmapped=%d" % (n, 100.0 * agree / n if n else 0.0, unmapped))
    for b in bad:
        print("  " + b)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
