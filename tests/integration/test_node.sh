#!/usr/bin/env bash
# JavaScript frames named in place (issue 32): node started with no flag,
# its frames recorded by the BPF step at the CFI walk's frame-pointer steps
# (bpf/runtime/v8.bpf.c) and named from its heap (user/runtime/v8.c), read back by pprof:
#   tests/workloads/nsplit.js: fnA, fnB and fnC calling one loop 6:3:1, a
#   200-deep recursion and Holder.nmethod, on the main thread and a
#   worker_threads worker; recorded with -p once warm, and with -- from its
#   start:
#     node_{pid,start}_named: the workload's driver (run) named on >= 90 %
#       (-p) or >= 75 % (--, start-up included) of all the process's
#       samples (cumulative), recurse named, their script nsplit.js;
#   node_hostile: tests/workloads/fakev8 exports hostile v8dbg_* constants:
#     one line says its frames cannot be walked, its own function is named
#     natively, exit 0;
#   node_late: fakev8late maps the same constants (libfakev8.so) 0.5 s
#     after its start, as a node whose libnode ld.so has not mapped yet when
#     its maps are first read: it is looked at again (user/runtime/v8_names.c's
#     pending), and the one line comes.
#   node_lines: in the -- recording, the functions' start lines (their
#     bytecode's first position through the script's line ends:
#     formats/v8_srcpos.c) are nsplit.js's (hotLoop 8, fnA 13, run 21), and
#     an interpreted frame of run has the line of its loop's body (26, 27).
#   node_perfmap: below.
# Not checked yet: Holder.nmethod named with its class (V8's --cpu-prof
# does not name it so either).
. "$(dirname "$0")/lib.sh"
require_bpf node_pid_named node_pid_{js,split,deep,method,hotline} node_start_named \
	node_start_{js,split,deep,method,hotline} node_perfmap node_lines node_cpuprof node_phases node_hostile node_late

named() { # NAME DIR MIN
	local t=$1 dir=$2 min=$3 run rec
	"$PPROF" -top -cum -nodecount=200 "$dir/profile.pb.gz" > "$dir.top" 2>&1
	run=$(awk '$NF == "run" { sub("%", "", $5); print $5; exit }' "$dir.top")
	rec=$(grep -c ' recurse$' "$dir.top")
	"$PPROF" -traces "$dir/profile.pb.gz" 2>/dev/null | grep -q 'nsplit.js' ||
		"$PPROF" -raw "$dir/profile.pb.gz" 2>/dev/null | grep -q 'nsplit.js'
	file=$?
	if at_least "${run:-0}" "$min" && [ "$rec" -ge 1 ] && [ "$file" = 0 ]; then
		pass "$t"
	else
		fail "$t" "run ${run:-not named}% cumulative, recurse named $rec times, file $file (want >= $min, >= 1, 0)"
		head -20 "$dir.top" >&2
	fi
}

