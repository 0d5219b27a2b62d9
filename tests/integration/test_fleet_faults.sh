#!/usr/bin/env bash
# --window with --push when the backend fails (issue 25), on loopback, with
# the real Collector of test_fleet.sh (fleet_lib.sh). Each case counts what
# arrived at the Collector (its exporter's batches, in the order it got
# them: each window's samples/count total, by the window's start) against
# what was recorded (each window directory's summary.json: its start and
# samples, which test_window checks against pprof's read of its profile):
# - the Collector killed for 20 s mid-run, then started again: every window
#   arrives, once, in order, with its samples (the next three cases and the
#   Pyroscope one run during the outage, each on ports of its own);
# - a backend that answers after 1.5 s (a delaying proxy in front of the
#   Collector) with 1 s windows: the windows still close on time (the drain
#   does not wait for the push), and every one arrives;
# - a receiver that answers 401: each window's refusal said with the
#   server's message, none retried (the spool empty), the count said;
# - a full spool (no receiver, --spool-max for about two windows): exactly
#   the windows that would pass the bound are dropped, counted and said;
#   those kept are sent, in order, by the next start once the Collector is
#   there;
# - bpftrace-rec killed with SIGKILL while its receiver is down, then started
#   again: the windows it had spooled arrive first, in order, then the new
#   run's;
# - --push pyroscope with its receiver (tests/fleet/pyroingest) killed for
#   8 s mid-run, then started again on its port: every window's request
#   arrives once, in order, with the window's samples.
# BPFTRACE_REC_RETRY_MAX_S=2 caps the backoff (60 s by default) so that a
# backlog goes out within the test's time.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/fleet_lib.sh"

ALL=(faults_outage_20s faults_outage_in_order faults_slow_backend_windows_on_time
	faults_slow_backend_all_sent faults_401_said faults_401_not_retried faults_spool_full_dropped
	faults_spool_full_rest_sent faults_sigkill_spool_sent faults_pyroscope_outage)
require_bpf "${ALL[@]}"
fleet_build "${ALL[@]}"
pyroingest_build faults_pyroscope_outage
export BPFTRACE_REC_RETRY_MAX_S=2

"$WL/split" 300 > "$TMP/split.out" &
SPLIT=$!
for _ in $(seq 50); do grep -q ready "$TMP/split.out" && break; sleep 0.1; done

# arrived "GOT..." OUTDIR...: every window of the OUTDIRs (in their order,
# each directory's windows by start) arrived once, in that order, with its
# samples, at the Collectors that wrote into the GOT directories (one per
# start of a Collector: its batches are numbered from 1 again); after --,
# the number of windows allowed missing (dropped and said).
arrived() {
	python3 - "$@" <<'PY'
import glob, json, os, re, sys
args = sys.argv[1:]
missing_ok = 0
if "--" in args:
    i = args.index("--")
    missing_ok = int(args[i + 1])
    args = args[:i]
gots, outs = args[0].split(), args[1:]
want = []
for o in outs:
    for d in sorted(glob.glob(o + "/window-*/summary.json")):
        s = json.load(open(d))
        want.append((s["start_time_ns"], s["samples"]))
batches = [b for got in gots for b in sorted(glob.glob(got + "/batch-*.summary.json"),
           key=lambda f: int(re.search(r"batch-(\d+)", f).group(1)))]
seen = []  # (start, total), in the order the Collector got them
for b in batches:
    tot = {}
    for p in json.load(open(b))["profiles"]:
        if p["sample_type"] == "samples/count":
            tot[p["time_unix_nano"]] = tot.get(p["time_unix_nano"], 0) + p["total"]
    seen += sorted(tot.items())
starts = [s for s, _ in seen]
wanted = dict(want)
bad = []
if len(set(starts)) != len(starts):
    bad.append("a window arrived twice")
if starts != sorted(starts):
    bad.append("out of order")
for s, t in seen:
    if s not in wanted:
        bad.append("arrived, not recorded: %d" % s)
    elif wanted[s] != t:
        bad.append("window %d: %d samples arrived, %d recorded" % (s, t, wanted[s]))
lost = [s for s, _ in want if s not in starts]
if len(lost) > missing_ok:
    bad.append("%d windows missing (%d allowed)" % (len(lost), missing_ok))
print("%d windows recorded, %d arrived (%d samples), %d missing" % (len(want), len(seen),
      sum(t for _, t in seen), len(lost)), file=sys.stderr)
for x in bad[:5]:
    print("  " + x, file=sys.stderr)
sys.exit(1 if bad or not seen else 0)
PY
}

