#!/usr/bin/env bash
# Java frames named in place (issue 31): a JVM started with no flag, its
# frames walked in BPF by HotSpot's own rules (bpf/runtime/jvm.bpf.c) and named from
# its own tables (user/runtime/jvm.c), read back by pprof over ALL the samples of
# the threads checked (tests/integration/jvm_traces.py):
#   tests/workloads/JSplit.java: threads split-0 and split-1 calling six(),
#   three() and one() (one loop, spin(), 6:3:1), thread deep recursing 200
#   levels; recorded with -p once warm (compiled, spin inlined), with -- from
#   its start (interpreted, then compiled) and under -Xint:
#     split: >= 95 % of split-1's samples carry a Java frame (and of split-0's,
#       the main thread, recorded once warm); six,
#       three and one within 3 points of 60/30/10 (cumulative); >= 95 % of
#       spin's samples named under its caller with JSplit.java lines (the
#       inlined frames of the nmethod's scopes);
#     deep: >= 95 % of deepLeaf's samples under all 200 deep frames, down to
#       the thread's root;
#     list: `pprof -list JSplit.spin` shows the hot loop's line with samples;
#   jvm_gperf: google-pprof names JSplit.six (cpu-PID.prof with names-PID.so);
#   jvm_offcpu: --off-cpu of JSplit park (threads parked by
#     LockSupport.parkNanos in parkSix, parkThree and parkOne, 6:3:1 ms):
#     >= 95 % of their off-CPU time under a Java frame, the three within 3
#     points of 60/30/10 of the time under them;
#   jvm_jfr: against the JVM's own profiler in the same run: javac compiling
#     a generated source tree (tests/workloads/JavacPhases.java, its JVM at
#     nice -20: see there), recorded by bpftrace-rec -p and by JFR (jcmd
#     JFR.start, jfr print --events jdk.ExecutionSample): the main thread's
#     top methods' inclusive shares within 3 points of JFR's, where JFR's
#     samples agree with javac's own account (below); where they do not,
#     the run says so, and ours is held to the account;
#   jvm_phases: the same run against javac's own account of its thread's
#     CPU time (a TaskListener timing each phase by the thread's CPU
#     clock): parse, analysis and code generation's shares of the main
#     thread's samples within 3 points of it;
#   jvm_churn: tests/workloads/JChurn.java loads two classes named Worker in
#     turn, runs each until compiled and unloads it (its code and metadata
#     freed and reused by the other's): no frame named after the other
#     class (one's method at the other's line or under the other's run),
#     at least 100 named; frames whose class or code was unloaded before
#     the drain read them left unnamed and counted (summary.json's
#     left_native_unloaded_before_read above 0: the case was met; JChurn's
#     classes live ~50 ms, the drain's wait is 50 ms);
#   jvm_hostile_*: tests/workloads/fakejvm poses as a libjvm with hostile
#     tables: one line saying the JVM cannot be walked, its frames named
#     natively (fake_spin), exit 0, no hang.
source "$(dirname "$0")/lib.sh"

MODES=(pid cmd xint)
ALL=()
for m in "${MODES[@]}"; do ALL+=("jvm_${m}_split" "jvm_${m}_deep"); done
ALL+=(jvm_pid_list jvm_gperf jvm_offcpu jvm_churn)
# The peer's comparison is the normal pass's (CI's time: ~45 s of javac);
# the recorder code it drives runs under the sanitizers in the others.
[ "${SANITIZE:-}" = 1 ] || ALL+=(jvm_jfr jvm_phases)
HOSTILE=(stride noterm unterm missing heaps)
for h in "${HOSTILE[@]}"; do ALL+=("jvm_hostile_$h"); done
require_bpf "${ALL[@]}"
if ! command -v javac > /dev/null || ! command -v jcmd > /dev/null || ! command -v jfr > /dev/null; then
	for t in "${ALL[@]}"; do require_tool javac "$t"; done
	exit 0
fi

CLS=$TMP/java
mkdir -p "$CLS"
javac -d "$CLS" "$ROOT/tests/workloads/JSplit.java" || { for t in "${ALL[@]}"; do fail "$t" "javac failed"; done; exit 0; }
HOT=$(grep -n 'LINE:hot' "$ROOT/tests/workloads/JSplit.java" | cut -d: -f1)
ROOTS=start_thread,__clone3,clone3,clone,_start

