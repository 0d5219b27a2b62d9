#!/usr/bin/env bash
# --push to a real OpenTelemetry Collector (issue 25): the Collector v0.165.0
# built from tests/fleet (its otlpreceiver, and an exporter that writes what
# its pipeline was handed, with a summary its own pdata computes) runs on a
# loopback port of its own; split (6:3:1 over func_six, func_three and
# lib_spin, two threads) is recorded in a cgroup named as Docker names a
# container's and pushed. What the Collector got is checked against
# profile.pb.gz of the same run read by pprof: the same sample total, and the
# same count for every function as a leaf (so the 6:3:1 shares too), cpu
# nanoseconds the same; the resource's and every sample's attributes. Then a
# tiny server of the test's answers 401: the server's message is reported,
# the exit status is 1, the files are still written, and the credentials it
# got came from the header file or the environment. A header file others can
# read is refused before recording. An HTTPS receiver whose certificate no
# CA signed is refused, nothing sent to it.
source "$(dirname "$0")/lib.sh"

ALL=(fleet_collector_builds fleet_push_ok fleet_totals fleet_every_function fleet_split
	fleet_cpu_ns fleet_resource_attrs fleet_sample_attrs fleet_container_id
	fleet_401_reported fleet_401_files_kept fleet_credentials_file fleet_credentials_env
	fleet_headers_file_mode fleet_https_verifies fleet_receiver_down fleet_url_quote
	fleet_no_libcurl)
require_bpf "${ALL[@]}"

source "$(dirname "$0")/fleet_lib.sh"
fleet_build "${ALL[@]}"
pass fleet_collector_builds

PORT=$(free_port)
collector_start "$PORT" "$TMP/got"

# split (until killed: container.id is read at the push, from a process
# still running) in a cgroup named as Docker names a container's (cgroup v2:
# docker-ID.scope; v1: docker/ID in the pids hierarchy), recorded by pid.
CID=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
CG=
if [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ]; then
	CG=/sys/fs/cgroup/docker-$CID.scope
elif [ -d /sys/fs/cgroup/unified ]; then
	CG=/sys/fs/cgroup/unified/docker-$CID.scope
elif [ -d /sys/fs/cgroup/pids ]; then
	CG=/sys/fs/cgroup/pids/docker/$CID
