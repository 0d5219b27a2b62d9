#!/usr/bin/env bash
# Capture core (issue 2): records workloads with a CPU split known by
# construction and reads the files back with the real readers.
source "$(dirname "$0")/lib.sh"

ALL=(exec_images_gperftools cli_errors not_privileged cmd_split_pprof cmd_split_gperftools cmd_exit_code
	cmd_main_binary pid_split_pprof pid_split_gperftools pid_late_thread labels_numeric summary_json
	system_wide_processes kernel_frames_named short_lived_named short_lived_libc_named stops_on_target_exit sigint_writes_files
	sudo_owner idle_samples)
require_bpf "${ALL[@]}"
require_tool google-pprof cmd_split_gperftools || true
require_tool google-pprof exec_images_gperftools || true

# --- errors: one line, naming the input and the reason, non-zero exit -------
t=cli_errors
ok=1
out=$("$REC" --bogus 2>&1); rc=$?
{ [ $rc != 0 ] && grep -q "unrecognized option '--bogus'" <<<"$out"; } || { ok=0; echo "bogus: $rc $out" >&2; }
out=$("$REC" -p 999999999 2>&1); rc=$?
{ [ $rc != 0 ] && grep -q "^bpftrace-rec: -p 999999999: no such process$" <<<"$out"; } || { ok=0; echo "nopid: $rc $out" >&2; }
max=$(cat /proc/sys/kernel/perf_event_max_sample_rate)
out=$("$REC" -F $((max + 1)) -a -d 1 2>&1); rc=$?
{ [ $rc != 0 ] && grep -q "above kernel.perf_event_max_sample_rate ($max Hz)" <<<"$out"; } || { ok=0; echo "freq: $rc $out" >&2; }
out=$("$REC" -d 1 2>&1); rc=$?
{ [ $rc != 0 ] && grep -q "give exactly one target" <<<"$out"; } || { ok=0; echo "notarget: $rc $out" >&2; }
out=$("$REC" -o "$TMP/x" -- /nonexistent/cmd 2>&1); rc=$?
{ [ $rc != 0 ] && grep -q "/nonexistent/cmd: No such file or directory" <<<"$out"; } || { ok=0; echo "nocmd: $rc $out" >&2; }
[ $ok = 1 ] && pass $t || fail $t

t=not_privileged
if command -v setpriv >/dev/null; then
	out=$(setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all "$REC" -a -d 1 2>&1); rc=$?
	if [ $rc != 0 ] && grep -q "not privileged: needs CAP_BPF and CAP_PERFMON" <<<"$out"; then pass $t; else fail $t "$rc: $out"; fi
else
	skip $t "setpriv missing"
fi

# --- -- CMD: the 6:3:1 split in both files ---------------------------------
# split writes the CPU seconds it used (SPLIT_CPU): summary_json's samples
# follow them at 499 Hz, whatever share of the machine it had.
SPLIT_CPU="$TMP/cmd.cpu" "$REC" -q -F 499 -o "$TMP/cmd" -- "$WL/split" 4 >/dev/null 2>"$TMP/cmd.err"
cmd_rc=$?
"$PPROF" -top -nodecount=30 "$TMP/cmd/profile.pb.gz" > "$TMP/cmd.top" 2>&1
check_split cmd_split_pprof "$TMP/cmd.top" pprof_flat
# The command's own image: cpu-PID.prof (cpu-PID.N.prof would hold an earlier
# image's samples).
prof=$(ls "$TMP"/cmd/cpu-*.prof 2>/dev/null | grep -E '/cpu-[0-9]+\.prof$' | head -1)
if [ -z "$prof" ]; then
	fail cmd_split_gperftools "no cpu-PID.prof written"
elif command -v google-pprof >/dev/null; then
	google-pprof --text "$WL/split" "$prof" > "$TMP/cmd.gtop" 2>/dev/null
	check_split cmd_split_gperftools "$TMP/cmd.gtop" gpprof_flat
	"$PPROF" -top -nodecount=30 "$WL/split" "$prof" > "$TMP/cmd.ptop" 2>&1
	check_split cmd_split_gperftools_pprof "$TMP/cmd.ptop" pprof_flat
fi

