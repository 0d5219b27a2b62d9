#!/usr/bin/env bash
# The output directory and the command (production-hardening issue): the
# directory is checked before anything is recorded, opened once without
# following a symlink and owned by root or the invoking user, the files are
# made relative to it, a failed write names the real errno, no temporary file
# is ever left, and `-- CMD` that cannot run fails up front with a shell's
# exit status. Real tmpfs and ext4 mounts, real symlinks of another user.
source "$(dirname "$0")/lib.sh"

ALL=(outdir_file_in_way outdir_missing_parent outdir_proc outdir_empty outdir_trailing_slash outdir_read_only outdir_read_only_new
	outdir_immutable outdir_long_path outdir_enospc outdir_symlink_default
	outdir_symlink_explicit outdir_foreign_owner outdir_in_use outdir_double_sigint cmd_not_found
	cmd_not_executable cmd_bad_interpreter)
require_bpf "${ALL[@]}"

# Mounts are undone before $TMP goes (lib.sh's trap, repeated here).
MNTS=()
trap 'for m in "${MNTS[@]}"; do umount -l "$m" 2>/dev/null; done
	[ -n "${KEEP:-}" ] || rm -rf "$TMP"; jobs -p | xargs -r kill 2>/dev/null' EXIT
mount_tmpfs() { # DIR OPTIONS
	mkdir -p "$1" && mount -t tmpfs -o "$2" tmpfs "$1" && MNTS+=("$1")
}
NOBODY=$(getent passwd 65534 | cut -d: -f1)
NOBODY=${NOBODY:-no such user}

# A recording whose directory is bad must stop before it starts (no
# "recording" line, for -d 3) with exactly one line: $want.
upfront() { # NAME DIR WANT-LINE
	local name=$1 dir=$2 want=$3 rc
	"$REC" -a -d 3 -o "$dir" >/dev/null 2>"$TMP/$name.err"
	rc=$?
	if [ $rc != 0 ] && [ "$(cat "$TMP/$name.err")" = "$want" ]; then return 0; fi
	echo "$name: exit $rc, stderr (want one line: $want):" >&2
	sed -n 1,5p "$TMP/$name.err" >&2
	return 1
}

# --- checked up front ------------------------------------------------------
touch "$TMP/afile"
fault_case outdir_file_in_way "-o names a regular file" "fails before recording: exists and is not a directory" \
	upfront outdir_file_in_way "$TMP/afile" \
	"bpftrace-rec: output directory $TMP/afile: exists and is not a directory"

fault_case outdir_missing_parent "-o DIR whose parent does not exist" "fails before recording, naming the parent to create" \
	upfront outdir_missing_parent "$TMP/nope/out" \
	"bpftrace-rec: output directory $TMP/nope/out: its parent $TMP/nope does not exist (only the last component is created: make the parent first, e.g. mkdir -p)"

# A parent that exists but takes no directory (/proc): the real reason, not
# "its parent /proc does not exist".
fault_case outdir_proc "-o /proc/out: a parent that takes no new directory" "fails before recording: cannot create it in /proc: No such file or directory" \
	upfront outdir_proc /proc/out \
	"bpftrace-rec: output directory /proc/out: cannot create it in /proc: No such file or directory"
fault_case outdir_empty "-o ''" "fails before recording: an empty name (not \"its parent . does not exist\")" \
	upfront outdir_empty "" \
	"bpftrace-rec: output directory '': an empty name; give a directory"

# -o DIR/: the paths printed are DIR/FILE, not DIR//FILE.
t=outdir_trailing_slash
"$REC" -F 199 -o "$TMP/slash//" -- "$WL/split" 0.2 >/dev/null 2>"$TMP/slash.err"
# stacks.folded: listed whether or not a pprof is found (where none is,
# profile.pb.gz's line is `bpftrace-rec report DIR`: the sanitizer pass's).
if grep -q "$TMP/slash/stacks.folded" "$TMP/slash.err" && ! grep -q "//" "$TMP/slash.err" &&
	python3 -c 'import json,sys; sys.exit(any("//" in f["open"] for f in json.load(open(sys.argv[1]))["files"]))' "$TMP/slash/summary.json"; then
	pass $t
else
	fail $t "$(grep -m2 // "$TMP/slash.err")"
fi

