#!/usr/bin/env bash
# -t usdt: (issue 24): USDT pairs as exact XRay intervals, on a workload
# whose probes fire a known number of times (tests/workloads/usdtwork.c),
# under --, -p and -a -P; nesting with -t functions and recursion; the
# arguments; the one-line errors.
source "$(dirname "$0")/lib.sh"

ALL=(usdt_cmd_counts usdt_nesting usdt_args usdt_pid usdt_all_filter usdt_errors usdt_python_calls
	usdt_python_hostile_name)
require_bpf "${ALL[@]}"
require_tool llvm-xray usdt_cmd_counts || exit 0
NEST=$ROOT/tests/integration/xray_nest.py

# The one process's files in DIR whose comm is COMM: its XRay trace read by
# llvm-xray account (DIR/acc) and the nesting checker (DIR/nest.json).
read_back() { # DIR COMM
	local dir=$1 pid
	pid=$(python3 -c 'import json,sys; print([p["pid"] for p in json.load(open(sys.argv[1]))["processes"] if p["comm"]==sys.argv[2]][0])' "$dir/summary.json" "$2" 2>/dev/null)
	llvm-xray account -m "$dir/xray-$pid.map" "$dir/xray-trace-$pid.fdr" > "$dir/acc" 2>&1
	llvm-xray convert -f yaml -y -m "$dir/xray-$pid.map" "$dir/xray-trace-$pid.fdr" 2>/dev/null |
		python3 "$NEST" > "$dir/nest.json"
}
# wait_exec PID FILE: until the background child has exec'd FILE (its
# /proc/PID/exe, where -t usdt:NAME finds the binary; before, it is bash).
wait_exec() {
	for _ in $(seq 100); do [ "$(readlink /proc/$1/exe)" = "$2" ] && return; sleep 0.05; done
}
# wait_traced ERRFILE: until the recorder writing ERRFILE has attached.
wait_traced() {
	for _ in $(seq 300); do grep -q 'tracing .* USDT probes' "$1" 2>/dev/null && return; sleep 0.1; done
}
# count FUNC < account output
xcount() { awk -v f="$1" '$2 ~ /^[0-9]+$/ && $NF == f { print $2; found = 1; exit } END { if (!found) print 0 }'; }
counts() { # DIR: "job req depth tick lone" from llvm-xray account
	local a=$1/acc
	echo "$(xcount bprec:job < "$a") $(xcount bprec:req < "$a") $(xcount bprec:depth < "$a")" \
		"$(xcount bprec:tick < "$a") $(xcount bprec:lone__start < "$a")"
}

# --- under --: every probe by a glob, with -t spin and the arguments -------------
d=$TMP/cmd
"$REC" -q -o "$d" -t 'usdt:usdtwork:*' -t spin --trace-args 1 -- "$WL/usdtwork" 100 > /dev/null 2> "$d.err"
read_back "$d" usdtwork
t=usdt_cmd_counts
# req fires only with its semaphore set: 200 says libbpf set it.
got=$(counts "$d")
if [ "$got" = "100 200 300 100 1" ]; then pass $t; else fail $t "job req depth tick lone = $got, want 100 200 300 100 1"; cat "$d/acc" "$d.err" >&2; fi

t=usdt_nesting
# Every exit closes the innermost call; req inside job, spin (a -t function)
# inside req or depth, depth 3 deep inside job, the instants inside job.
if python3 - "$d/nest.json" <<'PY'
import json, sys
n = json.load(open(sys.argv[1])); f = n["funcs"]
ok = (not n["bad"] and not n["open"]
      and f["bprec:req"]["parents"] == {"bprec:job": 200}
      and f["spin"]["parents"] == {"bprec:req": 200, "bprec:depth": 300}
      and f["bprec:depth"]["parents"] == {"bprec:job": 100, "bprec:depth": 200}
      and f["bprec:depth"]["depth"] == 3
      and f["bprec:tick"]["parents"] == {"bprec:job": 100}
      and f["bprec:job"]["parents"] == {"-": 100})
