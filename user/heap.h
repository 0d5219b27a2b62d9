/* --heap: the allocator's functions of the recorded processes probed where
 * they are (bpf/heap.bpf.c samples their calls by bytes), the sampled
 * allocations' stacks interned in the model, and what is still in use read
 * from BPF at each window's close and at the stop. heap.pb.gz is
 * user/write_heap.c's. */
#ifndef USER_HEAP_H
#define USER_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "bpf/events.h"

struct heap;
struct procs;

struct heap_cfg {
	uint64_t rate;		   /* --heap-rate: the mean bytes between samples */
	uint32_t stack_copy;	   /* bytes of stack copied per sample */
	uint32_t live_max;	   /* sampled blocks followed to their free at most */
	bool all;		   /* -a: every process but ours, not the target set */
	bool cookies;		   /* the kernel has BPF cookies (5.15) */
	int events_fd, targets_fd; /* the sampler's ring buffer and targets */
	int ncpus;
};

/* A sampled allocation, as drained. */
struct heap_alloc {
	pid_t pid;
	uint32_t stack; /* the process's stack (user/proc.h) */
	uint64_t seq, size;
	uint64_t window; /* the window it was made in (heap_window_end counts them) */
	uint8_t func;	 /* enum heap_func */
	bool live;	 /* in heap_live at the last heap_collect */
};

/* Opens and loads the BPF object. 0, or -errno after a message. */
int heap_new(const struct heap_cfg *c, struct heap **out);
/* Probes the allocator of each process (pids; or the command `--` runs:
 * exe, its pid in pids[0], before its exec; npids 0 with cfg.all: every
 * process's libc). 0, or -errno after a message. */
int heap_attach(struct heap *h, const pid_t *pids, int npids, const char *exe);
/* An EV_HEAP_ALLOC record: its stack interned. 0, or -ENOMEM. */
int heap_on_record(struct heap *h, struct procs *procs, const void *data, size_t size);
/* Entries first, then returns; the links closed. */
void heap_detach(struct heap *h);
/* What is in use now: each allocation's live flag from heap_live, and the
 * counters. 0, or -ENOMEM. */
int heap_collect(struct heap *h);
/* --window: the window is written; the allocations freed since are
 * forgotten, those in use kept for the next windows' in-use view. */
void heap_window_end(struct heap *h);
/* The counters read by the last heap_collect. */
void heap_get_stats(const struct heap *h, uint64_t st[HEAP_STAT_NR]);
uint64_t heap_rate(const struct heap *h);
uint64_t heap_window(const struct heap *h); /* the current window's number */
const struct heap_alloc *heap_allocs(const struct heap *h, size_t *n);
/* The allocator probed, for the profile's comment: "glibc", "jemalloc". */
const char *heap_allocator(const struct heap *h);
/* How the functions were probed (once attached): a uprobe_multi link per
 * file (6.6), a uprobe each with the function in its cookie (5.15), or a
 * uprobe each to a program per function (no cookies). */
enum { HEAP_MULTI, HEAP_SINGLE, HEAP_BY_FUNC };
int heap_attach_mode(const struct heap *h);
const char *heap_func_name(unsigned func);
/* The warnings of the end (drops, losses). */
void heap_report(const struct heap *h);
void heap_free(struct heap *h);

#endif
