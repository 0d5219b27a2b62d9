#!/usr/bin/env bash
# Install the Debian 12 packages bpftrace-rec needs to build, test and benchmark.
# Idempotent: installs only what is missing, and runs `apt-get update` only then.
# Also builds the standalone pprof (offline, from Debian's Go sources) into tools/.
set -euo pipefail

PKGS=(
  make pkg-config clang llvm gcc libc6-dev binutils libclang-rt-14-dev
  libbpf-dev bpftool libelf-dev zlib1g-dev libdw-dev libiberty-dev
  # make format / format-check: the repo's .clang-format
  clang-format
  # --push: HTTP and TLS (certificates verified) by Debian's libcurl with
  # OpenSSL, not a client of our own (user/push.c)
  libcurl4-openssl-dev
  # pprof -svg, -pdf and the graph view of pprof -http run graphviz's dot
  graphviz
  linux-perf bpftrace google-perftools
  # scripts/bench-offcpu.sh: bcc's offcputime, the peer of --off-cpu
  bpfcc-tools
  time
  # JIT runtimes for test_jit.sh and test_jitguide.sh (node; java and javac 17)
  nodejs openjdk-17-jdk-headless
  # tests/integration/test_flame.sh: flamegraph.html loaded in headless Chromium
  chromium
  golang-go golang-github-google-pprof-dev
  golang-github-ianlancetaylor-demangle-dev golang-github-chzyer-readline-dev
  # make test-kernels: Debian's kernels booted in qemu from a busybox initramfs
  qemu-system-x86 busybox-static cpio xz-utils zstd
  # Real servers the integration tests start on loopback and record
  # (whole stacks under -t, off-CPU at server scale): with their own load
  # generators (pgbench comes with postgresql, redis-benchmark with redis-tools)
  postgresql redis-server redis-tools nginx-light wrk
  # libbpf-tools' offcputime (CO-RE: runs without kernel headers, where bcc's
  # offcputime-bpfcc cannot): the peer test_servers.sh and
  # scripts/bench-offcpu.sh compare --off-cpu's totals and cost with
  libbpf-tools
  # <sys/sdt.h>: tests/workloads/usdtwork.c's own USDT probes (-t usdt:, and the
  # kernel matrix's USDT pair)
  systemtap-sdt-dev
  # make deb: Debian's own packaging tools, lintian, and the man page's source
  dpkg-dev debhelper fakeroot lintian scdoc
)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  if [ "$(id -u)" != 0 ]; then
    echo "install-deps: missing packages (${missing[*]}); run as root to install them" >&2
    exit 1
  fi
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
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
echo "install-deps: ok"
