#!/usr/bin/env bash
# Start-up and stop (issue #35): no target's samples lost to the start-up,
# -v says where it went, and the work left for the stop does not grow with
# the recording. Real processes: spin does a fixed work in its threads'
# run(), deep spins under a 600-frame stack.
source "$(dirname "$0")/lib.sh"

ALL=(short_process_under_a short_command startup_phases_verbose stop_flat)
require_bpf "${ALL[@]}"

# share FOLDED COMM FUNC: % of COMM's samples (folded lines "COMM;...")
# whose stack holds FUNC; then " N" its samples.
share() {
	awk -v c="$2" -v f="$3" '{ n = $NF; split($0, a, ";"); if (a[1] != c) next; t += n
		if (index($0, ";" f ";") || index($0, ";" f " ")) h += n }
		END { printf "%d %d\n", t ? 100 * h / t : 0, t }' "$1"
}

# wait_recording ERRFILE PID: until the recorder says "recording" (its
# start-up may take seconds on a loaded host), or it is gone.
wait_recording() {
	local i
	for i in $(seq 600); do
		grep -q ": recording " "$1" && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# cpu_of CMD...: runs CMD, prints the CPU seconds it and its children used
# (a fixed amount of work takes however long the shared host lets it).
cpu_of() {
	python3 -c 'import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print("%.3f" % (r.ru_utime + r.ru_stime))' "$@"
}
# check_short NAME FOLDED CPU-SECONDS ERRFILE: spin's samples are about its
# CPU time at 499 Hz (at least 0.6 of it: none lost to the start-up or to
# its exit), and 95% of them named in its threads' function (run).
check_short() {
	local n named want
	read -r named n < <(share "$2" spin run)
	want=$(awk -v c="$3" 'BEGIN { printf "%d", c * 499 * 0.6 }')
	if [ "${n:-0}" -ge "$want" ] && [ "$named" -ge 95 ]; then
		pass "$1"
	else
		fail "$1" "spin: $n samples for $3 s of CPU (want >= $want), $named% in run"
		cat "$4" >&2
	fi
}

# --- -a already recording: a process that starts, runs 300 ms and exits --
# spin 5e7: ~0.3 s of CPU on two threads. It exits long before the drain
# reads its maps: its frames are named from the mappings its exit sent.
t=short_process_under_a
"$REC" -a -F 499 -o "$TMP/a" 2> "$TMP/a.err" & rec=$!
cpu=0
if wait_recording "$TMP/a.err" $rec; then
	cpu=$(cpu_of "$WL/spin" 50000000)
	sleep 0.5 # its last samples and exit drained
	kill -INT $rec
fi
wait $rec
check_short $t "$TMP/a/stacks.folded" "$cpu" "$TMP/a.err"

# --- `--`: the command's first samples are its own, named ------------------
# Through a python3 that says the CPU spin used (its own samples are
# python3's, not counted).
t=short_command
"$REC" -F 499 -o "$TMP/c" -- python3 -c 'import resource, subprocess, sys
subprocess.run(sys.argv[1:])
r = resource.getrusage(resource.RUSAGE_CHILDREN)
open("'"$TMP"'/c.cpu", "w").write("%.3f" % (r.ru_utime + r.ru_stime))' \
	"$WL/spin" 50000000 > /dev/null 2> "$TMP/c.err"
check_short $t "$TMP/c/stacks.folded" "$(cat "$TMP/c.cpu" 2>/dev/null || echo 0)" "$TMP/c.err"

# --- -v: where the start-up went, the first sample's time, and the stop ----
# The phases add up to the whole (each is a span of it), the BPF load is
# inside the load phase, and the first sample comes with the attach or after.
t=startup_phases_verbose
"$WL/spin" 100000000000 > /dev/null & spin=$!
"$REC" -v -p $spin -d 1 -o "$TMP/v" 2> "$TMP/v.err"
kill $spin
if python3 - "$TMP/v.err" << 'EOF'; then pass $t; else fail $t; cat "$TMP/v.err" >&2; fi
import re, sys
e = open(sys.argv[1]).read()
m = re.search(r"start-up ([\d.]+) ms to sampling, ([\d.]+) ms of CPU: prepare ([\d.]+) \(kallsyms, "
              r"in a thread: ([\d.]+)\), load ([\d.]+) \(BPF load and verify ([\d.]+), its CPU "
              r"([\d.]+); the targets' maps ([\d.]+)\), attach ([\d.]+); then, sampling, to this "
              r"line ([\d.]+)", e)
total, cpu, prep, ksyms, load, bpf, bpf_cpu, maps, attach, line = map(float, m.groups())
assert abs(prep + load + attach - total) < 0.5, m.group(0)
assert bpf <= load and ksyms > 0 and cpu > 0, m.group(0)
# The loading thread's CPU is within its span, the BPF load and the
# targets' maps within the load's.
assert bpf_cpu <= bpf + 1 and bpf + maps <= load + 0.5, m.group(0)
# Each program the run loads, with the verifier's own statistics; their
# verification is within the load's time.
# (Kernels before 5.19 load the _compat variants.)
v = {n.removesuffix("_compat"): (float(ms), int(insns)) for n, ms, insns in
     re.findall(r"verifier: (\w+) ([\d.]+) ms, (\d+) insns processed", e)}
assert {"on_sample", "on_cfi_walk", "on_fork", "on_exec", "on_exit"} <= set(v), v
assert sum(ms for ms, _ in v.values()) <= bpf + 1, (v, bpf)
# The CFI walker's frames in bpf_loop callbacks: 223,258 insns processed on
# 6.18 when they were a loop the verifier followed step by step (23,518 so;
# the compat walker's ~100,000 are its loop's).
if "verifier: on_cfi_walk " in e:
    assert v["on_cfi_walk"][1] < 100000, v["on_cfi_walk"]
# The sampler's record sent by a global function (checked once), its own
# frame-pointer walk (taken only where the tail call into the CFI walker
# failed) left to the kernel's: 74,376 insns processed on 6.18 before,
# 31,464 so. (The compat sampler's are another program.)
if "verifier: on_sample " in e:
    assert v["on_sample"][1] < 45000, v["on_sample"]
f = re.search(r"first sample: ([\d.]+) ms after the start", e)
# The sampler's links attach one CPU after the other.
assert float(f.group(1)) >= total - attach - 1, (f.group(0), total)
# And where the time from the stop to the files went: its parts add up.
m = re.search(r"stop to files ([\d.]+) ms: the last records and counters ([\d.]+), naming again "
              r"([\d.]+), files ([\d.]+), sinks' end ([\d.]+)", e)
total, *parts = map(float, m.groups())
assert abs(sum(parts) - total) < 0.5, m.group(0)
EOF


# --- the stop's work does not grow with the recording ----------------------
# deep's 600-frame stack at 499 Hz, -d 2 and -d 10: the writers name and add
# each distinct stack once, not every sample's 600 frames again at the stop.
# The CPU of two of the files (-v; CPU, not the clock, so that the host's
# load does not count) for each sample more in the long one: before, 20-40
# us (each sample's 600 frames named and added again), now ~0. Not
# profile.pb.gz's: its fixed part (a program's debug info read for source
# lines, 45-90 ms) is noisier than the samples' part.
# On a host loaded enough that deep got too few samples in 10 s for the
# difference to show (it had 5 % of a core once), the long one is taken
# again at 25 s.
t=stop_flat
nsamples() { awk '{ n += $NF } END { print n + 0 }' "$1/stacks.folded" 2>/dev/null; }
for d in 2 10 25; do
	[ $d = 25 ] && [ "$(nsamples "$TMP/s10")" -ge $(($(nsamples "$TMP/s2") + 300)) ] && break
	"$WL/deep" 600 64 100 > /dev/null & deep=$!
	sleep 0.3
	"$REC" -v -F 499 -p $deep -d $d -o "$TMP/s$d" 2> "$TMP/s$d.err"
	kill $deep
	[ $d = 25 ] && rm -rf "$TMP/s10" && mv "$TMP/s25" "$TMP/s10" && mv "$TMP/s25.err" "$TMP/s10.err"
done
if python3 - "$TMP/s2" "$TMP/s10" << 'EOF'; then pass $t; else fail $t; cat "$TMP/s2.err" "$TMP/s10.err" >&2; fi
import re, sys
cpu, n = [], []
for d in sys.argv[1:]:
    e = open(d + ".err").read()
    m = re.search(r"files' CPU [\d.]+ ms: .*, flame graphs ([\d.]+), cpu-PID.prof ([\d.]+)", e)
    cpu.append(float(m.group(1)) + float(m.group(2)))
    n.append(sum(int(l.split()[-1]) for l in open(d + "/stacks.folded")))
us = (cpu[1] - cpu[0]) * 1000 / max(n[1] - n[0], 1)
print("samples %d %d, stop CPU %.1f %.1f ms: %.1f us a sample more" % (*n, *cpu, us), file=sys.stderr)
# The long one has the samples to show it (deep ran all along).
assert n[1] - n[0] >= 300, n
assert us < 8, us
EOF
