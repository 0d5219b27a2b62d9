/* The maps of the HotSpot walk (bpf/runtime/jvm.bpf.c), defined there (JVM_EXTERN
 * empty) and declared extern in the units the static linker joins to it,
 * as bpf/runtime/python_maps.bpf.h's (which says why the defining unit is linked
 * first). */
#ifndef BPF_JVM_MAPS_H
#define BPF_JVM_MAPS_H

#include "bpf/runtime/jvm.h"

#ifndef JVM_EXTERN
#define JVM_EXTERN extern
#endif

JVM_EXTERN struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u32); /* tgid */
	__type(value, struct jvm_bpf_proc);
} jvm_procs SEC(".maps");

/* Frames by outcome (enum jvm_bpf_stat), for the tests and the summary. */
JVM_EXTERN struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, JVM_STAT_NR);
	__type(key, __u32);
	__type(value, __u64);
} jvm_stats SEC(".maps");

/* A walk's step in and out, and the frames it recorded: a slot per walker
 * (JVM_SLOT_SAMPLE, JVM_SLOT_SWITCH). */
JVM_EXTERN struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct jvm_bpf_step);
} jvm_scratch SEC(".maps");

/* One frame of the slot's registers, in the code cache of the process of
 * jvm_procs: its caller's registers into the slot and its record appended
 * (enum JVM_STEP_*). */
int jvm_unwind(__u32 slot);

#endif
