/* --off-cpu: where recorded threads wait. The BPF side is bpf/offcpu.bpf.c
 * (in the sampler's object); this side sets it up, turns its stacks into
 * the processes' stacks (the same unwinding as samples), reads the sums at
 * the stop, and hands them to the writers: profile.pb.gz's offcpu sample
 * types, the XRay timelines' waits, summary.json. */
#ifndef USER_OFFCPU_H
#define USER_OFFCPU_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include "bpf/events.h"

struct sample_bpf;
struct offcpu;
struct proc;
struct procs;
struct features;
struct degraded;

struct offcpu_cfg {
	bool on;	  /* --off-cpu */
	uint64_t min_ns;  /* --off-cpu-min */
	bool timelines;	  /* XRay timelines are written: each wait is sent */
	bool system_wide; /* -a */
	bool compat;	  /* the compat sampler's kernels */
	uint32_t copy;	  /* user stack bytes copied for DWARF; 0: frame pointers */
	unsigned nr_cpus; /* the sampler's scratch slots */
	bool kernel_stacks;
	bool has_tp;	  /* features.sched_switch_btf */
	uint32_t entries; /* --off-cpu-entries: the sums maps' size; 0: from the CPUs */
};

/* The state of --off-cpu, created in rec_load and held by the recorder;
 * off until offcpu_prepare turns it on. 0 or -ENOMEM. */
int offcpu_new(struct offcpu **out);
void offcpu_free(struct offcpu *oc);

/* Before the object's load: rodata, map sizes, which program loads. 0 or
 * -errno after a message; with a kernel that cannot, adds to degraded and
 * turns itself off. */
int offcpu_prepare(struct offcpu *oc, struct sample_bpf *skel, const struct offcpu_cfg *cfg,
		   struct degraded *d);
/* After the load: attaches the switch program. 0 or -errno after a message. */
int offcpu_attach(struct offcpu *oc, struct sample_bpf *skel);
/* Detached (NULL: nothing to do); the open waits count up to stop_ns (the
 * recording's stop, CLOCK_MONOTONIC: -d's end when the drain got to it late). */
void offcpu_detach(struct offcpu *oc, uint64_t stop_ns);
/* After offcpu_attach: the recorded threads off the CPU now start their
 * wait at since_ns (the recording's start: the iterator runs later), with
 * their stacks (a BPF task iterator); held: the command
 * of `--`, still our fork before its exec, left out. 0 or -ENOMEM; a
 * kernel that cannot is said at prepare (degraded), an iterator that
 * fails in a warning. */
int offcpu_sleepers_read(struct offcpu *oc, struct sample_bpf *skel, struct procs *procs,
			 pid_t held, uint64_t since_ns);
/* Each drain pass: the sleepers' stacks unwound, until until_ns
 * (CLOCK_MONOTONIC). 0 or -ENOMEM. */
int offcpu_sleepers_step(struct offcpu *oc, struct procs *procs, uint64_t until_ns);
/* Off-CPU time is recorded (false for NULL). */
bool offcpu_on(const struct offcpu *oc);

/* Drained records: EV_OFFCPU_STACK and EV_OFFCPU. 0 or -ENOMEM. */
int offcpu_on_stack(struct offcpu *oc, struct procs *procs, const struct ev_sample *s, size_t size);
int offcpu_on_wait(struct offcpu *oc, const struct ev_offcpu *e);
/* An EV_OFFCPU_STACK not recorded (the command of `--` before its exec):
 * the waits of that stack id are left out too. 0 or -ENOMEM. */
int offcpu_drop_stack(struct offcpu *oc, uint32_t id);

/* Every drain pass: the sums BPF added in the last period (OFFCPU_FLUSH_NS)
 * taken into user space, so that the maps hold one period's. 0 or -ENOMEM. */
int offcpu_flush(struct offcpu *oc, struct sample_bpf *skel, uint64_t now);

/* Under -a, where exited processes are written out and freed as they go
 * (1 s after their exit): the sums of the exited ones taken from BPF now,
 * so that they are in the process when it is written. 0 or -ENOMEM. */
int offcpu_take_exited(struct offcpu *oc, struct procs *procs, struct sample_bpf *skel);
/* A process that exited before this (CLOCK_MONOTONIC) has had every wait
 * taken by offcpu_take_exited: it may be written out. UINT64_MAX without
 * --off-cpu. */
uint64_t offcpu_settled_ns(const struct offcpu *oc);
/* At the stop: the sums from BPF, and the waits still open, counted up to
 * the detach. */
int offcpu_collect(struct offcpu *oc, struct procs *procs, struct sample_bpf *skel);

/* --window: at a window's close, the sums drained so far become the
 * window's (offcpu_sums_of); once it is written, offcpu_window_end forgets
 * them, and the next window's start from 0. A wait is counted in the
 * window its sum is drained in (within OFFCPU_FLUSH_NS of its end). 0 or
 * -ENOMEM. */
int offcpu_window_take(struct offcpu *oc, struct procs *procs);
void offcpu_window_end(struct offcpu *oc);

/* One (thread, stack, kind) of a process: stack is a proc stack index, or
 * UINT32_MAX when its record was lost. */
struct offcpu_sum {
	int32_t pid;
	uint32_t tid, stack, kind;
	uint64_t ns, count;
};
/* The process's sums; *n of them (none for NULL: the readers below take
 * run_info's offcpu, NULL when it was not recorded). */
const struct offcpu_sum *offcpu_sums_of(const struct offcpu *oc, const struct proc *p, size_t *n);

/* A wait, for the timelines (exact start and end, CLOCK_MONOTONIC). */
struct offcpu_wait {
	int32_t pid;
	uint32_t tid, cpu, stack, kind;
	uint64_t start_ns, end_ns;
	const char *what; /* the frame that names it: "[off-cpu] do_nanosleep" */
};
const struct offcpu_wait *offcpu_waits_of(const struct offcpu *oc, const struct proc *p, size_t *n);

/* For summary.json. */
struct offcpu_totals {
	uint64_t switches, waits, short_waits, short_ns, stacks, lost_stacks, lost;
	uint64_t open, stale;	    /* waits still open at the stop; starts dropped */
	uint64_t unseen, unseen_ns; /* waits whose end no switch program saw (counted) */
	uint64_t min_ns;
	uint64_t lost_ns;		      /* the lost waits' time */
	uint64_t thread_only, thread_only_ns; /* waits counted under their thread, no stack */
	uint64_t lost_events;		      /* waits missing from the XRay timelines */
	uint64_t lost_starts;		      /* waits not measured: offcpu_start full */
	uint64_t sleepers; /* threads off the CPU at the start, their waits counted from it */
	/* New stacks walked by the CFI tables in BPF; of them, copied for DWARF
	 * from a frame without a table. */
	uint64_t cfi_walked, cfi_to_dwarf;
	uint32_t sums_entries, threads_entries; /* the maps' sizes */
};
void offcpu_totals(const struct offcpu *oc, struct offcpu_totals *t);
/* Total off-CPU time of the process (waits of at least --off-cpu-min). */
uint64_t offcpu_proc_ns(const struct offcpu *oc, const struct proc *p);
/* The kind's label value: "blocked" or "preempted". */
const char *offcpu_kind_name(uint32_t kind);

#endif
