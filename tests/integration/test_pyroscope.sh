#!/usr/bin/env bash
# --push pyroscope=URL (issue 25). A real Pyroscope server cannot be built
# here (docs/fleet.md: it is AGPL-3.0, and the module proxy refuses it):
# that test says so as a blocked fact, never as a pass. The destination is
# tested against tests/fleet/pyroingest, a receiver of Pyroscope's /ingest
# that holds each request to Pyroscope's rules (the query, the name's key
# syntax, the multipart form, and format=pprof taking the whole body as a
# raw profile, as the real ingest handler does) and keeps what passed;
# tools/pprof reads the profiles it got. split (6:3:1 over func_six, func_three and lib_spin, two
# threads) recorded by pid: what was received equals profile.pb.gz of the
# same run as pprof reads them, every function's count; the 6:3:1 shares;
# the name and labels; the window. -a with a process whose name is hostile:
# a request per process, every process's samples equal to its samples in
# profile.pb.gz, all accepted. A 401 is reported with the server's message,
# and the credentials come from --push-headers.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/fleet_lib.sh"

ALL=(pyroscope_real_server pyroscope_receiver_builds pyroscope_push_ok pyroscope_every_function
	pyroscope_split pyroscope_labels pyroscope_window pyroscope_real_rules pyroscope_all_processes
	pyroscope_hostile_name pyroscope_401_reported pyroscope_credentials)

# Said first, and whatever else happens: the real server's test is blocked
# by a fact, not passed and not skipped quietly.
echo "SKIP pyroscope_real_server: BLOCKED, not run: github.com/grafana/pyroscope is AGPL-3.0 (the" \
	"project uses no AGPL module) and the Go module proxy refuses it (403 Forbidden, 'This module" \
	"version is not available'); see docs/fleet.md. The destination is tested against" \
	"tests/fleet/pyroingest below."
require_bpf "${ALL[@]:1}"

pyroingest_build "${ALL[@]:1}"
pass pyroscope_receiver_builds

trap 'jobs -p | xargs -r kill 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$TMP"' EXIT

# split by pid, pushed.
start_receiver "$TMP/got"
"$WL/split" 0 > "$TMP/split.out" &
SPLIT=$!
for _ in $(seq 50); do grep -q ready "$TMP/split.out" && break; sleep 0.1; done
"$REC" -q -F 499 -p $SPLIT -d 3 -o "$TMP/out" --push "pyroscope=http://127.0.0.1:$PORT" \
	--service-name shop-web > "$TMP/rec.log" 2>&1
rc=$?
kill $SPLIT 2>/dev/null
wait $SPLIT 2>/dev/null
# -q hides the success line: errors and warnings would show.
if [ $rc = 0 ] && [ ! -s "$TMP/rec.log" ] && [ -f "$TMP/got/req-0.json" ] && [ ! -e "$TMP/got/req-1.json" ]; then
	pass pyroscope_push_ok
else
	fail pyroscope_push_ok "exit status $rc, requests: $(ls "$TMP/got" | tr '\n' ' ')$(head -c 300 "$TMP/rec.log") $(head -c 300 "$TMP/got.log")"
fi

# What Pyroscope was sent against profile.pb.gz, both as pprof reads them:
# the total and every leaf function, samples and cpu nanoseconds.
same_leaves() {
	local bad=0 idx
	for idx in samples cpu; do
		pprof_leaves "$TMP/out/profile.pb.gz" $idx > "$TMP/want.$idx"
		pprof_leaves "$TMP/got/req-0.pb.gz" $idx > "$TMP/got.$idx"
		if ! [ -s "$TMP/want.$idx" ] || ! diff <(sort "$TMP/want.$idx") <(sort "$TMP/got.$idx") >&2; then
			bad=1
		fi
	done
	return $bad
}
check pyroscope_every_function same_leaves

shares() {
	"$PPROF" -top -sample_index=samples "$TMP/got/req-0.pb.gz" > "$TMP/got.top" 2>/dev/null
	check_split pyroscope_split "$TMP/got.top" pprof_flat
}
shares

labels() {
	python3 - "$TMP/got/req-0.json" "$SPLIT" "$WL/split" "$(uname -n)" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
want = {"host_name": sys.argv[4], "process_pid": sys.argv[2],
        "process_executable_name": "split", "process_executable_path": sys.argv[3]}
ok = r["app"] == "shop-web" and r["labels"] == want and r["spy"] == "bpftrace-rec" and r["format"] == "" \
    and r["sample_rate"] == "499" and set(r["sample_type_config"]) == {"samples", "cpu"}
if not ok:
    print("got %s, want app shop-web and labels %s" % (r, want), file=sys.stderr)
sys.exit(0 if ok else 1)
PY
}
check pyroscope_labels labels

