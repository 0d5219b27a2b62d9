# Helpers for the integration tests (sourced). Tests print PASS/FAIL/SKIP
# lines; tests/run.sh counts them.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# The build under test: tests/run.sh passes the sanitizer build's (make test
# SANITIZE=1) through these; by default the normal build.
BUILD=${BPFTRACE_REC_BUILD:-build}
[[ $BUILD == /* ]] || BUILD=$ROOT/$BUILD
REC=${BPFTRACE_REC:-bpftrace-rec}
[[ $REC == /* ]] || REC=$ROOT/$REC
WL=$BUILD/workloads
PPROF=${PPROF:-$ROOT/tools/pprof}
TMP=$(mktemp -d /tmp/bpftrace-rec-test.XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$TMP"; jobs -p | xargs -r kill 2>/dev/null' EXIT

pass() { echo "PASS $1"; }
fail() { echo "FAIL $1${2:+: $2}"; }
skip() { echo "SKIP $1: $2"; }
# check NAME COND-CMD... [-- why]: PASS if the command succeeds.
check() {
	local name=$1
	shift
	if "$@"; then pass "$name"; else fail "$name"; fi
}

# Integration tests need root and working BPF. Elsewhere they skip with the
# reason; in CI (CI=true) that is a failure, as CI runs as root with BPF.
bpf_unavailable() {
	if [ "$(id -u)" != 0 ]; then echo "not root (BPF needs CAP_BPF and CAP_PERFMON)"; return 0; fi
	if [ ! -r /sys/kernel/btf/vmlinux ]; then echo "no kernel BTF"; return 0; fi
	if [ ! -x "$REC" ]; then echo "bpftrace-rec is not built (make)"; return 0; fi
	return 1
}
require_bpf() { # TESTNAME...: exits the script after skipping them all
	local why
	why=$(bpf_unavailable) || return 0
	for t in "$@"; do
		if [ "${CI:-}" = true ]; then fail "$t" "BPF tests cannot be skipped in CI: $why"; else skip "$t" "$why"; fi
	done
	exit 0
}
require_tool() { # TOOL TESTNAME: 0 if present, else skip (fail in CI)
	command -v "$1" >/dev/null 2>&1 && return 0
	if [ "${CI:-}" = true ]; then fail "$2" "$1 missing in CI"; else skip "$2" "$1 not installed (make test-deps)"; fi
	return 1
}

# flat% of a function in `pprof -top` output (0 when absent).
pprof_flat() { # FUNC < pprof -top output
	awk -v f="$1" '$NF == f && $2 ~ /%$/ { sub("%", "", $2); print $2; found = 1; exit } END { if (!found) print 0 }'
}
# A free loopback port: the kernel's choice, so that developers' and CI's
# runs on one machine do not meet.
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# pprof's view of a profile: per leaf function, its flat value of a sample
# type, a line "NAME<TAB>VALUE" each; "TOTAL" the whole. Every node (no
# count or fraction cut), so that sums over them are exact.
pprof_leaves() { # FILE INDEX [UNIT]
	"$PPROF" -top -nodecount=1000000 -nodefraction=0 -edgefraction=0 -sample_index="$2" \
		${3:+-unit=$3} "$1" 2>/dev/null |
		awk '/ of .* total/ { for (i = 1; i <= NF; i++) if ($i == "total") { t = $(i - 1); gsub(/[^0-9.]/, "", t); print "TOTAL\t" t } }
		     $1 ~ /^[0-9]/ && $2 ~ /%$/ && $5 ~ /%$/ { v = $1; gsub(/[^0-9.]/, "", v); n = $6; for (i = 7; i <= NF; i++) n = n " " $i; print n "\t" v }'
}
# flat% of a function in `google-pprof --text` output.
gpprof_flat() { # FUNC < google-pprof --text output
	awk -v f="$1" '$NF == f && $2 ~ /%$/ { sub("%", "", $2); print $2; found = 1; exit } END { if (!found) print 0 }'
}
# within VALUE EXPECTED TOL: |VALUE - EXPECTED| <= TOL
within() { awk -v v="$1" -v e="$2" -v t="$3" 'BEGIN { d = v - e; if (d < 0) d = -d; exit !(d <= t) }'; }
# at_least VALUE MIN: VALUE >= MIN
at_least() { awk -v v="$1" -v m="$2" 'BEGIN { exit !(v >= m) }'; }
# rec_window ERR CMD...: CMD (a mark in the workload: a signal, a line to
# its stdin) at the "recording" line of ERR, a -v recorder's stderr, and
# again at its "stopping:": the recording's window in the workload's clock.
rec_window() {
	local err=$1
	shift
	for _ in $(seq 1200); do grep -q "recording" "$err" && break; sleep 0.05; done
	"$@"
	for _ in $(seq 1200); do grep -q "stopping:" "$err" && break; sleep 0.05; done
	"$@"
}
# window_shares FILE WORD: "A B C", the percent shares of the three totals
# between the first two "WORD A B C" lines of FILE (the workload's at
# rec_window's marks), waited for; "0 0 0" without them.
window_shares() {
	for _ in $(seq 100); do [ "$(grep -c "^$2 " "$1")" -ge 2 ] && break; sleep 0.05; done
	awk -v w="$2" '$1 == w { n++; for (i = 2; i <= 4; i++) s[n, i] = $i }
		END { t = 0; for (i = 2; i <= 4; i++) { d[i] = s[2, i] - s[1, i]; t += d[i] }
		      if (n < 2 || t <= 0) print "0 0 0"; else printf "%.1f %.1f %.1f", 100 * d[2] / t, 100 * d[3] / t, 100 * d[4] / t }' "$1"
}
# within_samples SHARE% EXPECTED% N TOL: SHARE within TOL of EXPECTED, or
# within 4 standard deviations of a share of N samples (binomial), when N is
# too few for TOL: on a loaded machine a recording of a fixed time holds the
# samples of the CPU its workload had (split at 499 Hz for 2 s: ~2000 idle,
# 52-206 beside two busy loops at load 24, where +-6 is 1.7 deviations of 206).
within_samples() {
	awk -v v="$1" -v e="$2" -v n="$3" -v t="$4" 'BEGIN {
		p = e / 100; s = n > 0 ? 400 * sqrt(p * (1 - p) / n) : 100
		if (s > t) t = s; d = v - e; if (d < 0) d = -d; exit !(d <= t) }'
}

# Checks the 6:3:1 split (func_six, func_three, lib_spin) in a -top listing.
check_split() { # NAME FILE-WITH-TOP-OUTPUT EXTRACTOR
	local name=$1 out=$2 get=$3 a b c
	a=$($get func_six < "$out"); b=$($get func_three < "$out"); c=$($get lib_spin < "$out")
	if within "$a" 60 5 && within "$b" 30 5 && within "$c" 10 5; then
		pass "$name"
	else
		fail "$name" "func_six $a% func_three $b% lib_spin $c% (want 60/30/10 +-5)"
		sed -n 1,15p "$out" >&2
	fi
}

# Faults and hostile inputs: fault_case checks like `check` and adds a row to
# $BUILD/faults.tsv, which tests/run.sh starts empty and scripts/fault-table.sh
# turns into docs/faults.md (the table of every fault with its result).
FAULT_ROWS=${FAULT_ROWS:-$BUILD/faults.tsv}
fault_case() { # NAME "fault or input" "what the tool does" CMD...
	local name=$1 input=$2 result=$3 st
	shift 3
	if "$@"; then pass "$name"; st=pass; else fail "$name"; st=FAIL; fi
	mkdir -p "$(dirname "$FAULT_ROWS")"
	printf '%s\t%s\t%s\t%s\n' "$name" "$input" "$result" "$st" >> "$FAULT_ROWS"
}

# Shares (%) of all samples of PROFILE (by SAMPLE_INDEX, default cpu) whose
# outermost frame is in ROOTS (comma-separated), whose stack holds HOLD, and
# whose outermost frame is [uprobes]; with the worst stacks on stderr.
stack_shares() { # PROFILE ROOTS HOLD [SAMPLE_INDEX]
	"$PPROF" -traces ${4:+-sample_index=$4} "$1" 2>/dev/null | python3 -c '
import re, sys, collections
roots, hold = set(sys.argv[1].split(",")), sys.argv[2]
unit = {"": 1, "ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1, "min": 60, "h": 3600}
tot = root = held = upr = 0.0
bad = collections.Counter()
for b in sys.stdin.read().split("-----------+")[1:]:
    frames, v = [], 0.0
    for line in b.splitlines()[1:]:
        if not line.strip() or re.match(r"^\s+\w+:\s", line):
            continue
        m = re.match(r"^\s+([0-9.]+)(ns|us|ms|s|min|h)?\s+(\S.*)$", line)
        if m and not frames:
            v = float(m.group(1)) * unit[m.group(2) or ""]
            frames.append(m.group(3).strip())
        else:
            frames.append(line.strip())
    if not frames:
        continue
    tot += v
    if frames[-1] in roots:
        root += v
    else:
        bad[" <- ".join(frames[-5:])] += v
    held += v if hold in frames else 0
    upr += v if frames[-1] == "[uprobes]" else 0
tot = tot or 1
print("%.2f %.2f %.2f" % (100 * root / tot, 100 * held / tot, 100 * upr / tot))
for k, n in bad.most_common(4):
    print("  %.2f%% %s" % (100 * n / tot, k), file=sys.stderr)
' "$2" "$3"
}
# "N H B" over all samples of PROFILE: N, the samples; H, those whose stack
# holds a frame in HOLD (comma-separated); B, of those, the ones with an
# [unknown] frame, or (ROOT given) whose outermost frame is not ROOT.
held_bad() { # PROFILE HOLD [ROOT]
	"$PPROF" -traces "$1" 2>/dev/null | python3 -c '
import sys
hold, root = set(sys.argv[1].split(",")), sys.argv[2]
n = h = b = 0
for blk in sys.stdin.read().split("-----------+")[1:]:
    fr = [l.split()[-1] for l in blk.splitlines()[1:] if l.strip() and not l.strip().endswith(":") and ":  " not in l]
    if not fr:
        continue
    n += 1
    if hold.intersection(fr):
        h += 1
        b += "[unknown]" in fr or (root != "" and fr[-1] != root)
print(n, h, b)' "$2" "${3:-}"
}
# Share (%) of all samples of PROFILE by SAMPLE_INDEX whose stack holds one
# of FUNCS (comma-separated; they never share a stack); for counts, which
# pprof -traces does not print.
cum_share() { # PROFILE SAMPLE_INDEX FUNCS
	"$PPROF" -top -cum -nodecount=1000 -sample_index="$2" "$1" 2>/dev/null |
		awk -v f="$3" 'BEGIN { n = split(f, a, ","); for (i = 1; i <= n; i++) w[a[i]] = 1 }
			$NF in w { sub("%", "", $5); s += $5 } END { print s + 0 }'
}
