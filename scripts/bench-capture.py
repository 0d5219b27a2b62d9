#!/usr/bin/env python3
"""Capture overhead, side by side in one run (a benchmark, not a test).

A fixed-work CPU-bound program (build/workloads/spin, two threads) runs
alone, then under each profiler sampling all CPUs at 999 Hz:

  bpftrace-rec -a -F 999            perf record -a -g -F 999
  bpftrace-rec -a -F 999 --call-graph dwarf
                                    perf record -a --call-graph dwarf,8192 -F 999
  bpftrace -e 'profile:hz:999 { @[kstack, ustack] = count(); }'

For each: the workload's wall time (slowdown against alone), samples, lost
samples, the profiler process's own CPU time (including writing its files),
the BPF program's cost per sample (kernel.bpf_stats_enabled: run_time_ns /
run_cnt), bytes per sample (bpftrace-rec: ring-buffer records; perf: perf.data),
bpftrace-rec's user-space DWARF unwinding per unwound sample, the tool's fixed
start-up CPU (recording an idle 0.2 s) and its CPU per sample beyond that, and
the total CPU charged per sample:
  (workload CPU under the tool - workload CPU alone + tool CPU) / samples
(the kernel-side sampling work is charged to the interrupted task, so it
shows up in the workload's CPU time). Medians over --runs runs, interleaved.
Usage: scripts/bench-capture.py [--runs N] [--json FILE]   (as root, after make)
"""
import argparse, json, os, re, resource, signal, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REC = os.path.join(ROOT, "bpftrace-rec")
SPIN = os.path.join(ROOT, "build/workloads/spin")
ITERS = "1500000000"


def run_workload():
    """Runs spin; returns (wall s, cpu s)."""
    t0 = time.monotonic()
    p = subprocess.Popen([SPIN, ITERS])
    _, status, ru = os.wait4(p.pid, 0)
    return time.monotonic() - t0, ru.ru_utime + ru.ru_stime


def bpf_progs():
    out = subprocess.run(["bpftool", "prog", "show", "-j"], capture_output=True, text=True).stdout
    return {p["id"]: p for p in json.loads(out or "[]")}


def under(cmd, prog_name, tmp):
    """Starts a profiler, runs the workload under it, stops it (SIGINT)."""
    before = set(bpf_progs())
    tool = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=tmp,
                            preexec_fn=os.setsid)
    time.sleep(1.5)  # attached and idle before the work starts
    wall, cpu = run_workload()
    progs = [p for i, p in bpf_progs().items() if i not in before and prog_name and prog_name in p.get("name", "")]
    os.killpg(tool.pid, signal.SIGINT)
    _, status, ru = os.wait4(tool.pid, 0)
    err = tool.stderr.read().decode(errors="replace")
    bpf_ns = sum(p.get("run_time_ns", 0) for p in progs)
    bpf_cnt = sum(p.get("run_cnt", 0) for p in progs)
    return dict(wall=wall, cpu=cpu, tool_cpu=ru.ru_utime + ru.ru_stime, bpf_ns=bpf_ns,
                bpf_cnt=bpf_cnt, stderr=err)


def startup_cpu(cmd):
    """CPU of a tool recording an idle 0.2 s: its fixed start-up and teardown."""
    with tempfile.TemporaryDirectory() as tmp:
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp,
                             preexec_fn=os.setsid)
        time.sleep(0.2)
        os.killpg(p.pid, signal.SIGINT)
        _, _, ru = os.wait4(p.pid, 0)
        return ru.ru_utime + ru.ru_stime


def rec_samples(tmp):
    s = json.load(open(os.path.join(tmp, "out/summary.json")))
    unwound = sum(p.get("dwarf_unwound", 0) for p in s["processes"])
    unwind_ns = sum(p.get("dwarf_unwind_ns", 0) for p in s["processes"])
    return s["samples"], s["lost_samples"], s["sample_bytes"], (unwind_ns / unwound / 1000 if unwound else 0)


def perf_samples(tmp):
    out = subprocess.run(["perf", "report", "-i", os.path.join(tmp, "perf.data"), "--stats"],
                         capture_output=True, text=True).stdout
    m = re.search(r"SAMPLE events:\s+(\d+)", out)
    lost = re.search(r"LOST events:\s+(\d+)", out)
    size = os.path.getsize(os.path.join(tmp, "perf.data"))
    return (int(m.group(1)) if m else 0), (int(lost.group(1)) if lost else 0), size


