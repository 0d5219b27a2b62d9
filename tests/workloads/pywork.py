"""Python code on the CPU whose profile is known by construction, for
tests/integration/test_python.sh.

split: two threads each call func_six, func_three and func_one in turn,
which run the same loop body 6:3:1 times as often: whichever thread holds
the GIL, 60/30/10 of the Python time. The hot loop is on one line
(LINE:hot).

shapes: the main thread turns between a 300-deep recursion (under
<module>), a method (Worker.method), a generator, a lambda and
zlib.compress (deflate under compress_loop), while a second thread spins in
its target (thread_target).

churn: code objects made, run and freed in turn (f_0, f_1, ...), each
at an address its predecessor's had (the allocator reuses them), called
from one of two lines by the parity of its number (LINE:even, LINE:odd):
a frame named f_N under the other line was named wrongly.

deep [N]: one thread, N Python frames of deep (20 by default) under <module>,
spinning in func_one (scripts/bench-python.sh; test_python.sh's 1500).

difflib: difflib's unified and ndiff diffs of two texts of 8000 lines
that differ at every seventh, in turn. jsontool FILE: json.tool's main
(python -m json.tool FILE), over and over, its output to /dev/null. Both
enter and leave evaluation loops as a library does (C code calling
Python: generators, json's encoder), for test_python.sh's python_edges.

waits: the main thread and another each sleep in wait_six, wait_three and
wait_one in turn, 6, 3 and 1 ms: 60/30/10 of their time off the CPU on an
idle machine, the same native stack (the interpreter's call of
time.sleep) in all three. No thread of it sleeps longer than 6 ms at a
time. At SIGUSR1, "slept SIX THREE ONE": the seconds its threads have
spent in each call so far, by the clock (the sleep and the wait for a CPU
after it).

"ready PID" once both threads run; then until killed.
"""
import itertools
import os
import signal
import sys
import threading
import time
import zlib

K = 20000


def func_six():
    x = 0
    for i in range(6 * K): x += i  # LINE:hot
    return x


def func_three():
    x = 0
    for i in range(3 * K): x += i
    return x


def func_one():
    x = 0
    for i in range(K): x += i
    return x


def split(started):
    started.set()
    while True:
        func_six()
        func_three()
        func_one()


def wait_six():
    time.sleep(0.006)


def wait_three():
    time.sleep(0.003)


def wait_one():
    time.sleep(0.001)


# Each thread's seconds in each wait (six, three, one), by the clock around
# the call: the sleep, the wait for a CPU after it (milliseconds on a
# loaded machine) and the call's own time, preempted there too: the
# off-CPU time holds all of it but the few microseconds on the CPU.
slept = {}


def print_slept(*_):
    tot = [sum(v[i] for v in list(slept.values())) for i in range(3)]
    print("slept %.6f %.6f %.6f" % tuple(tot), flush=True)


def waits(started):
    s = slept.setdefault(threading.get_ident(), [0.0, 0.0, 0.0])
    started.set()
    clock = time.monotonic
    while True:
        t0 = clock()
        wait_six()
        t1 = clock()
        wait_three()
        t2 = clock()
        wait_one()
        t3 = clock()
        s[0] += t1 - t0
        s[1] += t2 - t1
        s[2] += t3 - t2


def recurse(n):
    if n:
        return recurse(n - 1) + 1
    return func_one()


class Worker:
    def method(self):
        return func_one()


def gen():
    while True:
        yield func_one()


spin_lambda = lambda: func_one()  # noqa: E731
DATA = os.urandom(1 << 16) + bytes(1 << 16)


def compress_loop():
    return len(zlib.compress(DATA, 9))


def thread_target(started):
    started.set()
    while True:
        func_one()


def shapes():
    g = gen()
    while True:
        recurse(300)
        Worker().method()
        next(g)
        spin_lambda()
        compress_loop()


def deep(n):
    if n:
        return deep(n - 1)
    while True:
        func_one()


def diffs():
    import difflib
    import random
    r = random.Random(1)
    a = ["line %d %s\n" % (i, r.choice("abcdefgh") * r.randint(1, 30)) for i in range(8000)]
    b = [x if i % 7 else "changed %d %s" % (i, x) for i, x in enumerate(a)]
    n = len(list(difflib.unified_diff(a, b)))
    return n + len(list(difflib.ndiff(a, b)))


def churn():
    ns = {}
    for i in itertools.count():
        src = "def f_%d():\n    x = 0\n    for j in range(%d): x += j\n" % (i, K // 4)
        exec(compile(src, "<churn-%d>" % i, "exec"), ns)
        f = ns.pop("f_%d" % i)
        if i % 2 == 0:
            f()  # LINE:even
        else:
            f()  # LINE:odd
        del f


if __name__ == "__main__":
    sys.setrecursionlimit(2000)
    mode = sys.argv[1] if len(sys.argv) > 1 else "split"
    a, b = threading.Event(), threading.Event()
    if mode == "split":
        threading.Thread(target=split, args=(a,), daemon=True).start()
        threading.Thread(target=split, args=(b,), daemon=True).start()
        a.wait()
        b.wait()
        print("ready", os.getpid(), flush=True)
        threading.Event().wait()
    if mode == "waits":
        signal.signal(signal.SIGUSR1, print_slept)
        threading.Thread(target=waits, args=(a,), daemon=True).start()
        a.wait()
        print("ready", os.getpid(), flush=True)
        waits(b)
    if mode == "deep":
        print("ready", os.getpid(), flush=True)
        deep(int(sys.argv[2]) - 1 if len(sys.argv) > 2 else 19)
    if mode == "churn":
        print("ready", os.getpid(), flush=True)
        churn()
    if mode == "difflib":
        print("ready", os.getpid(), flush=True)
        while True:
            diffs()
    if mode == "jsontool":
        import json.tool
        sys.argv = ["json.tool", sys.argv[2], os.devnull]
        print("ready", os.getpid(), flush=True)
        while True:
            json.tool.main()
    threading.Thread(target=thread_target, args=(a,), daemon=True).start()
    a.wait()
    print("ready", os.getpid(), flush=True)
    shapes()