# pprof names the profile's program after its first mapping ("File:", and the
# binary that -list and -disasm read): the recorded program, with its build id.
t=cmd_main_binary
bid=$(readelf -n "$WL/split" | awk '/Build ID/ { print $3 }')
read -r file < <(awk '/^File: / { print $2 }' "$TMP/cmd.top")
read -r got < <(awk '/^Build ID: / { print $3 }' "$TMP/cmd.top")
if [ "$file" = split ] && [ -n "$bid" ] && [ "$got" = "$bid" ]; then pass $t; else fail $t "File: '$file', Build ID '$got' (want split, $bid)"; fi

t=cmd_exit_code
"$REC" -q -o "$TMP/exit" -- sh -c 'exit 7' >/dev/null 2>&1; rc=$?
if [ $cmd_rc = 0 ] && [ $rc = 7 ] && [ -s "$TMP/exit/summary.json" ]; then pass $t; else fail $t "split $cmd_rc, exit-7 $rc"; fi

# --- -p PID: the same split, on a process already running -------------------
"$WL/split" 0 > /dev/null & pid=$!
sleep 0.3
"$REC" -q -F 499 -d 4 -o "$TMP/pid" -p $pid 2>"$TMP/pid.err"
kill $pid; wait $pid 2>/dev/null
"$PPROF" -top -nodecount=30 "$TMP/pid/profile.pb.gz" > "$TMP/pid.top" 2>&1
check_split pid_split_pprof "$TMP/pid.top" pprof_flat
if [ -f "$TMP/pid/cpu-$pid.prof" ] && command -v google-pprof >/dev/null; then
	google-pprof --text "$WL/split" "$TMP/pid/cpu-$pid.prof" > "$TMP/pid.gtop" 2>/dev/null
	check_split pid_split_gperftools "$TMP/pid.gtop" gpprof_flat
else
	fail pid_split_gperftools "cpu-$pid.prof missing"
fi

# --- threads created during the recording are recorded -----------------------
t=pid_late_thread
# The second thread starts at SIGUSR1, sent once the recording runs: on a
# loaded machine the recorder's start took longer than the fixed 1.5 s the
# thread waited, and split (3 s) exited before the first sample (0 threads,
# under two busy loops). split ends at SIGTERM; the recording with it.
"$WL/split" 0 -1 > /dev/null & pid=$!
"$REC" -F 199 -o "$TMP/late" -p $pid 2> "$TMP/late.err" & rec=$!
for _ in $(seq 600); do grep -q recording "$TMP/late.err" && break; sleep 0.05; done
sleep 0.5
kill -USR1 $pid
sleep 1
kill $pid
wait $pid 2>/dev/null
wait $rec
ntid=$("$PPROF" -tags "$TMP/late/profile.pb.gz" 2>/dev/null | awk '/^ *tid:/ {on=1; next} /^ *[a-z]+:/ {on=0} on && /%/ {n++} END {print n+0}')
if [ "$ntid" = 2 ]; then pass $t; else fail $t "$ntid threads in the profile, want 2"; "$PPROF" -tags "$TMP/late/profile.pb.gz" >&2; fi

# --- labels: pid/tid/cpu numeric, comm a string ------------------------------
t=labels_numeric
cpid=$(awk -F'"pid": ' '/"comm": "split"/ {split($2, a, ","); print a[1]; exit}' "$TMP/cmd/summary.json")
tags=$("$PPROF" -tags "$TMP/cmd/profile.pb.gz" 2>&1)
focus=$("$PPROF" -top -tagfocus=pid=$cpid "$TMP/cmd/profile.pb.gz" 2>&1 | pprof_flat func_six)
cpus=$(awk '/^ *cpu:/ {on=1; next} /^ *[a-z]+:/ {on=0} on && /%/ {n++} END {print n+0}' <<<"$tags")
if grep -q "comm: Total 2" <<<"$tags" || grep -q "^ *comm:" <<<"$tags"; then c=1; else c=0; fi
if [ -n "$cpid" ] && within "$focus" 60 5 && [ "$cpus" -ge 1 ] && [ $c = 1 ] && grep -q "split" <<<"$tags"; then
	pass $t
else
	fail $t "pid=$cpid focus=$focus cpus=$cpus"; echo "$tags" >&2
