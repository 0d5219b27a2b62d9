"""Python code on the CPU, known by construction, for
tests/unit/test_python_bpf.c: the main thread spins three calls deep
(<module> -> top -> mid -> leaf), a second thread in its target
(thread_leaf); each loop is on one line, so every sample of a thread has
one stack and one line. "ready PID" once both run: printed from inside
leaf's loop line, once the thread has marked `spun` from inside its own,
with builtins only (no Python frame of their own), and each result
assigned (a discarded one leaves an instruction of no line, as
co_lines() says). Before, leaf printed
it before its loop and the thread set an Event before its own: a sample
in CI caught leaf at its print line, waiting for the GIL back.
Lines: the LINE: markers.
"""
import os
import threading


def leaf(spun):
    x, said = 0, False
    while True: x += 1; said = said or (bool(spun) and print("ready", os.getpid(), flush=True) is None)  # LINE:spin


def mid(spun):
    leaf(spun)  # LINE:mid


def top(spun):
    mid(spun)  # LINE:top


def thread_leaf(spun):
    y, marked = 0, False
    while True: y += 1; marked = marked or spun.append(y) is None  # LINE:tspin


spun = []
threading.Thread(target=thread_leaf, args=(spun,), daemon=True).start()
top(spun)  # LINE:module
