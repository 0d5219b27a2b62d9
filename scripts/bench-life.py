#!/usr/bin/env python3
"""Whole-life cost to a named profile, paired with perf (a benchmark, not a test).

A two-thread CPU-bound program (build/workloads/spin) runs; each round
records it for --seconds at --freq Hz with, alternated (the order turned
each round):

  bpftrace-rec -p PID -d S                       (its files: named profiles)
  perf record -g -p PID -- sleep S  +  perf report --stdio
  perf record --call-graph dwarf -p PID -- sleep S  +  perf report --stdio

For each: the CPU (user + system) of every process of the tool over its
whole life, start-up and the naming at the end included (os.wait4's rusage
of each; perf's is record's plus report's), and its peak RSS (the larger of
record's and report's). Per tool the medians, and the median of the rounds'
ratios against perf -g's (issue #35: bpftrace-rec <= 1.0x).

--target pg: the target is PostgreSQL's backends under pgbench instead (a
server initdb'd in a directory of its own, on a loopback port, fsync off,
pgbench -c 8 -j 2 for the whole run): each tool gets -p of the same list,
the postmaster and every process it started (the backends of pgbench's 8
connections, made before the first round).

Usage: scripts/bench-life.py [--rounds N] [--seconds S] [--freq F] [--target spin|pg]
       (as root, after make)
"""
import argparse, glob, os, pwd, re, socket, statistics, subprocess, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ap = argparse.ArgumentParser()
ap.add_argument("--rounds", type=int, default=3)
ap.add_argument("--seconds", type=int, default=10)
ap.add_argument("--freq", type=int, default=499)
ap.add_argument("--rec", default=os.path.join(ROOT, "bpftrace-rec"))
ap.add_argument("--target", choices=("spin", "pg"), default="spin")
a = ap.parse_args()
tmp = tempfile.mkdtemp()


def run(args):
    """(cpu s, peak RSS KiB) of one command, its children included."""
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, ru = os.wait4(p.pid, 0)
    return ru.ru_utime + ru.ru_stime, ru.ru_maxrss


def perf(pid, cg):
    out = os.path.join(tmp, "perf.data")
    c1, m1 = run(["perf", "record", "-q", "-F", str(a.freq)] + cg +
                 ["-p", str(pid), "-o", out, "--", "sleep", str(a.seconds)])
    c2, m2 = run(["perf", "report", "--stdio", "-i", out])
    return c1 + c2, max(m1, m2)


tools = {
    "bpftrace-rec": lambda pid: run([a.rec, "-q", "-F", str(a.freq), "-p", str(pid), "-d",
                                     str(a.seconds), "-o", os.path.join(tmp, "rec")]),
    "perf -g": lambda pid: perf(pid, ["-g"]),
    "perf dwarf": lambda pid: perf(pid, ["--call-graph", "dwarf"]),
}


def pg_start(d):
    """PostgreSQL under pgbench in d: (the pids to record, a stop function)."""
    pgbin = sorted(glob.glob("/usr/lib/postgresql/*/bin"),
                   key=lambda b: int(re.sub(r"\D", "", b) or 0))[-1]
    pw = pwd.getpwnam("postgres")
    os.chmod(tmp, 0o711)  # the server's user reaches its directory, lists nothing
    os.makedirs(d)
    os.chown(d, pw.pw_uid, pw.pw_gid)
    with socket.socket() as so:
        so.bind(("127.0.0.1", 0))
        port = str(so.getsockname()[1])
    as_pg = ["runuser", "-u", "postgres", "--"]
    q = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    subprocess.run(as_pg + [pgbin + "/initdb", "-D", d + "/data", "-A", "trust", "-U", "postgres"], **q)
    subprocess.run(as_pg + [pgbin + "/pg_ctl", "-D", d + "/data", "-l", d + "/log", "-w", "-o",
                            f"-p {port} -k {d} -c listen_addresses=127.0.0.1 -c fsync=off", "start"], **q)
    pgb = as_pg + ["pgbench", "-h", "127.0.0.1", "-p", port, "-U", "postgres"]
    subprocess.run(pgb + ["-i", "-s", "2", "postgres"], **q)
    bench = subprocess.Popen(pgb + ["-c", "8", "-j", "2", "-T", "86400", "postgres"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(2)
    pm = int(open(d + "/data/postmaster.pid").readline())
    kids = []
    for st in glob.glob("/proc/[0-9]*/stat"):
        try:
            f = open(st).read()
        except OSError:
            continue
        if int(f[f.rindex(")") + 2:].split()[1]) == pm:
            kids.append(int(st.split("/")[2]))

    def stop():
        bench.kill()
        bench.wait()
        subprocess.run(as_pg + [pgbin + "/pg_ctl", "-D", d + "/data", "-m", "fast", "-w", "stop"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return ",".join(str(p) for p in [pm] + sorted(kids)), stop


res = {k: [] for k in tools}
if a.target == "pg":
    target, target_stop = pg_start(os.path.join(tmp, "pg"))
else:
    spin = subprocess.Popen([os.path.join(ROOT, "build/workloads/spin"), "1000000000000"])
    target, target_stop = spin.pid, spin.kill
    time.sleep(0.5)
try:
    for rnd in range(a.rounds):
        names = list(tools) if rnd % 2 == 0 else list(tools)[::-1]
        for n in names:
            res[n].append(tools[n](target))
finally:
    target_stop()
    subprocess.run(["rm", "-rf", tmp])

print(f"# scripts/bench-life.py --rounds {a.rounds} --seconds {a.seconds} --freq {a.freq} "
      f"--target {a.target} ({len(str(target).split(','))} processes): "
      "whole-life CPU and peak RSS, medians; ratio: median of the rounds' tool/perf -g")
print("tool            cpu s   rss MiB  cpu ratio  rss ratio  rounds (cpu s)")
base = res["perf -g"]
for n, r in res.items():
    cr = statistics.median(x[0] / y[0] for x, y in zip(r, base))
    mr = statistics.median(x[1] / y[1] for x, y in zip(r, base))
    print(f"{n:14} {statistics.median(x[0] for x in r):6.2f} "
          f"{statistics.median(x[1] for x in r) / 1024:9.1f} {cr:10.2f} {mr:10.2f}  "
          + " ".join("%.2f" % x[0] for x in r))
