#!/usr/bin/env bash
# Installs the Debian 12 packages bpftrace-rec needs, by purpose:
#   install-deps.sh         (make deps) building, packaging, running and
#                           reading a recording: the compiler and libraries,
#                           make deb's tools, the readers, and the
#                           standalone pprof built into tools/;
#   install-deps.sh --test  (make test-deps, which make test calls) the test
#                           lab on top: the servers, load generators and peer
#                           tools the tests run, qemu and its kernels' tools,
#                           the JIT runtimes, Chromium.
# Idempotent: installs only what is missing, and runs `apt-get update` only
# then. The lab's servers (PostgreSQL, Redis, nginx) are never left running or
# enabled as system services: the tests start their own, on loopback.
set -euo pipefail

# What `make`, `make deb`, `make install` and reading a recording need; the
# README's table says why each is there.
DEPS=(
  make pkg-config gcc g++ libc6-dev binutils clang llvm
  libbpf-dev bpftool libelf-dev zlib1g-dev libdw-dev libiberty-dev
  # --push: Debian's libcurl with OpenSSL, loaded with dlopen (user/push.c)
  libcurl4-openssl-dev
  # make's test workloads: <sys/sdt.h> (usdtwork.c), Go 1.19 (gowork.go,
  # and tools/pprof below, from Debian's pprof sources)
  systemtap-sdt-dev golang-go golang-github-google-pprof-dev
  golang-github-ianlancetaylor-demangle-dev golang-github-chzyer-readline-dev
  # make install's man page
  scdoc
  # make deb (the README's install): Debian's packaging tools (dpkg-buildpackage
  # checks build-essential) and lintian,
  # and git, whose list of the tree's files it packs
  build-essential dpkg-dev debhelper fakeroot lintian git
  # the readers: google-pprof (cpu-PID.prof); llvm above has llvm-xray;
  # graphviz's dot draws pprof -svg and pprof -http's graph
  google-perftools graphviz
)

# The test lab: what tests/, make test-kernels, make fuzz and the benchmarks
# run, none of which a user of the tool needs.
TEST_DEPS=(
  # make format-check; the sanitizer build and make fuzz (compiler-rt)
  clang-format libclang-rt-14-dev
  # peers the tests and benchmarks compare with; /usr/bin/time measures
  linux-perf bpftrace bpfcc-tools libbpf-tools time
  # --heap's peer (test_heap's heap_vs_heaptrack) and the allocators it is
  # tried with besides glibc's (libtcmalloc-minimal4 comes with
  # google-perftools)
  heaptrack libjemalloc2
  # JIT runtimes (test_jit.sh, test_jitguide.sh) and flamegraph.html's browser
  nodejs openjdk-17-jdk-headless chromium
  # test_node's real program against node --cpu-prof: TypeScript's compiler
  node-typescript
  # make test-kernels: Debian's kernels booted in qemu from a busybox initramfs
  qemu-system-x86 busybox-static cpio xz-utils zstd
  # servers the tests start on loopback and record, with their load
  # generators (pgbench comes with postgresql, redis-benchmark with redis-tools)
  postgresql redis-server redis-tools nginx-light wrk
  # the tests' scripts and test_docs's ./myprog (OpenSSL's SSL_read)
  python3 libssl-dev
)
# The lab's servers as Debian packages them: system services it starts on
# install and at boot.
LAB_SERVICES=(postgresql redis-server nginx)

test=
[ "${1:-}" = --test ] && test=1
pkgs=("${DEPS[@]}")
[ -n "$test" ] && pkgs+=("${TEST_DEPS[@]}")

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

# policy-rc.d (Debian's invoke-rc.d and deb-systemd-invoke ask it) exiting
# 101 keeps the servers from starting as they are installed; one that is
# already there (a container's) is left as it is.
policy=/usr/sbin/policy-rc.d
own_policy=
restore_policy() { [ -z "$own_policy" ] || rm -f "$policy"; }
trap restore_policy EXIT

if ((${#missing[@]})); then
  if [ "$(id -u)" != 0 ]; then
    echo "install-deps: missing packages (${missing[*]}); run as root to install them" >&2
    exit 1
  fi
  if [ -n "$test" ] && [ ! -e "$policy" ]; then
    printf '#!/bin/sh\n# scripts/install-deps.sh --test: no service starts while it installs\nexit 101\n' > "$policy"
    chmod 0755 "$policy"
    own_policy=1
  fi
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
restore_policy
own_policy=

# The lab's servers, however they were installed: stopped and not enabled at
# boot. Only their system instances: a test's own server (its directory,
# its port) is not a service.
if [ -n "$test" ] && [ "$(id -u)" = 0 ]; then
  for s in "${LAB_SERVICES[@]}"; do
    [ -e "/etc/init.d/$s" ] || [ -e "/lib/systemd/system/$s.service" ] || continue
    if [ -d /run/systemd/system ]; then
      systemctl disable --now "$s.service" >/dev/null 2>&1 || true
      [ "$s" != postgresql ] || systemctl stop 'postgresql@*.service' >/dev/null 2>&1 || true
    else
      # No systemd (a container): the init script's own status and stop,
      # which act on the service's pid file and clusters alone.
      if [ -x "/etc/init.d/$s" ] && "/etc/init.d/$s" status >/dev/null 2>&1; then
        "/etc/init.d/$s" stop >/dev/null 2>&1 || true
      fi
      update-rc.d "$s" disable >/dev/null 2>&1 || true
    fi
  done
fi

# The standalone pprof: `go tool pprof` 1.19 names legacy-profile frames only
# through DWARF, the standalone one also uses nm/llvm-symbolizer.
here=$(cd "$(dirname "$0")/.." && pwd)
if [ ! -x "$here/tools/pprof" ]; then
  mkdir -p "$here/tools"
  echo "install-deps: building standalone pprof into tools/pprof"
  # Debian's Go 1.19 by its path: GOPATH mode over Debian's Go sources.
  # The machines also have a newer Go first on PATH (/usr/local/go), kept
  # for the tests' real engines (tests/fleet/), which must not build this.
  (cd /tmp && GOPATH=/usr/share/gocode GO111MODULE=off GOCACHE="${GOCACHE:-/tmp/go-cache}" \
    /usr/lib/go-1.19/bin/go build -o "$here/tools/pprof" github.com/google/pprof)
fi
echo "install-deps: ok${test:+ (with the test lab)}"