# 3 points, or three standard errors of a share where the machine's load
# left few samples.
tol() { python3 -c 'import math, sys; p, n = float(sys.argv[1]) / 100, max(int(sys.argv[2]), 1); print("%.1f" % max(3.0, 300 * math.sqrt(p * (1 - p) / n)))' "$1" "$2"; }
# checks MODE DIR PID EXPECT: the split and deep checks over the recording;
# EXPECT: the shares six, three and one took as JSplit measured them over
# the recording's seconds (its "split" lines: C2 compiles each caller's
# inlined copy of the loop apart, and they need not run at one speed).
checks() {
	local m=$1 dir=$2 pid=$3 r n java main six three one inl whole e6 e3 e1
	read -r e6 e3 e1 <<<"$4"
	"$PPROF" -raw "$dir/profile.pb.gz" > "$dir.raw" 2>/dev/null
	r=$(python3 "$ROOT/tests/integration/jvm_traces.py" split "$pid" < "$dir.raw")
	read -r n java main six three one inl <<<"$(sed 's/[a-z]*=//g' <<<"$r")"
	# The main thread runs the VM's start-up before any Java code: all
	# of its samples carry a Java frame only when recorded once warm.
	if [ "$m" != pid ]; then main=100; fi
	# Named in place: no JIT guidance, no refusal (a JVM still starting
	# is read again).
	if grep -E "of its samples are in JIT code|cannot be walked" "$dir.err" >&2; then
		fail "jvm_${m}_split" "a JIT warning or a refusal for a JVM the walk names"
	elif at_least "${n:-0}" 50 && at_least "${java:-0}" 95 && at_least "${main:-0}" 95 &&
		at_least "$e6" 1 && within "${six:-0}" "$e6" "$(tol "$e6" "$n")" &&
		within "${three:-0}" "$e3" "$(tol "$e3" "$n")" && within "${one:-0}" "$e1" "$(tol "$e1" "$n")" &&
		{ [ "$m" = xint ] || at_least "${inl:-0}" 95; }; then
		pass "jvm_${m}_split"
	else
		fail "jvm_${m}_split" "$r (want n >= 50, java >= 95, main >= 95 (-p), $e6/$e3/$e1 as JSplit measured +-$(tol "$e6" "${n:-1}"), inl >= 95)"
		"$PPROF" -top -nodecount=12 "$dir/profile.pb.gz" 2>&1 | tail -12 >&2
	fi
	r=$(python3 "$ROOT/tests/integration/jvm_traces.py" deep "$pid" "$ROOTS" < "$dir.raw" 2> "$dir.deep")
	read -r n java whole <<<"$(sed 's/[a-z]*=//g' <<<"$r")"
	if at_least "${n:-0}" 20 && at_least "${java:-0}" 95 && at_least "${whole:-0}" 95; then
		pass "jvm_${m}_deep"
	else
		fail "jvm_${m}_deep" "$r (want n >= 20, java >= 95, whole >= 95)"
		sort "$dir.deep" | uniq -c | sort -rn | head -3 >&2
	fi
}

# -p of a JVM already running and warm: C2 has compiled the loop and
# inlined spin into six, three and one.
java -cp "$CLS" JSplit 30 > "$TMP/pid.split" 2>&1 &
jp=$!
sleep 4
t0=$(date +%s%3N)
"$REC" -F 499 -d 3 -p "$jp" -o "$TMP/pid" > /dev/null 2> "$TMP/pid.err"
t1=$(date +%s%3N)
checks pid "$TMP/pid" "$jp" "$(python3 "$ROOT/tests/integration/jvm_traces.py" expect "$TMP/pid.split" "$t0" "$t1")"
t=jvm_pid_list
hot=$("$PPROF" -list '^JSplit.spin$' -source_path "$ROOT/tests/workloads" "$TMP/pid/profile.pb.gz" 2>/dev/null |
	awk -v l="$HOT" '$3 == l":" && $0 ~ /LINE:hot/ { print $1 }')
if [ -n "$hot" ] && [ "$hot" != . ]; then pass $t; else
	fail $t "no samples at JSplit.java:$HOT in pprof -list JSplit.spin"
	"$PPROF" -list '^JSplit.spin$' -source_path "$ROOT/tests/workloads" "$TMP/pid/profile.pb.gz" 2>&1 | head -12 >&2
fi
t=jvm_gperf
g=$(google-pprof --text --cum "$(readlink -f "$(command -v java)")" "$TMP/pid/cpu-$jp.prof" 2>/dev/null)
a=$(awk '$NF == "JSplit.six" { sub("%", "", $5); print $5 }' <<<"$g")
b=$(awk '$NF == "JSplit.three" { sub("%", "", $5); print $5 }' <<<"$g")
if [ -n "$a" ] && [ -n "$b" ] && within "$(python3 -c "print(100 * $a / ($a + $b))")" 66.7 5; then
	pass $t
