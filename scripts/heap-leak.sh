#!/usr/bin/env bash
# A leak found (issue 36): tests/workloads/heapsplit.c -l SECONDS (leak_site
# keeps 1 MiB/s, churn frees all it allocates) recorded with --heap
# --window WINDOW. The in-use growth from the first window's heap profile to
# the last whole one's (pprof -diff_base) must name leak_site first, with
# the bytes leaked between the two windows' ends (1 MiB a second, from the
# lengths the recorder gives them) within 10 %, and churn with less than 512 KiB.
#   bash scripts/heap-leak.sh [SECONDS [WINDOW [RATE]]]
# Default 60 s, --window 10 and --heap-rate 64 KiB: the issue's run, ~50 MiB
# grown from the first window's end to the sixth's (~800 samples, a standard
# error of ~3.5 %). test_heap.sh's heap_leak_window runs it for 16 s under
# --window 5 at 8 KiB (CI's budget). Prints the figures; exits 0 when the
# leak is found as said, 1 when not.
set -u
cd "$(dirname "$0")/.."
SECONDS_=${1:-60}
WINDOW=${2:-10}
RATE=${3:-65536}
PPROF=${PPROF:-tools/pprof}
REC=${REC:-./bpftrace-rec}
WL=${WL:-build/workloads}
T=$(mktemp -d /tmp/heap-leak.XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
"$REC" --heap --heap-rate "$RATE" --window "$WINDOW" -o "$T/l" -- "$WL/heapsplit" -l "$SECONDS_" \
	>/dev/null 2>"$T/err"
# The whole windows (the recorder's "window N: ... in 5.0s: DIR" lines; a
# last one cut by the workload's exit is shorter) and each one's length.
wins=()
lens=()
while read -r len dir; do
	awk -v l="$len" -v w="$WINDOW" 'BEGIN { exit !(l >= 0.9 * w) }' && [ -s "$dir/heap.pb.gz" ] || continue
	wins+=("$dir")
	lens+=("$len")
done < <(sed -nE 's/.*: window [0-9]+: .* in ([0-9.]+)s: (.*)$/\1 \2/p' "$T/err")
if [ ${#wins[@]} -lt 2 ]; then
	echo "heap-leak: ${#wins[@]} whole windows (of $(ls -d "$T"/l/window-* 2>/dev/null | wc -l))"
	cat "$T/err"
	exit 1
fi
first=${wins[0]} last=${wins[${#wins[@]} - 1]}
d=$("$PPROF" -sample_index=inuse_space -top -unit=B -diff_base="$first/heap.pb.gz" "$last/heap.pb.gz" 2>/dev/null)
cum() { awk -v f="$1" '$NF == f { v = $4; sub("B$", "", v); print v; found = 1; exit } END { if (!found) print 0 }'; }
top=$(awk '/flat%/ { getline; print $NF; exit }' <<<"$d")
grew=$(cum leak_site <<<"$d")
churned=$(cum churn <<<"$d")
# From the first's end to the last's: the lengths of the others.
secs=$(printf "%s\n" "${lens[@]:1}" | awk '{ s += $1 } END { printf "%.1f", s }')
want=$(awk -v s="$secs" 'BEGIN { printf "%.0f", s * 10486 * 100 }')
printf "heap-leak: %d whole windows of %s s; from the first's end to the last's, %s s: top %s, leak_site grew %.1f MiB (%.1f MiB leaked), churn %.2f MiB\n" \
	${#wins[@]} "$WINDOW" "$secs" "$top" "$(awk -v v="$grew" 'BEGIN { print v / 1048576 }')" \
	"$(awk -v v="$want" 'BEGIN { print v / 1048576 }')" "$(awk -v v="$churned" 'BEGIN { print v / 1048576 }')"
if [ "$top" = leak_site ] && awk -v g="$grew" -v w="$want" -v c="$churned" \
	'BEGIN { exit !(g >= 0.9 * w && g <= 1.1 * w && c < 524288 && c > -524288) }'; then
	exit 0
fi
head -20 <<<"$d"
cat "$T/err"
exit 1