# --- the Collector killed for 20 s -----------------------------------------------------------
# The slow backend's, the 401's and the full spool's cases run during the
# outage (~20 s of CI's time), on ports of their own (other_port).
PORT1=$(free_port)
collector_start "$PORT1" "$TMP/got1"
COL1=$COL_PID
"$REC" -F 99 -p $SPLIT --window 2 -o "$TMP/o1" --push "otlp=http://127.0.0.1:$PORT1" \
	> "$TMP/rec1.log" 2>&1 &
REC1=$!
sleep 5
kill -9 $COL1
wait $COL1 2> /dev/null
OUTAGE_T0=$SECONDS
other_port() { # a free port, not the one the outage's recorder retries
	local p
	while p=$(free_port) && [ "$p" = "$PORT1" ]; do :; done
	echo "$p"
}
# The Pyroscope case's run (checked at the end), meanwhile too: a receiver
# and a port of its own; in a subshell, as start_receiver sets globals.
pyroscope_outage() {
	local port=$1 rec
	start_receiver "$TMP/pgot1" -addr "127.0.0.1:$port"
	"$REC" -q -F 99 -p $SPLIT --window 2 -o "$TMP/o6" --push "pyroscope=http://127.0.0.1:$port" \
		> "$TMP/rec6.log" 2>&1 &
	rec=$!
	sleep 5
	kill -9 $RPID
	wait $RPID 2> /dev/null
	sleep 8
	start_receiver "$TMP/pgot2" -addr "127.0.0.1:$port"
	sleep 6
	kill -TERM $rec
	wait $rec
	echo $? > "$TMP/rc6"
	kill $RPID 2> /dev/null
}
pyroscope_outage "$(other_port)" &
PYRO=$!

# --- a slow backend: a proxy that waits 1.5 s before each request ---------------------------
PORT=$(other_port)
collector_start "$PORT" "$TMP/got2"
PPORT=$(other_port)
fixture_start "$PPORT" "$TMP/proxy.log" proxy 1.5 "$PORT"
PROXY=$FIX_PID
"$REC" -q -F 99 -p $SPLIT --window 1 -d 6 -o "$TMP/o2" --push "otlp=http://127.0.0.1:$PPORT" \
	> "$TMP/rec2.log" 2>&1
rc=$?
on_time() {
	python3 - "$TMP/o2" <<'PY'
import glob, json, sys
w = [json.load(open(f)) for f in sorted(glob.glob(sys.argv[1] + "/window-*/summary.json"))]
d = [x["duration_s"] for x in w[:-1]]
print("window durations %s" % d, file=sys.stderr)
# Each closed within 0.25 s of its period while each push took 1.5 s.
sys.exit(0 if len(d) >= 5 and all(abs(x - 1) < 0.25 for x in d) else 1)
PY
}
fault_case faults_slow_backend_windows_on_time "a backend answering 1.5 s late, 1 s windows" \
	"the drain does not wait: every window closes on time; the backlog is sent behind" on_time
check faults_slow_backend_all_sent eval '[ $rc = 0 ] && arrived "$TMP/got2" "$TMP/o2"'
kill $PROXY $COL_PID 2> /dev/null
wait $PROXY $COL_PID 2> /dev/null

# --- a 401 -----------------------------------------------------------------------------------
P401=$(other_port)
fixture_start "$P401" "$TMP/401.count" status 401 "token expired for tenant 9"
S401=$FIX_PID
"$REC" -q -F 99 -p $SPLIT --window 1 -d 3.5 -o "$TMP/o3" --push "otlp=http://127.0.0.1:$P401" \
	> "$TMP/rec3.log" 2>&1
rc=$?
n3=$(ls -d "$TMP"/o3/window-* | wc -l)
said_401() {
	[ $rc = 1 ] && [ "$(grep -c "HTTP 401: token expired for tenant 9; the window is dropped, not retried" "$TMP/rec3.log")" = "$n3" ] &&
		grep -q "0 windows sent, $n3 dropped: $n3 refused by the server" "$TMP/rec3.log" && return 0
	echo "exit $rc, $n3 windows: $(cat "$TMP/rec3.log")" >&2
	return 1
}
fault_case faults_401_said "a receiver answering 401 to every window" \
	"each refusal said with the server's message, the window dropped and counted; exit status 1" said_401