else
	fail $t "JSplit.six ${a:-none}% JSplit.three ${b:-none}% cumulative (want 2:1 +-5 points)"
	head -12 <<<"$g" >&2
fi
kill $jp 2> /dev/null
wait $jp 2> /dev/null

# From its start: interpreted first, compiled as it warms.
"$REC" -F 499 -d 8 -o "$TMP/cmd" -- java -cp "$CLS" JSplit 6 > "$TMP/cmd.split" 2> "$TMP/cmd.err"
checks cmd "$TMP/cmd" "$(python3 -c 'import json, sys; print(max(json.load(open(sys.argv[1]))["processes"], key=lambda p: p["samples"])["pid"])' "$TMP/cmd/summary.json")" \
	"$(python3 "$ROOT/tests/integration/jvm_traces.py" expect "$TMP/cmd.split")"

# The interpreter alone: every frame is the interpreter's.
"$REC" -F 499 -d 8 -o "$TMP/xint" -- java -Xint -cp "$CLS" JSplit 5 > "$TMP/xint.split" 2> "$TMP/xint.err"
checks xint "$TMP/xint" "$(python3 -c 'import json, sys; print(max(json.load(open(sys.argv[1]))["processes"], key=lambda p: p["samples"])["pid"])' "$TMP/xint/summary.json")" \
	"$(python3 "$ROOT/tests/integration/jvm_traces.py" expect "$TMP/xint.split")"

# Off-CPU: the parked threads' Java frames.
# The shares wanted are the workload's own, by its clock around each call
# over the recording (a line to its stdin at the "recording" line and at
# -v's "stopping:"): 60/30/10 idle; on a loaded machine each park also holds
# the wait for a CPU after it, off-CPU time too, the same for a short park
# as for a long one: against a fixed 60/30/10 it failed at load 20-25
# (56.2/29.1/14.7, 56.4 for six).
t=jvm_offcpu
mkfifo "$TMP/park.in"
java -cp "$CLS" JSplit 30 park < "$TMP/park.in" > "$TMP/park.out" 2>&1 &
jp=$!
exec 7> "$TMP/park.in" # its marks: a line each
sleep 2
"$REC" -v --off-cpu -F 49 -d 3 -p "$jp" -o "$TMP/off" > /dev/null 2> "$TMP/off.err" &
rp=$!
mark() { echo >&7; }
rec_window "$TMP/off.err" mark
wait $rp
read -r w6 w3 w1 <<<"$(window_shares "$TMP/park.out" parked)"
exec 7>&-
kill $jp 2> /dev/null
wait $jp 2> /dev/null
r=$("$PPROF" -raw "$TMP/off/profile.pb.gz" 2>/dev/null |
	python3 "$ROOT/tests/integration/jvm_traces.py" park "$jp")
read -r ms java six three one <<<"$(sed 's/[a-z]*=//g' <<<"$r")"
if at_least "${ms:-0}" 1000 && at_least "${java:-0}" 95 && within "${six:-0}" "$w6" 3 &&
	within "${three:-0}" "$w3" 3 && within "${one:-0}" "$w1" 3; then pass $t; else
	fail $t "$r (want ms >= 1000, java >= 95, the workload's own $w6/$w3/$w1 +-3)"
fi

# Against JFR, in the same run: javac compiling a generated tree of
# classes (a real program's own mix of methods), its main thread.
t=jvm_jfr
if [ "${SANITIZE:-}" = 1 ]; then
	echo "jvm_jfr: left to the normal pass (not run under SANITIZE=1)"
else
src=$TMP/jfr-src
mkdir -p "$src/out"
python3 - "$src" <<'EOF'
import os, sys
d = sys.argv[1]
# 40 classes: a compile of ~0.1 s, its phases (parse, attribute, generate)
# many times over in the windows, which JFR's start and stop by jcmd (a
# second apart from ours) do not match to the second.
for i in range(40):
    with open(os.path.join(d, "C%d.java" % i), "w") as f:
        f.write("public class C%d {\n" % i)
        for j in range(30):
            f.write("  public static int m%d(int x) { int s = x; for (int k = 0; k < %d; k++) "
                    "{ s += (k * %d) ^ (s >>> 3); if (s %% 7 == %d) s -= C%d.m%d(k); } "
                    "return s; }\n" % (j, j + 3, i + j, j % 7, (i + 1) % 40, (j + 1) % 30))
        f.write("}\n")
