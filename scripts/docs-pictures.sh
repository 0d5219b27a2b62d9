#!/usr/bin/env bash
# The pictures of README.md and docs/design.md, made from real output:
#   docs/flamegraph.png   flamegraph.html of a real recording of the demo's
#                         workload (build/workloads/split: func_six,
#                         func_three and lib_spin doing 6:3:1 of the work),
#                         as headless Chromium draws it;
#   docs/architecture.svg docs/architecture.dot laid out by graphviz's dot.
# Usage: bash scripts/docs-pictures.sh   (as root, after make)
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d /tmp/bpftrace-rec-pictures.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

dot -Tsvg docs/architecture.dot > "$tmp/architecture.svg"
mv "$tmp/architecture.svg" docs/architecture.svg

[ "$(id -u)" = 0 ] || { echo "docs-pictures: run as root (BPF) for the flame graph" >&2; exit 1; }
./bpftrace-rec -q -F 999 -o "$tmp/rec" -- build/workloads/split 3 > /dev/null
# The page's script draws the boxes after load: give it time before the shot.
timeout 90 chromium --headless --disable-gpu --no-sandbox --user-data-dir="$tmp/chrome" \
	--hide-scrollbars --window-size=1000,260 --virtual-time-budget=5000 \
	--screenshot="$tmp/flamegraph.png" "file://$tmp/rec/flamegraph.html" > /dev/null 2>&1
mv "$tmp/flamegraph.png" docs/flamegraph.png
echo "docs/flamegraph.png docs/architecture.svg"
