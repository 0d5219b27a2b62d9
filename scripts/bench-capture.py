#!/usr/bin/env python3
"""Capture overhead, side by side in one run (a benchmark, not a test).

A fixed-work CPU-bound program (build/workloads/spin, two threads) runs
under each profiler sampling all CPUs at 999 Hz, each time right after a run
alone (its baseline: these VMs change speed for seconds at a time):

  bpftrace-rec -a -F 999            perf record -a -g -F 999
  bpftrace-rec -a -F 999 --call-graph dwarf
                                    perf record -a --call-graph dwarf,8192 -F 999
  bpftrace -e 'profile:hz:999 { @[kstack, ustack] = count(); }'
  bpftrace -e 'profile:hz:999 { }'  (the sampling interrupt alone: "sampler only")

For each: the workload's wall time (slowdown against alone), samples, lost
samples, the profiler process's CPU time, bytes per sample (bpftrace-rec:
ring-buffer records; perf: perf.data), bpftrace-rec's user-space DWARF
unwinding per unwound sample, and per sample:

  tool us   = the profiler process's CPU per sample: the slope between this
              run and one with an eighth of the work (fixed s, the
              intercept, is its start-up and one-time costs such as loading
              debug info for source lines at exit)
  total us  = (workload CPU under the tool - workload CPU in the run alone
              just before) / samples of the workload + tool us
  added us  = total us - the sampler-only row's total us
  post us   = perf: CPU of `perf script` naming every sample's stack (for
              dwarf, unwinding it), per sample in perf.data; bpftrace-rec
              writes named profiles itself, inside its tool CPU
  to profile = total us + post us

The kernel-side work of a sample (the cpu-clock timer interrupt, then the BPF
program or perf's own copy) is charged to the interrupted task, so it shows up
in the workload's CPU time. Every tool here samples on the same cpu-clock
timer, so "added" is what a tool costs beyond the interrupt they all share.

BPF cost per sample (kernel.bpf_stats_enabled: run_time_ns / run_cnt over the
workload's run) is measured twice: in each tool's own run, and with
bpftrace-rec and bpftrace recording at the same time over the same workload
(paired: the same moment, the same samples' worth of machine state; the VM's
cost per helper call drifts 2x between runs minutes apart).

Medians over --runs runs, interleaved.
Usage: scripts/bench-capture.py [--runs N] [--json FILE]   (as root, after make)
"""
import argparse, json, os, re, signal, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REC = os.path.join(ROOT, "bpftrace-rec")
SPIN = os.path.join(ROOT, "build/workloads/spin")
ITERS = "1500000000"
SHORT_ITERS = "187500000"
BT_STACKS = "profile:hz:999 { @[kstack, ustack] = count(); }"
BT_EMPTY = "profile:hz:999 { }"


def run_workload(iters=ITERS):
    """Runs spin; returns (wall s, cpu s)."""
    t0 = time.monotonic()
    p = subprocess.Popen([SPIN, iters])
    _, status, ru = os.wait4(p.pid, 0)
    return time.monotonic() - t0, ru.ru_utime + ru.ru_stime


def bpf_progs():
    out = subprocess.run(["bpftool", "prog", "show", "-j"], capture_output=True, text=True).stdout
    return {p["id"]: p for p in json.loads(out or "[]")}


def prog_stats(ids):
    """{id: (run_time_ns, run_cnt)} of the given programs now."""
    progs = bpf_progs()
    return {i: (progs[i].get("run_time_ns", 0), progs[i].get("run_cnt", 0)) for i in ids if i in progs}


def new_progs(before, name):
    return [i for i, p in bpf_progs().items() if i not in before and name in p.get("name", "")]


def start(cmd, tmp):
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=tmp,
                            preexec_fn=os.setsid)


def stop(tool):
    os.killpg(tool.pid, signal.SIGINT)
    _, status, ru = os.wait4(tool.pid, 0)
    return ru.ru_utime + ru.ru_stime


