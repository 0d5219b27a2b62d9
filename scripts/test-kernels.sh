#!/usr/bin/env bash
# The kernel matrix: boots Debian's own kernel packages in qemu and runs the
# guest suite (tests/kernels/guest-suite.sh) inside each, then prints one line
# per kernel and "N passed, N failed, N skipped" (counting kernels).
#
#   scripts/test-kernels.sh                 every kernel in $KERNELS
#   KERNELS=6.1 scripts/test-kernels.sh     one kernel ("host": the running
#                                           kernel, natively, no qemu)
#   scripts/test-kernels.sh --run 6.1 'CMD' one command in a 6.1 guest, in this
#                                           tree; exits with its status
#   scripts/test-kernels.sh --shell 6.1     an interactive shell in the guest
#                                           (Ctrl-A x quits qemu)
#
# The kernels are downloaded with apt-get into a private apt state (the
# host's apt configuration is not touched) and unpacked with dpkg -x into
# $KERNEL_CACHE; nothing is installed and /boot is never touched. The guest
# sees the host's / read-only over virtio-9p under a tmpfs overlay, so it runs
# this tree's build and the host's tools (pprof, llvm-xray, node) at their
# host paths. Needs qemu-system-x86, busybox-static, xz-utils, zstd and cpio
# (make test-deps: scripts/install-deps.sh --test).
#
# Environment: KERNELS (default "host 5.10 6.1 6.12": a series picks the
# newest linux-image-amd64 of that series in bullseye, bookworm, their
# security and backports suites, and trixie), KERNEL_CACHE (default
# ~/.cache/bpftrace-rec-kernels), KERNEL_TIMEOUT (seconds per guest, default
# 900: CI's 5.10 guest takes ~600 beside the stress pass), KERNEL_MEM
# (default 2G), KERNEL_SMP (default 2), KERNEL_JOBS (guests booted at once,
# default 2), KERNEL_QEMU_OPTS (more qemu options; see boot()).
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${KERNEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/bpftrace-rec-kernels}
KERNELS=${KERNELS:-host 5.10 6.1 6.12}
TIMEOUT=${KERNEL_TIMEOUT:-900}
MEM=${KERNEL_MEM:-2G}
SMP=${KERNEL_SMP:-2}
JOBS=${KERNEL_JOBS:-2}
LOGS=$ROOT/build/kernels
MIRROR=http://deb.debian.org
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
# The modules the guest needs to reach the host's /; their dependencies are
# read from each module's own depends= field.
GUEST_MODULES=(virtio_pci 9pnet_virtio 9p overlay)

say() { echo "test-kernels: $*" >&2; }
die() { say "$*"; exit 2; }

# needs: the host programs the guests need, before anything is downloaded.
needs() {
	local c missing=
	for c in qemu-system-x86_64 apt-get apt-cache dpkg cpio gzip xz zstd; do
		command -v $c > /dev/null || missing="$missing $c"
	done
	# The static one: the initramfs has no libraries.
	dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep -q 'install ok installed' ||
		missing="$missing busybox-static"
	[ -z "$missing" ] || die "missing:$missing (make test-deps installs them)"
}

# --- kernels from Debian's archive ---------------------------------------------

APT_DIR=$CACHE/apt
apt_opts() {
	echo "-o Dir::Etc::SourceList=$APT_DIR/sources.list -o Dir::Etc::SourceParts=/dev/null" \
		"-o Dir::State=$APT_DIR/state -o Dir::State::status=/dev/null -o Dir::Cache=$APT_DIR/cache" \
		"-o Debug::NoLocking=1 -o APT::Sandbox::User=root"
}

# One private apt state for every suite: a series (5.10, 6.1, 6.12) then picks
# the newest linux-image-amd64 of that series in any of them, so a kernel is
# not tied to a release name (6.12 is both in trixie and bookworm-backports).
APT_UPDATED=
apt_update() {
	[ -n "$APT_UPDATED" ] && return "$APT_UPDATED"
	mkdir -p "$APT_DIR/state/lists/partial" "$APT_DIR/cache/archives/partial"
	local s
	: > "$APT_DIR/sources.list"
	for s in bullseye bookworm bookworm-backports trixie trixie-backports; do
		echo "deb [signed-by=$KEYRING] $MIRROR/debian $s main" >> "$APT_DIR/sources.list"
	done
	for s in bullseye-security bookworm-security trixie-security; do
		echo "deb [signed-by=$KEYRING] $MIRROR/debian-security $s main" >> "$APT_DIR/sources.list"
	done
	# shellcheck disable=SC2046
	if apt-get $(apt_opts) -qq update > "$APT_DIR/update.log" 2>&1; then
		APT_UPDATED=0
	else
		say "apt-get update failed (offline?), using cached kernels: $(tail -1 "$APT_DIR/update.log")"
		APT_UPDATED=1
	fi
	return "$APT_UPDATED"
}

