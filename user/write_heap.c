/* heap.pb.gz: --heap's sampled allocations as a Go heap profile (pprof's
 * alloc_objects, alloc_space, inuse_objects, inuse_space), each value
 * unsampled as Go's pprof does, every stack named as profile.pb.gz names
 * its CPU stacks. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "formats/pprof.h"
#include "user/heap.h"
#include "user/outdir.h"
#include "user/proc.h"
#include "user/util.h"
#include "user/writers.h"

/* A sampled allocation of size bytes stands for this many: it was taken
 * with probability 1 - exp(-size / rate) (the Poisson process of
 * bpf/heap.bpf.c), so each counts 1 / that, as runtime/pprof's
 * scaleHeapSample. */
static double heap_scale(uint64_t size, uint64_t rate)
{
	double p;

	if (!size || !rate)
		return 1;
	p = 1 - exp(-(double)size / (double)rate);
	return p > 0 ? 1 / p : 1;
}

static int cmp_sum(const void *a, const void *b)
{
	const struct heap_sum *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->stack != y->stack)
		return x->stack < y->stack ? -1 : 1;
	return (int)x->func - (int)y->func;
}

size_t heap_sums(const struct heap *h, struct heap_sum **out)
{
	size_t n, i, m = 0;
	const struct heap_alloc *a = heap_allocs(h, &n);
	struct heap_sum *s = calloc(n ? n : 1, sizeof(*s));
	uint64_t rate = heap_rate(h), win = heap_window(h);

	*out = s;
	if (!s)
		return 0;
	for (i = 0; i < n; i++) {
		double k = heap_scale(a[i].size, rate);
		bool now = a[i].window == win;

		/* Made in an earlier window and still in use: this window's
		 * in-use view only. */
		if (!now && !a[i].live)
			continue;
		s[m] = (struct heap_sum){a[i].pid, a[i].stack, a[i].func, {0}};
		if (now) {
			s[m].v[HEAP_ALLOC_OBJECTS] = k;
			s[m].v[HEAP_ALLOC_SPACE] = k * (double)a[i].size;
		}
		if (a[i].live) {
			s[m].v[HEAP_INUSE_OBJECTS] = k;
			s[m].v[HEAP_INUSE_SPACE] = k * (double)a[i].size;
		}
		m++;
	}
	qsort(s, m, sizeof(*s), cmp_sum);
	for (i = 0, n = 0; i < m; i++) {
		if (n && !cmp_sum(&s[n - 1], &s[i])) {
			for (int j = 0; j < HEAP_NVALUES; j++)
				s[n - 1].v[j] += s[i].v[j];
		} else {
			s[n++] = s[i];
		}
	}
	return n;
}

/* One process's sums (s[0..n)), each stack a sample. */
static int add_proc(struct pprof *pp, struct proc *p, const struct heap_sum *s, size_t n,
		    uint64_t *kmap, bool lines)
{
	uint64_t locs[MAX_STACK_FRAMES];
	uint64_t *loc_of = calloc(p->frames.n ? p->frames.n : 1, sizeof(*loc_of));
	size_t i;
	int err = 0, nl;

	if (!loc_of)
		return -ENOMEM;
	for (i = 0; i < n && !err; i++) {
		struct pprof_label labels[3] = {
		    {.key = "pid", .num = p->pid, .num_unit = "pid"},
		    {.key = "comm", .str = p->comm},
		    /* Which function allocated: -tagfocus=alloc=calloc. */
		    {.key = "alloc", .str = heap_func_name(s[i].func)},
		};
		struct sample smp = {.stack = s[i].stack};
		int64_t v[HEAP_NVALUES];

		if (s[i].stack >= p->stack_off.n)
			continue; /* a process's stacks forgotten (a pid reused) */
		for (int j = 0; j < HEAP_NVALUES; j++)
			v[j] = (int64_t)llround(s[i].v[j]);
		nl = pprof_stack_locs(pp, p, &smp, loc_of, locs, kmap, lines);
		err = nl < 0 ? nl : pprof_add_heap(pp, locs, nl, v, labels, 3);
	}
	free(loc_of);
	return err;
}

struct heap_ctx {
	const struct run_info *ri;
};

static int fill_heap(void *ctx, FILE *out, int fd)
{
	const struct run_info *ri = ((const struct heap_ctx *)ctx)->ri;
	const struct heap *h = ri->heap;
	uint64_t st[HEAP_STAT_NR], kmap = 0;
	struct pprof *pp = pprof_new(0, ri->start_realtime_ns, ri->duration_ns);
	struct heap_sum *s = NULL;
	size_t n, i, j;
	char line[512];
	int err = 0;

	if (!pp)
		return -ENOMEM;
	pprof_enable_heap(pp, (int64_t)heap_rate(h));
	heap_get_stats(h, st);
	snprintf(line, sizeof(line),
		 "bpftrace-rec --heap: %s's allocation functions probed in place; allocations "
		 "sampled every %" PRIu64 " bytes on average (a Poisson process), values "
		 "unsampled",
		 heap_allocator(h), heap_rate(h));
	err = pprof_add_comment(pp, line);
	if (!err)
		err = pprof_add_comment(
		    pp, "allocations made before the recording started are not known: inuse_* "
			"is what was allocated since the start and not freed by its end");
	snprintf(line, sizeof(line),
		 "%" PRIu64 " allocation calls asked for %" PRIu64 " bytes; %" PRIu64
		 " sampled, %" PRIu64 " lost, %" PRIu64 " not followed to their free",
		 st[HEAP_STAT_CALLS], st[HEAP_STAT_BYTES], st[HEAP_STAT_SAMPLED],
		 st[HEAP_STAT_LOST], st[HEAP_STAT_LIVE_FULL]);
	if (!err)
		err = pprof_add_comment(pp, line);
	n = err ? 0 : heap_sums(h, &s);
	if (!err && !s)
		err = -ENOMEM;
	for (i = 0; i < n && !err; i = j) {
		struct proc *p = proc_find(ri->procs, s[i].pid);

		for (j = i; j < n && s[j].pid == s[i].pid; j++)
			;
		if (p)
			err = add_proc(pp, p, s + i, j - i, &kmap, !ri->window);
	}
	if (!err) {
		fflush(out);
		err = pprof_write_fd(pp, fd);
	}
	free(s);
	pprof_free(pp);
	return err;
}

int write_heap(const struct run_info *ri)
{
	struct heap_ctx hc = {ri};
	char cmd[2 * PATH_MAX + 64];

	if (ri->readers.pprof)
		snprintf(cmd, sizeof(cmd), "%s -sample_index=inuse_space -top %s/heap.pb.gz",
			 ri->readers.pprof, ri->outdir);
	else
		snprintf(cmd, sizeof(cmd), "%s/heap.pb.gz", ri->outdir);
	return outdir_emit(ri->out, "heap.pb.gz", 0, cmd, fill_heap, &hc);
}