CONFIGS = [
    ("bpftrace-rec", lambda t: [REC, "-q", "-a", "-F", "999", "-o", "out"], "on_sample"),
    ("perf -g", lambda t: ["perf", "record", "-q", "-a", "-g", "-F", "999", "-o", "perf.data"], None),
    ("bpftrace", lambda t: ["bpftrace", "-e", "profile:hz:999 { @[kstack, ustack] = count(); }"], "999"),
    ("bpftrace-rec dwarf", lambda t: [REC, "-q", "-a", "-F", "999", "--call-graph", "dwarf", "-o", "out"], "on_sample"),
    ("perf dwarf", lambda t: ["perf", "record", "-q", "-a", "--call-graph", "dwarf,8192", "-F", "999", "-o", "perf.data"], None),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench-capture: run as root (BPF and perf need it)")
    old_stats = open("/proc/sys/kernel/bpf_stats_enabled").read().strip()
    open("/proc/sys/kernel/bpf_stats_enabled", "w").write("1")
    res = {"alone": []}
    res.update({c[0]: [] for c in CONFIGS})
    try:
        for r in range(a.runs):
            res["alone"].append(dict(zip(("wall", "cpu"), run_workload())))
            for name, mk, prog in CONFIGS:
                with tempfile.TemporaryDirectory() as tmp:
                    m = under(mk(tmp), prog, tmp)
                    m["unwind_us"] = 0
                    if name.startswith("bpftrace-rec"):
                        m["samples"], m["lost"], m["bytes"], m["unwind_us"] = rec_samples(tmp)
                    elif name.startswith("perf"):
                        m["samples"], m["lost"], m["bytes"] = perf_samples(tmp)
                    else:
                        m["samples"], m["lost"], m["bytes"] = m["bpf_cnt"], 0, 0
                    res[name].append(m)
                    print(f"run {r + 1}: {name}: {m['wall']:.2f}s, {m['samples']} samples", file=sys.stderr)
    finally:
        open("/proc/sys/kernel/bpf_stats_enabled", "w").write(old_stats)

    med = lambda xs: statistics.median(xs)
    # The tools' fixed costs (loading, verifying, allocating, writing): not per sample.
    fixed = {name: med([startup_cpu(mk(None)) for _ in range(3)]) for name, mk, _ in CONFIGS}
    alone_wall = med([x["wall"] for x in res["alone"]])
    alone_cpu = med([x["cpu"] for x in res["alone"]])
    rows = {}
    for name, _, _ in CONFIGS:
        ms = res[name]
        samples = med([m["samples"] for m in ms])
        row = dict(
            wall=med([m["wall"] for m in ms]),
            slowdown=med([m["wall"] for m in ms]) / alone_wall - 1,
            samples=samples,
            lost=med([m["lost"] for m in ms]),
            tool_cpu=med([m["tool_cpu"] for m in ms]),
            bpf_us=med([m["bpf_ns"] / m["bpf_cnt"] / 1000 if m["bpf_cnt"] else 0 for m in ms]),
            total_us=med([(m["cpu"] - alone_cpu + m["tool_cpu"]) / m["samples"] * 1e6 if m["samples"] else 0 for m in ms]),
            bytes_per_sample=med([m["bytes"] / m["samples"] if m["samples"] and m["bytes"] else 0 for m in ms]),
            unwind_us=med([m["unwind_us"] for m in ms]),
            startup_cpu=fixed[name],
            tool_us=med([(m["tool_cpu"] - fixed[name]) / m["samples"] * 1e6 if m["samples"] else 0 for m in ms]),
        )
        rows[name] = row
    print(f"\nworkload alone: {alone_wall:.2f}s wall, {alone_cpu:.2f}s CPU (median of {a.runs})")
    print(f"{'tool':<20}{'wall s':>8}{'slowdown':>10}{'samples':>9}{'lost':>6}{'tool CPU s':>11}{'BPF us/smp':>11}{'total us/smp':>13}{'B/smp':>8}{'unwind us':>10}{'start-up s':>11}{'tool us/smp':>12}")
    for name, r in rows.items():
        print(f"{name:<20}{r['wall']:>8.2f}{r['slowdown'] * 100:>9.1f}%{r['samples']:>9.0f}{r['lost']:>6.0f}{r['tool_cpu']:>11.3f}{r['bpf_us']:>11.2f}{r['total_us']:>13.1f}{r['bytes_per_sample']:>8.0f}{r['unwind_us']:>10.2f}{r['startup_cpu']:>11.3f}{r['tool_us']:>12.1f}")
    br, pf, bt = rows["bpftrace-rec"], rows["perf -g"], rows["bpftrace"]
    bd, pd = rows["bpftrace-rec dwarf"], rows["perf dwarf"]
    checks = [
        ("BPF cost per sample <= 1/2 of bpftrace's", br["bpf_us"], bt["bpf_us"] / 2),
        ("total CPU per sample <= 1/2 of perf -g's", br["total_us"], pf["total_us"] / 2),
        ("slowdown <= perf -g's", br["slowdown"], pf["slowdown"]),
        ("dwarf: total CPU per sample <= 1/2 of perf dwarf's", bd["total_us"], pd["total_us"] / 2),
        ("dwarf: nothing lost at 999 Hz", bd["lost"], 0),
    ]
    print()
    for what, got, limit in checks:
        print(f"{'PASS' if got <= limit else 'MISS'}  {what}: {got:.3g} (limit {limit:.3g})")
    if a.json:
        json.dump(dict(alone=dict(wall=alone_wall, cpu=alone_cpu), rows=rows, runs=a.runs), open(a.json, "w"), indent=1)


if __name__ == "__main__":
    main()
