#!/usr/bin/env python3
"""docs/usage.md from docs/bpftrace-rec.8.scd, the man page's source, so
that the usage page and bpftrace-rec(8) never disagree. Handles the scdoc
this page uses: headings, *bold*, _underline_, backslash escapes, option
terms followed by tab-indented text, "- " lists and ``` literal blocks.
Usage: scd2md.py IN.scd > OUT.md (tests/integration/test_docs.sh checks
that docs/usage.md is what this prints)."""
import re
import sys

BOLD = re.compile(r"(?<!\\)\*(.+?)(?<!\\)\*")
UNDER = re.compile(r"(?<![\w\\])_(.+?)(?<!\\)_(?!\w)")


def inline(s):
    s = BOLD.sub(r"**\1**", s)
    s = UNDER.sub(r"*\1*", s)
    return s


def convert(lines):
    out = []
    title = lines[0].strip()
    out.append(f"# {title}: usage")
    out.append("")
    out.append("<!-- Generated from docs/bpftrace-rec.8.scd by scripts/scd2md.py "
               "(make docs): edit that file, not this one. -->")
    out.append("")
    out.append("This page is the manual page, `man bpftrace-rec` once installed.")
    literal = False
    for i, raw in enumerate(lines[1:], 1):
        line = raw.rstrip("\n")
        if line.lstrip("\t").startswith("```"):
            literal = not literal
            out.append(line.lstrip("\t") if not line.startswith("\t") else "  " + line.lstrip("\t"))
            continue
        if literal:
            out.append(("  " + line[1:]) if line.startswith("\t") else line)
            continue
        if line.startswith("# "):
            out.append("## " + line[2:].strip().capitalize())
            continue
        if line.startswith("\t"):
            out.append("  " + inline(line[1:]))
            continue
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if line and nxt.startswith("\t"):  # an option's term
            out.append("- " + inline(line))
            out.append("")
            continue
        out.append(inline(line))
    return "\n".join(out).rstrip("\n") + "\n"


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        sys.stdout.write(convert(f.readlines()))
