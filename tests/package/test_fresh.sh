#!/usr/bin/env bash
# The package on a fresh machine: a bare Debian 12 made by debootstrap, into
# which only the .deb (make deb) is installed, with apt-get pulling what it
# depends on from the mirror. Inside it the installed binary records the
# bundled demo (scripts/demo.sh's workload, build/workloads/split 3: func_six,
# func_three and lib_spin doing 6:3:1 of the work), and `bpftrace-rec report`
# reads the recording with nothing but the package: its cpu top prints the
# 60/30/10 split. This is what test_deb.sh cannot show on the build machine,
# where every build and test dependency is installed beside the package.
#
# Needs root, BPF, debootstrap (apt-get install debootstrap) and the Debian
# mirror (http://deb.debian.org/debian, or DEBIAN_MIRROR). 832 s here at
# load average 17 on 2 cores: debootstrap 447 s, make deb 172 s, apt-get
# install 199 s (178 packages with it); too long for CI, a manual check.
# FRESH_BASE=DIR reuses a debootstrap'ed tree (copied, left as it is);
# DEB=FILE a .deb already built; KEEP=1 keeps the chroot. Prints PASS/FAIL
# lines, then "N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
pass=0 failn=0
ok() { echo "PASS $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1${2:+: $2}"; failn=$((failn + 1)); }
done_() { echo "$pass passed, $failn failed"; [ $failn = 0 ]; exit $?; }
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

if [ "$(id -u)" != 0 ]; then bad fresh_root "not root: debootstrap and chroot need it"; done_; fi
if ! command -v debootstrap > /dev/null; then bad fresh_debootstrap "debootstrap is not installed (apt-get install debootstrap)"; done_; fi

C=$(mktemp -d /var/tmp/bpftrace-rec-fresh.XXXXXX)
cleanup() {
	# Every mount under the chroot, deepest first, before anything is removed.
	findmnt -rn -o TARGET | grep "^$C/" | sort -r | xargs -r -n1 umount -l 2> /dev/null
	if [ -n "${KEEP:-}" ]; then echo "kept: $C"; else rm -rf --one-file-system "$C"; fi
}
trap cleanup EXIT
log=$C.log
t0=$SECONDS

# --- the bare machine -------------------------------------------------------
t=fresh_debootstrap
if [ -n "${FRESH_BASE:-}" ]; then
	cp -a "$FRESH_BASE/." "$C/" && ok "$t" || { bad "$t" "copying $FRESH_BASE"; done_; }
elif debootstrap bookworm "$C" "$mirror" > "$log" 2>&1; then
	ok "$t"
else
	bad "$t" "$(tail -3 "$log")"
	done_
fi
echo "fresh: debootstrap $((SECONDS - t0)) s, $(chroot "$C" dpkg-query -W -f='${Status}\n' | grep -c ' installed$') packages"

# --- the package --------------------------------------------------------------
t1=$SECONDS
t=fresh_deb_builds
deb=${DEB:-}
if [ -z "$deb" ]; then
	make -s deb > "$log" 2>&1 && deb=$(ls "$ROOT"/build/deb/bpftrace-rec_*_amd64.deb 2> /dev/null | head -1)
fi
if [ -n "$deb" ] && [ -f "$deb" ]; then ok "$t"; else bad "$t" "$(tail -3 "$log")"; done_; fi
echo "fresh: make deb $((SECONDS - t1)) s"

# The kernel's file systems the recorder opens: BPF (bpffs), tracefs and
# debugfs (uprobes, tracepoints), /proc (every process's maps), /dev.
for m in proc sys dev; do
	mount --rbind "/$m" "$C/$m" && mount --make-rslave "$C/$m" || { bad fresh_mounts "/$m"; done_; }
done
cp /etc/resolv.conf "$C/etc/resolv.conf"
mkdir -p "$C/root/demo"
cp "$deb" "$C/root/"
# The demo's workload (not in the package: a test program of the tree),
# with the library it finds beside itself ($ORIGIN).
make -s workloads > /dev/null 2>&1
cp build/workloads/split build/workloads/libwork.so "$C/root/demo/"

t1=$SECONDS
t=fresh_deb_installs
n0=$(chroot "$C" dpkg-query -W -f='${Status}\n' | grep -c ' installed$')
if chroot "$C" env DEBIAN_FRONTEND=noninteractive sh -c \
	"apt-get -q update && apt-get -y -q install /root/$(basename "$deb")" > "$log" 2>&1 &&
	chroot "$C" dpkg -s bpftrace-rec > /dev/null 2>&1; then
	ok "$t"
else
	bad "$t" "$(tail -3 "$log")"
	done_
fi
n1=$(chroot "$C" dpkg-query -W -f='${Status}\n' | grep -c ' installed$')
echo "fresh: apt-get install $((SECONDS - t1)) s, $((n1 - n0)) packages with it"

# --- the demo, recorded and reported inside -----------------------------------
t=fresh_records
if chroot "$C" bpftrace-rec -q -F 499 -o /root/demo.out -- /root/demo/split 3 > /dev/null 2> "$log" &&
	[ -s "$C/root/demo.out/profile.pb.gz" ]; then
	ok "$t"
else
	bad "$t" "$(head -3 "$log")"
fi

# report's cpu top, as pprof -top's: flat% in the second column, the
# function then its file:line.
t=fresh_report_split
chroot "$C" bpftrace-rec report /root/demo.out > "$C.report" 2> "$log"
rc=$?
flat() { awk -v f="$1" '$6 == f && $2 ~ /%$/ { sub("%", "", $2); print $2; n = 1; exit } END { if (!n) print 0 }' "$C.report"; }
six=$(flat func_six) three=$(flat func_three) one=$(flat lib_spin)
within() { awk -v v="$1" -v e="$2" 'BEGIN { d = v - e; exit !(d <= 5 && d >= -5) }'; }
if [ $rc = 0 ] && within "$six" 60 && within "$three" 30 && within "$one" 10; then
	ok "$t"
else
	bad "$t" "exit $rc, func_six $six% func_three $three% lib_spin $one% (want 60/30/10 +-5)"
	head -15 "$C.report"
	cat "$log"
fi
echo "report: func_six $six%, func_three $three%, lib_spin $one%"
rm -f "$log" "$C.report"
echo "fresh: $((SECONDS - t0)) s in all"
done_
