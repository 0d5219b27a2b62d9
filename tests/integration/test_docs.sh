#!/usr/bin/env bash
# The docs stay true (issue 26): the README's commands are run as written
# (every ```sh block, in a directory holding the ./myprog and app.js they
# name, PID 1234 standing for a running process); the README stays under 200
# lines and --help on one screen; docs/usage.md is what `make docs` makes
# from the man page's source, which names every option --help lists; every
# relative link and anchor in README.md and docs/ leads somewhere, and the
# README links every document of docs/; the .deb the README installs is the
# one make deb builds.
source "$(dirname "$0")/lib.sh"

ALL=(docs_readme_short docs_help_one_screen docs_help_every_option docs_usage_current docs_man_every_option docs_links
	docs_readme_every_doc docs_deb_name readme_commands)

# --- static checks ------------------------------------------------------------------
t=docs_readme_short
n=$(wc -l < "$ROOT/README.md")
if [ "$n" -le 200 ]; then pass $t; else fail $t "README.md has $n lines (at most 200)"; fi

t=docs_help_one_screen
"$REC" --help > "$TMP/help" 2>&1
n=$(wc -l < "$TMP/help")
first=$(grep -m1 -E '^ +-' "$TMP/help")
if [ "$n" -le 60 ] && grep -q "Common options" "$TMP/help" && [[ $first == *--all-cpus* ]]; then
	pass $t
else
	fail $t "--help: $n lines (at most 60), first option: $first"
fi

# Every option of the man page is in --help (--retain, --spool-max and
# --off-cpu-entries were in the man page only), and -P and -G read as the
# two names they are, each with its short form (argp's alias listed "-P, -G,
# --per-process, --gperftools", as if four options).
t=docs_help_every_option
missing=
# The recorder's options: bpftrace-rec report's own (its REPORT section) are
# in `bpftrace-rec report --help`.
for o in $(awk '/^# / { skip = ($0 == "# REPORT") } !skip' "$ROOT/docs/bpftrace-rec.8.scd" |
	grep -E '^\*-' | grep -oE -- '--[a-z][a-z-]+' | sort -u); do
	grep -qE -- "$o\b" "$TMP/help" || missing+=" $o"
done
if [ -z "$missing" ] && grep -qE '^  -P, --per-process ' "$TMP/help" && grep -qE '^  -G, --gperftools ' "$TMP/help"; then
	pass $t
else
	fail $t "--help lacks:$missing; -P and -G: $(grep -E -- '-P|-G' "$TMP/help" | tr -s ' ')"
fi

t=docs_usage_current
if python3 "$ROOT/scripts/scd2md.py" "$ROOT/docs/bpftrace-rec.8.scd" | diff -u "$ROOT/docs/usage.md" - > "$TMP/usage.diff"; then
	pass $t
else
	fail $t "docs/usage.md is not what make docs makes from docs/bpftrace-rec.8.scd: run make docs"
	head -20 "$TMP/usage.diff" >&2
fi

t=docs_man_every_option
if require_tool scdoc $t; then
	scdoc < "$ROOT/docs/bpftrace-rec.8.scd" > "$TMP/man.8" 2> "$TMP/scdoc.err"
	man -l "$TMP/man.8" 2> /dev/null | col -b > "$TMP/man.txt"
	missing=
	for o in $(grep -oE -- '--[a-z][a-z-]+' "$TMP/help" | sort -u); do
		case $o in --help | --usage | --version) continue ;; esac
		grep -q -- "$o" "$TMP/man.txt" || missing+=" $o"
	done
	if [ -s "$TMP/man.txt" ] && [ -z "$missing" ] && grep -q "^NAME" "$TMP/man.txt"; then pass $t; else fail $t "the man page lacks:$missing $(head -c 200 "$TMP/scdoc.err")"; fi
fi

