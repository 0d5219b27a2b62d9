#!/usr/bin/env bash
# bpftrace-rec report: a recording read with nothing but this tool (Debian
# packages no pprof). Its top matches pprof's on the same file; its errors
# are one line naming the input and the reason; and a machine without
# pprof is told to run it: every command printed at the end exists there
# and is in summary.json.
source "$(dirname "$0")/lib.sh"

ALL=(report_errors report_split_like_pprof report_per_process report_named_without_pprof
	printed_all_in_summary)

# --- errors: one line naming the input and the reason, exit 1 -------------------
# (no BPF: the binary alone)
t=report_errors
if [ ! -x "$REC" ]; then
	skip $t "bpftrace-rec is not built (make)"
else
	bad=
	one_error() { # WHAT WANT-IN-THE-LINE ARGS...
		local what=$1 want=$2 rc
		shift 2
		"$REC" report "$@" > "$TMP/err.out" 2> "$TMP/err.err"
		rc=$?
		[ $rc = 1 ] && [ "$(wc -l < "$TMP/err.err")" = 1 ] && [ ! -s "$TMP/err.out" ] &&
			grep -qF -- "$want" "$TMP/err.err" || bad+=" [$what: exit $rc: $(cat "$TMP/err.err")]"
	}
	one_error "missing dir" "$TMP/none: No such file or directory" "$TMP/none"
	mkdir "$TMP/empty"
	one_error "dir without a profile" "$TMP/empty: no profile.pb.gz" "$TMP/empty"
	mkdir "$TMP/text" && echo "not a profile" > "$TMP/text/profile.pb.gz"
	one_error "not a profile" "$TMP/text/profile.pb.gz: not a pprof profile" "$TMP/text"
	mkdir "$TMP/cut" && head -c 100000 /dev/urandom | gzip -c | head -c 5000 > "$TMP/cut/profile.pb.gz"
	one_error "truncated gzip" "$TMP/cut/profile.pb.gz: truncated gzip" "$TMP/cut"
	mkdir "$TMP/junk" && head -c 5000 /dev/urandom | gzip -c > "$TMP/junk/profile.pb.gz"
	one_error "gzip of no profile" "$TMP/junk/profile.pb.gz: not a pprof profile" "$TMP/junk"
	mkdir "$TMP/fifo" && mkfifo "$TMP/fifo/profile.pb.gz"
	one_error "a FIFO" "$TMP/fifo/profile.pb.gz: not a regular file" "$TMP/fifo"
	# A usage error is argp's (exit 64), not a crash.
	"$REC" report -n 0 "$TMP" > /dev/null 2>&1
	[ $? = 64 ] || bad+=" [-n 0 not a usage error]"
	if [ -z "$bad" ]; then pass $t; else fail $t "$bad"; fi
fi

require_bpf "${ALL[@]:1}"

# cum% of a function in a -top listing's first table (its name the 6th column).
cum_pct() { # FUNC < listing
	awk -v f="$1" '$6 == f && $5 ~ /%$/ { sub("%", "", $5); print $5; found = 1; exit } END { if (!found) print -1 }'
}

# --- the demo's 6:3:1, as pprof reads the same file ------------------------------
t=report_split_like_pprof
"$REC" -q -F 499 -o "$TMP/split" -- "$WL/split" 3 > /dev/null 2>&1
"$REC" report "$TMP/split" > "$TMP/split.report" 2> "$TMP/split.rerr"
rc=$?
"$PPROF" -top "$TMP/split/profile.pb.gz" > "$TMP/split.pprof" 2>/dev/null
mine=$(cum_pct func_six < "$TMP/split.report")
theirs=$(cum_pct func_six < "$TMP/split.pprof")
if [ $rc = 0 ] && within "$mine" 60 5 && within "$mine" "$theirs" 1 &&
	grep -q '^Type: cpu$' "$TMP/split.report" &&
	grep -qE '^ +flat +flat% +sum% +cum +cum%$' "$TMP/split.report" &&
	grep -qE ' func_six [^ ]*split\.c:[0-9]+$' "$TMP/split.report"; then
	pass $t
else
	fail $t "exit $rc, func_six cum $mine% (pprof: $theirs%): $(head -c 300 "$TMP/split.rerr")"
	head -20 "$TMP/split.report" >&2
fi

# --- per process, and --pid ------------------------------------------------------
# Two processes of the workload at once: the table names both, and each
# has its own top.
t=report_per_process
"$WL/split" 0 > /dev/null & a=$!
"$WL/split" 0 > /dev/null & b=$!
sleep 0.3
"$REC" -q -F 199 -d 1.5 -o "$TMP/two" -p "$a,$b" > /dev/null 2>&1
kill $a $b; wait $a $b 2>/dev/null
"$REC" report -n 5 "$TMP/two" > "$TMP/two.report" 2>&1
"$REC" report --pid "$b" --sample-type samples "$TMP/two" > "$TMP/two.pid" 2>&1
rc=$?
if grep -qE "^ .*%  +$a  split$" "$TMP/two.report" && grep -qE "^ .*%  +$b  split$" "$TMP/two.report" &&
	grep -q "^== cpu of pid $a (split)$" "$TMP/two.report" && grep -q "^== cpu of pid $b (split)$" "$TMP/two.report" &&
	[ $rc = 0 ] && grep -q "^== samples: $TMP/two/profile.pb.gz, pid $b$" "$TMP/two.pid" &&
	within "$(cum_pct func_six < "$TMP/two.pid")" 60 8 && ! grep -q "by process" "$TMP/two.pid"; then
	pass $t