# Read-only: an existing directory on a tmpfs remounted ro, and a new one.
if mount_tmpfs "$TMP/ro" size=1m && mkdir "$TMP/ro/out" && mount -o remount,ro "$TMP/ro"; then
	fault_case outdir_read_only "-o DIR on a read-only mount" "fails before recording: cannot create files in it: Read-only file system" \
		upfront outdir_read_only "$TMP/ro/out" \
		"bpftrace-rec: output directory $TMP/ro/out: cannot create files in it: Read-only file system"
	fault_case outdir_read_only_new "-o DIR to create on a read-only mount" "fails before recording: cannot create it: Read-only file system" \
		upfront outdir_read_only_new "$TMP/ro/new" \
		"bpftrace-rec: output directory $TMP/ro/new: cannot create it: Read-only file system"
else
	fail outdir_read_only "cannot mount a tmpfs"
	fail outdir_read_only_new "cannot mount a tmpfs"
fi

# chattr +i needs a filesystem that has it (tmpfs has not): ext4 on a loop device.
t=outdir_immutable
why=""
if ! command -v mkfs.ext4 >/dev/null || ! command -v chattr >/dev/null; then
	why="mkfs.ext4 or chattr missing"
elif ! { truncate -s 8M "$TMP/ext4.img" && mkfs.ext4 -q -F "$TMP/ext4.img" && mkdir -p "$TMP/ext4" &&
	mount -o loop "$TMP/ext4.img" "$TMP/ext4"; } 2>"$TMP/ext4.err"; then
	why="cannot mount an ext4 image on a loop device: $(head -1 "$TMP/ext4.err")"
else
	MNTS+=("$TMP/ext4")
	mkdir "$TMP/ext4/out" && chattr +i "$TMP/ext4/out" || why="chattr +i failed"
fi
if [ -z "$why" ]; then
	fault_case $t "-o DIR that is immutable (chattr +i, ext4)" "fails before recording: cannot create files in it: Operation not permitted" \
		upfront $t "$TMP/ext4/out" \
		"bpftrace-rec: output directory $TMP/ext4/out: cannot create files in it: Operation not permitted (immutable or append-only? see lsattr -d)"
	chattr -i "$TMP/ext4/out"
elif [ "${CI:-}" = true ]; then
	fail $t "$why"
else
	skip $t "$why"
fi