fi

# --- summary.json -----------------------------------------------------------
# Its sample count against the CPU split used, not a fixed floor: under two
# busy loops and other sessions' builds (load average 17) split had 0.23 to
# 0.42 s of its 8 thread-seconds, and the floor of 1000 failed with 463
# samples; the ratio was 0.99 and 1.02 then.
t=summary_json
if python3 - "$TMP/cmd/summary.json" "$TMP/cmd.cpu" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
cpu = float(open(sys.argv[2]).read())
want = cpu * 499
assert s["samples"] >= 50 and 0.8 <= s["samples"] / want <= 1.2, (s["samples"], cpu, want)
assert s["lost_samples"] == 0
assert s["frequency_hz"] == 499
assert 3.5 < s["duration_s"] < 6, s["duration_s"]
p = [p for p in s["processes"] if p["comm"] == "split"][0]
assert p["samples"] == s["samples"] and p["threads"] == 2, p
names = {f["file"] for f in s["files"]}
assert {"profile.pb.gz", "cpu-%d.prof" % p["pid"]} <= names, names
assert all(f["open"] for f in s["files"])
PY
then pass $t; else fail $t; fi

# --- -a: several processes at once, kernel frames named --------------------------
"$WL/split" 0 > /dev/null & p1=$!
"$WL/syscalls" 0 & p2=$!
sleep 0.3
"$REC" -q -a -F 199 -d 2 -o "$TMP/all" 2>"$TMP/all.err"
kill $p1 $p2; wait $p1 $p2 2>/dev/null
tags=$("$PPROF" -tags "$TMP/all/profile.pb.gz" 2>&1)
t=system_wide_processes
if grep -q " split$" <<<"$tags" && grep -q " syscalls$" <<<"$tags"; then pass $t; else fail $t; echo "$tags" >&2; fi
t=kernel_frames_named
# syscalls reads /dev/zero: most of its time is in the kernel. Its flat
# functions must be this kernel's own text symbols, named from kallsyms
# (no list of names: they differ between kernels).
"$PPROF" -top -nodecount=20 -relative_percentages -tagfocus=comm=syscalls "$TMP/all/profile.pb.gz" > "$TMP/all.top" 2>&1
awk '$2 == "t" || $2 == "T" || $2 == "W" { print $3 }' /proc/kallsyms | sort -u > "$TMP/ktext"
k=$(awk 'NR == FNR { text[$1] = 1; next } $2 ~ /%$/ && ($NF in text) { sub("%", "", $2); s += $2 } END { print s + 0 }' "$TMP/ktext" "$TMP/all.top")
if awk -v k="$k" 'BEGIN {exit !(k >= 50)}'; then pass $t; else fail $t "kernel text symbols hold $k% of syscalls' samples (want >= 50)"; cat "$TMP/all.top" >&2; fi