EOF
# One JVM compiling again and again, with javac's own account of its
# thread's CPU time by phase (tests/workloads/JavacPhases.java): the truth
# both profiles are held to (jvm_phases), and the judge of JFR's samples.
if javac -d "$CLS" "$ROOT/tests/workloads/JavacPhases.java" 2> "$TMP/jfr.err"; then
	# At nice -20, all its threads (main, the JIT's, the GC's, JFR's
	# sampler): the two profilers count the main thread's time alike only
	# where the JVM's threads do not compete with other load. Ours samples
	# the thread's CPU time (a per-thread cpu-clock event). JFR's sampler
	# wakes every 2 ms, as late as the scheduler lets it, suspends the
	# thread by a signal and drops the sample when the thread has not run
	# its handler within 2 ms (HotSpot's do_suspend): under contention its
	# samples are taken, and lost, as the scheduler picks among the loops
	# and the JVM's own threads, whose work follows javac's phases. It is
	# not the wall time either: our --off-cpu preempted time added to the
	# CPU time moved JCMethodDecl.accept away from JFR's as often as
	# towards it (63.1 to 69.7 against JFR's 62.0; 62.6 to 58.6 against
	# 54.6). Beside two busy loops, on a machine loaded by other work too
	# (load 9-18), JFR's JCMethodDecl.accept differed from ours by 6.0
	# points on average, mostly under it (2 of 5 runs out of bounds, 390 to 634 JFR samples); at
	# nice -20 by 3.2 (1 of 6, 908 to 1,813 JFR samples, the main thread
	# still waiting for the CPU a third to half of the time, behind the
	# other work's sessions: an autogroup's tasks are not outweighed by
	# nice). Still out of bounds at times, on JavaCompiler.attribute: JFR
	# over ours by 4.8 to 7.0 points (5 runs, even at load 2): the stacks
	# of 60 frames or more were left out on both sides, for JFR's default
	# depth of 64, and that cut lay in the bulk of attribute's stacks
	# (40-65 frames deep): over whole stacks the same run gave 56.2 and
	# 57.1 (see jvm_traces.py's jfrcmp). The driver runs until killed:
	# its own deadline (45 s) ran out once while jcmd was slow to attach
	# on the loaded machine (74 JFR samples, 0 ours).
	# JFR's stacks whole (its default depth is 64 frames, and javac's
	# reach 90): the peer's own option, at the JVM's start.
	nice -n -20 java -XX:FlightRecorderOptions:stackdepth=512 -cp "$CLS" JavacPhases 600 "$src/out" "$src"/*.java > "$TMP/phases.txt" 2>&1 &
	jp=$!
	sleep 8
	# JFR's profile settings, its Java samples every 2 ms (10 by default):
	# a share's standard error falls under a point.
	jfc=$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")/lib/jfr/profile.jfc
	sed '/"jdk.ExecutionSample"/,/<\/event>/s|<setting name="period"[^>]*>[^<]*<|<setting name="period">2 ms<|' \
		"$jfc" > "$TMP/fast.jfc"
	jcmd "$jp" JFR.start name=rec settings="$TMP/fast.jfc" filename="$TMP/jfr.jfr" > /dev/null 2>&1
	# Our window in JFR's clock (seconds of the day, UTC): its samples
	# outside it are left out.
	w0=$(TZ=UTC date +%H:%M:%S.%N | awk -F: '{ printf "%.3f", $1 * 3600 + $2 * 60 + $3 }')
	wm0=$(date +%s%3N)
	"$REC" -F 499 -d 15 -p "$jp" -o "$TMP/jfr" > /dev/null 2> "$TMP/jfr.err"
	wm1=$(date +%s%3N)
	w1=$(TZ=UTC date +%H:%M:%S.%N | awk -F: '{ printf "%.3f", $1 * 3600 + $2 * 60 + $3 }')
	jcmd "$jp" JFR.stop name=rec > /dev/null 2>&1
	kill $jp 2> /dev/null
	wait $jp 2> /dev/null
	jfr print --stack-depth 512 --events jdk.ExecutionSample "$TMP/jfr.jfr" > "$TMP/jfr.txt" 2>&1
	"$PPROF" -raw "$TMP/jfr/profile.pb.gz" > "$TMP/jfr.raw" 2>/dev/null
	r=$(python3 "$ROOT/tests/integration/jvm_traces.py" jfrcmp "$TMP/jfr.txt" main "$TMP/jfr.raw" "$jp" java "$w0" "$w1")
	ph=$(python3 "$ROOT/tests/integration/jvm_traces.py" phases "$TMP/phases.txt" "$TMP/jfr.raw" "$jp" java \
		"$wm0" "$wm1" "$TMP/jfr.txt" main)
	echo "jvm_phases: $ph"
	if [[ $ph == ours=ok* ]]; then pass jvm_phases; else
		fail jvm_phases "$ph (want ours within 3 points of javac's own account)"; fi
	# JFR's execution samples held to javac's account too: on a loaded
	# machine they leaned to the analysis phase by 14-17 points (its
	# sampler drops a thread that has not run its handler within 2 ms,
	# above), where ours was within 1.3. Ours is held to JFR's where JFR
	# holds to the truth; where it does not, the run says so and ours is
	# held to the truth (jvm_phases).
	if [[ $r == ok* ]]; then
		pass $t
	elif [[ $ph == "ours=ok jfr=off"* ]]; then
		echo "$t: JFR's samples off javac's own account in this run, ours held to the account: $r"
		pass $t
	else
		fail $t "$r; $ph"
	fi
	echo "$t: ${r%%)*})" # the samples each side had (unloaded: 2,670 and 3,903)
else
	fail $t "the JFR driver did not compile: $(head -3 "$TMP/jfr.err")"
	fail jvm_phases "the JFR driver did not compile"
fi
fi

# Classes unloaded and code freed and recompiled while sampled: each frame
# is the one sampled, or not named.
t=jvm_churn
W=$ROOT/tests/workloads/jchurn
mkdir -p "$TMP/churn/A" "$TMP/churn/B"
if javac -d "$CLS" "$ROOT/tests/workloads/JChurn.java" && javac -d "$TMP/churn/A" "$W/A/Worker.java" &&
	javac -d "$TMP/churn/B" "$W/B/Worker.java"; then
	java -cp "$CLS" JChurn 30 "$TMP/churn/A" "$TMP/churn/B" > /dev/null 2>&1 &
	jp=$!
	sleep 2
	"$REC" -F 999 -d 5 -p "$jp" -o "$TMP/churn/rec" > /dev/null 2> "$TMP/churn.err"
	kill $jp 2> /dev/null
	wait $jp 2> /dev/null
	line() { grep -n "$2" "$W/$1/Worker.java" | head -1 | cut -d: -f1; }
	r=$("$PPROF" -raw "$TMP/churn/rec/profile.pb.gz" 2>/dev/null |
		python3 "$ROOT/tests/integration/jvm_traces.py" churn "$jp" "$(line A LINE:even)" \
			"$(line B LINE:odd)" "$(line A 'x += evenSpin')" "$(line B 'x += oddSpin')" 2> "$TMP/churn.wrong")
	read -r right wrong <<<"$(sed 's/[a-z]*=//g' <<<"$r")"
	gone=$(sed -n 's/.*"left_native_unloaded_before_read": \([0-9]*\).*/\1/p' "$TMP/churn/rec/summary.json")
	if at_least "${right:-0}" 100 && [ "${wrong:-1}" = 0 ] && at_least "${gone:-0}" 1; then pass $t; else
		fail $t "$r unloaded_before_read=${gone:-none} (want right >= 100, wrong = 0, unloaded > 0)"
		sort "$TMP/churn.wrong" | uniq -c | sort -rn | head -3 >&2
	fi
else
	fail $t "the churn workload did not compile"
fi

# Hostile tables: refused with one line, named natively, no hang.
make -s -C "$ROOT" OUT="$BUILD" "$WL/fakejvm" > /dev/null 2>&1
for h in "${HOSTILE[@]}"; do
	t=jvm_hostile_$h
	timeout 30 "$REC" -F 199 -d 1.5 -o "$TMP/fake-$h" -- "$WL/fakejvm" "$h" 1 \
		> /dev/null 2> "$TMP/fake-$h.err"
	rc=$?
	n=$(grep -c "runs a JVM .* whose frames cannot be walked" "$TMP/fake-$h.err")
	a=$("$PPROF" -top -nodecount=5 "$TMP/fake-$h/profile.pb.gz" 2>/dev/null | awk '$NF == "fake_spin" { sub("%", "", $2); print $2 }')
	if [ "$rc" = 0 ] && [ "$n" = 1 ] && at_least "${a:-0}" 80; then pass $t; else
		fail $t "exit $rc, $n refusal lines, fake_spin ${a:-not named}% flat (want 0, 1, >= 80)"
		head -5 "$TMP/fake-$h.err" >&2
	fi
done
