/* stacks.folded and flamegraph.html: the samples of every process as one
 * tree of frames (formats/folded.h), written both ways; with --heap, the
 * heap's bytes by stack the same ways. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "formats/flamegraph.h"
#include "formats/folded.h"
#include "user/heap.h"
#include "user/offcpu.h"
#include "user/outdir.h"
#include "user/proc.h"
#include "user/util.h"
#include "user/writers.h"

/* The views: CPU samples; with --off-cpu also the waits (in us) and the
 * wall clock (a CPU sample as its period, plus the waits, in us). The wall
 * view is made at the end from the other two (flame_merge): held through
 * the recording, its tree was a third of the views' memory (issue 22's
 * RSS). With --heap, the bytes in use at the end and those allocated, by
 * the stack that allocated them: made at the end from heap_sums, as
 * heap.pb.gz is. */
enum { V_CPU, V_OFFCPU, V_WALL, V_HEAP_INUSE, V_HEAP_ALLOC, V_NR };
#define V_SAMPLED V_HEAP_INUSE /* the views of the sampled stacks */
static const struct view {
	const char *folded, *html, *svg, *unit, *what, *opts; /* flamegraph.pl's */
} views[V_NR] = {
    {"stacks.folded", "flamegraph.html", "flame.svg", "samples", "", ""},
    {"stacks-offcpu.folded", "flamegraph-offcpu.html", "flame-offcpu.svg", "us",
     "off-CPU time (us), ", "--countname=us "},
    {"stacks-wall.folded", "flamegraph-wall.html", "flame-wall.svg", "us",
     "wall-clock time (us, CPU + off-CPU), ", "--countname=us "},
    {"stacks-heap-inuse.folded", "flamegraph-heap-inuse.html", "flame-heap-inuse.svg", "bytes",
     "heap bytes in use at the end (unsampled), ", "--countname=bytes --colors=mem "},
    {"stacks-heap-alloc.folded", "flamegraph-heap-alloc.html", "flame-heap-alloc.svg", "bytes",
     "heap bytes allocated (unsampled), ", "--countname=bytes --colors=mem "},
};
/* A frame name's buffer, as write_pprof.c's: a file's base name, whose
 * bytes may each be a 4-byte escape, with "[...]" or "+0x" and 16 digits. */
#define NAME_BUF (PATH_MAX + 4)

struct flame_views {
	struct flame *trees[V_NR];
	int err;		      /* the first failure: no file is written then */
	bool took_live;		      /* the processes held at the end are in */
	bool took_heap;		      /* the heap views are made */
	int heap_err;		      /* their failure: they are then not written */
	uint64_t not_in_tree;	      /* samples a failure left out, for the warning */
	char *bufs[MAX_STACK_FRAMES]; /* a frame's name each, made as deep stacks come */
};

