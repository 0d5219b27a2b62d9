/* The maps of the Python walk (bpf/runtime/python.bpf.c), defined there (PY_EXTERN
 * empty) and declared extern in the units the static linker joins to it
 * (the sampler, the unit test's program). The Makefile links python.bpf.o
 * first: libbpf 1.1's linker keeps the BTF of a map declared before its
 * definition at the declaration's place, which then matches no map. */
#ifndef BPF_PYTHON_MAPS_H
#define BPF_PYTHON_MAPS_H

#include "bpf/runtime/python.h"

#ifndef PY_EXTERN
#define PY_EXTERN extern
#endif

PY_EXTERN struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32); /* tgid */
	__type(value, struct py_bpf_proc);
} py_procs SEC(".maps");

/* Samples by outcome (enum py_bpf_stat), for the tests and the summary. */
PY_EXTERN struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PY_STAT_NR);
	__type(key, __u32);
	__type(value, __u64);
} py_stats SEC(".maps");

/* The last walk's frames on each CPU, read by the caller (its record): a
 * slot per caller (PY_SLOT_SAMPLE, PY_SLOT_SWITCH) and CPU, py_slot_key's.
 * An array, not a per-CPU array, whose values are limited to 32 KiB: the
 * loader sets max_entries to twice the possible CPUs. */
PY_EXTERN struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct py_bpf_stack);
} py_scratch SEC(".maps");

static __always_inline __u32 py_slot_key(__u32 slot)
{
	return bpf_get_smp_processor_id() * 2 + slot;
}

/* The frames of the current thread into py_scratch, max of them at most
 * (<= PY_BPF_FRAMES): their number, or -1 when the process is not one
 * walked. */
int py_walk_frames(struct bpf_perf_event_data *ctx, __u32 max);
/* The same without bpf_loop (kernels before 5.17): a bounded loop of
 * PY_COMPAT_FRAMES. */
int py_walk_frames_compat(struct bpf_perf_event_data *ctx);
/* The thread leaving the CPU (the switch program's current), into
 * py_scratch's PY_SLOT_SWITCH; bpf_loop's kernels only. */
int py_walk_frames_switch(__u32 max);
/* 3.12: after a walk of slot that found frames, the frame an evaluation
 * call enters or leaves unlinked, appended (python.bpf.c): 1, or 0. */
int py_pending(__u32 slot);

#endif
