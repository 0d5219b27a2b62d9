#!/usr/bin/env bash
# What the tool prints works as printed (issue 26): each command listed at
# the end of a recording is run as printed, on a PATH without pprof (set-up
# builds tools/pprof) or flamegraph.pl; and an output directory used again
# never mixes two recordings (the earlier one moves to DIR/old/).
source "$(dirname "$0")/lib.sh"

ALL=(printed_commands_run printed_each_once printed_flamegraph_when_there outdir_reuse_moves_old
	outdir_reuse_every_file outdir_reuse_keeps_others outdir_reuse_old_symlink)
require_bpf "${ALL[@]}"
require_tool llvm-xray printed_commands_run || exit 0

# The PATH of a machine with Debian's readers but no pprof and no
# flamegraph.pl (neither is packaged as a command).
BARE=/usr/sbin:/usr/bin:/sbin:/bin
# printed LOG: the commands listed after "files:"
printed() { sed -n '/; files:$/,$ { /; files:$/d; s/^  //p }' "$1"; }

# --- every printed command runs, and names a reader that is there --------------
t=printed_commands_run
(cd "$TMP" && PATH=$BARE "$REC" -F 499 -o out -t 'func_*' -- "$WL/split" 1 > /dev/null 2> rec.err)
printed "$TMP/rec.err" > "$TMP/cmds"
bad=
while IFS= read -r c; do
	case "$c" in
	*flamegraph.pl*) bad+=" [names flamegraph.pl, not on PATH: $c]" ;;
	"xdg-open "*) [ -s "$TMP/${c#xdg-open }" ] || bad+=" [no file: $c]" ;; # a browser: not started here
	out/*) [ -s "$TMP/$c" ] || bad+=" [no file: $c]" ;; # a file no reader here opens: its path
	*)
		# Run as printed, from where the recording was made, on the same PATH.
		if ! (cd "$TMP" && PATH=$BARE bash -c "$c" > "$TMP/one.out" 2>&1); then
			bad+=" [fails: $c: $(head -c 200 "$TMP/one.out")]"
		fi
		case "$c" in
		*"-top out/profile.pb.gz") grep -q ' func_six$' "$TMP/one.out" || bad+=" [no func_six in: $c]" ;;
		*" report out") grep -q ' func_six ' "$TMP/one.out" || bad+=" [no func_six in: $c]" ;;
		"llvm-xray account "*xray-trace-*) grep -q ' func_six$' "$TMP/one.out" || bad+=" [no func_six in: $c]" ;;
		esac
		;;
	esac
done < "$TMP/cmds"
# pprof is found beside the binary (./bpftrace-rec and tools/pprof); the
# sanitizer build's (build-san/) has none there and names its own report.
want="$REC report out"
[ -x "$(dirname "$REC")/tools/pprof" ] && want="$(cd "$(dirname "$REC")" && pwd)/tools/pprof -top out/profile.pb.gz"
grep -qx "$want" "$TMP/cmds" || bad+=" [no line '$want']"
grep -qx "out/stacks.folded" "$TMP/cmds" || bad+=" [stacks.folded not listed by its path]"
n=$(wc -l < "$TMP/cmds")
if [ -z "$bad" ] && [ "$n" -ge 7 ]; then pass $t; else fail $t "$n commands:$bad"; cat "$TMP/cmds" >&2; fi

# --- each command once: snapshots rewrite the one xray-PID.map --------------------
# Two SIGUSR1 snapshots and the end each write the map again: it was listed
# (llvm-xray extract) three times, at the end and in summary.json.
t=printed_each_once
"$REC" -F 499 -o "$TMP/snap" -t 'func_*' -- "$WL/split" 3 > /dev/null 2> "$TMP/snap.err" &
rec=$!
# Once it records (the set-up takes a second or more on a busy host), and
# the traces hold calls.
for _ in $(seq 100); do grep -q "recording targets" "$TMP/snap.err" && break; sleep 0.1; done
sleep 0.5 && kill -USR1 $rec && sleep 0.3 && kill -USR1 $rec
wait $rec
printed "$TMP/snap.err" > "$TMP/snap.cmds"
twice=$(sort "$TMP/snap.cmds" | uniq -d)
files=$(python3 -c 'import json,sys; f=[x["file"] for x in json.load(open(sys.argv[1]))["files"]]; print(len(f), len(set(f)))' "$TMP/snap/summary.json" 2>&1)
if [ -z "$twice" ] && grep -q "snapshot-1.fdr" "$TMP/snap.cmds" && grep -q "snapshot-2.fdr" "$TMP/snap.cmds" && [ "$(grep -c "xray-.*\.map$" "$TMP/snap.cmds")" = 1 ] &&
	[ "${files% *}" = "${files#* }" ]; then
	pass $t
else
	fail $t "printed more than once: $(echo $twice); summary.json's files (all, distinct): $files"
fi

# --- flamegraph.pl named when it is there ---------------------------------------
t=printed_flamegraph_when_there
mkdir -p "$TMP/bin"
printf '#!/bin/sh\necho "<svg>$(wc -l < "$1")</svg>"\n' > "$TMP/bin/flamegraph.pl"
chmod +x "$TMP/bin/flamegraph.pl"
(cd "$TMP" && PATH=$TMP/bin:$BARE "$REC" -F 499 -o fg -- "$WL/split" 1 > /dev/null 2> fg.err)
c=$(printed "$TMP/fg.err" | grep flamegraph.pl)
if [ "$c" = "flamegraph.pl fg/stacks.folded > flame.svg" ] &&
	(cd "$TMP" && PATH=$TMP/bin:$BARE bash -c "$c") && grep -q '^<svg>[1-9]' "$TMP/flame.svg"; then
	pass $t
else
	fail $t "printed: '$c'"
fi

# --- a directory used again: the earlier recording moves to old/ ---------------
pid_of() { python3 -c 'import json,sys; print(" ".join(str(p["pid"]) for p in json.load(open(sys.argv[1]))["processes"]))' "$1"; }
t=outdir_reuse_moves_old
d=$TMP/reuse
"$REC" -q -F 199 -o "$d" -- "$WL/split" 1 > /dev/null 2>&1
a=$(pid_of "$d/summary.json")
n1=$(find "$d" -maxdepth 1 -type f | wc -l) # the first recording's files
echo mine > "$d/notes.txt"
"$REC" -F 199 -o "$d" -- "$WL/split" 1 > /dev/null 2> "$TMP/reuse.err"
b=$(pid_of "$d/summary.json")
"$REC" -q -F 199 -o "$d" -- "$WL/split" 1 > /dev/null 2>&1
c=$(pid_of "$d/summary.json")
top=$(cd "$d" && ls cpu-*.prof xray-*.fdr | tr '\n' ' ')
old=$(cd "$d/old" && ls cpu-*.prof xray-*.fdr | tr '\n' ' ')
# The newest recording alone in the directory, the one before alone in
# old/ (the first is gone), each summary naming its own process; the
# second recording's message counts the first's files (7 as a rule, 8 at
# times: which files a recording writes depends on where its samples fall,
# vdso-PID.so and names-PID.so among them). Before, the count was checked
# against old/ at the end, which holds the second's: CI's sanitizer run
# failed where the two wrote 7 and 8.
if [ "$top" = "cpu-$c.prof xray-$c.fdr " ] && [ "$old" = "cpu-$b.prof xray-$b.fdr " ] &&
	[ "$(pid_of "$d/old/summary.json")" = "$b" ] && [ "$a" != "$b" ] &&
	grep -q "held an earlier recording: its $n1 files moved to $d/old/" "$TMP/reuse.err"; then
	pass $t
else
	fail $t "pids $a $b $c; top: $top; old: $old; first's files $n1; $(cat "$TMP/reuse.err" | head -3)"
fi
# Every file a recording writes moves: before, vdso-PID.so (edges runs in
# the vdso), names-PID.so (its PLT stubs) and --off-cpu's stacks-*.folded
# and flamegraph-*.html stayed beside the next recording's.
t=outdir_reuse_every_file
e=$TMP/every
"$REC" -q --off-cpu -F 199 -o "$e" -- "$WL/edges" 0.5 > /dev/null 2>&1
a=$(pid_of "$e/summary.json")
first=$(cd "$e" && ls | tr '\n' ' ')
"$REC" -q -F 199 -o "$e" -- "$WL/split" 0.3 > /dev/null 2>&1
left=$(cd "$e" && ls -d *"$a"* stacks-* flamegraph-* 2>/dev/null | tr '\n' ' ')
if [ -n "$a" ] && [[ $first == *vdso-$a.so* && $first == *names-$a.so* && $first == *stacks-offcpu.folded* ]] &&
	[ -z "$left" ] && [ -f "$e/old/vdso-$a.so" ] && [ -f "$e/old/flamegraph-wall.html" ]; then
	pass $t
else
	fail $t "first: $first; left beside the second: $left"
fi
t=outdir_reuse_keeps_others
# Another file stays; an interrupted recording's lone summary.json moves,
# said in the singular.
mkdir "$TMP/one" && echo '{}' > "$TMP/one/summary.json" && echo mine > "$TMP/one/notes.txt"
"$REC" -F 99 -o "$TMP/one" -- true > /dev/null 2> "$TMP/one.err"
if [ "$(cat "$d/notes.txt")" = mine ] && [ ! -e "$d/old/notes.txt" ] && [ "$(cat "$TMP/one/old/summary.json")" = '{}' ] &&
	[ -f "$TMP/one/notes.txt" ] && grep -q "its 1 file moved to $TMP/one/old/" "$TMP/one.err"; then
	pass $t
else
	fail $t "notes.txt moved or lost, or: $(head -1 "$TMP/one.err")"
fi

# old/ planted as a symlink: refused with a one-line error, nothing recorded,
# nothing moved.
old_symlink_refused() {
	local d=$TMP/reuse2 rc
	"$REC" -q -F 199 -o "$d" -- "$WL/split" 1 > /dev/null 2>&1
	mkdir "$TMP/elsewhere"
	ln -s "$TMP/elsewhere" "$d/old"
	"$REC" -q -F 199 -o "$d" -- "$WL/split" 1 > /dev/null 2> "$TMP/sym.err"
	rc=$?
	echo "exit $rc: $(cat "$TMP/sym.err"); elsewhere: $(ls -A "$TMP/elsewhere")" >&2
	[ $rc != 0 ] && [ "$(wc -l < "$TMP/sym.err")" = 1 ] && grep -q "$d/old" "$TMP/sym.err" &&
		[ -z "$(ls -A "$TMP/elsewhere")" ] && [ -f "$d/summary.json" ]
}
fault_case outdir_reuse_old_symlink "-o DIR holding a recording, DIR/old a symlink to another directory" \
	"fails before recording, one line naming DIR/old; nothing moved or written through the link" \
	old_symlink_refused