int flame_views_new(struct flame_views **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

/* Adds a stack of p to the nv views from v0, with a weight each (0: not to
 * that one). 0 or -ENOMEM. */
static int add_stack(struct flame_views *fv, int v0, int nv, struct proc *p, const struct sample *s,
		     const uint64_t *w)
{
	const char *names[MAX_STACK_FRAMES + 1];
	struct frame_iter it = {0};
	size_t n = 0;
	int err = 0, v;

	/* Root first: the comm, then the frames (user then kernel). */
	names[n++] = p->comm;
	if (s->stack < p->stack_off.n) {
		frame_iter_init(&it, p, s, true);
		while (frame_iter_next(&it)) {
			size_t slot = n - 1;

			if (!fv->bufs[slot] && !(fv->bufs[slot] = malloc(NAME_BUF)))
				return -ENOMEM;
			names[n++] =
			    frame_iter_name(&it, fv->bufs[slot], NAME_BUF, NULL, NULL, NULL);
		}
	} else {
		names[n++] = "[off-cpu] stack not recorded"; /* as profile.pb.gz */
	}
	for (v = 0; v < nv; v++)
		if (w[v] && !fv->trees[v0 + v] && !(fv->trees[v0 + v] = flame_new()))
			return -ENOMEM;
	/* Into every view at once: each frame's name made safe once. */
	err = flame_add_n(fv->trees + v0, w, nv, names, n, it.nk);
	return err == -EINVAL ? 0 : err; /* no frame: nothing to add */
}

/* A CPU or off-CPU stack: a failure is kept, and those views are then not
 * written. */
static void add_sampled(struct flame_views *fv, struct proc *p, const struct sample *s,
			const uint64_t w[V_SAMPLED])
{
	if (!fv->err)
		fv->err = add_stack(fv, 0, V_SAMPLED, p, s, w);
	if (fv->err)
		fv->not_in_tree++;
}

void flame_fold_add(struct flame_views *fv, struct proc *p, const struct offcpu *oc)
{
	const struct offcpu_sum *os;
	struct sample *ms = malloc((p->samples.n ? p->samples.n : 1) * sizeof(*ms));
	ssize_t nm = ms ? proc_samples_merged(p, 0, p->samples.n, ms) : -ENOMEM;
	size_t j, n;

	/* Each distinct stack once: the tree adds them up anyway. */
	if (nm < 0) {
		fv->err = fv->err ? fv->err : (int)nm;
		fv->not_in_tree += p->samples.n;
	}
	for (j = 0; nm >= 0 && j < (size_t)nm; j++)
		add_sampled(fv, p, &ms[j], (uint64_t[V_SAMPLED]){ms[j].count, 0, 0});
	free(ms);
	os = offcpu_sums_of(oc, p, &n);
	for (j = 0; j < n; j++) {
		struct sample s = {.stack = os[j].stack, .tid = os[j].tid};
		uint64_t us = (os[j].ns + 500) / 1000;

		add_sampled(fv, p, &s, (uint64_t[V_SAMPLED]){0, us, 0});
	}
}

/* The wall view: the CPU view at a sample's period (1/freq s, in us) plus
 * the off-CPU view. */
static int make_wall(struct flame_views *fv, int freq)
{
	uint64_t period_us = freq > 0 ? 1000000 / (uint64_t)freq : 0;

	if (!(fv->trees[V_WALL] = flame_new()))
		return -ENOMEM;
	if (fv->trees[V_CPU] && flame_merge(fv->trees[V_WALL], fv->trees[V_CPU], period_us))
		return -ENOMEM;
	if (fv->trees[V_OFFCPU] && flame_merge(fv->trees[V_WALL], fv->trees[V_OFFCPU], 1))
		return -ENOMEM;
	return 0;
}

static int take_live(const struct run_info *ri, int v)
{
	struct flame_views *fv = ri->flame;
	size_t i;

	if (!fv->took_live) {
		fv->took_live = true;
		for (i = 0; i < ri->procs->v.n; i++)
			flame_fold_add(fv, ri->procs->v.v[i], ri->offcpu);
		if (!fv->err && ri->offcpu)
			fv->err = make_wall(fv, ri->freq);
		if (fv->err)
			warn("stacks.folded and flamegraph.html: %s (%llu stacks could not be "
			     "added): not written",
			     strerror(-fv->err), (unsigned long long)fv->not_in_tree);
	}
	if (fv->err)
		return fv->err;
	return fv->trees[v] && flame_node(fv->trees[v], 0)->total ? 0 : -ENODATA;
}

/* The heap views, from heap_sums as heap.pb.gz's values: each stack's
 * in-use and allocated bytes, rounded. 0 or -ENOMEM. */
static int make_heap(const struct run_info *ri)
{
	struct flame_views *fv = ri->flame;
	struct heap_sum *s = NULL;
	size_t n = heap_sums(ri->heap, &s), i;
	struct proc *p = NULL;
	int err = s ? 0 : -ENOMEM;

	for (i = 0; i < n && !err; i++) {
		struct sample smp = {.stack = s[i].stack};
		uint64_t w[2] = {(uint64_t)llround(s[i].v[HEAP_INUSE_SPACE]),
				 (uint64_t)llround(s[i].v[HEAP_ALLOC_SPACE])};

		if (!p || p->pid != s[i].pid)
			p = proc_find(ri->procs, s[i].pid);
		/* As heap.pb.gz: a process's stacks forgotten (a pid reused). */
		if (p && s[i].stack < p->stack_off.n)
			err = add_stack(fv, V_HEAP_INUSE, 2, p, &smp, w);
	}
	free(s);
	return err;
}

static int take_heap(const struct run_info *ri, int v)
{
	struct flame_views *fv = ri->flame;

	if (!fv->took_heap) {
		fv->took_heap = true;
		fv->heap_err = make_heap(ri);
		if (fv->heap_err)
			warn("%s and %s: %s: not written", views[V_HEAP_INUSE].folded,
			     views[V_HEAP_ALLOC].folded, strerror(-fv->heap_err));
	}
	if (fv->heap_err)
		return fv->heap_err;
	return fv->trees[v] && flame_node(fv->trees[v], 0)->total ? 0 : -ENODATA;
}

/* View v's tree, made if it is not yet: 0, -ENODATA (empty: no file), or
 * the failure that made it. */
static int take_view(const struct run_info *ri, int v)
{
	return v >= V_SAMPLED ? take_heap(ri, v) : take_live(ri, v);
}

struct flame_out {
	const struct run_info *ri;
	int view;
};

static int fill_folded(void *ctx, FILE *f, int fd)
{
	const struct flame_out *o = ctx;
	int err = take_view(o->ri, o->view);

	(void)fd;
	return err ? err : folded_write(o->ri->flame->trees[o->view], f);
}

static int fill_flamegraph(void *ctx, FILE *f, int fd)
{
	const struct flame_out *o = ctx;
	const struct run_info *ri = o->ri;
	char title[1024];
	size_t len;
	int err = take_view(ri, o->view), k;

	(void)fd;
	if (err)
		return err;
	if (o->view >= V_SAMPLED)
		len = snprintf(title, sizeof(title),
			       "%s%.1f s, sampled every %llu bytes:", views[o->view].what,
			       ri->duration_ns / 1e9, (unsigned long long)heap_rate(ri->heap));
	else
		len = snprintf(title, sizeof(title), "%s%.1f s at %d Hz (%s):", views[o->view].what,
			       ri->duration_ns / 1e9, ri->freq, ri->event);
	for (k = 0; k < ri->argc && len < sizeof(title); k++)
		len += snprintf(title + len, sizeof(title) - len, " %s", ri->argv[k]);
	return flamegraph_write_html(ri->flame->trees[o->view], title, views[o->view].unit, f);
}

void flame_views_free(struct flame_views *fv)
{
	size_t i;

	if (!fv)
		return;
	for (i = 0; i < V_NR; i++)
		flame_free(fv->trees[i]);
	for (i = 0; i < MAX_STACK_FRAMES; i++)
		free(fv->bufs[i]);
	free(fv);
}

/* View v's folded file and flame graph, each listed with its command as it
 * runs here (flamegraph.pl only where it is installed, else the file's
 * path) when it is written. */
static int emit_view(const struct run_info *ri, int v)
{
	struct flame_out o = {ri, v};
	char cmd[PATH_MAX + 64];
	int first = 0;

	if (ri->readers.flamegraph)
		snprintf(cmd, sizeof(cmd), "flamegraph.pl %s%s/%s > %s", views[v].opts, ri->outdir,
			 views[v].folded, views[v].svg);
	else
		snprintf(cmd, sizeof(cmd), "%s/%s", ri->outdir, views[v].folded);
	OUT_FIRST(first, outdir_emit(ri->out, views[v].folded, 0, cmd, fill_folded, &o));
	snprintf(cmd, sizeof(cmd), "%s%s/%s", ri->readers.xdg_open ? "xdg-open " : "", ri->outdir,
		 views[v].html);
	OUT_FIRST(first, outdir_emit(ri->out, views[v].html, 0, cmd, fill_flamegraph, &o));
	return first;
}

int write_flame(const struct run_info *ri)
{
	int first = 0, v;

	for (v = 0; v < (ri->offcpu ? V_SAMPLED : 1); v++)
		OUT_FIRST(first, emit_view(ri, v));
	return first;
}

int write_heap_flame(const struct run_info *ri)
{
	int first = 0, v;

	for (v = V_HEAP_INUSE; ri->heap && v <= V_HEAP_ALLOC; v++)
		OUT_FIRST(first, emit_view(ri, v));
	return first;
}