# The window: from and until hold the profile's time and duration.
window() {
	local t
	t=$("$PPROF" -raw "$TMP/out/profile.pb.gz" 2>/dev/null | sed -n 's/^Time: //p')
	python3 - "$TMP/got/req-0.json" "$t" <<'PY'
import datetime, json, sys
r = json.load(open(sys.argv[1]))
# pprof's "2026-11-26 15:16:59.51646121 +0000 UTC"
day, clock, zone = sys.argv[2].split()[:3]
sec, _, frac = clock.partition(".")
start = datetime.datetime.strptime(day + " " + sec + " " + zone, "%Y-%m-%d %H:%M:%S %z").timestamp() + float("0." + (frac or "0"))
ok = r["from"] <= start < r["from"] + 1 and r["until"] >= start + 3 and r["until"] <= start + 5
if not ok:
    print("from %d until %d, the profile from %.3f for about 3 s" % (r["from"], r["until"], start), file=sys.stderr)
sys.exit(0 if ok else 1)
PY
}
check pyroscope_window window

# The real server's rules for the body (ingest_handler.go): format=pprof
# takes the whole body as one raw pprof, before the Content-Type is looked
# at, so the request bpftrace-rec sent before (format=pprof and a multipart
# form) is refused 422 as the real server refused it; a form without a
# format, and format=pprof with the profile itself, are taken.
real_rules() {
	python3 - "$PORT" "$TMP/out/profile.pb.gz" <<'PY'
import http.client, sys
port, prof = int(sys.argv[1]), open(sys.argv[2], "rb").read()
b = "------bpftrace-rec-test"
form = b"".join(b"--%s\r\nContent-Disposition: form-data; name=\"%s\"; filename=\"%s\"\r\n"
                b"Content-Type: application/octet-stream\r\n\r\n%s\r\n" % (b.encode(), n, f, d)
                for n, f, d in [(b"profile", b"profile.pprof", prof),
                                (b"sample_type_config", b"sample_type_config.json", b'{"cpu":{"units":"nanoseconds"}}')])
form += b"--%s--\r\n" % b.encode()
q = "/ingest?name=app%7Bk%3Dv%7D&from=10&until=20"
cases = [("format=pprof and a form (the old request)", q + "&format=pprof", form, "multipart/form-data; boundary=" + b, 422, "wrong wireType = 5 for field Function"),
         ("a form without a format", q, form, "multipart/form-data; boundary=" + b, 200, ""),
         ("format=pprof and the profile", q + "&format=pprof", prof, "application/octet-stream", 200, "")]
bad = []
for what, path, body, ctype, want, text in cases:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("POST", path, body, {"Content-Type": ctype})
    r = c.getresponse()
    got = r.read().decode(errors="replace")
    if r.status != want or text not in got:
        bad.append("%s: %d %s (want %d %s)" % (what, r.status, got.strip(), want, text))
print("; ".join(bad), file=sys.stderr)
sys.exit(1 if bad else 0)
PY
}
check pyroscope_real_rules real_rules
kill $RPID 2>/dev/null