t=docs_links
if python3 - "$ROOT" README.md docs/*.md > "$TMP/links" 2>&1 <<'PY'; then pass $t; else fail $t "$(head -5 "$TMP/links" | tr '\n' ' ')"; fi
import os, re, sys
root = sys.argv[1]
os.chdir(root)
files = [f for a in sys.argv[2:] for f in ([a] if os.path.exists(a) else [])]
def slugs(path):
    out, literal = set(), False
    for line in open(path):
        if line.startswith("```"):
            literal = not literal
        if literal or not line.startswith("#"):
            continue
        h = line.lstrip("#").strip().lower()
        h = re.sub(r"[^\w\- ]", "", h)
        out.add(h.replace(" ", "-"))
    return out
bad = []
for f in files:
    text = re.sub(r"```.*?```", "", open(f).read(), flags=re.S)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        full = os.path.normpath(os.path.join(os.path.dirname(f), path)) if path else f
        if not os.path.exists(full):
            bad.append(f"{f}: {target}: no such file")
        elif anchor and full.endswith(".md") and anchor not in slugs(full):
            bad.append(f"{f}: {target}: no such heading")
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY

t=docs_readme_every_doc
missing=
for d in "$ROOT"/docs/*.md; do
	grep -q "](docs/$(basename "$d")" "$ROOT/README.md" || missing+=" docs/$(basename "$d")"
done
if [ -z "$missing" ]; then pass $t; else fail $t "README.md's documents leave out:$missing"; fi

t=docs_deb_name
ver=$(sed -n '1s/^bpftrace-rec (\([^)]*\)).*/\1/p' "$ROOT/debian/changelog")
if grep -q "apt-get install ./build/deb/bpftrace-rec_${ver}_amd64.deb" "$ROOT/README.md"; then pass $t; else fail $t "README does not install bpftrace-rec_${ver}_amd64.deb (debian/changelog's version)"; fi

# --- the README's commands, as written ----------------------------------------------
require_bpf readme_commands
t=readme_commands
require_tool node $t || exit 0
sb=$TMP/sandbox bin=$TMP/bin
mkdir -p "$sb" "$bin"
# The commands name bpftrace-rec, pprof and xdg-open as a user has them on PATH.
# bpftrace-rec: the build under test, a duration over 2 s cut to 2 s (the
# README's "-d 10" would make this test slow; what it records is the same).
cat > "$bin/bpftrace-rec" <<EOF
#!/usr/bin/env bash
args=() cut=1
while [ \$# -gt 0 ]; do
	case "\$1" in
	--) cut=0; args+=("\$@"); break ;;
	-d) args+=(-d 2); shift ;;
	*) args+=("\$1") ;;
	esac
	shift