if not ok: print(json.dumps(n), file=sys.stderr)
sys.exit(0 if ok else 1)
PY
then pass $t; else fail $t; fi

t=usdt_args
# job__start's argument is the job's number: 0..99, each once.
pid=$(python3 -c 'import json,sys; print([p["pid"] for p in json.load(open(sys.argv[1]))["processes"] if p["comm"]=="usdtwork"][0])' "$d/summary.json")
args=$(llvm-xray convert -f yaml -y -m "$d/xray-$pid.map" "$d/xray-trace-$pid.fdr" 2>/dev/null |
	awk -F'args: \\[ ' "/function: 'bprec:job'/ && /enter-arg/ { split(\$2, a, \" \"); print a[1] }" | sort -n | uniq | tr '\n' ' ')
if [ "$args" = "$(seq 0 99 | tr '\n' ' ')" ]; then pass $t; else fail $t "job__start arguments: $args"; fi

# --- -p: a process started before the recording ---------------------------------
d=$TMP/pid
# It waits for the go file, made once the recorder says it traces.
"$WL/usdtwork" 150 "@$d.go" > /dev/null &
wpid=$!
wait_exec $wpid "$(readlink -f "$WL/usdtwork")"
"$REC" -o "$d" -p $wpid -t 'usdt:usdtwork:job__start,req__done,depth__start' > /dev/null 2> "$d.err" &
rpid=$!
wait_traced "$d.err"
touch "$d.go"
wait $wpid
wait $rpid
read_back "$d" usdtwork
t=usdt_pid
got=$(counts "$d")
if [ "$got" = "150 300 450 0 0" ] && python3 -c 'import json,sys; sys.exit(1 if json.load(open(sys.argv[1]))["bad"] else 0)' "$d/nest.json"; then
	pass $t
else
	fail $t "job req depth tick lone = $got, want 150 300 450 0 0"; cat "$d/acc" "$d.err" >&2
fi

# --- -a -P: every process of the binary ------------------------------------------
d=$TMP/all
"$REC" -o "$d" -a -P -F 9 --no-kernel -d 4 -t "usdt:$WL/usdtwork:job__start" > /dev/null 2> "$d.err" &
rpid=$!
# Attached once it says so (-a reads every process first: a while when busy).
wait_traced "$d.err"
"$WL/usdtwork" 40 > /dev/null
"$WL/usdtwork" 60 > /dev/null
wait $rpid
t=usdt_all_filter
tot=0
for s in $(python3 -c 'import json,sys; print(" ".join(str(p["pid"]) for p in json.load(open(sys.argv[1]))["processes"] if p["comm"]=="usdtwork"))' "$d/summary.json" 2>/dev/null); do
	n=$(llvm-xray account -m "$d/xray-$s.map" "$d/xray-trace-$s.fdr" 2>/dev/null | xcount bprec:job)
	tot=$((tot + n))
done
fired=$(python3 -c 'import json,sys; print(sum(p["fired"] for p in json.load(open(sys.argv[1]))["usdt"]["probes"] if p["name"]=="job__start"))' "$d/summary.json" 2>/dev/null)
if [ "$tot" = 100 ] && [ "$fired" = 100 ]; then pass $t; else fail $t "jobs in the traces $tot, fired $fired, want 100"; cat "$d.err" >&2; fi

