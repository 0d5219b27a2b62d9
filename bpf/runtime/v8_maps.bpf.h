/* The maps of the V8 step (bpf/runtime/v8.bpf.c), defined there (V8_EXTERN empty)
 * and declared extern in the units the static linker joins to it, as
 * bpf/runtime/jvm_maps.bpf.h's. */
#ifndef BPF_V8_MAPS_H
#define BPF_V8_MAPS_H

#include "bpf/runtime/v8.h"

#ifndef V8_EXTERN
#define V8_EXTERN extern
#endif

V8_EXTERN struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u32); /* tgid */
	__type(value, struct v8_bpf_proc);
} v8_procs SEC(".maps");

/* Frames by outcome (enum v8_bpf_stat), for the tests and the summary. */
V8_EXTERN struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, V8_STAT_NR);
	__type(key, __u32);
	__type(value, __u64);
} v8_stats SEC(".maps");

/* A walk's step in and the frames it recorded: a slot per walker
 * (JVM_SLOT_SAMPLE, JVM_SLOT_SWITCH). */
V8_EXTERN struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct v8_bpf_step);
} v8_scratch SEC(".maps");

/* The frame of the slot's (pc, rbp), whose pc is V8's code in a process of
 * v8_procs (its entry copied to the slot's proc at the walk's start): its
 * record appended when it is a JavaScript frame. Nothing of the walk
 * changes: rbp frames, stepped by the CFI walk. 0, or -1 without the slot. */
int v8_record(__u32 slot);

#endif