# resolve SERIES: sets KPKG (linux-image-6.1.0-56-amd64) and KVER, from apt,
# else from the last resolution cached for the series.
resolve() {
	local series=$1 ver pkg
	mkdir -p "$CACHE"
	if apt_update; then
		# madison lists the newest first.
		# shellcheck disable=SC2046
		ver=$(apt-cache $(apt_opts) madison linux-image-amd64 |
			awk -F' *[|] *' -v s="$series." 'index($2, s) == 1 { print $2; exit }')
		[ -n "$ver" ] || { say "no linux-image-amd64 $series.* in the archive"; return 1; }
		# shellcheck disable=SC2046
		pkg=$(apt-cache $(apt_opts) show "linux-image-amd64=$ver" |
			sed -n 's/^Depends: .*\(linux-image-[^ ,]*-amd64\(-unsigned\)\?\) (= .*/\1/p' | head -1)
		[ -n "$pkg" ] || { say "linux-image-amd64 $ver: no image in its Depends"; return 1; }
		echo "$pkg $ver" > "$CACHE/series-$series"
	fi
	[ -s "$CACHE/series-$series" ] || { say "kernel $series: not resolved and not cached"; return 1; }
	read -r KPKG KVER < "$CACHE/series-$series"
}

# fetch PKG VER: downloads and unpacks the image once; prints its tree. Newer
# images (7.x) are split: linux-image-R only depends on linux-binary-R and
# linux-modules-R of its own version, which are unpacked with it.
fetch() {
	local pkg=$1 ver=$2 tree=$CACHE/$1_$2 parts p deb
	if [ ! -e "$tree/.unpacked" ]; then
		mkdir -p "$CACHE/debs"
		parts=$CACHE/debs/${pkg}_$ver.parts
		if [ ! -s "$parts" ]; then
			# shellcheck disable=SC2046
			{ echo "$pkg"; apt-cache $(apt_opts) show "$pkg=$ver" | sed -n 's/^Depends: //p' | head -1 |
				tr ',|' '\n\n' | sed -n "s/^ *\(linux-[^ ]*\) (= $ver) *$/\1/p"; } > "$parts.tmp" &&
				mv "$parts.tmp" "$parts" || { say "apt-cache show $pkg=$ver failed"; return 1; }
		fi
		rm -rf "$tree"
		while IFS= read -r p; do
			deb=$CACHE/debs/${p}_${ver//:/%3a}_amd64.deb
			if [ ! -s "$deb" ]; then
				say "downloading $p $ver"
				# shellcheck disable=SC2046
				(cd "$CACHE/debs" && apt-get $(apt_opts) -qq download "$p=$ver") >&2 ||
					{ say "apt-get download $p=$ver failed"; return 1; }
			fi
			dpkg -x "$deb" "$tree" || { say "dpkg -x $deb failed"; return 1; }
		done < "$parts"
		touch "$tree/.unpacked"
	fi
	echo "$tree"
}

# kernel_files TREE: sets KREL, VMLINUZ and MODDIR (merged-/usr packages ship
# /usr/lib/modules; the split 7.x ones put vmlinuz there too).
kernel_files() {
	local tree=$1 d
	VMLINUZ=$(ls "$tree"/boot/vmlinuz-* "$tree"/usr/lib/modules/*/vmlinuz 2>/dev/null | head -1)
	[ -n "$VMLINUZ" ] || { say "$tree: no boot/vmlinuz-* nor usr/lib/modules/*/vmlinuz"; return 1; }
	case $VMLINUZ in
	*/vmlinuz-*) KREL=${VMLINUZ##*/vmlinuz-} ;;
	*) KREL=${VMLINUZ%/vmlinuz}; KREL=${KREL##*/} ;;
	esac
	MODDIR=
	for d in "$tree/lib/modules/$KREL" "$tree/usr/lib/modules/$KREL"; do
		[ -d "$d" ] && MODDIR=$d
	done
	[ -n "$MODDIR" ] || { say "$tree: no modules for $KREL"; return 1; }
}

# --- the initramfs: busybox, the modules, the two init stages --------------------

# module_order MODDIR NAME...: the module files to load, dependencies first,
# leaving out modules built into the kernel (modules.builtin).
module_order() {
	local moddir=$1 f n
	shift
	declare -gA MODFILE=() MODSEEN=()
	declare -ga MODORDER=()
	while IFS= read -r f; do
		n=${f##*/}; n=${n%%.ko*}; n=${n//-/_}
		MODFILE[$n]=$f
	done < <(find "$moddir/kernel" -name '*.ko*')
	if [ -f "$moddir/modules.builtin" ]; then
		while IFS= read -r f; do
			n=${f##*/}; n=${n%%.ko*}; n=${n//-/_}
			MODSEEN[$n]=builtin
		done < "$moddir/modules.builtin"
	fi
	for n in "$@"; do module_add "${n//-/_}" || return 1; done
}
module_add() {
	local n=$1 deps d
	[ -n "${MODSEEN[$n]:-}" ] && return 0
	MODSEEN[$n]=1
	[ -n "${MODFILE[$n]:-}" ] || { say "module $n: neither a module nor built in"; return 1; }
	deps=$(module_cat "${MODFILE[$n]}" | tr '\0' '\n' | sed -n 's/^depends=//p' | head -1)
	for d in ${deps//,/ }; do module_add "${d//-/_}" || return 1; done
	MODORDER+=("$n")
}
# Debian compresses modules (xz before 6.x, zstd since); busybox insmod wants
# them plain.
module_cat() {
	case $1 in
	*.ko.xz) xz -dc "$1" ;;
	*.ko.zst) zstd -qdc "$1" ;;
	*.ko.gz) gzip -dc "$1" ;;
	*) cat "$1" ;;
	esac
}

# Stage 1 (/init): loads the modules, mounts the host's / (9p, read-only)
# under a tmpfs overlay and switches into it.
STAGE1='#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
fail() { echo "KTEST STAGE1 FAIL: $*"; echo o > /proc/sysrq-trigger; sleep 10; }
for m in $(cat /modules.order); do
	insmod /modules/$m.ko || fail "insmod $m"
done
mkdir -p /lower /ovl /newroot
# cache=loose: the host tree is read-only and stays put during a run; without
# a cache every exec reads binaries page by page over 9p.
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144,cache=loose hostroot /lower ||
	mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144 hostroot /lower ||
	fail "mount 9p hostroot"
mount -t tmpfs -o mode=755 tmpfs /ovl
mkdir -p /ovl/upper /ovl/work
mount -t overlay overlay -o lowerdir=/lower,upperdir=/ovl/upper,workdir=/ovl/work /newroot ||
	fail "mount overlay"
mkdir -p /newroot/ktest
cp /bin/busybox /stage2 /newroot/ktest/
for d in proc sys dev; do mount --move /$d /newroot/$d; done
exec switch_root /newroot /ktest/stage2
'

# Stage 2 (/ktest/stage2, pid 1 in the host tree): the kernel file systems
# the tool and its tests use, then the script named by ktest_script= on the
# command line, between the markers the host parses; then power off.
STAGE2='#!/ktest/busybox sh
bb=/ktest/busybox
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8
mnt() { $bb mount "$@" || echo "KTEST WARN mount $*"; }
# No tmpfs on /tmp: the overlay'"'"'s upper layer is a tmpfs already, and a
# tree under the host'"'"'s /tmp (a CI clone) must stay visible.
mnt -t tmpfs -o mode=755 tmpfs /run
mnt -t bpf bpf /sys/fs/bpf
mnt -t debugfs debugfs /sys/kernel/debug
# tracefs: at /sys/kernel/tracing, and under debugfs where old tools look.
mnt -t tracefs tracefs /sys/kernel/tracing
$bb mkdir -p /dev/pts /dev/shm
mnt -t devpts devpts /dev/pts
mnt -t tmpfs tmpfs /dev/shm
$bb ln -sf /proc/self/fd /dev/fd
$bb ln -sf /proc/self/fd/0 /dev/stdin
$bb ln -sf /proc/self/fd/1 /dev/stdout
$bb ln -sf /proc/self/fd/2 /dev/stderr
$bb hostname ktest
$bb ip link set lo up 2>/dev/null
# Kernel messages would cut into the markers on the console.
echo 1 > /proc/sys/kernel/printk
script=$($bb sed -n "s/.*ktest_script=\([^ ]*\).*/\1/p" /proc/cmdline)
mode=$($bb sed -n "s/.*ktest_mode=\([^ ]*\).*/\1/p" /proc/cmdline)
echo "KTEST BEGIN $($bb uname -r)"
if [ "$mode" = shell ]; then
	# cttyhack: the console as controlling terminal, for job control and ^C.
	TERM=${TERM:-vt100} $bb setsid $bb cttyhack /bin/bash "$script"
	rc=$?
else
	/bin/bash "$script" < /dev/null 2>&1
	rc=$?
fi
echo "KTEST EXIT $rc"
# The serial port sends what is queued after the write returns: let it drain
# before the power goes.
$bb sleep 1
echo o > /proc/sysrq-trigger
$bb sleep 10
'

# initramfs TREE OUT: busybox, the decompressed modules and both stages.
make_initramfs() {
	local tree=$1 out=$2 dir n
	kernel_files "$tree" || return 1
	module_order "$MODDIR" "${GUEST_MODULES[@]}" || return 1
	dir=$(mktemp -d /tmp/ktest-initramfs.XXXXXX)
	mkdir -p "$dir/bin" "$dir/modules" "$dir/proc" "$dir/sys" "$dir/dev"
	cp /bin/busybox "$dir/bin/busybox"
	for n in "${MODORDER[@]}"; do
		module_cat "${MODFILE[$n]}" > "$dir/modules/$n.ko" || { rm -rf "$dir"; return 1; }
	done
	printf '%s\n' "${MODORDER[@]}" > "$dir/modules.order"
	printf '%s' "$STAGE1" > "$dir/init"
	printf '%s' "$STAGE2" > "$dir/stage2"
	chmod 755 "$dir/init" "$dir/stage2"
	# Under a name of its own, as another run may be booting the same kernel.
	(cd "$dir" && find . | cpio -o -H newc --quiet | gzip -1) > "$out.$$" && mv "$out.$$" "$out"
	rm -rf "$dir"
}

# prepare SERIES: sets KTREE, KPKG, KVER, KREL, VMLINUZ, INITRD.
prepare() {
	resolve "$1" || return 1
	KTREE=$(fetch "$KPKG" "$KVER") || return 1
	kernel_files "$KTREE" || return 1
	INITRD=$KTREE/initramfs.cpio.gz
	make_initramfs "$KTREE" "$INITRD" || { say "initramfs for $KREL failed"; return 1; }
}

# boot MODE SCRIPT LOG: runs qemu on the prepared kernel; the console goes to
# LOG (and to the terminal in shell mode). Returns qemu's status (124: timeout).
boot() {
	local mode=$1 script=$2 log=$3
	local qemu=(qemu-system-x86_64 -accel tcg -cpu max -m "$MEM" -smp "$SMP"
		-nographic -no-reboot -nic none
		-kernel "$VMLINUZ" -initrd "$INITRD"
		-append "console=ttyS0 panic=-1 no_timer_check ktest_mode=$mode ktest_script=$script"
		-virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap)
	# KERNEL_QEMU_OPTS="-icount shift=3,sleep=off" runs the guest's clock on
	# its instruction count instead of the host's: on a busy host (load 8 on
	# 2 cores) TCG gets little CPU and, on real time, the guest sees its
	# timers fire in storms (19428 samples lost in a 2 s -a recording,
	# recordings 40 times their length); with it 7.3 passed at that load.
	# Not the default: 5.10 and 6.1 hang bringing up their second CPU.
	# shellcheck disable=SC2206
	qemu+=(${KERNEL_QEMU_OPTS:-})
	# KVM hangs early in boot on these nested VMs; TCG is slow but works.
	if [ "$mode" = shell ]; then
		"${qemu[@]}" 2>&1 | tee "$log"
	else
		# --foreground: in this script's process group, so that a signal to
		# the group (Ctrl-C, an outer timeout) ends qemu too.
		timeout --foreground "$TIMEOUT" "${qemu[@]}" < /dev/null > "$log" 2>&1 &
		local q=$! st=0 off=
		# The guest powers itself off a second after "KTEST EXIT"; with
		# that line in the log its run is over, power-off or not: CI's
		# 5.10 guest printed "KTEST EXIT 0" and was killed at the
		# timeout, a failure of a suite that had passed. 20 s for the
		# power-off, then qemu is stopped and the run counts as ended.
		while kill -0 $q 2> /dev/null; do
			if [ -z "$off" ] && grep -aq '^KTEST EXIT [0-9]' "$log"; then
				off=$((SECONDS + 20))
			elif [ -n "$off" ] && [ $SECONDS -ge "$off" ]; then
				say "the guest did not power off 20 s after its KTEST EXIT line: qemu stopped ($log)"
				kill -TERM $q 2> /dev/null || true
				break
			fi
			sleep 1
		done
		wait $q || st=$?
		[ -n "$off" ] && st=0
		return $st
	fi
}

# guest_script CMD: sets script to a file the guest reads from the host's /,
# which runs CMD in this tree; removed when this script exits, however it exits.
SCRIPTS=()
trap 'rm -f "${SCRIPTS[@]}"' EXIT
guest_script() {
	mkdir -p "$LOGS"
	script=$(mktemp "$LOGS/cmd.XXXXXX")
	SCRIPTS+=("$script")
	printf 'cd %q || exit 1\n%s\n' "$ROOT" "$1" > "$script"
}

# --- one-off commands -------------------------------------------------------------

# The console turns \n into \r\n; the guest's output is what lies between
# the markers.
# A read loop rather than tr | awk, which would hold lines in their buffers.
console_body() {
	local line on=0
	while IFS= read -r line; do
		line=${line%$'\r'}
		case $on,$line in
		0,"KTEST BEGIN "*) on=1 ;;
		1,"KTEST EXIT "*) on=2 ;;
		1,*) printf '%s\n' "$line" ;;
		esac
	done
}

