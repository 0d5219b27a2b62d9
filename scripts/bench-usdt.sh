#!/usr/bin/env bash
# -t usdt:'s cost (a benchmark, not a test): PostgreSQL 15 started here on
# a loopback port of its own (initdb in a temporary directory), driven by
# pgbench (CLIENTS clients x TXNS transactions each of BEGIN; SELECT; END;:
# a transaction and three queries each), alone, under bpftrace-rec -p
# POSTMASTER -t 'usdt:postgres:query__start,transaction__start' (5 probes:
# query start/done, transaction start/commit/abort) and under bpftrace
# counting the same 5 probes (usdt:...{ @[probe] = count(); }), alternating,
# ROUNDS times (default 5). For each: pgbench's throughput (tps, and the
# ratio of medians against alone), the BPF time per probe firing (the
# tool's programs' run_time_ns / run_cnt, kernel.bpf_stats_enabled) and the
# tool's own CPU time over the run (utime + stime). Prints medians.
# Usage: bash scripts/bench-usdt.sh   (as root, after make; needs postgresql
# and bpftrace: make test-deps)
set -eu
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
CLIENTS=${CLIENTS:-2}
TXNS=${TXNS:-1500}
PORT=${PORT:-55425}
PGBIN=/usr/lib/postgresql/15/bin
[ "$(id -u)" = 0 ] || { echo "bench-usdt: run as root" >&2; exit 1; }
[ -x bpftrace-rec ] || { echo "bench-usdt: make first" >&2; exit 1; }
[ -x $PGBIN/postgres ] && command -v pgbench > /dev/null ||
	{ echo "bench-usdt: PostgreSQL 15 not found (make test-deps)" >&2; exit 1; }
command -v bpftrace > /dev/null || { echo "bench-usdt: bpftrace not found (make test-deps)" >&2; exit 1; }
source scripts/lib.sh
bpf_stats_begin

chmod o+x "$TMP"
mkdir -p "$TMP/sock" && chown postgres: "$TMP" "$TMP/sock"
runuser -u postgres -- $PGBIN/initdb -D "$TMP/data" -A trust -U postgres > "$TMP/initdb.log" 2>&1
runuser -u postgres -- $PGBIN/postgres -D "$TMP/data" -p $PORT -k "$TMP/sock" \
	-c listen_addresses=127.0.0.1 -c autovacuum=off -c fsync=off > "$TMP/server.log" 2>&1 &
runpid=$!
for _ in $(seq 50); do pg_isready -q -h 127.0.0.1 -p $PORT && break; sleep 0.2; done
pgpid=$(head -n 1 "$TMP/data/postmaster.pid")
trap 'kill -INT $pgpid 2> /dev/null; wait $runpid 2> /dev/null; echo "$BPF_STATS_OLD" > /proc/sys/kernel/bpf_stats_enabled; rm -rf "$TMP"' EXIT
printf 'BEGIN;\nSELECT count(*) FROM pg_class;\nEND;\n' > "$TMP/script.sql"

