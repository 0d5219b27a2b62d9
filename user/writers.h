/* The writers behind output.c, one for each file (or family of files):
 * each names its file, fills it and writes it through outdir_emit. */
#ifndef USER_WRITERS_H
#define USER_WRITERS_H

#include <stdio.h>
#include <sys/types.h>
#include "user/run_info.h"

struct proc;
struct offcpu;

/* profile.pb.gz (write_pprof.c). Under -a, the processes done with are
 * folded into it as they go (output_fold): each a scope, spilled to
 * spill_fd; write_profile then writes those and what is left. */
struct pprof_fold;
struct pprof_fold *pprof_fold_new(const struct run_info *ri, int spill_fd);
/* A process's samples into the profile, now (warned about, once, when they
 * could not be set aside). 0 or -errno. */
int pprof_fold_add(struct pprof_fold *pf, struct proc *p);
void pprof_fold_free(struct pprof_fold *pf);
int write_profile(const struct run_info *ri, struct pprof_fold *pf);
/* A sample's frames as pprof locations, leaf first, into locs (room for
 * MAX_STACK_FRAMES), as profile.pb.gz names them; with source lines when
 * lines is set. loc_of keeps each frame's location by its id (0: not made
 * yet; room for the process's frames); kmap the kernel's mapping (0: not
 * made yet). The number of them, or -ENOMEM. */
struct pprof;
struct sample;
int pprof_stack_locs(struct pprof *pp, struct proc *p, const struct sample *s, uint64_t *loc_of,
		     uint64_t *locs, uint64_t *kmap, bool lines);

/* heap.pb.gz (write_heap.c), with --heap: the sampled allocations of
 * ri->heap, unsampled, as a Go heap profile. */
int write_heap(const struct run_info *ri);
/* The values of one stack (and allocating function), unsampled, summed
 * unrounded, in heap.pb.gz's order. */
enum { HEAP_ALLOC_OBJECTS, HEAP_ALLOC_SPACE, HEAP_INUSE_OBJECTS, HEAP_INUSE_SPACE, HEAP_NVALUES };
struct heap_sum {
	pid_t pid;
	uint32_t stack;
	uint8_t func;
	double v[HEAP_NVALUES];
};
/* Every allocation of ri->heap as its window's values (alloc_* of this
 * window's, inuse_* of every one still in use), one entry per (process,
 * stack, function), sorted by process: the count, *out malloc'd; NULL and
 * 0 on ENOMEM. heap.pb.gz's and the heap flame graphs' one source. */
struct heap;
size_t heap_sums(const struct heap *h, struct heap_sum **out);
/* stacks-heap-inuse.folded, flamegraph-heap-inuse.html, stacks-heap-alloc.folded and
 * flamegraph-heap-alloc.html (write_flame.c), with --heap: heap_sums' in-use
 * and allocated bytes by stack, each process under its comm, the stacks
 * named as the CPU views name theirs. Each only when it has bytes. */
int write_heap_flame(const struct run_info *ri);

/* stacks.folded and flamegraph.html (write_flame.c): every process's
 * samples merged into one tree of frames, named as profile.pb.gz names them,
 * each process under its comm; with --off-cpu also stacks-offcpu.folded and
 * flamegraph-offcpu.html (waits, in us) and stacks-wall.folded and
 * flamegraph-wall.html (a sample as its period, 1/freq s, plus the waits: made from the other two
 * as the files are written). Under -a, processes are
 * added as they are folded into the profile (flame_fold_add: as they exit, and the live ones every
 * minute), and forgotten: the tree grows with distinct stacks only. A failure (ENOMEM) is kept, and
 * the two files are then not written. */
struct flame_views; /* the trees: one per recording (run_info.flame) */
int flame_views_new(struct flame_views **out);
void flame_views_free(struct flame_views *fv);
void flame_fold_add(struct flame_views *fv, struct proc *p, const struct offcpu *oc);
/* The processes still held (ri->procs) are added first. */
int write_flame(const struct run_info *ri);

/* cpu-PID.prof, cpu-PID.N.prof and jit-PID.so (write_gperf.c). */
int write_cpuprofile(const struct run_info *ri, struct proc *p);

/* summary.json (write_summary.c): rows (rows_end bytes of them) are those
 * of processes folded away, a line each, as summary_row writes them. */
void summary_row(FILE *f, const struct proc *p, const struct offcpu *oc);
int write_summary(const struct run_info *ri, FILE *rows, long rows_end);

#endif
