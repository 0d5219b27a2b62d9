# Shared by the benchmark scripts (source it after `cd` to the tree).

# bpf_stats_begin: a temporary directory in TMP and kernel.bpf_stats_enabled
# on (programs' run_time_ns and run_cnt), both undone when the script exits.
bpf_stats_begin() {
	TMP=$(mktemp -d)
	BPF_STATS_OLD=$(cat /proc/sys/kernel/bpf_stats_enabled)
	echo 1 > /proc/sys/kernel/bpf_stats_enabled
	trap 'echo "$BPF_STATS_OLD" > /proc/sys/kernel/bpf_stats_enabled; rm -rf "$TMP"; jobs -p | xargs -r kill 2>/dev/null' EXIT
	trap 'exit 130' INT TERM
}

# prog_stats NAME [PID]: "id run_time_ns run_cnt" of the newest program
# called NAME (perf_event: the newest perf_event program, bpftrace's probe),
# among those process PID holds when it is given (its fds' prog_id: other
# recorders may run on the machine).
prog_stats() {
	local ids=
	[ -n "${2:-}" ] && ids=$(cat /proc/"$2"/fdinfo/* 2> /dev/null | awk '$1 == "prog_id:" {print $2}' | sort -u | tr '\n' ' ')
	bpftool prog show -j | python3 -c '
import json, sys
want, ids = sys.argv[1], set(map(int, sys.argv[2].split()))
ps = [p for p in json.load(sys.stdin) if (not ids or p["id"] in ids) and
      (p.get("type") == "perf_event" if want == "perf_event" else p.get("name") == want)]
if ps:
    p = max(ps, key=lambda p: p["id"])
    print(p["id"], p.get("run_time_ns", 0), p.get("run_cnt", 0))' "$1" "$ids"
}

# churn_start: process churn in the background, as a host's cron jobs and
# health checks make it: a shell starts /bin/true every 10 ms. Sets
# CHURN_PID (the shell's: killing it ends the churn).
churn_start() {
	(while :; do /bin/true; sleep 0.01; done) &
	CHURN_PID=$!
}

# pid_bpf_ns PID: the run_time_ns summed over every BPF program process PID
# holds (its fds' prog_id), with kernel.bpf_stats_enabled on: the cost of
# its programs, which runs in the interrupted task's time, not its own.
pid_bpf_ns() {
	local ids
	ids=$(cat /proc/"$1"/fdinfo/* 2> /dev/null | awk '$1 == "prog_id:" {print $2}' | sort -u | tr '\n' ' ')
	bpftool prog show -j | python3 -c '
import json, sys
ids = set(map(int, sys.argv[1].split()))
print(sum(p.get("run_time_ns", 0) for p in json.load(sys.stdin) if p["id"] in ids))' "$ids"
}