if [ "${1:-}" = --run ] || [ "${1:-}" = --shell ]; then
	mode=run
	[ "$1" = --shell ] && mode=shell
	[ $# -ge 2 ] || die "usage: $0 --run SERIES 'CMD' | --shell SERIES"
	series=$2
	cmd=${3:-true}
	[ $mode = shell ] && cmd="exec bash -i"
	needs
	prepare "$series" || exit 2
	guest_script "$cmd"
	log=$LOGS/$KREL.$mode.log
	say "$KREL ($KVER), console log $log"
	if [ $mode = shell ]; then
		boot shell "$script" "$log" || true
		rm -f "$script"
		exit 0
	fi
	# Streamed, so that a long command shows its progress.
	: > "$log"
	boot run "$script" "$log" & qpid=$!
	# Killed, this script takes the guest with it (timeout passes the signal on).
	# || true: under set -e a failing command in the trap (no child left to
	# kill) would become the script's status (--run exited 1 after KTEST EXIT 0).
	trap 'pkill -P $qpid 2>/dev/null || true; rm -f "${SCRIPTS[@]}"' EXIT
	trap 'exit 143' TERM INT HUP
	# tail ends by itself once qemu (the boot's subshell) has exited.
	tail --pid=$qpid -F -n +1 "$log" 2>/dev/null | console_body
	st=0
	wait $qpid || st=$?
	rm -f "$script"
	[ $st = 124 ] && die "guest timed out after ${TIMEOUT}s; console log $log"
	rc=$(tr -d '\r' < "$log" | sed -n 's/^KTEST EXIT \([0-9]*\).*/\1/p' | tail -1)
	if [ -z "$rc" ]; then
		say "the guest did not run the command; console log $log:"
		tr -d '\r' < "$log" | tail -30 >&2
		exit 2
	fi
	exit "$rc"
fi

# --- the matrix ----------------------------------------------------------------

SUITE="bash tests/kernels/guest-suite.sh"
for k in $KERNELS; do [ "$k" = host ] || { needs; break; }; done
npass=0 nfail=0 nskip=0
results=()
mkdir -p "$LOGS"

# report NAME LOG SECONDS: the kernel's result from the suite's markers.
report() {
	local name=$1 log=$2 secs=$3 clean p f failed retried
	clean=$log.txt
	tr -d '\r' < "$log" > "$clean"
	if ! grep -q '^KTEST BEGIN ' "$clean"; then
		results+=("$name: FAILED to boot (${secs}s), log $log")
		nfail=$((nfail + 1))
		tail -20 "$clean" | sed 's/^/    /'
		return
	fi
	if ! grep -q '^KTEST DONE ' "$clean"; then
		results+=("$name: suite did not finish (${secs}s), log $log")
		nfail=$((nfail + 1))
		awk '/^KTEST BEGIN /{on=1; next} on' "$clean" | tail -30 | sed 's/^/    /'
		return
	fi
	read -r p f < <(sed -n 's/^KTEST DONE \([0-9]*\) \([0-9]*\).*/\1 \2/p' "$clean" | tail -1)
	# The failed checks' names and reasons on the kernel's own line: CI
	# shows the end of this output, and the guest's lines come before it.
	failed=$(sed -n 's/^KTEST FAIL //p' "$clean" | tr '\n' ';' | sed 's/;$//; s/;/; /g')
	retried=$(sed -n 's/^KTEST RETRIED //p' "$clean" | tr '\n' ';' | sed 's/;$//; s/;/; /g')
	results+=("$name: $p passed, $f failed (${secs}s)${failed:+: $failed}${retried:+; passed on a second try: $retried}")
	# Where the guest's time went (the suite's last INFO line).
	sed -n 's/^KTEST INFO seconds by check:/    seconds by check:/p' "$clean"
	if [ "$f" = 0 ] && [ "$p" -gt 0 ]; then
		npass=$((npass + 1))
	else
		nfail=$((nfail + 1))
		# The failures, and the end of the suite's output before each.
		grep '^KTEST FAIL ' "$clean" | sed 's/^/    /'
		echo "    --- last lines of the guest's output (all of it in $clean):"
		awk '/^KTEST BEGIN /{on=1; next} /^KTEST DONE /{exit} on' "$clean" | tail -25 | sed 's/^/    /'
	fi
}

# The native run first, alone: its checks time real work.
for k in $KERNELS; do
	[ "$k" = host ] || continue
	start=$(date +%s)
	name="host $(uname -r) (native, no qemu)"
	echo "== $name"
	log=$LOGS/host.log
	# The same suite and markers, without qemu.
	(cd "$ROOT" && echo "KTEST BEGIN $(uname -r)" &&
		timeout "$TIMEOUT" $SUITE < /dev/null 2>&1; echo "KTEST EXIT $?") > "$log" 2>&1 || true
	report "$name" "$log" $(($(date +%s) - start))
done

# The guests, KERNEL_JOBS at a time (prepared one after another: one apt
# state); each one's qemu status and seconds into $LOGS/KREL.status, read
# in order once all are done. Three one after another took 491 s in CI,
# two at a time ~415 here (each guest's 2 CPUs are emulated by threads of
# their own; a guest waits on the suite's sleeps too).
booted=()
for k in $KERNELS; do
	[ "$k" = host ] && continue
	echo "== kernel $k"
	if ! prepare "$k"; then
		results+=("kernel $k: SKIPPED (could not get the kernel; see above)")
		nskip=$((nskip + 1))
		continue
	fi
	name="kernel $KREL ($KVER)"
	guest_script "$SUITE"
	while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || true; done
	echo "== $name: booting (console log $LOGS/$KREL.log)"
	rm -f "$LOGS/$KREL.status"
	(
		start=$(date +%s) st=0
		boot suite "$script" "$LOGS/$KREL.log" || st=$?
		rm -f "$script"
		echo "$st $(($(date +%s) - start))" > "$LOGS/$KREL.status"
	) &
	booted+=("$KREL $name")
done
wait
for g in ${booted[@]+"${booted[@]}"}; do
	KREL=${g%% *} name=${g#* } st=1 secs=0
	[ -f "$LOGS/$KREL.status" ] && read -r st secs < "$LOGS/$KREL.status" || true
	if [ "$st" = 124 ]; then
		echo "KTEST TIMEOUT after ${TIMEOUT}s" >> "$LOGS/$KREL.log"
		results+=("$name: TIMED OUT after ${TIMEOUT}s, log $LOGS/$KREL.log")
		nfail=$((nfail + 1))
		tr -d '\r' < "$LOGS/$KREL.log" | tail -25 | sed 's/^/    /'
		continue
	fi
	report "$name" "$LOGS/$KREL.log" "$secs"
done

printf '%s\n' "${results[@]}"
echo "$npass passed, $nfail failed, $nskip skipped"
[ $nfail = 0 ]