# --- one-line errors ---------------------------------------------------------------
t=usdt_errors
ok=1
err_is() { # WANT-REGEX ARGS...: exit 1, one line matching
	local want=$1 out
	shift
	out=$("$REC" -q -o "$TMP/e" "$@" -- "$WL/usdtwork" 1 2>&1 >/dev/null) && { echo "succeeded: $*" >&2; ok=0; return; }
	if [ "$(printf '%s\n' "$out" | wc -l)" != 1 ] || ! [[ $out =~ $want ]]; then echo "$*: $out" >&2; ok=0; fi
}
err_is 'has no probe nosuch \(its probes: .*job__start' -t 'usdt:usdtwork:nosuch'
err_is 'bprec:lone__start has no done/return probe to pair with' -t 'usdt:usdtwork:lone__start'
err_is '/usr/bin/true: has no USDT probes' -t 'usdt:/usr/bin/true:x'
err_is 'nosuchbin: no such binary' -t 'usdt:nosuchbin:x'
BPFTRACE_REC_NO_FEATURES=uprobe_ref_ctr err_is 'cannot set USDT semaphores' -t 'usdt:usdtwork:tick'
if [ $ok = 1 ]; then pass $t; else fail $t; fi

# --- Debian's python3.11: each Python function its own XRay function ----------------
# Its function__entry never fires (CPython gh-98894: 3.11's interpreter
# never reaches it; fixed in 3.15); function__return does, for every call:
# each is an instant named file:function, counted exactly, without a duration.
PY=/usr/bin/python3.11
if [ -x $PY ]; then
	d=$TMP/py
	mkdir -p "$d.src"
	# A file name with an escape sequence: names from outside are sanitized.
	evil=$'evil\e[31m.py'
	cat > "$d.src/$evil" <<'PYEOF'
def work(i):
    return i * 2
def rec(n):
    return 0 if n == 0 else 1 + rec(n - 1)
PYEOF
	cat > "$d.src/main.py" <<'PYEOF'
import os, sys, time, importlib
sys.path.insert(0, sys.argv[2])
evil = importlib.import_module(sys.argv[3][:-3])
while not os.path.exists(sys.argv[1]):
    time.sleep(0.01)
for i in range(1000):
    evil.work(i)
for i in range(10):
    evil.rec(4)
PYEOF
	$PY "$d.src/main.py" "$d.go" "$d.src" "$evil" &
	ppid=$!
	wait_exec $ppid $PY
	"$REC" -o "$d" -p $ppid -t 'usdt:python3.11:function__*' > /dev/null 2> "$d.err" &
	rpid=$!
	wait_traced "$d.err"
	touch "$d.go"
	wait $ppid
	wait $rpid
	llvm-xray account -m "$d/xray-$ppid.map" "$d/xray-trace-$ppid.fdr" > "$d/acc" 2>&1
	t=usdt_python_calls
	work=$(awk '$NF ~ /evil\\x1b\[31m\.py:work$/ { print $2 }' "$d/acc")
	rec=$(awk '$NF ~ /evil\\x1b\[31m\.py:rec$/ { print $2 }' "$d/acc")
	# rec(4) recurses to rec(0): 5 calls each time.
	if [ "$work" = 1000 ] && [ "$rec" = 50 ] && grep -q 'gh-98894' "$d.err"; then
		pass $t
	else
		fail $t "work $work rec $rec, want 1000 50"; cat "$d/acc" "$d.err" >&2
	fi
	t=usdt_python_hostile_name
	# No raw escape byte in any file or message; the name is there escaped.
	if ! grep -q $'\e' "$d/acc" "$d.err" "$d/summary.json" && ! grep -aq $'\e' "$d/xray-$ppid.map" &&
		grep -q 'evil\\x1b\[31m\.py:work' "$d/acc"; then
		pass $t
	else
		# Where the raw byte is, or that the escaped name is missing (CI's
		# sanitizer pass once, with no word of which).
		fail $t "raw ESC in: $(grep -la $'\e' "$d/acc" "$d.err" "$d/summary.json" "$d/xray-$ppid.map" | tr '\n' ' ')escaped work lines in the account: $(grep -c 'evil\\x1b\[31m\.py:work' "$d/acc")"
		grep -an $'\e' "$d/acc" "$d.err" "$d/summary.json" | cat -v | head -5 >&2
	fi
else
	skip usdt_python_calls "no $PY"
	skip usdt_python_hostile_name "no $PY"
fi