else
	fail $t "$(head -c 600 "$TMP/two.report"; echo; head -c 300 "$TMP/two.pid")"
fi

# --- no pprof: the list names bpftrace-rec report, all of it in summary.json ----
# The binary copied alone (no tools/pprof beside it), on a PATH without pprof.
BARE=/usr/sbin:/usr/bin:/sbin:/bin
mkdir -p "$TMP/bin" && cp "$REC" "$TMP/bin/bpftrace-rec"
printed() { sed -n '/; files:$/,$ { /; files:$/d; s/^  //p }' "$1"; }
# The commands summary.json lists, "open" and "open_also", a line each.
listed() { python3 -c 'import json, sys
for f in json.load(open(sys.argv[1]))["files"]:
    print(f["open"])
    for c in f.get("open_also", []):
        print(c)' "$1"; }
t=report_named_without_pprof
(cd "$TMP" && PATH=$BARE "$TMP/bin/bpftrace-rec" --off-cpu -F 499 -o np -- "$WL/split" 1 > /dev/null 2> np.err)
(cd "$TMP" && PATH=$TMP/bin:$BARE bpftrace-rec -F 499 -o np2 -- "$WL/split" 0.5 > /dev/null 2> np2.err)
printed "$TMP/np.err" > "$TMP/np.cmds"
bad=
grep -qx "$TMP/bin/bpftrace-rec report np" "$TMP/np.cmds" || bad+=" [no '$TMP/bin/bpftrace-rec report np']"
grep -qx "bpftrace-rec report np2" <(printed "$TMP/np2.err") || bad+=" [no 'bpftrace-rec report np2' where it is on PATH]"
grep -qE "(^|/)pprof " "$TMP/np.cmds" && bad+=" [names pprof: $(grep -E '(^|/)pprof ' "$TMP/np.cmds" | head -1)]"
# It runs as printed, and shows the waits too.
c=$(grep " report np$" "$TMP/np.cmds")
(cd "$TMP" && PATH=$BARE bash -c "$c" > np.report 2>&1) || bad+=" [fails: $c]"
grep -q ' func_six ' "$TMP/np.report" && grep -q '^== offcpu: np/profile.pb.gz$' "$TMP/np.report" &&
	grep -q '^== wall: np/profile.pb.gz$' "$TMP/np.report" || bad+=" [no func_six, offcpu or wall in the report]"
cmp -s "$TMP/np.cmds" <(listed "$TMP/np/summary.json") || bad+=" [printed != summary.json's: $(diff "$TMP/np.cmds" <(listed "$TMP/np/summary.json") | head -4 | tr '\n' ' ')]"
if [ -z "$bad" ]; then pass $t; else fail $t "$bad"; cat "$TMP/np.cmds" >&2; fi

# --- with pprof: --off-cpu's views are printed and in summary.json --------------
t=printed_all_in_summary
(cd "$TMP" && "$REC" --off-cpu -F 499 -o wp -- "$WL/split" 0.5 > /dev/null 2> wp.err)
printed "$TMP/wp.err" > "$TMP/wp.cmds"
pp=$(dirname "$REC")/tools/pprof
if [ -x "$pp" ]; then pp=$(cd "$(dirname "$pp")" && pwd)/pprof; fi
bad=
cmp -s "$TMP/wp.cmds" <(listed "$TMP/wp/summary.json") || bad+=" [printed != summary.json's: $(diff "$TMP/wp.cmds" <(listed "$TMP/wp/summary.json") | head -4 | tr '\n' ' ')]"
if command -v pprof > /dev/null || [ -x "$pp" ]; then
	# Each view by the pprof that is there (not a bare "pprof" where none is on PATH).
	v=$(grep -c -- "-sample_index=\(offcpu\|wall\) -top wp/profile.pb.gz$" "$TMP/wp.cmds")
	[ "$v" = 2 ] || bad+=" [$v views of the waits]"
	while IFS= read -r c; do
		(cd "$TMP" && bash -c "$c" > one.out 2>&1) && grep -q ' func_six$\|do_nanosleep\|futex' "$TMP/one.out" ||
			bad+=" [fails: $c]"
	done < <(grep -- "-sample_index=" "$TMP/wp.cmds")
fi
if [ -z "$bad" ]; then pass $t; else fail $t "$bad"; cat "$TMP/wp.cmds" >&2; fi
