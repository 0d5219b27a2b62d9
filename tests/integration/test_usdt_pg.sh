#!/usr/bin/env bash
# -t usdt: on Debian's PostgreSQL 15 (issue 24): a server started here on a
# loopback port of its own, recorded by -p on its postmaster (the probes
# fire in the backends it forks), driven by pgbench with a fixed number of
# transactions per client: the transactions and statements recorded are
# what pgbench sent, and each backend's query intervals fit in the
# recording's wall time. Read back with llvm-xray account and convert.
source "$(dirname "$0")/lib.sh"

ALL=(usdt_pg_transactions usdt_pg_queries usdt_pg_query_time)
require_bpf "${ALL[@]}"
require_tool llvm-xray usdt_pg_transactions || exit 0
PGBIN=/usr/lib/postgresql/15/bin
if [ ! -x $PGBIN/postgres ] || ! command -v pgbench > /dev/null || ! id postgres > /dev/null 2>&1; then
	for t in "${ALL[@]}"; do
		if [ "${CI:-}" = true ]; then fail $t "PostgreSQL 15 missing in CI"; else skip $t "PostgreSQL 15 not installed (make test-deps)"; fi
	done
	exit 0
fi
NEST=$ROOT/tests/integration/xray_nest.py
PORT=${USDT_PG_PORT:-55424}
CLIENTS=2 PER_CLIENT=150 PER_CLIENT_X=50

pg=$TMP/pg
# The server runs as postgres: it must reach its directory.
chmod o+x "$TMP"
mkdir -p "$pg/sock" && chown -R postgres: "$pg"
as_pg() { runuser -u postgres -- "$@"; }
as_pg $PGBIN/initdb -D "$pg/data" -A trust -U postgres > "$pg/initdb.log" 2>&1 ||
	{ fail usdt_pg_transactions "initdb failed"; cat "$pg/initdb.log" >&2; exit 0; }
# Loopback and a socket directory of its own; no autovacuum, whose workers
# would run transactions of their own.
as_pg $PGBIN/postgres -D "$pg/data" -p $PORT -k "$pg/sock" -c listen_addresses=127.0.0.1 \
	-c autovacuum=off -c fsync=off > "$pg/server.log" 2>&1 &
runpid=$!
# The postmaster (runuser's child): what -p records, and what stops it.
for _ in $(seq 50); do pg_isready -q -h 127.0.0.1 -p $PORT && break; sleep 0.2; done
pgpid=$(head -n 1 "$pg/data/postmaster.pid" 2>/dev/null)
stop_pg() { # a fast shutdown, then runuser's exit
	kill -INT "$pgpid" 2>/dev/null
	for _ in $(seq 50); do kill -0 $runpid 2>/dev/null || break; sleep 0.2; done
	kill -KILL "$pgpid" $runpid 2>/dev/null
	wait $runpid 2>/dev/null
}
if [ -z "$pgpid" ]; then
	fail usdt_pg_transactions "the server did not start"; cat "$pg/server.log" >&2; stop_pg; exit 0
fi

d=$TMP/rec
"$REC" -o "$d" -p $pgpid -t 'usdt:postgres:query__start,transaction__start' 2> "$d.err" &
rpid=$!
for _ in $(seq 100); do grep -q 'tracing .* USDT probes' "$d.err" 2>/dev/null && break; sleep 0.1; done
# A script of its own (no pgbench tables, no table-info queries): each
# pgbench transaction is one statement, in a transaction of its own.
echo 'SELECT count(*) FROM pg_class;' > "$pg/script.sql"
pgbench -n -h 127.0.0.1 -p $PORT -U postgres -c $CLIENTS -t $PER_CLIENT -f "$pg/script.sql" postgres \
	> "$pg/pgbench.out" 2>&1
# Then explicit transactions of three statements, as pgbench's own scripts
# run them: each transaction starts inside its BEGIN query and commits
# inside its END query, so the pairs do not nest; the recording cuts and
# continues them ("[cont.]").
printf 'BEGIN;\nSELECT count(*) FROM pg_class;\nEND;\n' > "$pg/script-x.sql"
pgbench -n -h 127.0.0.1 -p $PORT -U postgres -c $CLIENTS -t $PER_CLIENT_X -f "$pg/script-x.sql" \
	postgres >> "$pg/pgbench.out" 2>&1
