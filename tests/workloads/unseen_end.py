"""A wait whose return to the CPU the switch program never saw, made on purpose
(tests/integration/test_offcpu.sh offcpu_unseen_end).

The kernel now and then runs --off-cpu's switch program for a thread's leave
but not for its return (seen with bpf_printk in the program): the thread then
runs with its wait's start still in the recorder's offcpu_start map, and
leaves again. This makes that state by hand: run as the command of
`bpftrace-rec --off-cpu -- python3 unseen_end.py N`, it finds its parent's
offcpu_start map, and N times writes its own thread a start as the switch
program would have at a leave WAIT_S seconds ago (its switch count and CPU time
as of now, so that nothing ran since), then sleeps SLEEP_S, the leave that
finds it. Each such wait is WAIT_S, known by construction; the sleeps are seen
as usual.

Prints "injected K" (K of N written with no switch between the reads and the
write, by getrusage after it: a preemption there makes the start stale, and the
recorder rightly drops it).
"""
import ctypes
import os
import resource
import struct
import sys
import threading
import time

WAIT_S = 2
SLEEP_S = 0.1
SYS_BPF = 321  # x86-64
BPF_MAP_UPDATE_ELEM, BPF_MAP_GET_FD_BY_ID, BPF_OBJ_GET_INFO_BY_FD = 2, 14, 15

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def bpf(cmd, attr):
    buf = ctypes.create_string_buffer(attr, 128)
    r = libc.syscall(ctypes.c_long(SYS_BPF), ctypes.c_long(cmd), buf, ctypes.c_long(128))
    if r < 0:
        raise OSError(ctypes.get_errno(), "bpf(%d)" % cmd)
    return r, buf


def start_map(pid):
    """An fd of pid's map named offcpu_start (its fds' fdinfo give the ids)."""
    for fd in os.listdir("/proc/%d/fdinfo" % pid):
        try:
            with open("/proc/%d/fdinfo/%s" % (pid, fd)) as f:
                info = dict(l.split(":", 1) for l in f if ":" in l)
        except OSError:
            continue
        if "map_id" not in info:
            continue
        mfd, _ = bpf(BPF_MAP_GET_FD_BY_ID, struct.pack("I", int(info["map_id"])))
        out = ctypes.create_string_buffer(128)
        bpf(BPF_OBJ_GET_INFO_BY_FD, struct.pack("IIQ", mfd, 128, ctypes.addressof(out)))
        if out.raw[24:40].split(b"\0")[0] == b"offcpu_start":
            return mfd
        os.close(mfd)
    raise SystemExit("no offcpu_start map in process %d" % pid)


def switches():
    r = resource.getrusage(resource.RUSAGE_THREAD)
    return r.ru_nvcsw + r.ru_nivcsw


def main():
    n = int(sys.argv[1])
    mfd = start_map(os.getppid())
    key = ctypes.create_string_buffer(struct.pack("I", threading.get_native_id()))
    val = ctypes.create_string_buffer(40)
    injected = 0
    for _ in range(n):
        sw = switches()
        # struct offcpu_start (bpf/events.h): ts, switches, runtime, stack
        # (0: none), kind (0: blocked), tgid, pad.
        struct.pack_into("QQQIIII", val, 0, time.monotonic_ns() - WAIT_S * 10**9, sw,
                         time.thread_time_ns(), 0, 0, os.getpid(), 0)
        bpf(BPF_MAP_UPDATE_ELEM,
            struct.pack("IIQQQ", mfd, 0, ctypes.addressof(key), ctypes.addressof(val), 0))
        injected += switches() == sw
        time.sleep(SLEEP_S)
    print("injected", injected, flush=True)


main()
