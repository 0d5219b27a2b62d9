#!/usr/bin/env python3
"""Per function, the bytes heaptrack saw allocated and leaked by the stacks
that pass through it, from its data file (decompressed, on stdin).

heaptrack_print (1.4) gives per stack the calls (-F with
--flamegraph-cost-type allocations), the leaked and the peak bytes, but not
the bytes allocated; this sums them from the file's own records, and the
calls and leaked bytes it also prints are checked against heaptrack_print's
by test_heap.sh, so that this reading is the one heaptrack makes.

The file's lines (heaptrack's interpreted format, numbers in hex):
  s LEN TEXT              a string (1-based: index 0 is none)
  i IP MODULE [FUNC FILE LINE]...   an instruction pointer (1-based), its
                          function, then those inlined in it
  t IP PARENT             a trace (1-based; parent 0 is the root)
  a SIZE TRACE            an allocation's kind (0-based)
  + KIND / - KIND         an allocation / a free of that kind

  heaptrack_sites.py FUNC... < data
prints, per FUNC: "FUNC calls=N allocated=B leaked=B", and the same of
every stack as "TOTAL ...".
  heaptrack_sites.py --module PATH < data
the same per call site in the object PATH (a stripped program, whose frames
have no name): each stack's innermost ip in it, "0xIP calls=...", with
"NONE ..." for the stacks that do not pass through it. The ips are return
addresses, as libunwind gives them.
"""
import sys


def main():
    module = None
    funcs = sys.argv[1:]
    if funcs[:1] == ["--module"]:
        module, funcs = funcs[1], []
    strings = [None]
    ips = [()]  # the function names of each ip
    ip_at = [(0, None)]  # (ip, module) of each ip
    traces = [(0, 0)]  # (ip, parent)
    kinds = []  # (size, trace)
    calls, live = [], []
    for line in sys.stdin:
        f = line.split()
        if not f:
            continue
        tag = f[0]
        if tag == "s":
            strings.append(line.rstrip("\n").split(" ", 2)[2] if len(f) > 2 else "")
        elif tag == "i":
            ips.append(tuple(strings[int(x, 16)] for x in f[3::3]))
            ip_at.append((int(f[1], 16), strings[int(f[2], 16)]))
        elif tag == "t":
            traces.append((int(f[1], 16), int(f[2], 16)))
        elif tag == "a":
            kinds.append((int(f[1], 16), int(f[2], 16)))
            calls.append(0)
            live.append(0)
        elif tag == "+":
            k = int(f[1], 16)
            calls[k] += 1
            live[k] += 1
        elif tag == "-":
            live[int(f[1], 16)] -= 1
    out = {fn: [0, 0, 0] for fn in funcs + ["TOTAL"]}
    for k, (size, t) in enumerate(kinds):
        names = set()
        site = "NONE"
        while t:
            ip, t = traces[t]
            names.update(ips[ip])
            if module and site == "NONE" and ip_at[ip][1] == module:
                site = "0x%x" % ip_at[ip][0]
        names.add("TOTAL")
        if module:
            names.add(site)
            out.setdefault(site, [0, 0, 0])
        for fn in out:
            if fn in names:
                out[fn][0] += calls[k]
                out[fn][1] += calls[k] * size
                out[fn][2] += live[k] * size
    for fn in out:
        c, a, l = out[fn]
        print(f"{fn} calls={c} allocated={a} leaked={l}")


if __name__ == "__main__":
    main()
