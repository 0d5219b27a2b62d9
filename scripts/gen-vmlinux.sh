#!/usr/bin/env bash
# Regenerate vmlinux/vmlinux.h from the running kernel's BTF. The x86_64 copy
# is checked in so that hosts without BTF still build; CO-RE relocates the
# field offsets at load time, so one header serves every kernel.
set -euo pipefail
btf=${1:-/sys/kernel/btf/vmlinux}
out=$(cd "$(dirname "$0")/.." && pwd)/vmlinux/vmlinux.h
[ -r "$btf" ] || { echo "gen-vmlinux: $btf: no kernel BTF here (CONFIG_DEBUG_INFO_BTF)" >&2; exit 1; }
bpftool btf dump file "$btf" format c > "$out.tmp"
mv "$out.tmp" "$out"
echo "gen-vmlinux: wrote $out ($(wc -l < "$out") lines)"
