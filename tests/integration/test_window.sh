#!/usr/bin/env bash
# --window (issue 25, continuous mode): a command that runs split (6:3:1 over
# func_six, func_three and lib_spin, two threads) for 3 s and exits, then a
# second split for 3 s, recorded with 2 s windows. Each window's own files,
# read by pprof: every window a directory with profile.pb.gz and
# summary.json; their start times and durations contiguous, adding up to the
# run; pprof's sample total of each window equal to the samples its summary
# counts, and the counts of the windows to those of the whole recording;
# the first split (exited at ~3 s) in the windows up to its exit and in none
# after the one that holds its last samples; the 6:3:1 split in a window
# where split ran throughout. Then --retain count=2 keeps the last two
# windows, --window refuses -t, and with --off-cpu the waits of waits.c
# (2 s in sleep_wait, 1 s in pipe_wait) add up over 1 s windows, each wait
# whole in one window (the one it ended in). Under -a with a churn of
# short-lived processes, the processes the model holds as live whose pid is
# gone (summary.json's held.gone) do not grow from window to window.
source "$(dirname "$0")/lib.sh"

ALL=(window_dirs window_contiguous window_pprof_totals window_exited_dropped window_split
	window_retain_count window_refuses_trace window_offcpu window_churn_held)
require_bpf "${ALL[@]}"

# The first split writes the CPU it had (SPLIT_CPU): window_split's floor.
"$REC" -q -F 299 --window 2 -o "$TMP/w" -- sh -c "SPLIT_CPU='$TMP/split1.cpu' '$WL/split' 3 > /dev/null; '$WL/split' 3 > /dev/null" \
	> "$TMP/rec.log" 2>&1