kill -INT $rpid
wait $rpid
stop_pg
processed=$(awk -F': ' '/number of transactions actually processed/ { split($2, a, "/"); n += a[1] } END { print n }' "$pg/pgbench.out")

# Every backend's trace: the nesting checker's view of its calls, summed.
python3 - "$d" "$NEST" > "$TMP/pg.json" <<'PY'
import json, subprocess, sys
d, nest = sys.argv[1], sys.argv[2]
s = json.load(open(f"{d}/summary.json"))
out = {"duration_s": s["duration_s"], "txn_in_query": 0, "txn": 0, "queries": 0, "bad": [],
       "txn_cont": 0, "query_cont": 0, "query_ns_by_backend": {}}
for p in s["processes"]:
    pid = p["pid"]
    try:
        y = subprocess.run(["llvm-xray", "convert", "-f", "yaml", "-y", "-m", f"{d}/xray-{pid}.map",
                            f"{d}/xray-trace-{pid}.fdr"], capture_output=True, text=True).stdout
    except Exception:
        continue
    if not y:
        continue
    n = json.loads(subprocess.run(["python3", nest], input=y, capture_output=True, text=True).stdout)
    f = n["funcs"]
    t = f.get("postgresql:transaction", {"calls": 0, "parents": {}})
    out["txn"] += t["calls"]
    out["txn_in_query"] += t["parents"].get("postgresql:query", 0)
    out["queries"] += f.get("postgresql:query", {"calls": 0})["calls"]
    out["bad"] += n["bad"] + [{"open": v} for v in n["open"].values()]
    out["txn_cont"] += f.get("postgresql:transaction [cont.]", {"calls": 0})["calls"]
    out["query_cont"] += f.get("postgresql:query [cont.]", {"calls": 0})["calls"]
    # Each backend's query time from its enter and exit records.
    tot, start = 0, None
    for line in y.splitlines():
        if "function: 'postgresql:query" not in line: continue
        ts = int(line.split("tsc: ")[1].split(",")[0])
        if "function-enter" in line: start = ts
        elif start is not None: tot += ts - start; start = None
    if tot: out["query_ns_by_backend"][pid] = tot
print(json.dumps(out))
PY
t=usdt_pg_transactions
# pgbench's transactions ran as statements in transactions of their own:
# those inside a query. (A backend's start-up runs one outside any query.)
got=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["txn_in_query"])' "$TMP/pg.json")
want=$((CLIENTS * (PER_CLIENT + PER_CLIENT_X)))
if [ -n "$processed" ] && [ "$processed" = "$want" ] && [ "$got" = "$want" ]; then
	pass $t
else
	fail $t "transactions in queries $got, pgbench processed ${processed:-?}, want $want"
	cat "$TMP/pg.json" "$d.err" "$pg/pgbench.out" >&2
fi
t=usdt_pg_queries
# The statements sent: one per single-statement transaction, three per
# explicit one, of which the END query is continued after its commit, and
# the transaction after its BEGIN query.
want=$((CLIENTS * (PER_CLIENT + 3 * PER_CLIENT_X)))
nx=$((CLIENTS * PER_CLIENT_X))
got=$(python3 -c 'import json,sys; j = json.load(open(sys.argv[1])); print(j["queries"], len(j["bad"]), j["query_cont"], j["txn_cont"])' "$TMP/pg.json")
# The same count from llvm-xray account, summed over the backends.
acc=0
for tr in "$d"/xray-trace-*.fdr; do
	p=${tr##*/xray-trace-} p=${p%.fdr}
	n=$(llvm-xray account -m "$d/xray-$p.map" "$tr" 2>/dev/null |
		awk '$NF == "postgresql:query" { print $2 }')
	acc=$((acc + ${n:-0}))
done
if [ "$got" = "$want 0 $nx $nx" ] && [ "$acc" = "$want" ]; then
	pass $t
else
	fail $t "queries, bad or open, continued queries, continued transactions = $got (account: $acc queries), want $want 0 $nx $nx"
fi
t=usdt_pg_query_time
if python3 - "$TMP/pg.json" "$CLIENTS" <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); wall = j["duration_s"] * 1e9
b = j["query_ns_by_backend"]
ok = len(b) == 2 * int(sys.argv[2]) and all(0 < v <= wall for v in b.values())
if not ok: print(f"wall {wall} ns, query ns by backend {b}", file=sys.stderr)
sys.exit(0 if ok else 1)
PY
then pass $t; else fail $t; fi