# --- a 4080-character path: every file written ------------------------------
t=outdir_long_path
long=$TMP/long
while [ $((${#long} + 201)) -lt 4080 ]; do long=$long/$(printf 'd%.0s' {1..200}); done
mkdir -p "$long"
long=$long/$(printf 'x%.0s' $(seq $((4080 - ${#long} - 1))))
long_ok() {
	[ ${#long} = 4080 ] || { echo "path of ${#long} characters" >&2; return 1; }
	"$REC" -q -F 499 -o "$long" -- "$WL/split" 1 >/dev/null 2>"$TMP/$t.err" ||
		{ cut -c1-200 "$TMP/$t.err" >&2; return 1; }
	[ -s "$long/profile.pb.gz" ] && [ -s "$long/summary.json" ] && [ -n "$(ls "$long"/cpu-*.prof)" ] &&
		[ -z "$(ls -A "$long" | grep '^\.')" ]
}
fault_case $t "-o a 4,080-character path" "records and writes every file there" long_ok

# --- ENOSPC while writing: the real errno, the file named, no temp file -----
t=outdir_enospc
enospc_ok() {
	local d=$TMP/full/out rc
	"$REC" -q -F 999 -o "$d" -- "$WL/split" 1 >/dev/null 2>"$TMP/$t.err"
	rc=$?
	if [ $rc != 0 ] && grep -qE "^bpftrace-rec: write $d/[^ ]+: No space left on device$" "$TMP/$t.err" &&
		! grep -q "Input/output error" "$TMP/$t.err" && [ -z "$(ls -A "$d" | grep '^\.')" ]; then
		return 0
	fi
	echo "exit $rc; files: $(ls -A "$d" | tr '\n' ' ')" >&2
	cat "$TMP/$t.err" >&2
	return 1
}
if mount_tmpfs "$TMP/full" size=4k; then
	fault_case $t "tmpfs of 4 KiB that fills while the files are written (ENOSPC)" "each failed file named with No space left on device, no temporary file left, exit 1" enospc_ok
else
	fail $t "cannot mount a tmpfs"
fi

# --- symlinks and directories of another user --------------------------------
# A sticky world-writable directory, as /tmp, where uid 65534 planted a
# symlink to a directory root can write.
mkdir -p "$TMP/sticky" "$TMP/victim" && chmod 1777 "$TMP/sticky"
ln -s "$TMP/victim" "$TMP/sticky/bpftrace-rec.out" && chown -h 65534:65534 "$TMP/sticky/bpftrace-rec.out"
ln -s "$TMP/victim" "$TMP/sticky/link" && chown -h 65534:65534 "$TMP/sticky/link"
symlink_ok() { # NAME DIR-AS-GIVEN [in DIR]
	local name=$1 dir=$2 rc
	(cd "$TMP/sticky" && "$REC" -a -d 3 ${dir:+-o "$dir"} >/dev/null 2>"$TMP/$name.err")
	rc=$?
	dir=${dir:-bpftrace-rec.out}
	if [ $rc != 0 ] && [ -z "$(ls -A "$TMP/victim")" ] &&
		[ "$(cat "$TMP/$name.err")" = "bpftrace-rec: output directory $dir is a symbolic link (owned by $NOBODY, uid 65534); refusing to follow it: give the directory itself" ]; then
		return 0
	fi
	echo "$name: exit $rc; written through the link: $(ls -A "$TMP/victim" | tr '\n' ' ')" >&2
	sed -n 1,5p "$TMP/$name.err" >&2
	return 1
}
fault_case outdir_symlink_default "default -o in a sticky dir: bpftrace-rec.out is another user's symlink" "refused before recording: is a symbolic link (owned by ...)" \
	symlink_ok outdir_symlink_default ""
fault_case outdir_symlink_explicit "-o DIR/link, another user's symlink in a sticky dir" "refused before recording: is a symbolic link (owned by ...)" \
	symlink_ok outdir_symlink_explicit "$TMP/sticky/link"

# A directory of uid 65534: refused, unless that is the user who ran sudo.
t=outdir_foreign_owner
mkdir -p "$TMP/theirs" && chown 65534:65534 "$TMP/theirs"
foreign_ok() {
	upfront $t "$TMP/theirs" \
		"bpftrace-rec: output directory $TMP/theirs belongs to $NOBODY (uid 65534), not to root or the invoking user; refusing to write there" ||
		return 1
	[ -z "$(ls -A "$TMP/theirs")" ] || { echo "written: $(ls -A "$TMP/theirs")" >&2; return 1; }
	SUDO_UID=65534 SUDO_GID=65534 "$REC" -q -a -d 1 -o "$TMP/theirs" >/dev/null 2>"$TMP/$t.sudo.err" ||
		{ echo "SUDO_UID=65534:" >&2; cat "$TMP/$t.sudo.err" >&2; return 1; }
	[ "$(stat -c %u "$TMP/theirs/profile.pb.gz")" = 65534 ]
}
fault_case $t "-o DIR owned by another user (uid 65534)" "refused before recording, naming the owner; accepted when that user ran sudo (SUDO_UID)" foreign_ok

# --- one recording a directory at a time ----------------------------------------
# A second run into a directory a recording is writing: refused at once,
# one line naming the first's pid, before it records, moves or writes
# anything (its command not started); the first's files whole. Before,
# both ran and exited 0, their files mixed, the summary naming one. "At
# once": under two busy loops (load 17) the refusal took 1298 ms, after the
# kernel's BTF read and the feature probes; asked before them, 30-60 ms.
t=outdir_in_use
in_use_ok() {
	local d=$TMP/busy wl rec rc rc1 t0 ms top pids bad=
	"$WL/split" 30 >/dev/null &
	wl=$!
	"$REC" -q -F 199 -p $wl -d 3 -o "$d" >/dev/null 2>"$TMP/busy1.err" &
	rec=$!
	for _ in $(seq 100); do [ -d "$d" ] && break; sleep 0.05; done
	sleep 0.3
	t0=$(date +%s%N)
	"$REC" -F 199 -o "$d" -- touch "$TMP/busy.ran" >/dev/null 2>"$TMP/busy2.err"
	rc=$?
	ms=$((($(date +%s%N) - t0) / 1000000))
	wait $rec
	rc1=$?
	kill $wl 2>/dev/null
	wait $wl 2>/dev/null
	top=$("$PPROF" -top "$d/profile.pb.gz" 2>/dev/null | pprof_flat func_six)
	pids=$(python3 -c 'import json,sys; print(" ".join(str(p["pid"]) for p in json.load(open(sys.argv[1]))["processes"]))' "$d/summary.json" 2>&1)
	[ $rc != 0 ] || bad+=" [the second exited 0]"
	[ $ms -lt 1000 ] || bad+=" [the second took $ms ms]"
	[ "$(cat "$TMP/busy2.err")" = "bpftrace-rec: output directory $d is in use by another recording (pid $rec): give another -o, or wait for it to end" ] ||
		bad+=" [the second said: $(head -3 "$TMP/busy2.err" | tr '\n' ' ')]"
	[ ! -e "$TMP/busy.ran" ] || bad+=" [the second's command ran]"
	[ $rc1 = 0 ] && [ ! -e "$d/old" ] && at_least "$top" 40 && [ "$pids" = "$wl" ] ||
		bad+=" [the first: exit $rc1, old/ $(ls "$d/old" 2>/dev/null | wc -l) files, func_six $top%, pids $pids]"
	[ -z "$bad" ] && return 0
	echo "$t:$bad" >&2
	return 1
}
fault_case $t "a second run into a directory a recording is writing" \
	"refused at once, one line naming the first's pid, nothing moved or written; the first's files whole" in_use_ok

# --- a second Ctrl-C while the files are written: no temporary file left ----
# -a -P over a busy system writes tens of files (~1 s here). After the first
# SIGINT, the second is sent once a temporary file is seen, after each delay;
# the write is hit when the run then exits 130 without its last file, and
# says so in a line naming the files not written.
t=outdir_double_sigint
alive() { # PID: running, not a zombie
	local s
	read -r s <"/proc/$1/stat" 2>/dev/null || return 1
	s=${s##*) }
	[ "${s%% *}" != Z ]
}
sigint_ok() {
	local delay d p rc seen hits=0 left="" wl
	"$WL/split" 30 >/dev/null &
	wl=$!
	for delay in 0 0.02 0.05 0.1; do
		d=$TMP/sigint.$delay
		"$REC" -q -a -P -F 999 -o "$d" >/dev/null 2>"$TMP/$t.$delay.err" &
		p=$!
		sleep 2
		kill -INT $p
		seen=0
		until ! alive $p; do
			compgen -G "$d/.*.??????" >/dev/null && seen=1 && break
		done
		sleep $delay
		kill -INT $p 2>/dev/null
		wait $p
		rc=$?
		left+=$(cd "$d" && compgen -G ".*.??????" | tr '\n' ' ')
		# The partial set is said, naming what was not written (before,
		# nothing was said).
		[ $seen = 1 ] && [ $rc = 130 ] && [ ! -e "$d/summary.json" ] &&
			grep -qE "^bpftrace-rec: second Ctrl-C: $d holds part of the recording: .*summary.json among them.* not written$" "$TMP/$t.$delay.err" &&
			hits=$((hits + 1))
	done
	kill $wl 2>/dev/null
	wait $wl 2>/dev/null
	[ -z "$left" ] && [ $hits -gt 0 ] && return 0
	echo "temporary files left: '$left'; writes interrupted: $hits of 4" >&2
	return 1
}
fault_case $t "a second SIGINT while the files are written" "exits 130 at once, removing the temporary file being written, with a line naming the files not written" sigint_ok

# --- -- CMD that cannot run: the exec error up front, nothing written -------
cmd_ok() { # NAME WANT-RC WANT-LINE CMD
	local name=$1 want_rc=$2 want=$3 rc
	shift 3
	"$REC" -q -o "$TMP/$name.out" -- "$@" >/dev/null 2>"$TMP/$name.err"
	rc=$?
	[ $rc = "$want_rc" ] && [ "$(cat "$TMP/$name.err")" = "$want" ] &&
		[ -z "$(ls -A "$TMP/$name.out" 2>/dev/null)" ] && return 0
	echo "$name: exit $rc (want $want_rc), $(ls -A "$TMP/$name.out" 2>/dev/null | wc -l) files; stderr:" >&2
	sed -n 1,5p "$TMP/$name.err" >&2
	return 1
}
fault_case cmd_not_found "-- /nonexistent/cmd" "bpftrace-rec: /nonexistent/cmd: No such file or directory; exit 127, nothing written" \
	cmd_ok cmd_not_found 127 "bpftrace-rec: /nonexistent/cmd: No such file or directory" /nonexistent/cmd
touch "$TMP/noexec"
fault_case cmd_not_executable "-- a file without execute permission" "bpftrace-rec: FILE: Permission denied; exit 126, nothing written" \
	cmd_ok cmd_not_executable 126 "bpftrace-rec: $TMP/noexec: Permission denied" "$TMP/noexec"
# Found and executable, but its exec fails once recording has started: still
# nothing written (the directory, checked before, stays empty).
printf '#!/nonexistent/interpreter\n' > "$TMP/badinterp" && chmod +x "$TMP/badinterp"
fault_case cmd_bad_interpreter "-- a script whose #! interpreter does not exist" "bpftrace-rec: FILE: No such file or directory; exit 127, no file written" \
	cmd_ok cmd_bad_interpreter 127 "bpftrace-rec: $TMP/badinterp: No such file or directory" "$TMP/badinterp"
