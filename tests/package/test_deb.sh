#!/usr/bin/env bash
# The Debian package (make deb), as a user gets it: built with Debian's
# tools, installed with `apt-get install ./bpftrace-rec_*.deb`, its manual
# page found by man, its bash completion completing, a recording by the installed binary read back by pprof,
# then `apt-get purge`d, leaving none of its files behind. Needs root (apt,
# BPF); run by .ci/run as its own step. Prints PASS/FAIL lines, then
# "N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
TMP=$(mktemp -d /tmp/bpftrace-rec-deb.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
pass=0 failn=0
ok() { echo "PASS $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1${2:+: $2}"; failn=$((failn + 1)); }
done_() { echo "$pass passed, $failn failed"; [ $failn = 0 ]; exit $?; }
# apt and dpkg wait for a lock another user of the machine holds.
APT=(apt-get -y -q -o DPkg::Lock::Timeout=600)
PPROF=$(command -v pprof || echo "$ROOT/tools/pprof")

if [ "$(id -u)" != 0 ]; then bad deb_root "not root: apt-get install needs it"; done_; fi

# --- build ----------------------------------------------------------------
if make -s deb > "$TMP/build.log" 2>&1 && deb=$(ls "$ROOT"/build/deb/bpftrace-rec_*_amd64.deb 2>/dev/null) && [ -n "$deb" ]; then
	ok deb_builds # make deb runs lintian --fail-on error
else
	bad deb_builds "$(tail -5 "$TMP/build.log")"
	done_
fi

# --- install --------------------------------------------------------------
if "${APT[@]}" install "$deb" > "$TMP/install.log" 2>&1 && dpkg -s bpftrace-rec > /dev/null 2>&1; then
	ok deb_installs
else
	bad deb_installs "$(tail -5 "$TMP/install.log")"
	done_
fi
dpkg -L bpftrace-rec > "$TMP/files"

t=deb_man_page
m=$(man -w bpftrace-rec 2>&1)
if [ "$m" = /usr/share/man/man8/bpftrace-rec.8.gz ] && man bpftrace-rec 2>/dev/null | grep -q -- "--call-graph"; then ok $t; else bad $t "man -w: $m"; fi

t=deb_completion
c=/usr/share/bash-completion/completions/bpftrace-rec
got=$(bash -c 'source "$1"; COMP_WORDS=(bpftrace-rec --off); COMP_CWORD=1; _bpftrace_rec; echo "${COMPREPLY[*]}"' _ "$c" 2>&1)
if [ "$got" = "--off-cpu --off-cpu-entries --off-cpu-min" ]; then ok $t; else bad $t "completing --off: '$got'"; fi

# --- record with the installed binary, read back by pprof -------------------
# The demo's workload: func_six, func_three and lib_spin do 6:3:1 of the
# work, so func_six has about 60% of the samples.
t=deb_records
make -s workloads > /dev/null 2>&1
if [ "$(command -v bpftrace-rec)" = /usr/bin/bpftrace-rec ] &&
	/usr/bin/bpftrace-rec -q -F 499 -o "$TMP/out" -- "$ROOT/build/workloads/split" 2 > /dev/null 2> "$TMP/rec.err"; then
	"$PPROF" -top "$TMP/out/profile.pb.gz" > "$TMP/top" 2>&1
	six=$(awk '$NF == "func_six" && $2 ~ /%$/ { sub("%", "", $2); print $2; exit }' "$TMP/top")
	if awk -v v="${six:-0}" 'BEGIN { exit !(v >= 50 && v <= 70) }'; then ok $t; else bad $t "func_six ${six:-absent}% of samples, want 60 +- 10"; head -15 "$TMP/top"; fi
else
	bad $t "$(which bpftrace-rec); $(head -3 "$TMP/rec.err")"
fi

# --- purge: nothing left behind ---------------------------------------------
t=deb_purge_clean
"${APT[@]}" purge bpftrace-rec > "$TMP/purge.log" 2>&1
left=
while IFS= read -r f; do
	# Directories the package shared with others (/, /usr, /usr/bin...) stay.
	[ "$f" = /. ] && continue
	[ -d "$f" ] && dpkg -S "$f" > /dev/null 2>&1 && continue
	[ -e "$f" ] && left+=" $f"
done < "$TMP/files"
if ! dpkg -s bpftrace-rec > /dev/null 2>&1 && [ -z "$left" ] && [ ! -e /usr/share/doc/bpftrace-rec ] &&
	! command -v bpftrace-rec > /dev/null && ! man -w bpftrace-rec > /dev/null 2>&1; then
	ok $t
else
	bad $t "left:$left $(dpkg -s bpftrace-rec 2>/dev/null | grep Status)"
fi
done_