# --- -a: processes that exit before their samples are drained ------------------
# 40 runs of 30 ms each: most are gone when the drain (every 50 ms) first sees
# their samples. Their own code is named from the file they mapped, and libc
# from the mappings BPF sends as each process exits. The runs start once
# the recording runs and it stops (SIGINT) after the last: under two busy
# loops a fixed 1.5 s start and -d 5 held none of them (0% of deep's
# samples named, none there).
# They run through a link named for this run, their comm: -a records the
# whole machine, and on a shared one other runs' deep were counted with
# them (test_unwind's `deep 300 64 1`, whose first samples, before its
# tables load, are copied for DWARF and cut at 64 of its 300 frames: bottom
# without libc, 2 of 42 pids holding 73% of "deep" samples, libc 94.7 %
# against bottom's 98.0 %; this run's own pids: 95.1 and 90.1 %).
short=short-$$
ln -s "$WL/deep" "$TMP/$short"
"$REC" -a -F 999 -d 120 -o "$TMP/brief" 2>"$TMP/brief.err" & rec=$!
for _ in $(seq 600); do grep -q recording "$TMP/brief.err" && break; sleep 0.05; done
for _ in $(seq 40); do "$TMP/$short" 3 64 0.03; done
kill -INT $rec
wait $rec
share() { # PROFILE FUNC [FOCUS]: % of the runs' samples (through FOCUS) with FUNC on the stack
	"$PPROF" -top -cum -nodecount=100 -relative_percentages -tagfocus="comm=^$short\$" ${3:+-focus="^$3\$"} "$1" 2>/dev/null |
		awk -v f="$2" '$NF == f { sub("%", "", $5); print $5 + 0; found = 1 } END { if (!found) print 0 }'
}
# The rest of their samples are exec, ld.so and exit: a tenth or so. "[deep]"
# is a frame of deep whose file was not read (its PLT stubs, which have no
# symbol, are named by their .eh_frame FDE: "deep+0x1020").
t=short_lived_named
b=$(share "$TMP/brief/profile.pb.gz" bottom)
u=$(share "$TMP/brief/profile.pb.gz" "[deep]")
if within "$b" 100 25 && within "$u" 0 5; then pass $t; else fail $t "bottom on $b% of deep's samples (want >= 75), unnamed [deep] frames on $u% (want <= 5)"; fi
# libc named under each stack through bottom: __libc_start_call_main on
# those (97 % at least), and on as many of all the runs' samples (exit's
# samples have it too, without bottom).
t=short_lived_libc_named
l=$(share "$TMP/brief/profile.pb.gz" __libc_start_call_main)
lb=$(share "$TMP/brief/profile.pb.gz" __libc_start_call_main bottom)
if within "$l" 100 25 && within "$lb" 100 3; then pass $t; else
	fail $t "__libc_start_call_main on $l% of deep's samples (bottom on $b%), on $lb% of those through bottom (want >= 75 and >= 97)"
	# The stacks through bottom without it, for the reason (its frame unnamed? cut?).
	"$PPROF" -traces -tagfocus="comm=^$short\$" "$TMP/brief/profile.pb.gz" 2>/dev/null |
		awk 'BEGIN { RS = "-----------\\+" } /bottom/ && !/__libc_start_call_main/ { if (n++ < 3) print }' >&2
	grep -v '^  ' "$TMP/brief.err" >&2
fi

# --- -a: a program whose every process is gone before any maps are read ---------
# A file no process mapped before (a copy of deep, run through a link), run
# while the recorder is stopped (SIGSTOP): when it drains, each process has
# exited, and its frames are named from the mappings BPF sent at its exit,
# which give a file's inode and bare name only. Its path comes from the exec
# event (the path exec was given, taken when it still names that inode):
# before, every frame of such a program was "[deep-copy]" (96.7 % in a run),
# and under load a burst of short processes lost their own names so
# (short_lived_named, 2-12 % of deep's frames in stress runs).
t=exit_unread_named
if grep -q '"exit-time mappings"' "$TMP/brief/summary.json" 2> /dev/null; then
	skip $t "this kernel sends no exit-time mappings (bpf_iter_task_vma, 6.7)"
else
	mkdir -p "$TMP/unread"
	cp "$WL/deep" "$TMP/unread/deep-copy"
	ln -s "$TMP/unread/deep-copy" "$TMP/unread/run-$$"
	# While the recorder is stopped, the ring buffer holds every CPU's
	# samples: by default a quarter second of them (user/record.c), which
	# an idle machine's few samples never fill, but beside two busy loops
	# the runs took 3.3 s (load 23): 1021 samples and 64 exec and exit
	# events lost, the runs' among them, and 0 % of them named. Its size
	# follows the stop's length, timed here on the same runs unrecorded:
	# four times that, at 199 Hz on every CPU, a full stack copy each.
	t0=$(date +%s.%N)
	for _ in 1 2 3 4 5; do "$TMP/unread/run-$$" 3 64 0.05; done
	mb=$(awk -v t0="$t0" -v t1="$(date +%s.%N)" -v n="$(getconf _NPROCESSORS_ONLN)" 'BEGIN {
		need = 4 * (t1 - t0) * n * 199 * (8192 + 512); mb = 1
		while (mb * 1048576 < need && mb < 1024) mb *= 2; print mb }')
	"$REC" -a -F 199 -d 120 --ringbuf-size "$mb" -o "$TMP/unread/rec" 2> "$TMP/unread.err" & rec=$!
	for _ in $(seq 600); do grep -q recording "$TMP/unread.err" && break; sleep 0.05; done
	kill -STOP $rec
	for _ in 1 2 3 4 5; do "$TMP/unread/run-$$" 3 64 0.05; done
	kill -CONT $rec
	sleep 0.5
	kill -INT $rec
	wait $rec
	share() { # FUNC: % of the runs' samples with FUNC on the stack
		"$PPROF" -top -cum -nodecount=100 -relative_percentages -tagfocus="comm=^run-$$\$" \
			"$TMP/unread/rec/profile.pb.gz" 2> /dev/null |
			awk -v f="$1" '$NF == f { sub("%", "", $5); print $5 + 0; found = 1 } END { if (!found) print 0 }'
	}
	b=$(share bottom) u=$(share "[deep-copy]")
	if within "$b" 100 10 && within "$u" 0 3; then pass $t; else
		fail $t "bottom on $b% of the runs' samples (want >= 90), unnamed [deep-copy] on $u% (want <= 3), ring buffer $mb MiB"
		grep -v '^  ' "$TMP/unread.err" >&2
	fi
