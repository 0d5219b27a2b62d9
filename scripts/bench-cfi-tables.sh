#!/usr/bin/env bash
# Unwind-table builds (user/cfi_table.c; a benchmark, not a test): for libc,
# libstdc++, python3 and node (those present), the FDEs, rows, bytes,
# fallback and no-CFI rows of each table, and the time to build it from the
# open file (median of 5; the file is in the page cache after the first).
# Usage: bash scripts/bench-cfi-tables.sh [FILE...]   (after make)
set -eu
cd "$(dirname "$0")/.."
BIN=${BPFTRACE_REC_BUILD:-build}/tests/test_cfi_table
[ -x "$BIN" ] || { echo "bench-cfi-tables: make $BIN first" >&2; exit 1; }
FILES=("$@")
if ((${#FILES[@]} == 0)); then
	for f in /lib/x86_64-linux-gnu/libc.so.6 /usr/lib/x86_64-linux-gnu/libstdc++.so.6 \
		/usr/bin/python3 /usr/bin/node; do
		[ -e "$f" ] && FILES+=("$(readlink -f "$f")")
	done
fi
exec "$BIN" --bench "${FILES[@]}"
