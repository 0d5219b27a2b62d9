#!/usr/bin/env bash
# Process churn under -a (production hardening): a shell starts `true` every
# 10 ms while the whole system is recorded with at most 200 open files. What
# the recorder keeps for a process goes when it exits: open files stay
# bounded (per binary, not per process), memory grows little, and the churn's
# ld.so and libc frames are still named at the end. Before, each process's
# unwinder kept an fd per module until the end: fds ran out after ~12 s, and
# from then on frames in ld.so were unnamed.
source "$(dirname "$0")/lib.sh"

ALL=(churn_completes churn_no_emfile churn_fds_bounded churn_frames_named churn_rss_bounded)
require_bpf "${ALL[@]}"

DUR=20
# RSS at the end of the recording (before the files are built), KiB. It
# grows with the processes recorded, the machine's as well as the churn's:
# the bound leaves room above the most this run reached on a busy machine,
# and is a fraction of what it reached before (docs/benchmarks.md: figures).
RSS_MAX=$((128 * 1024))

(while :; do /bin/true; sleep 0.01; done) & churn=$!
(ulimit -n 200 && exec "$REC" -q -a -F 999 -d $DUR -o "$TMP/churn") 2>"$TMP/churn.err" & rec=$!
peak_fd=0 rss=0
for ((s = 1; s <= DUR + 5; s++)); do
	sleep 1
	[ -d /proc/$rec ] || break
	fds=$(ls /proc/$rec/fd 2>/dev/null | wc -l)
	((fds > peak_fd)) && peak_fd=$fds
	# While recording: the writing at the end builds the files in memory.
	r=$(awk '/^VmRSS/ {print $2}' /proc/$rec/status 2>/dev/null)
	[ -n "$r" ] && ((s <= DUR - 1)) && rss=$r
done
kill $churn 2>/dev/null
wait $churn 2>/dev/null
wait $rec
rc=$?
echo "  churn: rc $rc, peak fds $peak_fd, RSS at ${DUR}-1 s ${rss} KiB" >&2

ok_complete() { [ $rc = 0 ] && [ -s "$TMP/churn/summary.json" ] && [ -s "$TMP/churn/profile.pb.gz" ]; }
fault_case churn_completes "-a -F 999 -d $DUR under ulimit -n 200, a process started every 10 ms" \
	"records to the end and writes the files" ok_complete
no_emfile() { ! grep -qiE "too many open files|EMFILE" "$TMP/churn.err"; }
fault_case churn_no_emfile "the same: each process's libraries opened for symbols and unwinding" \
	"no open fails for want of fds (the unwinder keeps no fd per module)" no_emfile
fds_ok() { ((peak_fd > 0 && peak_fd < 200)); }
fault_case churn_fds_bounded "the same, fds read every second" \
	"open files stay below the 200 limit (peak $peak_fd)" fds_ok

# The churn's own frames: ld.so and libc named by function, not by library
# ("[ld-linux-x86-64.so.2]": its file could not be read) nor "[unknown]".
"$PPROF" -top -nodecount=200 -tagfocus=comm=true "$TMP/churn/profile.pb.gz" > "$TMP/true.top" 2>&1
unnamed=$(awk '$2 ~ /%$/ && ($NF ~ /^\[(ld-linux|libc)/ || $NF == "[unknown]") { sub("%", "", $2); s += $2 } END { print s + 0 }' "$TMP/true.top")
named=$(awk '$2 ~ /%$/ && $NF ~ /^_dl_|^__libc_|^_start$|^_dl_start/ { n++ } END { print n + 0 }' "$TMP/true.top")
frames_ok() { within "$unnamed" 0 5 && ((named > 0)); }
fault_case churn_frames_named "the same, after ${DUR} s of churn" \
	"ld.so and libc frames of the churn's processes named (unnamed: $unnamed%)" frames_ok
if ! frames_ok; then sed -n 1,20p "$TMP/true.top" >&2; fi
rss_ok() { ((rss > 0 && rss < RSS_MAX)); }
fault_case churn_rss_bounded "the same, RSS at the end of the recording" \
	"below $((RSS_MAX / 1024)) MiB (exited processes keep only what the files need): ${rss} KiB" rss_ok