fi

# --- stopping: the target's exit, SIGINT ----------------------------------------
t=stops_on_target_exit
# What is checked is the stop at the target's exit. The stop is the recording's end (summary.json's duration: its start to its
# stop): the target, running until killed, is killed 1 s after the
# recorder's "recording", and the recording ends soon after (within 1.5 s:
# the test's own sleep and kill are late on a loaded machine), not at -d's
# 20. Timed by the wall from the recorder's start (under 6 s for a
# 3 s target), it took 7.0 s under two busy loops, its set-up included (at
# load 12 the set-up alone took 2.8 s of a 3 s target's life).
"$WL/split" 0 > /dev/null & pid=$!
"$REC" -d 20 -o "$TMP/exit2" -p $pid 2> "$TMP/exit2.err" & rec=$!
for _ in $(seq 600); do grep -q recording "$TMP/exit2.err" && break; sleep 0.05; done
sleep 1
kill $pid
wait $pid 2>/dev/null
wait $rec
el=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["duration_s"])' "$TMP/exit2/summary.json" 2>/dev/null)
if awk -v e="${el:-99}" 'BEGIN {exit !(e >= 1 && e < 2.5)}' && [ -s "$TMP/exit2/profile.pb.gz" ]; then pass $t; else
	fail $t "recorded ${el:-?}s of a target killed 1 s after the recording's start, profile.pb.gz $([ -s "$TMP/exit2/profile.pb.gz" ] && echo written || echo missing)"
fi

t=sigint_writes_files
"$WL/split" 0 > /dev/null & pid=$!
# -F 499: at the default 99 Hz, 1.5 s is ~100 samples, and 60 +- 10 % is two
# standard deviations (it failed once so in CI: 48.8 %).
# The 1.5 s count from its "recording": on a loaded machine SIGINT came
# before the recording had started (rc=0 func_six=0).
"$REC" -F 499 -o "$TMP/int" -p $pid 2> "$TMP/int.err" & rec=$!
for _ in $(seq 300); do grep -q recording "$TMP/int.err" && break; sleep 0.05; done
sleep 1.5
kill -INT $rec; wait $rec; rc=$?
kill $pid; wait $pid 2>/dev/null
n=$("$PPROF" -top "$TMP/int/profile.pb.gz" 2>/dev/null | pprof_flat func_six)
if [ $rc = 0 ] && [ -f "$TMP/int/cpu-$pid.prof" ] && within "$n" 60 10 && ! ls -a "$TMP/int" | grep -q '^\.'"[a-z]"; then pass $t; else fail $t "rc=$rc func_six=$n"; ls -la "$TMP/int" >&2; fi