fi
cg_leave() { # moves split back and removes the cgroup
	[ -n "$CG" ] && [ -d "$CG" ] || return 0
	for p in $(cat "$CG/cgroup.procs" 2>/dev/null); do echo "$p" > "$(dirname "$CG")/cgroup.procs" 2>/dev/null; done
	rmdir "$CG" 2>/dev/null
	[[ $CG == */docker/* ]] && rmdir "$(dirname "$CG")" 2>/dev/null
	return 0
}
trap 'cg_leave; kill $COL_PID 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$TMP"; jobs -p | xargs -r kill 2>/dev/null' EXIT
"$WL/split" 0 > "$TMP/split.out" &
SPLIT=$!
for _ in $(seq 50); do grep -q ready "$TMP/split.out" && break; sleep 0.1; done
[ -n "$CG" ] && mkdir -p "$CG" && echo $SPLIT > "$CG/cgroup.procs" || echo "no cgroup for the container case" >&2

"$REC" -q -F 499 -p $SPLIT -d 3 -o "$TMP/out" --push "otlp=http://127.0.0.1:$PORT" --service-name fleet-test \
	> "$TMP/rec.log" 2>&1
rc=$?
kill $SPLIT 2>/dev/null
wait $SPLIT 2>/dev/null
cg_leave
# -q hides the success line: errors and warnings would show.
if [ $rc = 0 ] && [ ! -s "$TMP/rec.log" ] && [ -f "$TMP/out/profile.pb.gz" ]; then
	pass fleet_push_ok
else
	fail fleet_push_ok "exit status $rc: $(head -c 300 "$TMP/rec.log")"
fi

# What the Collector wrote (its exporter is called within the request).
python3 - "$TMP/got" > "$TMP/col.json" <<'PY'
import glob, json, sys
out = []
for f in sorted(glob.glob(sys.argv[1] + "/batch-*.summary.json")):
    out += json.load(open(f))["profiles"]
json.dump(out, sys.stdout)
PY
# pprof's view of the same run (lib.sh).
pprof_leaves "$TMP/out/profile.pb.gz" samples > "$TMP/pprof.samples"
pprof_leaves "$TMP/out/profile.pb.gz" cpu ns > "$TMP/pprof.cpu"

# compare TYPE PPROF-FILE: the Collector's profiles of that sample type,
# summed over resources, against pprof: "TOTAL" and every function.
compare() {
	python3 - "$TMP/col.json" "$1" "$2" "$3" <<'PY'
import json, sys
col = [p for p in json.load(open(sys.argv[1])) if p["sample_type"] == sys.argv[2]]
want = {}
for line in open(sys.argv[3]):
    k, v = line.rstrip("\n").split("\t")
    want[k] = float(v)
what = sys.argv[4]
total = sum(p["total"] for p in col)
if what == "total":
    ok = col and total == want.get("TOTAL")
    print("Collector %s total %s, pprof %s" % (sys.argv[2], total, want.get("TOTAL")), file=sys.stderr)
    sys.exit(0 if ok else 1)
got = {}
for p in col:
    for f, v in p["self"].items():
        got[f] = got.get(f, 0) + v
want.pop("TOTAL", None)
bad = [(f, got.get(f), want.get(f)) for f in set(got) | set(want) if got.get(f, 0) != want.get(f, 0)]
if bad or not got:
    print("functions that differ (Collector, pprof): %s" % bad[:10], file=sys.stderr)
    sys.exit(1)
PY
}
check fleet_totals compare samples/count "$TMP/pprof.samples" total
check fleet_every_function compare samples/count "$TMP/pprof.samples" functions
check fleet_cpu_ns compare cpu/nanoseconds "$TMP/pprof.cpu" total

# The 6:3:1 split, as the Collector holds it.
shares() {
	python3 - "$TMP/col.json" <<'PY'
import json, math, sys
col = [p for p in json.load(open(sys.argv[1])) if p["sample_type"] == "samples/count"]
total = sum(p["total"] for p in col) or 1
got = {}
for p in col:
    for f, v in p["self"].items():
        got[f] = got.get(f, 0) + v
# Within 5 points, or 3 standard deviations of a share of this many
# samples where the machine is so loaded that few were taken (314 at
# -F 499 for 3 s on two threads, once): their exact counts are checked
# against pprof above; this is the workload's known answer.
want = {"func_six": 60, "func_three": 30, "lib_spin": 10}
bad = []
for f, w in want.items():
    sh = 100.0 * got.get(f, 0) / total
    tol = max(5.0, 300.0 * math.sqrt(w / 100.0 * (1 - w / 100.0) / total))
    print("Collector share of %s: %.1f%% (want %d +-%.1f)" % (f, sh, w, tol), file=sys.stderr)
    if abs(sh - w) > tol:
        bad.append(f)
sys.exit(1 if bad or total < 200 else 0)
PY
}
check fleet_split shares

attrs() { # WHAT: the resource's or every sample's attributes
	python3 - "$TMP/col.json" "$1" "$SPLIT" "$WL/split" "$(uname -n)" "$CID" <<'PY'
import json, sys
col = json.load(open(sys.argv[1]))
what, pid, exe, host, cid = sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]
if not col:
    sys.exit(1)
for p in col:
    r = p["resource"]
    if what == "resource":
        want = {"host.name": host, "service.name": "fleet-test", "process.pid": pid,
                "process.executable.name": "split", "process.executable.path": exe}
        bad = {k: r.get(k) for k, v in want.items() if r.get(k) != v}
        if bad:
            print("resource attributes that differ: %s (got %s)" % (bad, r), file=sys.stderr)
            sys.exit(1)
    elif what == "container":
        if r.get("container.id") != cid:
            print("container.id %s, want %s" % (r.get("container.id"), cid), file=sys.stderr)
            sys.exit(1)
    else:
        # Every sample: its thread, the thread's name, the CPU; split's two threads.
        for k in ("thread.id", "thread.name", "cpu.logical_number"):
            if p["sample_attrs"].get(k) != p["samples"]:
                print("%s on %s of %d samples" % (k, p["sample_attrs"].get(k), p["samples"]), file=sys.stderr)
                sys.exit(1)
        if len(p["threads"]) != 2 or p["bad_indices"]:
            print("threads %s, bad indices %d" % (p["threads"], p["bad_indices"]), file=sys.stderr)
            sys.exit(1)
PY
}
check fleet_resource_attrs attrs resource
check fleet_sample_attrs attrs samples
if [ -n "$CG" ]; then
	check fleet_container_id attrs container
elif [ "${CI:-}" = true ]; then
	fail fleet_container_id "no cgroup hierarchy to make a container's in"
else
	skip fleet_container_id "no cgroup hierarchy to make a container's in"
fi
kill $COL_PID 2>/dev/null

# A receiver that answers 401 with its reason, and notes the Authorization
# header it got.
PORT401=$(free_port)
fixture_start "$PORT401" "$TMP/auth.log" status 401 "invalid token for tenant 7
second line
"

printf '# the receiver'"'"'s token\nAuthorization: Bearer from-file\n' > "$TMP/headers"
chmod 600 "$TMP/headers"
"$REC" -q -o "$TMP/out401" --push "otlp=http://127.0.0.1:$PORT401" --push-headers "$TMP/headers" \
	-- "$WL/split" 0.3 > "$TMP/rec401.log" 2>&1
rc=$?
said_401() {
	[ $rc = 1 ] && grep -q "HTTP 401: invalid token for tenant 7;" "$TMP/rec401.log" &&
		! grep -q "second line" "$TMP/rec401.log" && return 0
	echo "exit status $rc: $(cat "$TMP/rec401.log")" >&2
	return 1
}
fault_case fleet_401_reported "--push to a receiver that answers 401 with a reason" \
	"error naming the URL, the status and the server's first line; exit status 1; files written" \
	said_401
check fleet_401_files_kept test -s "$TMP/out401/profile.pb.gz" -a -s "$TMP/out401/summary.json"
check fleet_credentials_file grep -qx "/v1development/profiles Bearer from-file" "$TMP/auth.log"
OTEL_EXPORTER_OTLP_HEADERS="Authorization=Bearer%20from-env" "$REC" -q -o "$TMP/out401env" \
	--push "otlp=http://127.0.0.1:$PORT401/v1development/profiles" -- "$WL/split" 0.3 > /dev/null 2>&1
check fleet_credentials_env grep -qx "/v1development/profiles Bearer from-env" "$TMP/auth.log"

# A URL with a character no URL has (summary.json holds it as it is):
# refused before recording.
"$REC" -q -o "$TMP/outq" --push 'otlp=http://127.0.0.1:1/a"b' -- "$WL/split" 0.3 > "$TMP/recq.log" 2>&1
rc=$?
fault_case fleet_url_quote "--push otlp=URL with a double quote in it" \
	"refused before recording: not a URL with a host; exit status 1" \
	eval '[ $rc = 1 ] && grep -q "not a URL with a host" "$TMP/recq.log" && [ ! -e "$TMP/outq/profile.pb.gz" ]'

# Credentials others can read: refused before anything is recorded.
chmod 644 "$TMP/headers"
"$REC" -q -o "$TMP/out644" --push "otlp=http://127.0.0.1:$PORT401" --push-headers "$TMP/headers" \
	-- "$WL/split" 0.3 > "$TMP/rec644.log" 2>&1
rc=$?
refused_644() {
	[ $rc != 0 ] && grep -q "readable by others" "$TMP/rec644.log" &&
		[ ! -e "$TMP/out644/profile.pb.gz" ] && [ "$(grep -c . "$TMP/auth.log")" = 2 ] && return 0
	echo "exit status $rc: $(cat "$TMP/rec644.log")" >&2
	return 1
}
fault_case fleet_headers_file_mode "--push-headers FILE that others can read" \
	"refused before recording, naming the file (chmod 600 it)" refused_644

# HTTPS with a self-signed certificate: refused by libcurl's verification,
# the credentials never sent.
PORTTLS=$(free_port)
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 \
	-keyout "$TMP/tls.key" -out "$TMP/tls.crt" > /dev/null 2>&1
python3 - "$PORTTLS" "$TMP" > /dev/null 2>&1 <<'PY' &
import http.server, ssl, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        open(sys.argv[2] + "/tls.got", "a").write("%s\n" % self.headers.get("Authorization"))
        self.send_response(200)
        self.end_headers()
srv = http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(sys.argv[2] + "/tls.crt", sys.argv[2] + "/tls.key")
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
srv.serve_forever()
PY
for _ in $(seq 50); do python3 -c "import socket; socket.create_connection(('127.0.0.1', $PORTTLS), 0.2)" 2>/dev/null && break; sleep 0.1; done
chmod 600 "$TMP/headers"
"$REC" -q -o "$TMP/outtls" --push "otlp=https://127.0.0.1:$PORTTLS" --push-headers "$TMP/headers" \
	-- "$WL/split" 0.3 > "$TMP/rectls.log" 2>&1
rc=$?
refused_tls() {
	[ $rc = 1 ] && grep -qi "certificate" "$TMP/rectls.log" && [ ! -e "$TMP/tls.got" ] && return 0
	echo "exit status $rc: $(cat "$TMP/rectls.log")" >&2
	return 1
}
fault_case fleet_https_verifies "--push to an HTTPS receiver with a self-signed certificate" \
	"error with libcurl's certificate reason, nothing sent; exit status 1; files written" refused_tls

# No receiver at all (a port nothing listens on): the error says so, the
# files are written, and the window stays in the spool for the next start
# (tests/integration/test_fleet_faults.sh sends such windows).
PORTDOWN=$(free_port)
"$REC" -q -o "$TMP/outdown" --push "otlp=http://127.0.0.1:$PORTDOWN" -- "$WL/split" 0.3 \
	> "$TMP/recdown.log" 2>&1
rc=$?
said_down() {
	[ $rc = 1 ] && grep -q "push http://127.0.0.1:$PORTDOWN/v1development/profiles: .*onnect" "$TMP/recdown.log" &&
		[ -s "$TMP/outdown/profile.pb.gz" ] && grep -q "1 window .* not sent, kept in" "$TMP/recdown.log" &&
		[ "$(ls "$TMP"/outdown/spool/*/*.req | wc -l)" = 1 ] && return 0
	echo "exit status $rc: $(cat "$TMP/recdown.log")" >&2
	return 1
}
fault_case fleet_receiver_down "--push to a loopback port nothing listens on" \
	"error naming the URL and libcurl's reason; exit status 1; files written; the window kept in the spool" said_down

# libcurl is loaded only for --push (user/push.c): where it cannot be loaded
# (here an empty file over it, in a mount namespace of the run's own), the
# error names it and the run does not start, before anything is recorded.
LIBCURL=$(ldconfig -p | awk '$1 == "libcurl.so.4" { print $NF; exit }')
LIBCURL=$(readlink -f "$LIBCURL")
unshare -m sh -c 'mount --bind /dev/null "$1" && shift && exec "$@"' sh "$LIBCURL" \
	"$REC" -q -o "$TMP/outnolib" --push "otlp=http://127.0.0.1:$PORT" -- "$WL/split" 0.3 \
	> "$TMP/recnolib.log" 2>&1
rc=$?
said_nolib() {
	[ $rc != 0 ] && [ "$(wc -l < "$TMP/recnolib.log")" = 1 ] &&
		grep -q "^bpftrace-rec: --push: libcurl could not be loaded (.*libcurl.so.4.*): install libcurl4$" "$TMP/recnolib.log" &&
		[ ! -e "$TMP/outnolib/summary.json" ] && return 0
	echo "exit status $rc, libcurl $LIBCURL: $(cat "$TMP/recnolib.log")" >&2
	return 1
}
fault_case fleet_no_libcurl "--push where libcurl.so.4 cannot be loaded" \
	"error naming libcurl and the loader's reason, before recording; non-zero exit status" said_nolib