check faults_401_not_retried eval '[ "$(wc -l < "$TMP/401.count")" = "$n3" ] && [ -z "$(ls "$TMP"/o3/spool/*/)" ]'
kill $S401 2> /dev/null

# --- a full spool: no receiver; room for about two windows -----------------------------------
PORT=$(other_port)
# A window's request of split at -F 99, 1 s: measured by a first run into
# the spool (nothing listens), so that the bound holds two and a half.
"$REC" -q -F 99 -p $SPLIT -d 1 -o "$TMP/o4size" --push "otlp=http://127.0.0.1:$PORT" > /dev/null 2>&1
one=$(stat -c %s "$TMP"/o4size/spool/*/*.req)
max=$((one * 5 / 2))
"$REC" -F 99 -p $SPLIT --window 1 -d 6 -o "$TMP/o4" --push "otlp=http://127.0.0.1:$PORT" \
	--spool-max "$max" > "$TMP/rec4.log" 2>&1
rc=$?
full() {
	python3 - "$TMP/rec4.log" "$TMP/o4" "$max" <<'PY'
import glob, os, re, sys
log, out, mx = open(sys.argv[1]).read(), sys.argv[2], int(sys.argv[3])
wins = len(glob.glob(out + "/window-*"))
kept = sorted(glob.glob(out + "/spool/*/*.req"))
kb = sum(os.path.getsize(f) for f in kept)
drops = re.findall(r"is full \((\d+) bytes of --spool-max (\d+)\): a window of (\d+) bytes dropped \((\d+) so far\)", log)
total = re.search(r"(\d+) dropped: 0 refused by the server, (\d+) past --spool-max", log)
print("%d windows, %d kept (%d bytes of %d), %d drops said, total %s" % (wins, len(kept), kb, mx,
      len(drops), total.groups() if total else None), file=sys.stderr)
ok = kb <= mx and len(kept) + len(drops) == wins and len(drops) >= 1
# Each dropped window would have passed the bound; each count in turn.
ok = ok and all(int(b) + int(n) > mx and int(m) == mx for b, m, n, _ in drops)
ok = ok and [int(d[3]) for d in drops] == list(range(1, len(drops) + 1))
ok = ok and total and int(total.group(2)) == len(drops)
sys.exit(0 if ok else 1)
PY
}
fault_case faults_spool_full_dropped "no receiver, --spool-max of 2.5 windows, 6 windows" \
	"the windows past the bound dropped, each said with the bound and counted; the rest kept" full
# Then with the Collector there: the next start sends what was kept, in
# order (the windows dropped are allowed missing, and only they).
collector_start "$PORT" "$TMP/got4"
"$REC" -q -F 99 -p $SPLIT --window 1 -d 1.5 -o "$TMP/o4" --push "otlp=http://127.0.0.1:$PORT" \
	--spool-max "$max" > "$TMP/rec4b.log" 2>&1
ndrop=$(grep -c "a window of .* bytes dropped" "$TMP/rec4.log")
check faults_spool_full_rest_sent arrived "$TMP/got4" "$TMP/o4" -- "$ndrop"
kill $COL_PID 2> /dev/null
wait $COL_PID 2> /dev/null

# --- the outage's end, 20 s after the kill or more ----------------------------------------------
left=$((20 - (SECONDS - OUTAGE_T0)))
[ $left -gt 0 ] && sleep $left
collector_start "$PORT1" "$TMP/got1b"
COL1=$COL_PID
sleep 5
kill -TERM $REC1
wait $REC1
rc=$?
outage() {
	local n
	n=$(ls -d "$TMP"/o1/window-* | wc -l)
	# The outage held ~10 windows back; said once, then sent again.
	[ $rc = 0 ] && [ "$n" -ge 14 ] && grep -q "tried again with backoff" "$TMP/rec1.log" &&
		grep -q "sent again after" "$TMP/rec1.log" && [ -z "$(ls "$TMP"/o1/spool/*/ 2> /dev/null)" ] &&
		return 0
	echo "exit $rc, $n windows: $(grep -v "stays in the spool\|^  \|window [0-9]*:" "$TMP/rec1.log" | head -5)" >&2
	return 1
}
fault_case faults_outage_20s "the Collector killed (SIGKILL) for 20 s in a run of 2 s windows, then started again" \
	"the windows wait in the spool, retried with backoff; sent once it is back; exit 0, spool empty" outage