load() { # pgbench's tps
	pgbench -n -h 127.0.0.1 -p $PORT -U postgres -c "$CLIENTS" -t "$TXNS" -f "$TMP/script.sql" postgres 2>&1 |
		awk '/^tps/ { print $3; exit }'
}
# The BPF time and runs of the programs process PID holds (those named
# NAME when given: bpftrace-rec's sampler and tracepoints are not the
# probes'): "ns runs".
bpf_of() {
	local ids
	ids=$(cat /proc/"$1"/fdinfo/* 2> /dev/null | awk '$1 == "prog_id:" { print $2 }' | sort -u | tr '\n' ' ')
	bpftool prog show -j | python3 -c '
import json, sys
ids = set(map(int, sys.argv[1].split()))
ps = [p for p in json.load(sys.stdin) if p["id"] in ids and sys.argv[2] in ("", p.get("name"))]
print(sum(p.get("run_time_ns", 0) for p in ps), sum(p.get("run_cnt", 0) for p in ps))' "$ids" "${2:-}"
}
nprogs() { # PID NAME: programs (named NAME, when given) the process holds
	local ids
	ids=$(cat /proc/"$1"/fdinfo/* 2> /dev/null | awk '$1 == "prog_id:" { print $2 }' | sort -u | tr '\n' ' ')
	bpftool prog show -j | python3 -c '
import json, sys
ids = set(map(int, sys.argv[1].split()))
print(sum(1 for p in json.load(sys.stdin) if p["id"] in ids and sys.argv[2] in ("", p.get("name"))))' "$ids" "${2:-}"
}
cpu_ms() { awk '{ print ($14 + $15) * 1000 / '"$(getconf CLK_TCK)"' }' /proc/"$1"/stat; }

# NAME PROG READY-REGEX TOOL...: starts the tool, waits for READY in its output,
# runs the load; prints "NAME tps ns_per_firing firings cpu_ms".
measure() {
	local name=$1 prog=$2 ready=$3 pid a b c0 c1 tps
	shift 3
	"$@" > "$TMP/$name.out" 2>&1 &
	pid=$!
	# bpftrace's "Attaching" may sit in its stdout's buffer: its 5
	# programs loaded say it too (then a second for their attachment).
	for _ in $(seq 600); do
		grep -qE "$ready" "$TMP/$name.out" && break
		[ "$(nprogs $pid "$prog")" -ge 5 ] && sleep 1 && break
		sleep 0.1
	done
	kill -0 $pid 2> /dev/null || { echo "bench-usdt: $name exited" >&2; cat "$TMP/$name.out" >&2; exit 1; }
	# The process that holds the programs (bpftrace-rec or bpftrace itself).
	a=$(bpf_of $pid "$prog") c0=$(cpu_ms $pid)
	tps=$(load)
	b=$(bpf_of $pid "$prog") c1=$(cpu_ms $pid)
	kill -INT $pid 2> /dev/null || true
	wait $pid || true
	set -- $a $b
	echo "$name $tps $((($3 - $1) / ($4 - $2 ? $4 - $2 : 1))) $(($4 - $2)) $(awk -v a="$c0" -v b="$c1" 'BEGIN { print b - a }')"
}

PROBES='query__start,query__done,transaction__start,transaction__commit,transaction__abort'
BT=$(for p in ${PROBES//,/ }; do printf 'usdt:%s:postgresql:%s { @[probe] = count(); }\n' $PGBIN/postgres $p; done)
load > /dev/null # warm-up: the catalog in cache
for r in $(seq "$ROUNDS"); do
	echo "alone $(load) 0 0 0"
	measure bpftrace-rec on_usdt 'tracing .* USDT probes' ./bpftrace-rec -o "$TMP/rec" -p "$pgpid" -F 99 \
		-t 'usdt:postgres:query__start,transaction__start'
	measure bpftrace '' 'Attaching' bpftrace -e "$BT"
done > "$TMP/rows"
cat "$TMP/rows" >&2
python3 - "$TMP/rows" "$CLIENTS" "$TXNS" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    n, tps, ns, runs, cpu = line.split()
    rows.setdefault(n, []).append((float(tps), int(ns), int(runs), float(cpu)))
base = statistics.median(r[0] for r in rows["alone"])
print(f"pgbench: {sys.argv[2]} clients x {sys.argv[3]} transactions of BEGIN; SELECT; END; "
      f"(5 probe firings each: 3 queries' start and done, transaction start and commit), "
      f"{len(rows['alone'])} rounds, medians")
print("| | tps | throughput vs alone | BPF ns per firing | firings per run | tool CPU ms per run |")
print("| --- | --- | --- | --- | --- | --- |")
for n in ("alone", "bpftrace-rec", "bpftrace"):
    v = rows[n]
    tps = statistics.median(r[0] for r in v)
    cells = [f"{tps:.0f}", f"x{tps / base:.2f}"]
    if n == "alone":
        cells += ["", "", ""]
    else:
        cells += [f"{statistics.median(r[1] for r in v)}", f"{statistics.median(r[2] for r in v):.0f}",
                  f"{statistics.median(r[3] for r in v):.0f}"]
    print(f"| {n} | " + " | ".join(cells) + " |")
PY