# Of the threads running nsplit.js's driver (the main thread and the
# worker), over all their samples (tests/integration/v8_traces.py):
#   _js: each one's samples >= 95 % with a JavaScript frame (the BPF walk
#     named it). The -- recording runs 30 s of node's CPU (15 a thread:
#     the 15 s of the clock it had idle before it counted CPU; 6 s of CPU
#     left a larger share of its samples to the start that DWARF unwinds,
#     and _deep's root share at 87.0 in a sanitizer CI run):
#     node's start-up before any JavaScript (its snapshot read, OpenSSL's
#     set-up) is ~0.1 s of the main thread's CPU, however loaded (15 s of
#     the clock left 5.5 % of its samples to it at load 25);
#   _split: fnA's, fnB's and fnC's cumulative shares of the samples under
#     them within 3 points (or 3 standard errors, where they are few) of
#     60/30/10: Turbofan inlines the three, hotLoop and recurse(200) into
#     run, whose frames name them (0/0/0 before: all in run);
#   _deep: of the samples in hotLoop under recurse, >= 95 % with its 201
#     frames then run, and (--) >= 90 % with a thread's root at the end.
#     Not under -p: a sample taken before node's unwind tables are loaded
#     (its first second or so, longer under load) is unwound by DWARF from
#     a copy of its stack, which a 200-deep recursion overflows
#     (summary.json's dwarf_truncated: 150 of 721 samples, their stacks
#     ending at the worker's uv__io_poll; 77.5 to 92.5 % reached the root);
#   _method: Holder.nmethod named nmethod, as node --cpu-prof names it;
#   _hotline: (-p, once optimized) of the samples in hotLoop, >= 90 % at its
#     loop's line 10: an optimized frame's functions have their positions'
#     lines (0 before: an optimized frame had no line). The -- recording's
#     interpreted start has its bytecode's lines (node_lines).
traces() { # NAME DIR PID ROOT_MIN HOTLINE_MIN
	local t=$1 dir=$2 rmin=$4 r d root
	"$PPROF" -raw "$dir/profile.pb.gz" > "$dir.raw" 2>/dev/null
	r=$(python3 "$ROOT/tests/integration/v8_traces.py" split "$3" < "$dir.raw")
	echo "$t: $r" >&2
	local hmin=$5
	set -- $r "$hmin"
	if [ "$1" = threads=2 ] && at_least "${2#js=}" 95; then pass "${t}_js"; else
		fail "${t}_js" "$r (want threads=2, js >= 95)"
	fi
	if [ "$7" = split=ok ]; then pass "${t}_split"; else
		fail "${t}_split" "$r (want a/b/c 60/30/10 within 3 points or 3 SE)"
	fi
	d=${8#deep=} root=${9#root=}
	if [ "${d#*/}" -ge 5 ] && at_least "${d%/*}" 95 && at_least "$root" "$rmin"; then
		pass "${t}_deep"
	else
		fail "${t}_deep" "$r (want deep >= 95 of >= 5, root >= $rmin)"
	fi
	if [ "${10#nmethod=}" -ge 1 ]; then pass "${t}_method"; else
		fail "${t}_method" "$r (want nmethod >= 1)"
	fi
	d=${12#hotline=}
	if [ "${d#*/}" -ge 20 ] && at_least "${d%/*}" "$hmin"; then pass "${t}_hotline"; else
		fail "${t}_hotline" "$r (want hotline >= $hmin of >= 20)"
	fi
}

if ! command -v node > /dev/null; then
	for t in node_pid_named node_pid_{js,split,deep,method,hotline} node_start_named \
		node_start_{js,split,deep,method,hotline} node_perfmap node_lines; do
		skip $t "node not installed"
	done
else
	# It runs past the recording (whose start may take seconds under load:
	# a target that exited first left 0 samples) and is ended after it.
	node "$ROOT/tests/workloads/nsplit.js" 120 &
	pid=$!
	sleep 4 # warm-up: the JIT's tiers reached
	timeout 120 "$REC" -F 499 -d 6 -p "$pid" -o "$TMP/pid" > /dev/null 2> "$TMP/pid.err"
	kill "$pid"
	wait "$pid" 2> /dev/null
	named node_pid_named "$TMP/pid" 90
	traces node_pid "$TMP/pid" "$pid" 0 90
	timeout 120 "$REC" -F 199 -o "$TMP/start" -- node "$ROOT/tests/workloads/nsplit.js" 30 \
		> /dev/null 2> "$TMP/start.err"
	named node_start_named "$TMP/start" 75
	traces node_start "$TMP/start" - 90 0
	# node_perfmap: the same workload under --perf-basic-prof, walked all
	# the same (BPFTRACE_REC_V8_CROSSCHECK, the tests' switch, which also
	# writes each frame in V8's code space as named): its own function
	# agrees with the perf map's name at that pc for >= 99 % of >= 100
	# frames (tests/integration/v8_perfmap.py).
	# In $TMP: node writes its code log there too (isolate-*-v8.log).
	env -C "$TMP" node --perf-basic-prof "$ROOT/tests/workloads/nsplit.js" 120 &
	pid=$!
	sleep 4
	BPFTRACE_REC_V8_CROSSCHECK=$TMP/xcheck timeout 120 "$REC" -F 499 -d 4 -p "$pid" \
		-o "$TMP/pmap" > /dev/null 2> "$TMP/pmap.err"
	kill "$pid"
	wait "$pid" 2> /dev/null
	r=$(python3 "$ROOT/tests/integration/v8_perfmap.py" "$TMP/xcheck" "/tmp/perf-$pid.map" 2>&1)
	rm -f "/tmp/perf-$pid.map"
	set -- $r
	if [ "${1#n=}" -ge 100 ] 2> /dev/null && at_least "${2#agree=}" 99; then
		pass node_perfmap
	else
		fail node_perfmap "$r (want n >= 100, agree >= 99)"
	fi
	"$PPROF" -raw "$TMP/start/profile.pb.gz" > "$TMP/start.raw" 2>/dev/null
	miss=
	for want in 'hotLoop .*nsplit.js:[0-9]* s=8()' 'fnA .*nsplit.js:[0-9]* s=13()' \
		'run .*nsplit.js:[0-9]* s=21()' 'run .*nsplit.js:2[67] s=21()'; do
		grep -q " $want\$" "$TMP/start.raw" || miss="$miss '$want'"
	done
	if [ -z "$miss" ]; then pass node_lines; else
		fail node_lines "no location$miss in pprof -raw"
		grep 'nsplit.js' "$TMP/start.raw" | head -10 >&2
	fi
fi

# node_cpuprof: against V8's own profiler in the same run, on a real
# program: TypeScript's compiler (Debian's node-typescript, which make
# test-deps installs) compiling 300 generated modules of generic classes
# (~2.3 s of CPU) through its API, under node --cpu-prof, recorded by -p at
# once (tests/workloads/tscdrive.js: it waits until the recorder says it
# has node's unwind tables, and after the compile until the recording has
# ended). Over all the samples of the main thread within the compile's
# window, but those in the GC (V8's profiler counts them apart): the 20
# functions with the most samples under them in the .cpuprofile (the
# driver's, the compiler's down to its checker) have their shares within 3
# points of V8's here (tests/integration/v8_traces.py cpuprof). Before: 6 to
# 8 points short at the root, stacks through a code page committed since
# the maps were read went to DWARF and were cut, and frames whose function
# Sparkplug compiled before the drain stayed native. V8's share is read
# both ways DevTools can, of its samples and of their time, which part
# under load (v8_traces.py says why): ours within 3 points of the range
# between them. V8's is held to the truth too (node_phases, below): where
# it is off the truth by more than 3 points, or further from it than ours
# is, the run says so and ours is held to the truth alone.
# node_phases: the same run against the driver's own account of its main
# thread's time on a CPU in each phase (the program's parse, the check,
# the emit, and the type checker's part of the check: schedstat's count),
# ours within 3 points of it (quiet and beside two busy loops here: within
# 0.7; V8's within 2.9 there, and 4.2 under on the type checker in a CI
# run's company, where CI's node_cpuprof had failed on its frames).
t=node_cpuprof
tsc=/usr/share/nodejs/typescript/lib/typescript.js
if ! command -v node > /dev/null || [ ! -r "$tsc" ]; then
	for t in node_cpuprof node_phases; do
		if [ "${CI:-}" = true ]; then fail $t "node or $tsc missing in CI (make test-deps)"; else
			skip $t "node or Debian's node-typescript not installed (make test-deps)"
		fi
	done
else
	python3 - "$TMP/ts" << 'PY'
import os, sys
d = sys.argv[1]
os.makedirs(os.path.join(d, "src"))
for i in range(300):
    with open(os.path.join(d, "src", "m%d.ts" % i), "w") as f:
        if i:
            f.write('import { C%d, I%d } from "./m%d";\n' % (i - 1, i - 1, i - 1))
        f.write("export interface I%d<T> { id: number; value: T; tags: Array<string>; child?: I%d<T>; }\n" % (i, i))
        f.write("export type U%d = %s;\n" % (i, " | ".join('"k%d_%d"' % (i, j) for j in range(20))))
        f.write("export class C%d<T extends { id: number }> {\n  private items: Map<number, T> = new Map();\n" % i)
        for j in range(12):
            f.write("  m%d(x: T, k: U%d): I%d<T> {\n" % (j, i, i))
            f.write("    const r: I%d<T> = { id: x.id + %d, value: x, tags: [k, `${x.id}`] };\n" % (i, j))
            f.write("    this.items.set(r.id, x);\n")
            f.write("    return r.tags.length > %d ? { ...r, child: r } : r;\n  }\n" % (j % 3))
        f.write("}\n")
        if i:
            f.write("export function f%d(c: C%d<{ id: number }>, i: I%d<number>): number {\n" % (i, i - 1, i - 1))
            f.write('  return c.m0({ id: i.value }, "k%d_0").id + i.tags.map(s => s.length).reduce((a, b) => a + b, 0);\n}\n' % (i - 1))
with open(os.path.join(d, "tsconfig.json"), "w") as f:
    f.write('{"compilerOptions": {"target": "es2020", "module": "commonjs", "strict": true, '
            '"outDir": "out", "lib": ["es2020"]}, "include": ["src"]}\n')
PY
	node --cpu-prof --cpu-prof-dir="$TMP/v8prof" --cpu-prof-interval 500 \
		"$ROOT/tests/workloads/tscdrive.js" "$TMP/ts" "$TMP/marks" &
	pid=$!
	for _ in $(seq 300); do grep -q waiting "$TMP/marks" 2> /dev/null && break; sleep 0.1; done
	"$REC" -v -F 999 -d 100 -p "$pid" -o "$TMP/tsc" > /dev/null 2> "$TMP/tsc.err" &
	rp=$!
	for _ in $(seq 600); do grep -q "pid $pid: unwind tables ready" "$TMP/tsc.err" && break; sleep 0.1; done
	kill -USR2 "$pid"
	for _ in $(seq 1200); do grep -q '^end' "$TMP/marks" && break; sleep 0.1; done
	kill -INT "$rp"
	wait "$rp"
	kill -USR2 "$pid" # it exits, and writes its .cpuprofile
	wait "$pid"
	"$PPROF" -raw "$TMP/tsc/profile.pb.gz" > "$TMP/tsc.raw" 2> /dev/null
	r=$(python3 "$ROOT/tests/integration/v8_traces.py" cpuprof "$TMP"/v8prof/*.cpuprofile \
		"$TMP/marks" "$pid" < "$TMP/tsc.raw" 2>&1)
	ph=$(python3 "$ROOT/tests/integration/v8_traces.py" phases "$TMP"/v8prof/*.cpuprofile \
		"$TMP/marks" "$pid" < "$TMP/tsc.raw" 2>&1)
	echo "$t: $r" >&2
	echo "node_phases: $ph" >&2
	if [[ $ph == ours=ok* ]]; then pass node_phases; else
		fail node_phases "$ph (want ours within 3 points of the driver's own account)"; fi
	# Where the two part on a function, the one nearer the measured truth
	# is taken: ours within 3 points of it on every phase and nearer to it
	# than V8's in all (runWithCancellationToken, the wrapper of both the
	# type checker's and the emit's calls, ours 77.3 and V8's 73.6 in a CI
	# run whose truth gave those two 25.9 + ~51).
	if [[ $r == ok* ]]; then
		pass $t
	elif [[ $ph == "ours=ok v8=off"* || ($ph == "ours=ok "* && $ph == *" nearer=ours "*) ]]; then
		echo "$t: V8's samples further from the driver's own account than ours in this run, ours held to it: $r" >&2
		pass $t
	else
		fail $t "$r; $ph"
	fi
fi

make -s -C "$ROOT" OUT="$BUILD" "$WL/fakev8" "$WL/fakev8late" "$WL/libfakev8.so" > /dev/null 2>&1
t=node_hostile
timeout 120 "$REC" -F 199 -d 1.5 -o "$TMP/fake" -- "$WL/fakev8" 1 > /dev/null 2> "$TMP/fake.err"
rc=$?
n=$(grep -c "runs V8 .* whose frames cannot be walked" "$TMP/fake.err")
a=$("$PPROF" -top -nodecount=5 "$TMP/fake/profile.pb.gz" 2>/dev/null | awk '$NF == "fakev8_spin" { sub("%", "", $2); print $2 }')
if [ "$rc" = 0 ] && [ "$n" = 1 ] && at_least "${a:-0}" 80; then pass $t; else
	fail $t "exit $rc, $n refusal lines, fakev8_spin ${a:-not named}% flat (want 0, 1, >= 80)"
	head -5 "$TMP/fake.err" >&2
fi

t=node_late
timeout 120 "$REC" -F 199 -d 3 -o "$TMP/late" -- "$WL/fakev8late" 1.5 "$WL/libfakev8.so" \
	> /dev/null 2> "$TMP/late.err"
rc=$?
n=$(grep -c "runs V8 .* whose frames cannot be walked" "$TMP/late.err")
if [ "$rc" = 0 ] && [ "$n" = 1 ]; then pass $t; else
	fail $t "exit $rc, $n refusal lines (want 0, 1)"
	head -5 "$TMP/late.err" >&2
fi