t=sudo_owner
SUDO_UID=65534 SUDO_GID=65534 "$REC" -q -d 0.5 -o "$TMP/sudo" -- "$WL/split" 0.3 >/dev/null 2>&1
owners=$(stat -c %u:%g "$TMP/sudo" "$TMP"/sudo/* | sort -u)
if [ "$owners" = "65534:65534" ]; then pass $t; else fail $t "owners: $owners"; fi

# The idle task's samples follow the time the CPUs were idle (/proc/stat's
# idle and iowait, over the run): under two busy loops on 2 cores there is
# none, and "some pid 0 samples" failed. At 99 Hz each idle second is ~99
# samples.
t=idle_samples
idle_s() { awk -v hz="$(getconf CLK_TCK)" '$1 == "cpu" { print ($5 + $6) / hz; exit }' /proc/stat; }
"$REC" -a --idle -F 99 -d 1 -o "$TMP/idle" 2> "$TMP/idle.err" & rec=$!
for _ in $(seq 600); do grep -q recording "$TMP/idle.err" && break; sleep 0.05; done
i0=$(idle_s)
wait $rec
i1=$(idle_s)
if python3 - "$TMP/idle/summary.json" "$(awk -v a="$i0" -v b="$i1" 'BEGIN { print b - a }')" <<'PY' &&
import json, sys
s = json.load(open(sys.argv[1]))
idle = float(sys.argv[2])
n = sum(p["samples"] for p in s["processes"] if p["pid"] == 0)
print("idle %.2f s of the CPUs over the run, %d pid 0 samples (%.0f at 99 Hz)" % (idle, n, idle * 99), file=sys.stderr)
# The reads of /proc/stat hold the recording, from its "recording" to its
# files written: up to their whole idle, and some of it where they had some.
assert n <= idle * 99 * 1.2 + 5 and (n > 0 or idle < 0.2)
PY
	"$REC" -q -a -d 1 -o "$TMP/noidle" 2>/dev/null &&
	python3 -c "import json,sys; s=json.load(open(sys.argv[1])); assert not any(p['pid']==0 for p in s['processes'])" "$TMP/noidle/summary.json"; then
	pass $t
else
	fail $t
fi

# --- exec: each program's samples in a gperftools file with its own maps --------
# A file has one maps section: before, the samples of the program that ran
# before the exec were in cpu-PID.prof with the new program's maps, and read
# as raw addresses. Now they are in cpu-PID.0.prof, with the old maps.
t=exec_images_gperftools
if command -v google-pprof >/dev/null; then
	# Its first program's 1.5 s count from the recorder's "recording": a
	# loaded machine's start-up took longer than a fixed 1.2 s (a CI check
	# run beside other work: no cpu-PID.0.prof).
	EXECSPIN_AFTER=$TMP/exec.go "$WL/execspin" 1.5 "$WL/split" 1.5 > /dev/null & pid=$!
	"$REC" -F 999 -p $pid -d 20 -o "$TMP/exec" 2> "$TMP/exec.err" & rec=$!
	for _ in $(seq 300); do grep -q recording "$TMP/exec.err" && break; sleep 0.05; done
	touch "$TMP/exec.go"
	wait $pid 2>/dev/null
	wait $rec 2>/dev/null
	# hex FILE: flat % of the rows google-pprof could not name
	hex() { awk '$2 ~ /%$/ && $NF ~ /^0x/ { sub("%", "", $2); s += $2 } END { print s + 0 }' "$1"; }
	gtext() { # NAME: google-pprof --text, by the file's open command in summary.json
		local cmd
		cmd=$(python3 -c "import json,sys; s=json.load(open(sys.argv[1])); print(next(f['open'] for f in s['files'] if f['file'] == sys.argv[2]))" "$TMP/exec/summary.json" "$1" 2>/dev/null) || return 1
		$cmd > "$TMP/exec.$1.txt" 2>/dev/null
	}
	if gtext "cpu-$pid.0.prof" && gtext "cpu-$pid.prof" &&
		[ "$(gpprof_flat before_exec < "$TMP/exec.cpu-$pid.0.prof.txt")" != 0 ] &&
		[ "$(gpprof_flat func_six < "$TMP/exec.cpu-$pid.prof.txt")" != 0 ] &&
		within "$(hex "$TMP/exec.cpu-$pid.0.prof.txt")" 0 5 && within "$(hex "$TMP/exec.cpu-$pid.prof.txt")" 0 5; then
		pass $t
	else
		fail $t "want before_exec in cpu-$pid.0.prof, func_six in cpu-$pid.prof, raw hex rows <= 5% in each"
		ls "$TMP/exec" >&2
		head -5 "$TMP"/exec.*.txt >&2
	fi
fi
