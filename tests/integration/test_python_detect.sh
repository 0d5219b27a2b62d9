#!/usr/bin/env bash
# CPython found by the recorder (issue 23, its first part): a process is
# recognized from its binary as its maps are read, a version with no layout
# is one warning naming it and the recording goes on with native frames, and
# a program that only looks like CPython is a warning, never a crash.
source "$(dirname "$0")/lib.sh"

ALL=(python_found_static python_found_shared python_no_layout python_fake_313 python_fake_311)
require_bpf "${ALL[@]}"

PYENV=$(pyenv root 2>/dev/null || echo /root/.pyenv)/versions
# 0.4 s of the process's own CPU, not of the clock: on a loaded machine
# (CI's sanitizer pass beside two busy loops) a 0.4 s wall-clock spin had
# 2 samples at 99 Hz and none in the evaluation loop.
SPIN='import time
t = time.process_time()
while time.process_time() - t < 0.4: pass'

# record NAME ARGS...: -v, stderr in $TMP/NAME.err; the recording ends with
# the command (its 0.4 s of CPU), -d 30 only bounds a hang. With -d 1, CI's
# sanitizer pass once recorded 0 samples of pyenv's 3.7 (the one run of it
# in the suite, its files cold): the second ran out before the spin began.
record() {
	local name=$1
	shift
	"$REC" -v -F 99 -d 30 -o "$TMP/$name" -- "$@" >/dev/null 2>"$TMP/$name.err"
}

# Debian's static python3.11 (_PyRuntime in the executable) and pyenv's 3.12
# (in libpython3.12.so): found once each, no warning.
t=python_found_static
record static /usr/bin/python3.11 -c "$SPIN"
if [ "$(grep -c 'runs CPython 3\.11 (/usr/bin/python3\.11)' "$TMP/static.err")" = 1 ] &&
	! grep -q 'warning' "$TMP/static.err"; then pass $t; else
	fail $t "want one 'runs CPython 3.11' and no warning"; grep -i 'python\|warn' "$TMP/static.err" >&2; fi
t=python_found_shared
py=$(ls -d "$PYENV"/3.12.*/bin/python3.12 | tail -n 1)
record shared "$py" -c "$SPIN"
if [ "$(grep -c 'runs CPython 3\.12 (.*/libpython3\.12\.so' "$TMP/shared.err")" = 1 ] &&
	! grep -q 'warning' "$TMP/shared.err"; then pass $t; else
	fail $t "want one 'runs CPython 3.12 (libpython3.12.so)' and no warning"
	grep -i 'python\|warn' "$TMP/shared.err" >&2; fi

# pyenv's 3.7 has _PyRuntime and no layout here: one warning naming 3.7,
# and the profile as today (the interpreter's own functions).
t=python_no_layout
py=$(ls -d "$PYENV"/3.7.*/bin/python3.7 | tail -n 1)
record nolayout "$py" -c "$SPIN"
"$PPROF" -top "$TMP/nolayout/profile.pb.gz" > "$TMP/nolayout.top" 2>/dev/null
if [ "$(grep -c 'warning: CPython 3\.7 (.*): no layout' "$TMP/nolayout.err")" = 1 ] &&
	[ "$(grep -c warning "$TMP/nolayout.err")" = 1 ] && grep -q '_PyEval_EvalFrameDefault' "$TMP/nolayout.top"
then pass $t; else
	fail $t "want one warning naming CPython 3.7 and _PyEval_EvalFrameDefault in the profile"
	cat "$TMP/nolayout.err" >&2; head -5 "$TMP/nolayout.top" >&2; fi

# Programs exporting _PyRuntime that are not CPython (tests/unit/fake_python.c).
fake_313() {
	"$REC" -q -d 1 -o "$TMP/f313" -- "$BUILD/tests/fake_python_313" >/dev/null 2>"$TMP/f313.err"
	[ $? = 124 ] && [ -s "$TMP/f313/profile.pb.gz" ] &&
		[ "$(grep -c 'fake_python_313: the _Py_DebugOffsets of its _PyRuntime are not in the file' \
			"$TMP/f313.err")" = 1 ]
}
fault_case python_fake_313 "a program exporting _PyRuntime and a Py_Version of 3.13, without _Py_DebugOffsets" \
	"one warning naming it; recorded with native frames" fake_313
fake_311() {
	"$REC" -q -d 1 -o "$TMP/f311" -- "$BUILD/tests/fake_python_311" >/dev/null 2>"$TMP/f311.err"
	[ $? = 124 ] && [ -s "$TMP/f311/profile.pb.gz" ] && ! [ -s "$TMP/f311.err" ]
}
fault_case python_fake_311 "a program exporting _PyRuntime (full of pointers to itself) and a Py_Version of 3.11" \
	"recorded with native frames, no crash or hang" fake_311