def delta(a, b):
    ns = sum(b[i][0] - a[i][0] for i in b if i in a)
    cnt = sum(b[i][1] - a[i][1] for i in b if i in a)
    return ns, cnt


def under(cmd, prog_name, tmp, iters=ITERS):
    """Starts a profiler, runs the workload under it, stops it (SIGINT)."""
    before = set(bpf_progs())
    tool = start(cmd, tmp)
    time.sleep(1.5)  # attached and idle before the work starts
    ids = new_progs(before, prog_name) if prog_name else []
    s0 = prog_stats(ids)
    wall, cpu = run_workload(iters)
    s1 = prog_stats(ids)
    tool_cpu = stop(tool)
    bpf_ns, bpf_cnt = delta(s0, s1)
    return dict(wall=wall, cpu=cpu, tool_cpu=tool_cpu, bpf_ns=bpf_ns, bpf_cnt=bpf_cnt)


def paired_bpf():
    """bpftrace-rec and bpftrace at once over one workload run: each one's
    BPF ns per sample over the same stretch of time."""
    before = set(bpf_progs())
    with tempfile.TemporaryDirectory() as tmp:
        rec = start([REC, "-q", "-a", "-F", "999", "-o", "out"], tmp)
        bt = start(["bpftrace", "-e", BT_STACKS], tmp)
        time.sleep(2.5)
        ids_rec, ids_bt = new_progs(before, "on_sample"), new_progs(before, "999")
        s0 = prog_stats(ids_rec + ids_bt)
        run_workload()
        s1 = prog_stats(ids_rec + ids_bt)
        stop(rec)
        stop(bt)
    out = []
    for ids in (ids_rec, ids_bt):
        ns, cnt = delta({i: s0[i] for i in ids if i in s0}, {i: s1[i] for i in ids if i in s1})
        out.append(ns / cnt / 1000 if cnt else 0)
    return out


def rec_samples(tmp):
    s = json.load(open(os.path.join(tmp, "out/summary.json")))
    unwound = sum(p.get("dwarf_unwound", 0) for p in s["processes"])
    unwind_ns = sum(p.get("dwarf_unwind_ns", 0) for p in s["processes"])
    work = sum(p["samples"] for p in s["processes"] if p["comm"] == "spin")
    return (s["samples"], work, s["lost_samples"], s["sample_bytes"],
            unwind_ns / unwound / 1000 if unwound else 0)