rc=$?
mapfile -t WINS < <(ls -d "$TMP"/w/window-* 2> /dev/null)
dirs_ok() {
	local d
	[ $rc = 0 ] && [ ${#WINS[@]} -ge 3 ] || { echo "exit $rc, ${#WINS[@]} windows: $(cat "$TMP/rec.log")" >&2; return 1; }
	for d in "${WINS[@]}"; do
		[ -s "$d/profile.pb.gz" ] && [ -s "$d/summary.json" ] || { echo "$d: $(ls "$d")" >&2; return 1; }
	done
	# Nothing of a whole recording's in the directory itself.
	[ ! -e "$TMP/w/profile.pb.gz" ]
}
check window_dirs dirs_ok

# pprof's own reading of each window: its start (Time:, to the ns with
# -raw), duration, and the sum of its samples/count values.
for d in "${WINS[@]}"; do
	"$PPROF" -raw "$d/profile.pb.gz" 2> /dev/null > "$d.raw"
	# -raw cuts the duration to 4 characters (27.9ms as 27.9): -top's.
	"$PPROF" -top -nodecount=1 "$d/profile.pb.gz" 2> /dev/null > "$d.top"
done
python3 - "$TMP/w" "${WINS[@]}" > "$TMP/windows.json" <<'PY'
import json, re, sys, datetime
out = []
for d in sys.argv[2:]:
    raw = open(d + ".raw").read()
    s = json.load(open(d + "/summary.json"))
    t = re.search(r"^Time: (\S+ \S+)", raw, re.M).group(1)
    secs, frac = t.split(".")
    start = datetime.datetime.strptime(secs, "%Y-%m-%d %H:%M:%S").replace(
        tzinfo=datetime.timezone.utc).timestamp()
    start_ns = int(start) * 10**9 + int(frac.ljust(9, "0")[:9])
    m = re.search(r"^Duration: ([0-9.]+)(ms|us|µs|ns|s),", open(d + ".top").read(), re.M)
    dur = float(m.group(1)) * {"ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}.get(m.group(2), 1)
    # The samples: section, "count/nanos: stack ids" lines; the first value.
    total = 0
    body = raw.split("Samples:", 1)[1].split("Locations", 1)[0]
    for line in body.splitlines():
        m = re.match(r"^\s+(\d+)\s+\d+:", line)
        if m:
            total += int(m.group(1))
    out.append({"dir": d, "start_ns": start_ns, "dur": dur, "pprof_samples": total,
                "summary": s})
json.dump(out, sys.stdout)
PY

contiguous() {
	python3 - "$TMP/windows.json" <<'PY'
import json, sys
w = json.load(open(sys.argv[1]))
ok = True
for a, b in zip(w, w[1:]):
    gap = b["summary"]["start_time_ns"] - (a["summary"]["start_time_ns"] + a["summary"]["duration_s"] * 1e9)
    if abs(gap) > 2e6:
        print("window %s ends %.3f ms from the next's start" % (a["dir"], gap / 1e6), file=sys.stderr)
        ok = False
for x in w:
    if x["start_ns"] != x["summary"]["start_time_ns"] or abs(x["dur"] - x["summary"]["duration_s"]) > 0.01:
        print("pprof's Time/Duration %s %s, summary %s %s" % (x["start_ns"], x["dur"],
              x["summary"]["start_time_ns"], x["summary"]["duration_s"]), file=sys.stderr)
        ok = False
idx = [x["summary"]["window"]["index"] for x in w]
if idx != list(range(1, len(w) + 1)) or not w[-1]["summary"]["window"]["last"]:
    print("indices %s" % idx, file=sys.stderr)
    ok = False
# The run: two splits of 3 s each, and the windows cover it.
tot = sum(x["summary"]["duration_s"] for x in w)
if not 5.5 < tot < 9:
    print("windows cover %.2f s" % tot, file=sys.stderr)
    ok = False
sys.exit(0 if ok else 1)
PY
}
check window_contiguous contiguous

totals() {
	python3 - "$TMP/windows.json" <<'PY'
import json, sys
w = json.load(open(sys.argv[1]))
ok = True
for x in w:
    rows = sum(p["samples"] for p in x["summary"]["processes"])
    print("%s: pprof %d, summary %d, its rows %d" % (x["dir"].rsplit("/", 1)[1], x["pprof_samples"],
          x["summary"]["samples"], rows), file=sys.stderr)
    if not (x["pprof_samples"] == x["summary"]["samples"] == rows):
        ok = False
sys.exit(0 if ok and sum(x["pprof_samples"] for x in w) > 300 else 1)
PY
}
check window_pprof_totals totals

# The first split: in window 1, not after the window of its exit; the
# second split's pid in the last window.
dropped() {
	python3 - "$TMP/windows.json" <<'PY'
import json, sys
w = json.load(open(sys.argv[1]))
rows = [{p["pid"]: p for p in x["summary"]["processes"] if p["comm"] == "split"} for x in w]
first = [p for p, r in rows[0].items() if r["samples"]]
if len(first) != 1:
    print("window 1's splits: %s" % rows[0], file=sys.stderr)
    sys.exit(1)
pid = first[0]
seen = [i for i, r in enumerate(rows) if pid in r]
# Its samples end at ~3 s: in windows 1 and 2 (3 at most, a late
# sample in the next); gone from every later one.
last = [i for i, r in enumerate(rows) if pid in r and r[pid]["samples"]]
print("split %d in windows %s, with samples in %s" % (pid, [i + 1 for i in seen], [i + 1 for i in last]),
      file=sys.stderr)
ok = seen == list(range(seen[-1] + 1)) and seen[-1] <= last[-1] + 1 and seen[-1] < len(w) - 1
second = [p for p, r in rows[-1].items() if r["samples"] and p != pid]
sys.exit(0 if ok and second else 1)
PY
}
check window_exited_dropped dropped

# By cum%: a function's share with the kernel frames above it (interrupts,
# preemption, heavier on a loaded machine), as in its window of 2 s. Within
# 5 points, or 3 standard deviations of a share of the window's samples
# when a loaded machine took few (make test once: 23.4% for func_three).
pprof_cum() { awk -v f="$1" '$NF == f && $5 ~ /%$/ { sub("%", "", $5); print $5; found = 1; exit } END { if (!found) print 0 }'; }
"$PPROF" -top "${WINS[0]}/profile.pb.gz" > "$TMP/top1" 2> /dev/null
n1=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["samples"])' "${WINS[0]}/summary.json" 2> /dev/null)
split_shares() {
	local f w got tol bad=
	for f in func_six:60 func_three:30 lib_spin:10; do
		w=${f#*:}
		got=$(pprof_cum "${f%:*}" < "$TMP/top1")
		tol=$(python3 -c 'import math, sys; w, n = float(sys.argv[1]) / 100, max(int(sys.argv[2]), 1); print(max(5.0, 300 * math.sqrt(w * (1 - w) / n)))' "$w" "${n1:-0}")
		echo "window 1 (${n1:-0} samples): ${f%:*} $got% (want $w +-$tol)" >&2
		within "$got" "$w" "$tol" || bad=1
	done
	[ -z "$bad" ] && split_floor
}
# The floor: the first split's samples, over the windows that hold them,
# follow the CPU it had (at 299 Hz, within 20 %, the lost ones counted), as
# summary_json's do; a fixed 100 in window 1 failed on a loaded machine
# that gave split less than its two threads' 2 s.
split_floor() {
	python3 - "$TMP/windows.json" "$TMP/split1.cpu" <<'PY'
import json, sys
w = json.load(open(sys.argv[1]))
cpu = float(open(sys.argv[2]).read())
pid = [p["pid"] for p in w[0]["summary"]["processes"] if p["comm"] == "split" and p["samples"]][0]
n = sum(p["samples"] for x in w for p in x["summary"]["processes"] if p["pid"] == pid)
lost = sum(x["summary"]["lost_samples"] for x in w)
want = cpu * 299
print("split %d: %d samples (%d lost in the windows) for %.3f s of CPU: %.0f at 299 Hz" % (pid, n, lost, cpu, want),
      file=sys.stderr)
sys.exit(0 if n >= 10 and n + lost >= 0.8 * want and n <= 1.2 * want else 1)
PY
}
check window_split split_shares

# --retain count=2: of five 1 s windows, the last two stay.
"$REC" -q -F 99 --window 1 -d 5 --retain count=2 -o "$TMP/r" -- "$WL/split" 6 > "$TMP/retain.log" 2>&1
retained() {
	local n idx
	n=$(ls -d "$TMP"/r/window-* 2> /dev/null | wc -l)
	idx=$(cat "$TMP"/r/window-*/summary.json 2> /dev/null | python3 -c '
import json, sys
d = json.JSONDecoder(); s = sys.stdin.read(); i = 0; out = []
while i < len(s):
    while i < len(s) and s[i].isspace(): i += 1
    if i >= len(s): break
    o, i = d.raw_decode(s, i); out.append(o["window"]["index"])
print(" ".join(map(str, sorted(out))))')
	[ "$n" = 2 ] && [ "$idx" = "4 5" ] && return 0
	echo "$n windows kept, indices $idx: $(cat "$TMP/retain.log")" >&2
	return 1
}
check window_retain_count retained

"$REC" -q --window 2 -t main -o "$TMP/t" -- "$WL/split" 1 > "$TMP/t.log" 2>&1
rc=$?
check window_refuses_trace eval '[ $rc = 64 ] && grep -q -- "--window: not with -t" "$TMP/t.log"'

# --off-cpu: each window's waits (pprof -sample_index=offcpu), summed.
"$REC" -q --off-cpu -F 99 --window 1 -o "$TMP/oc" -- "$WL/waits" > "$TMP/oc.log" 2>&1
rc=$?
offcpu_windows() {
	local d f ms n
	declare -A sum=() in=()
	for d in "$TMP"/oc/window-*; do
		"$PPROF" -sample_index=offcpu -unit=ms -top -nodecount=1000 "$d/profile.pb.gz" 2> /dev/null > "$d.off"
		for f in sleep_wait pipe_wait; do
			ms=$(awk -v f="$f" '$NF == f { v = $4; sub("ms$", "", v); print v; found = 1; exit } END { if (!found) print 0 }' "$d.off")
			sum[$f]=$(echo "${sum[$f]:-0} + $ms" | bc)
			awk -v v="$ms" 'BEGIN { exit !(v > 0) }' && in[$f]=$((${in[$f]:-0} + 1))
		done
	done
	n=$(ls -d "$TMP"/oc/window-* | wc -l)
	echo "$n windows: sleep_wait ${sum[sleep_wait]} ms in ${in[sleep_wait]:-0}, pipe_wait ${sum[pipe_wait]} ms in ${in[pipe_wait]:-0}" >&2
	[ $rc = 0 ] && [ "$n" -ge 4 ] && within "${sum[sleep_wait]}" 2000 100 && within "${sum[pipe_wait]}" 1000 50 &&
		[ "${in[sleep_wait]:-0}" = 1 ] && [ "${in[pipe_wait]:-0}" = 1 ]
}
check window_offcpu offcpu_windows

# -a under churn (a shell starting sh -c true without pause) for 10 1 s
# windows: the processes held as live whose pid is gone at a close (their
# exit not drained yet, or missed: summary.json's held.gone) do not pile up,
# the last full windows' median at most 2. Before procs_sweep_gone those
# whose exit was missed were held for the rest of the run (gone [0, 2, 1, 2,
# 2, 2, 3, 3, 3] and [1, 0, 0, 1, 1, 3, 4, 4, 4] with it taken out, under two
# busy loops; with it [0, 1, 0, 1, 2, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0, 0, 1,
# 2]). Not the live ones: under -a they are the host's too, each held from
# its first sample to its exit, and on a shared machine (other sessions'
# builds, their busy loops, kworkers met one after another) they grew 13 ->
# 23 and 8 -> 22 over the run with every one of them alive at each close.
(while :; do sh -c true; done) &
CHURN=$!
"$REC" -q -a -F 99 --window 1 -d 10 -o "$TMP/ch" > "$TMP/ch.log" 2>&1
rc=$?
kill $CHURN
wait $CHURN 2> /dev/null
churn_held() {
	[ $rc = 0 ] || { echo "exit $rc: $(cat "$TMP/ch.log")" >&2; return 1; }
	python3 - "$TMP"/ch/window-*/summary.json <<'PY'
import json, sys
w = sorted((json.load(open(f)) for f in sys.argv[1:]), key=lambda s: s["window"]["index"])
full = [s["held"] for s in w if not s["window"]["last"]]
gone = [h["gone"] for h in full]
print("held as live per window:", [h["procs"] - h["exited"] for h in full], "of them gone:", gone,
      "exits missed:", w[-1]["held"]["exits_missed"], file=sys.stderr)
sys.exit(not (len(gone) >= 8 and sorted(gone[-3:])[1] <= 2))
PY
}
check window_churn_held churn_held