check faults_outage_in_order arrived "$TMP/got1 $TMP/got1b" "$TMP/o1"
kill $COL1 2> /dev/null
wait $COL1 2> /dev/null

# --- SIGKILL while the receiver is down, then a restart ---------------------------------------
PORT=$(free_port)
"$REC" -q -F 99 -p $SPLIT --window 1 -o "$TMP/o5" --push "otlp=http://127.0.0.1:$PORT" \
	> "$TMP/rec5.log" 2>&1 &
REC5=$!
# Three windows closed (on a loaded machine the start alone may take 2 s).
for _ in $(seq 150); do [ "$(ls -d "$TMP"/o5/window-* 2> /dev/null | wc -l)" -ge 3 ] && break; sleep 0.1; done
kill -9 $REC5
wait $REC5 2> /dev/null
# The windows closed before the kill are in the spool; the one open then
# is lost with the process (its directory never written).
mv "$TMP/o5" "$TMP/o5a"
mkdir -p "$TMP/o5" && mv "$TMP/o5a/spool" "$TMP/o5/"
collector_start "$PORT" "$TMP/got5"
"$REC" -q -F 99 -p $SPLIT --window 1 -d 2.5 -o "$TMP/o5" --push "otlp=http://127.0.0.1:$PORT" \
	> "$TMP/rec5b.log" 2>&1
rc=$?
killed() {
	local n
	n=$(ls -d "$TMP"/o5a/window-* | wc -l)
	[ $rc = 0 ] && [ "$n" -ge 3 ] && arrived "$TMP/got5" "$TMP/o5a" "$TMP/o5" && return 0
	echo "exit $rc, $n windows before the kill: $(cat "$TMP/rec5b.log")" >&2
	return 1
}
fault_case faults_sigkill_spool_sent "bpftrace-rec killed (SIGKILL) with windows spooled for a receiver that is down, then started again" \
	"the next start sends the spooled windows first, in order, then its own" killed
kill $COL_PID 2> /dev/null
wait $COL_PID 2> /dev/null

# --- Pyroscope: its receiver killed for 8 s, then started again ---------------------------------
# (run in the background since the Collector's outage: pyroscope_outage)
wait $PYRO
rc=$(cat "$TMP/rc6" 2> /dev/null || echo none)
# Each request (a window's, one process) in the order received: its from
# (the window's start, in whole seconds: 2 s windows have distinct ones)
# and its samples as pprof reads them, against the windows recorded.
pyro_arrived() {
	local d f n
	for d in "$TMP/pgot1" "$TMP/pgot2"; do
		for ((n = 0; ; n++)); do
			f=$d/req-$n.json
			[ -f "$f" ] || break
			echo "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["from"])' "$f")" \
				"$(pprof_leaves "${f%.json}.pb.gz" samples | sed -n 's/^TOTAL\t//p')"
		done
	done > "$TMP/pseen"
	python3 - "$TMP/o6" "$TMP/pseen" "$rc" <<'PY'
import glob, json, sys
want = []
for f in sorted(glob.glob(sys.argv[1] + "/window-*/summary.json")):
    s = json.load(open(f))
    if s["samples"]:
        want.append((s["start_time_ns"] // 10**9, s["samples"]))
seen = [tuple(int(float(x)) for x in l.split()) for l in open(sys.argv[2]) if l.strip()]
print("exit %s; %d windows recorded, %d requests arrived" % (sys.argv[3], len(want), len(seen)), file=sys.stderr)
if seen != want:
    print("  recorded (from, samples) %s\n  arrived %s" % (want, seen), file=sys.stderr)
sys.exit(0 if sys.argv[3] == "0" and len(want) >= 8 and seen == want else 1)
PY
}
fault_case faults_pyroscope_outage "--push pyroscope, 2 s windows, the receiver killed (SIGKILL) for 8 s, then started again on its port" \
	"every window's request arrives once, in order, with the window's samples; exit 0" pyro_arrived
kill $SPLIT 2> /dev/null