def perf_samples(tmp):
    data = os.path.join(tmp, "perf.data")
    out = subprocess.run(["perf", "report", "-i", data, "--stats"], capture_output=True, text=True).stdout
    m = re.search(r"SAMPLE events:\s+(\d+)", out)
    lost = re.search(r"LOST events:\s+(\d+)", out)
    comms = subprocess.run(["perf", "script", "-i", data, "-F", "comm"], capture_output=True,
                           text=True).stdout.split()
    # What perf spends later to name the stacks (unwinding them, for dwarf),
    # which bpftrace-rec does before it exits.
    p = subprocess.Popen(["perf", "script", "-i", data, "-F", "comm,tid,time,ip,sym"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, ru = os.wait4(p.pid, 0)
    return ((int(m.group(1)) if m else 0), comms.count("spin"), (int(lost.group(1)) if lost else 0),
            os.path.getsize(data), ru.ru_utime + ru.ru_stime)


CONFIGS = [
    ("bpftrace-rec", lambda: [REC, "-q", "-a", "-F", "999", "-o", "out"], "on_sample"),
    ("perf -g", lambda: ["perf", "record", "-q", "-a", "-g", "-F", "999", "-o", "perf.data"], None),
    ("bpftrace", lambda: ["bpftrace", "-e", BT_STACKS], "999"),
    ("bpftrace-rec dwarf", lambda: [REC, "-q", "-a", "-F", "999", "--call-graph", "dwarf", "-o", "out"], "on_sample"),
    ("perf dwarf", lambda: ["perf", "record", "-q", "-a", "--call-graph", "dwarf,8192", "-F", "999", "-o", "perf.data"], None),
    ("sampler only", lambda: ["bpftrace", "-e", BT_EMPTY], "999"),
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
    res = {"alone": [], "paired": []}
    res.update({c[0]: [] for c in CONFIGS})
    def measure(name, mk, prog, iters):
        with tempfile.TemporaryDirectory() as tmp:
            m = under(mk(), prog, tmp, iters)
            m["unwind_us"] = 0
            if name.startswith("bpftrace-rec"):
                m["samples"], m["work_samples"], m["lost"], m["bytes"], m["unwind_us"] = rec_samples(tmp)
            elif name.startswith("perf"):
                m["samples"], m["work_samples"], m["lost"], m["bytes"], m["post_cpu"] = perf_samples(tmp)
            else:  # bpftrace: every run of its program during the work
                m["samples"], m["work_samples"], m["lost"], m["bytes"] = m["bpf_cnt"], m["bpf_cnt"], 0, 0
            return m

    try:
        for r in range(a.runs):
            for name, mk, prog in CONFIGS:
                # The workload alone right before each tool's run: these VMs
                # change speed by up to 30% for seconds at a time, so a tool's
                # run is compared with the closest run without it.
                alone = dict(zip(("wall", "cpu"), run_workload()))
                res["alone"].append(alone)
                m = measure(name, mk, prog, ITERS)
                m["alone_wall"], m["alone_cpu"] = alone["wall"], alone["cpu"]
                # The same with an eighth of the work: the tool's CPU between
                # the two is per sample, the rest is fixed (start-up, and
                # one-time loads at exit such as debug info for lines).
                short = measure(name, mk, prog, SHORT_ITERS)
                m["short_cpu"], m["short_samples"] = short["tool_cpu"], short["samples"]
                res[name].append(m)
                print(f"run {r + 1}: {name}: {m['wall']:.2f}s, {m['work_samples']} samples of the work", file=sys.stderr)
            res["paired"].append(paired_bpf())
            print(f"run {r + 1}: paired BPF us/sample bpftrace-rec {res['paired'][-1][0]:.2f}, bpftrace {res['paired'][-1][1]:.2f}", file=sys.stderr)
    finally:
        open("/proc/sys/kernel/bpf_stats_enabled", "w").write(old_stats)

    med = lambda xs: statistics.median(xs)
    alone_wall = med([x["wall"] for x in res["alone"]])
    alone_cpu = med([x["cpu"] for x in res["alone"]])
    rows = {}
    for name, _, _ in CONFIGS:
        ms = res[name]
        per = lambda m, x: x / m["work_samples"] * 1e6 if m["work_samples"] else 0
        slope = lambda m: ((m["tool_cpu"] - m["short_cpu"]) / (m["samples"] - m["short_samples"])
                           if m["samples"] > m["short_samples"] else 0)
        tool_us = med([slope(m) * 1e6 for m in ms])
        rows[name] = dict(
            wall=med([m["wall"] for m in ms]),
            slowdown=med([m["wall"] / m["alone_wall"] - 1 for m in ms]),
            samples=med([m["samples"] for m in ms]),
            work_samples=med([m["work_samples"] for m in ms]),
            lost=med([m["lost"] for m in ms]),
            tool_cpu=med([m["tool_cpu"] for m in ms]),
            bpf_us=med([m["bpf_ns"] / m["bpf_cnt"] / 1000 if m["bpf_cnt"] else 0 for m in ms]),
            total_us=med([per(m, m["cpu"] - m["alone_cpu"]) for m in ms]) + tool_us,
            bytes_per_sample=med([m["bytes"] / m["samples"] if m["samples"] and m["bytes"] else 0 for m in ms]),
            unwind_us=med([m["unwind_us"] for m in ms]),
            fixed_cpu=med([m["short_cpu"] - slope(m) * m["short_samples"] for m in ms]),
            tool_us=tool_us,
            post_us=med([m.get("post_cpu", 0) / m["samples"] * 1e6 if m["samples"] else 0 for m in ms]),
        )
    shared = rows["sampler only"]["total_us"]
    for r in rows.values():
        r["added_us"] = r["total_us"] - shared
        r["to_profile_us"] = r["total_us"] + r["post_us"]
    paired = dict(rec=med([p[0] for p in res["paired"]]), bpftrace=med([p[1] for p in res["paired"]]),
                  ratio=med([p[0] / p[1] for p in res["paired"] if p[1]]))
    print(f"\nworkload alone: {alone_wall:.2f}s wall, {alone_cpu:.2f}s CPU (median of {len(res['alone'])}, "
          f"{min(x['wall'] for x in res['alone']):.2f}-{max(x['wall'] for x in res['alone']):.2f}s)")
    print(f"{'tool':<20}{'wall s':>8}{'slowdown':>10}{'samples':>9}{'of work':>9}{'lost':>6}{'tool CPU s':>11}"
          f"{'BPF us':>8}{'total us':>9}{'added us':>9}{'B/smp':>7}{'unwind us':>10}{'fixed s':>8}{'tool us':>8}"
          f"{'post us':>8}{'to profile':>11}")
    for name, r in rows.items():
        print(f"{name:<20}{r['wall']:>8.2f}{r['slowdown'] * 100:>9.1f}%{r['samples']:>9.0f}{r['work_samples']:>9.0f}"
              f"{r['lost']:>6.0f}{r['tool_cpu']:>11.3f}{r['bpf_us']:>8.2f}{r['total_us']:>9.1f}{r['added_us']:>9.1f}"
              f"{r['bytes_per_sample']:>7.0f}{r['unwind_us']:>10.2f}{r['fixed_cpu']:>8.3f}{r['tool_us']:>8.1f}"
              f"{r['post_us']:>8.1f}{r['to_profile_us']:>11.1f}")
    print(f"paired BPF us/sample (both recording at once): bpftrace-rec {paired['rec']:.2f}, "
          f"bpftrace {paired['bpftrace']:.2f}, ratio {paired['ratio']:.2f}")
    br, pf = rows["bpftrace-rec"], rows["perf -g"]
    bd, pd = rows["bpftrace-rec dwarf"], rows["perf dwarf"]
    checks = [
        ("BPF cost per sample <= 1/2 of bpftrace's (paired)", paired["ratio"], 0.5),
        ("BPF cost per sample <= 1/2 of bpftrace's (own runs)", br["bpf_us"], rows["bpftrace"]["bpf_us"] / 2),
        ("total CPU per sample <= 1/2 of perf -g's", br["total_us"], pf["total_us"] / 2),
        ("added CPU per sample <= 1/2 of perf -g's", br["added_us"], pf["added_us"] / 2),
        ("slowdown <= perf -g's", br["slowdown"], pf["slowdown"]),
        ("dwarf: total CPU per sample <= 1/2 of perf dwarf's", bd["total_us"], pd["total_us"] / 2),
        ("dwarf: added CPU per sample <= 1/2 of perf dwarf's", bd["added_us"], pd["added_us"] / 2),
        ("dwarf: nothing lost at 999 Hz", bd["lost"], 0),
        ("CPU per sample to a named profile <= 1/2 of perf -g + perf script's", br["to_profile_us"], pf["to_profile_us"] / 2),
        ("dwarf: CPU per sample to a named profile <= 1/2 of perf's", bd["to_profile_us"], pd["to_profile_us"] / 2),
    ]
    print()
    for what, got, limit in checks:
        print(f"{'PASS' if got <= limit else 'MISS'}  {what}: {got:.3g} (limit {limit:.3g})")
    if a.json:
        json.dump(dict(alone=dict(wall=alone_wall, cpu=alone_cpu), rows=rows, paired=paired, runs=a.runs,
                       raw=res), open(a.json, "w"), indent=1)


if __name__ == "__main__":
    main()
