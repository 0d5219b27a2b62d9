#!/usr/bin/env bash
# bpftrace-rec as a systemd service (issue 25): `make install` puts the unit
# (packaging/bpftrace-rec.service.in, its ExecStart made the install's
# binary) and the settings' example (/etc/default, mode 600: credentials)
# under DESTDIR; systemd-analyze verify takes the unit; the unit's own
# command, run as systemd runs it (its default BPFTRACE_REC_ARGS, 1 s
# windows for the test), writes windows until SIGTERM, which closes the
# last one (exit 0, its summary "last"); with stderr the journal's stream
# (JOURNAL_STREAM), every line starts with its syslog level and nothing
# else is printed (no ANSI, no status line); without, no level.
source "$(dirname "$0")/lib.sh"

ALL=(service_make_install service_unit_verifies service_sigterm_last_window service_journal_levels
	service_plain_without_journal)
require_bpf "${ALL[@]}"

P=$TMP/prefix
make -s -C "$ROOT" install PREFIX="$P" SYSCONFDIR="$P/etc" > "$TMP/install.log" 2>&1
UNIT=$P/lib/systemd/system/bpftrace-rec.service
installed() {
	[ -x "$P/bin/bpftrace-rec" ] && grep -qx "ExecStart=$P/bin/bpftrace-rec -o /var/lib/bpftrace-rec \$BPFTRACE_REC_ARGS" "$UNIT" &&
		[ "$(stat -c %a "$P/etc/default/bpftrace-rec")" = 600 ] && return 0
	echo "$(cat "$TMP/install.log"; ls -lR "$P" | head -20)" >&2
	return 1
}
check service_make_install installed
if require_tool systemd-analyze service_unit_verifies; then
	check service_unit_verifies systemd-analyze verify --man=no "$UNIT"
fi

# The unit's command line, its variables as systemd expands them: the
# defaults of Environment=, with 1 s windows and the test's directory.
args=$(sed -n 's/^Environment="BPFTRACE_REC_ARGS=\(.*\)"$/\1/p' "$UNIT" | sed 's/--window 60/--window 1/')
cmd=$(sed -n 's/^ExecStart=//p' "$UNIT" | sed "s|/var/lib/bpftrace-rec|$TMP/state|; s|\\\$BPFTRACE_REC_ARGS|$args|")
touch "$TMP/journal"
JOURNAL_STREAM=$(stat -c %d:%i "$TMP/journal") $cmd 2>> "$TMP/journal" &
SVC=$!
for _ in $(seq 150); do [ "$(ls -d "$TMP"/state/window-* 2> /dev/null | wc -l)" -ge 3 ] && break; sleep 0.1; done
kill -TERM $SVC
wait $SVC
rc=$?
last_window() {
	local n last
	n=$(ls -d "$TMP"/state/window-* 2> /dev/null | wc -l)
	last=$(ls -d "$TMP"/state/window-* | tail -n 1)
	[ $rc = 0 ] && [ "$n" -ge 4 ] && python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
sys.exit(0 if s["window"]["last"] and s["window"]["index"] == int(sys.argv[2]) else 1)' "$last/summary.json" "$n" &&
		return 0
	echo "exit $rc, $n windows: $(head -5 "$TMP/journal")" >&2
	return 1
}
fault_case service_sigterm_last_window "SIGTERM to the service's command (-a --window)" \
	"the current window closed and written (its summary says last), exit 0" last_window
levels() {
	# Each line: <level>bpftrace-rec: ...; a window's line at info (6).
	if grep -qv '^<[3467]>bpftrace-rec: ' "$TMP/journal" || grep -q $'\033' "$TMP/journal" ||
		! grep -q '^<6>bpftrace-rec: window 1: ' "$TMP/journal"; then
		cat "$TMP/journal" >&2
		return 1
	fi
}
check service_journal_levels levels
"$REC" -a -d 0.5 -o "$TMP/plain" 2> "$TMP/plain.log" > /dev/null
check service_plain_without_journal eval '! grep -q "^<" "$TMP/plain.log" && grep -q "^bpftrace-rec: " "$TMP/plain.log"'