done
exec "$REC" "\${args[@]}"
EOF
command -v pprof > /dev/null || ln -s "$PPROF" "$bin/pprof"
# xdg-open: no browser here; the page must be there to open.
printf '#!/bin/sh\n[ -s "$1" ] && echo "opened $1" >> %q\n' "$TMP/opened" > "$bin/xdg-open"
chmod +x "$bin"/*
# What the recipes name: ./myprog (parse_header and parse_body, 1:3, with
# libssl), app.js (node, one hot function), data.txt, and a running process
# for 1234 (the demo's workload: func_six does 60% of the work).
cc -O1 -g -fno-omit-frame-pointer -o "$sb/myprog" "$ROOT/tests/workloads/myprog.c" -lssl 2> "$TMP/cc.err" ||
	{ fail $t "cannot build tests/workloads/myprog.c: $(head -3 "$TMP/cc.err")"; exit 0; }
cp "$ROOT/tests/workloads/hot.js" "$sb/app.js"
: > "$sb/data.txt"
"$WL/split" 0 > /dev/null & pid=$! # until killed: under load the blocks outlast any fixed time
# MyServer, a JVM whose com.example.Foo.bar does its work, its source where
# the recipe's -source_path looks.
mkdir -p "$sb/src/main/java/com/example" "$sb/classes"
cat > "$sb/src/main/java/com/example/Foo.java" <<'EOF'
package com.example;

public class Foo {
	static long bar(long n) {
		long x = 0;
		for (long i = 0; i < n; i++) x += i ^ (x >>> 3);
		return x;
	}

	public static void main(String[] a) {
		long s = 0;
		while (true)
			s += bar(100000);
	}
}
EOF
jpid=
if javac -d "$sb/classes" "$sb/src/main/java/com/example/Foo.java" 2> /dev/null; then
	bash -c 'exec -a MyServer java -cp "$1" com.example.Foo' _ "$sb/classes" > /dev/null 2>&1 &
	jpid=$!
fi

python3 - "$ROOT/README.md" "$TMP/block" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
for i, b in enumerate(re.findall(r"^```sh\n(.*?)^```", text, flags=re.S | re.M)):
    open(f"{sys.argv[2]}.{i}", "w").write(b)
PY
bad= n=0
for b in "$TMP"/block.*; do
	n=$((n + 1))
	sed -i "s/\b1234\b/$pid/g" "$b"
	if ! (cd "$sb" && PATH=$bin:$PATH bash -e "$b" > "$b.out" 2>&1); then
		bad+=" [block $n failed: $(head -1 "$b"): $(tail -2 "$b.out" | tr '\n' ' ')]"
		continue
	fi
	# What each recipe must show, known by construction.
	case "$(head -1 "$b")" in
	# Before -p's arm, which the off-CPU recipe's first line matches too.
	*"--off-cpu"*) [ "$(grep -c '^Type: offcpu$' "$b.out")" = 1 ] && grep -q '^Type: wall$' "$b.out" &&
		grep -q "opened waits/flamegraph-offcpu.html" "$TMP/opened" || bad+=" [$n: no offcpu and wall views, or flamegraph-offcpu.html not opened]" ;;
	*"-p $pid -d 10"*) grep -q ' func_six$' "$b.out" && grep -q "opened bpftrace-rec.out/flamegraph.html" "$TMP/opened" ||
		bad+=" [$n: no func_six in pprof -top, or flamegraph.html not opened]" ;;
	*"--heap"*) grep -q '^Type: inuse_space$' "$b.out" && grep -q '^Type: alloc_space$' "$b.out" ||
		bad+=" [$n: heap.pb.gz's inuse_space and alloc_space views]" ;;
	*"-a -d 5"*) grep -q "^ pid: Total" "$b.out" && grep -qE "split" "$b.out" || bad+=" [$n: pprof -tags: no pid label or no split]" ;;
	*"-t 'parse_*'"*) grep -qE "myprog.c:[0-9]+:0: parse_header$" "$b.out" && grep -qE "myprog.c:[0-9]+:0: parse_body$" "$b.out" &&
		python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["traceEvents"]; assert any(x.get("name")=="parse_body" for x in e)' "$sb/trace.json" ||
		bad+=" [$n: llvm-xray account without myprog.c:LINE parse_*, or trace.json without parse_body]" ;;
	*"-- ./myprog"*) grep -qE "parse_body .*myprog.c:[0-9]+$" "$b.out" || bad+=" [$n: pprof -top -lines: no parse_body at myprog.c:LINE]" ;;
	*"node --perf-basic-prof"*) grep -q 'hotLoop' "$b.out" || bad+=" [$n: node's hotLoop not named]" ;;
	*"pgrep -f MyServer"*) grep -q ' com.example.Foo.bar$' "$b.out" && grep -qE '^ +[0-9.]+m?s +[0-9.]+m?s +[0-9]+:.*x \+= i' "$b.out" ||
		bad+=" [$n: com.example.Foo.bar not in pprof -top, or pprof -list without its hot line's samples]" ;;
	*) bad+=" [$n: a block this test does not know: $(head -1 "$b")]" ;;
	esac
done
kill $pid $jpid 2> /dev/null
wait $pid $jpid 2> /dev/null
if [ -z "$bad" ] && [ "$n" = 8 ]; then pass $t; else fail $t "$n blocks:$bad"; fi
