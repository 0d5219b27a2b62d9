"""Python code on the CPU, known by construction, for
tests/unit/test_python_bpf.c: the main thread spins three calls deep
(<module> -> top -> mid -> leaf), a second thread in its target
(thread_leaf); each loop is on one line, so every sample of a thread has
one stack and one line. "ready PID" once both run: printed by leaf itself,
so that no sample of the main thread can come before it is in its loop
(printed before top(), a sample could catch <module> between the two).
Lines: the LINE: markers.
"""
import os
import threading


def leaf():
    print("ready", os.getpid(), flush=True)
    x = 0
    while True: x += 1  # LINE:spin


def mid():
    leaf()  # LINE:mid


def top():
    mid()  # LINE:top


def thread_leaf(started):
    started.set()
    y = 0
    while True: y += 1  # LINE:tspin


started = threading.Event()
threading.Thread(target=thread_leaf, args=(started,), daemon=True).start()
started.wait()
top()  # LINE:module
