#!/usr/bin/env python3
"""Cost of exact tracing (-t), side by side in one run (a benchmark, not a test).

build/workloads/calls makes a known number of calls on two threads. It runs:
  alone;
  under bpftrace-rec -t (uprobe + uretprobe + BPF + ring buffer + drain + XRay writer);
  under a bare uprobe (bpftrace, entry probes only, `@ = count()`);
and, built with -fxray-instrument (calls-xray), with XRay unpatched and in
compiler-rt's own in-process FDR mode.
Per configuration: CPU time (workload + tool) minus the matching baseline,
divided by the calls (or probe hits), as ns per traced call; and for
bpftrace-rec the events drained per second of tracing and the events lost.
Usage: scripts/bench-trace.py [--rounds N] [--runs N]   (as root, after make)
"""
import argparse, json, os, signal, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REC = os.path.join(ROOT, "bpftrace-rec")
CALLS = os.path.join(ROOT, "build/workloads/calls")
CALLS_XRAY = os.path.join(ROOT, "build/workloads/calls-xray")
FUNCS = ["leaf", "mid", "fib", "run_thread"]


def ncalls(rounds):
    return 2 * rounds * (3 + 1 + 177) + 2


def cpu_of(cmd, env=None, cwd=None):
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=cwd)
    _, _, ru = os.wait4(p.pid, 0)
    return ru.ru_utime + ru.ru_stime, time.monotonic() - t0


def run_rec(rounds):
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [REC, "-q", "-o", tmp + "/out"]
        for f in FUNCS:
            cmd += ["-t", f]
        cmd += ["--", CALLS, str(rounds)]
        cpu, wall = cpu_of(cmd)  # the tool and its child, together
        s = json.load(open(tmp + "/out/summary.json"))
        return cpu, wall, s["traced_events"], s["lost_traced_events"]


def run_bare(rounds):
    probes = ",".join(f"uprobe:{CALLS}:{f}" for f in FUNCS)
    tool = subprocess.Popen(["bpftrace", "-e", probes + " { @ = count(); }"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, preexec_fn=os.setsid)
    time.sleep(2)  # attached
    cpu, wall = cpu_of([CALLS, str(rounds)])
    os.killpg(tool.pid, signal.SIGINT)
    _, _, ru = os.wait4(tool.pid, 0)
    return cpu + ru.ru_utime + ru.ru_stime, wall


def run_xray(rounds, fdr):
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ)
        if fdr:
            env["XRAY_OPTIONS"] = f"patch_premain=true xray_mode=xray-fdr xray_logfile_base={tmp}/xray-log."
            env["XRAY_FDR_OPTIONS"] = "func_duration_threshold_us=0 buffer_size=33554432 buffer_max=8"
        else:
            env["XRAY_OPTIONS"] = "patch_premain=false"
        return cpu_of([CALLS_XRAY, str(rounds)], env=env, cwd=tmp)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3000)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench-trace: run as root")
    subprocess.run(["make", "-s", "-C", ROOT, "build/workloads/calls-xray"], check=True)
    n = ncalls(a.rounds)
    r = {k: [] for k in ("alone", "rec", "bare", "xray_off", "xray_fdr")}
    for _ in range(a.runs):
        r["alone"].append(cpu_of([CALLS, str(a.rounds)]))
        r["rec"].append(run_rec(a.rounds))
        r["bare"].append(run_bare(a.rounds))
        r["xray_off"].append(run_xray(a.rounds, False))
        r["xray_fdr"].append(run_xray(a.rounds, True))
    med = lambda xs: statistics.median(xs)
    alone = med([x[0] for x in r["alone"]])
    xoff = med([x[0] for x in r["xray_off"]])
    rec_cpu = med([x[0] for x in r["rec"]])
    rec_wall = med([x[1] for x in r["rec"]])
    events = med([x[2] for x in r["rec"]])
    lost = med([x[3] for x in r["rec"]])
    print(f"{n} calls ({a.rounds} rounds x 2 threads), medians of {a.runs} runs")
    print(f"  workload alone:                    {alone:.3f} s CPU")
    print(f"  bpftrace-rec -t (entry + return):  {(rec_cpu - alone) / n * 1e9:8.0f} ns per call  ({events:.0f} events, {lost:.0f} lost, {events / rec_wall:.0f} events/s drained)")
    print(f"  bare uprobe (entry only, bpftrace): {(med([x[0] for x in r['bare']]) - alone) / n * 1e9:8.0f} ns per call")
    print(f"  XRay FDR in process (compiler-rt): {(med([x[0] for x in r['xray_fdr']]) - xoff) / n * 1e9:8.0f} ns per call")
    # Attaching many functions: every V8 compiler function of node.
    if subprocess.run(["sh", "-c", "command -v node"], capture_output=True).returncode == 0:
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.monotonic()
            p = subprocess.run([REC, "-o", tmp + "/out", "-t", "_ZN2v88internal8compiler*", "--", "node", "-e", ""],
                               capture_output=True, text=True)
            total = time.monotonic() - t0
            m = [l for l in p.stderr.splitlines() if "tracing" in l]
            print(f"  attach: {m[0].split(': ', 1)[1] if m else '?'}; the whole run of `node -e ''` under it: {total:.2f} s")


if __name__ == "__main__":
    main()
