#!/usr/bin/env python3
"""Reads `llvm-xray convert -f yaml -y` output (stdin) and checks that every
thread's calls nest: each exit closes the innermost open call. Prints one
JSON object: per function, its calls, max recursion depth and parents
(the function open around each call, "-" at the root); "bad" lists the
exits that did not match (at most 5)."""
import json
import re
import sys

rec = re.compile(r"function: '?([^',]*)'?,.*thread: (\d+),.*kind: ([a-z-]+)")
stacks, funcs, bad = {}, {}, []
for line in sys.stdin:
    m = rec.search(line)
    if not m or m.group(3) == "custom-event":
        continue
    fn, tid, kind = m.group(1), m.group(2), m.group(3)
    st = stacks.setdefault(tid, [])
    if kind.startswith("function-enter"):
        f = funcs.setdefault(fn, {"calls": 0, "depth": 0, "parents": {}})
        f["calls"] += 1
        parent = st[-1] if st else "-"
        f["parents"][parent] = f["parents"].get(parent, 0) + 1
        st.append(fn)
        f["depth"] = max(f["depth"], st.count(fn))
    elif kind in ("function-exit", "function-tail-exit"):
        if not st or st[-1] != fn:
            if len(bad) < 5:
                bad.append({"thread": tid, "exit": fn, "open": st[-3:]})
            if fn in st:
                while st and st.pop() != fn:
                    pass
        else:
            st.pop()
print(json.dumps({"funcs": funcs, "bad": bad, "open": {t: s for t, s in stacks.items() if s}}))
