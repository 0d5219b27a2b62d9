"""Python frames known by construction, for tests/unit/test_python.c.

pywait.py: the main thread blocks reading a pipe three calls deep
(<module> -> outer -> middle -> Waiter.wait), and a second thread in its
target (helper_target); "ready PID" once the second thread runs. The test
finds the expected lines by their LINE: markers.

pywait.py reuse: compiles code objects one at a time, each from its own
file name, printing "ADDRESS FILE" (id() is the address in CPython) and
waiting for a line on stdin before dropping it: the next one is often
allocated at the same address, which must never give the old name.
"""
import os
import sys
import threading


class Waiter:
    def wait(self, fd):
        return os.read(fd, 1)  # LINE:wait


def middle(w, fd):
    return w.wait(fd)  # LINE:middle


def outer(fd):
    return middle(Waiter(), fd)  # LINE:outer


def helper_target(fd, started):
    started.set()
    os.read(fd, 1)  # LINE:thread


if sys.argv[1:] == ["reuse"]:
    for i in range(40):
        co = compile("x = %d\n" % i, "gen_%d.py" % i, "exec")
        print(id(co), co.co_filename, flush=True)
        if not sys.stdin.readline():
            break
        del co
    sys.exit(0)

r, w = os.pipe()
r2, w2 = os.pipe()
started = threading.Event()
threading.Thread(target=helper_target, args=(r2, started), daemon=True).start()
started.wait()
print("ready", os.getpid(), flush=True)
outer(r)  # LINE:module