# -a with a program whose name is hostile to the key syntax (a comma, braces,
# an equals sign, a space, a quote): each process its request, all accepted.
start_receiver "$TMP/all"
BAD="$TMP/bad,{x}=y \"q"
cp "$WL/split" "$BAD"
cp "$WL"/libwork.so "$TMP/" 2>/dev/null
"$BAD" 0 > "$TMP/bad.out" &
BADPID=$!
for _ in $(seq 50); do grep -q ready "$TMP/bad.out" && break; sleep 0.1; done
"$REC" -q -a -d 2 -o "$TMP/outall" --push "pyroscope=http://127.0.0.1:$PORT" > "$TMP/recall.log" 2>&1
rc=$?
kill $BADPID 2>/dev/null
wait $BADPID 2>/dev/null
# Per process: the samples profile.pb.gz holds (pprof -raw, by its pid
# label) against the sum of the request named by that pid.
per_process() {
	"$PPROF" -raw "$TMP/outall/profile.pb.gz" > "$TMP/all.raw" 2>/dev/null
	for f in "$TMP"/all/req-*.pb.gz; do
		echo "== ${f%.pb.gz}.json"
		"$PPROF" -raw "$f" 2>/dev/null
	done > "$TMP/got.raw"
	python3 - "$TMP/all.raw" "$TMP/got.raw" "$rc" "$TMP/recall.log" <<'PY'
import json, re, sys
def samples(path):
    # "count ns: locs" lines, each followed by its labels; "== FILE" starts a request.
    per, cur, key = {}, None, None
    for line in open(path):
        if line.startswith("== "):
            key = json.load(open(line[3:].strip()))["labels"].get("process_pid", "none")
            if key in per:
                print("two requests for pid %s" % key, file=sys.stderr); sys.exit(1)
            per[key] = 0
            continue
        m = re.match(r"\s+(\d+)\s+\d+:", line)
        if m:
            cur = int(m.group(1))
            if key is not None:
                per[key] += cur
            continue
        m = re.search(r"pid:\[(\d+) pid\]", line)
        if m and key is None and cur is not None:
            per[m.group(1)] = per.get(m.group(1), 0) + cur
            cur = None
    return per
want, got = samples(sys.argv[1]), samples(sys.argv[2])
ok = int(sys.argv[3]) == 0 and want and want == got
if not ok:
    diff = {k: (want.get(k), got.get(k)) for k in set(want) | set(got) if want.get(k) != got.get(k)}
    print("exit %s; %d processes recorded, %d requests; differing (recorded, sent): %s; %s" %
          (sys.argv[3], len(want), len(got), list(diff.items())[:8], open(sys.argv[4]).read()[:300]), file=sys.stderr)
sys.exit(0 if ok else 1)
PY
}
check pyroscope_all_processes per_process
hostile() {
	python3 - "$TMP/all" "$BADPID" <<'PY'
import glob, json, sys
for f in glob.glob(sys.argv[1] + "/req-*.json"):
    r = json.load(open(f))
    if r["labels"].get("process_pid") == sys.argv[2]:
        # comm is the name's first 15 bytes: "bad,{x}=y \"q".
        ok = r["app"] == "bad__x__y__q" and r["labels"]["process_executable_name"] == "bad__x__y__q"
        if not ok:
            print("named %s" % r, file=sys.stderr)
        sys.exit(0 if ok else 1)
print("no request for pid %s" % sys.argv[2], file=sys.stderr)
sys.exit(1)
PY
}
fault_case pyroscope_hostile_name "--push pyroscope with a program named 'bad,{x}=y \"q'" \
	"its name sanitized to Pyroscope's key syntax (bad__x__y__q); every process's request accepted" hostile
kill $RPID 2>/dev/null

# A 401 with the server's reason; the token and tenant from --push-headers.
start_receiver "$TMP/auth" -token right
printf 'Authorization: Bearer wrong\nX-Scope-OrgID: tenant-7\n' > "$TMP/headers"
chmod 600 "$TMP/headers"
"$REC" -q -o "$TMP/out401" --push "pyroscope=http://127.0.0.1:$PORT" --push-headers "$TMP/headers" \
	-- "$WL/split" 0.3 > "$TMP/rec401.log" 2>&1
rc=$?
said_401() {
	[ $rc = 1 ] && grep -q "push http://127.0.0.1:$PORT/ingest: HTTP 401: invalid token;" "$TMP/rec401.log" &&
		[ -s "$TMP/out401/profile.pb.gz" ] && [ ! -e "$TMP/auth/req-0.json" ] && return 0
	echo "exit status $rc: $(cat "$TMP/rec401.log")" >&2
	return 1
}
fault_case pyroscope_401_reported "--push pyroscope to a server that answers 401 invalid token" \
	"error naming the URL, the status and the server's message; exit status 1; files written" said_401
printf 'Authorization: Bearer right\nX-Scope-OrgID: tenant-7\n' > "$TMP/headers"
"$REC" -q -o "$TMP/outauth" --push "pyroscope=http://127.0.0.1:$PORT" --push-headers "$TMP/headers" \
	-- "$WL/split" 0.3 > "$TMP/recauth.log" 2>&1
creds() {
	python3 - "$TMP/auth/req-0.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
ok = r["authorization"] == "Bearer right" and r["x_scope_orgid"] == "tenant-7"
if not ok:
    print("headers got: %s %s" % (r["authorization"], r["x_scope_orgid"]), file=sys.stderr)
sys.exit(0 if ok else 1)
PY
}
check pyroscope_credentials creds
kill $RPID 2>/dev/null
