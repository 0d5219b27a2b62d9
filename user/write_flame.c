/* stacks.folded and flamegraph.html: the samples of every process as one
 * tree of frames (formats/folded.h), written both ways. */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "formats/flamegraph.h"
#include "formats/folded.h"
#include "user/offcpu.h"
#include "user/outdir.h"
#include "user/proc.h"
#include "user/util.h"
#include "user/writers.h"

/* The views: CPU samples; with --off-cpu also the waits (in us) and the
 * wall clock (a CPU sample as its period, plus the waits, in us). The wall
 * view is made at the end from the other two (flame_merge): held through
 * the recording, its tree was a third of the views' memory (issue 22's
 * RSS). */
enum { V_CPU, V_OFFCPU, V_WALL, V_NR };
static const struct view {
	const char *folded, *html, *svg, *unit, *what;
} views[V_NR] = {
    {"stacks.folded", "flamegraph.html", "flame.svg", "samples", ""},
    {"stacks-offcpu.folded", "flamegraph-offcpu.html", "flame-offcpu.svg", "us",
     "off-CPU time (us), "},
    {"stacks-wall.folded", "flamegraph-wall.html", "flame-wall.svg", "us",
     "wall-clock time (us, CPU + off-CPU), "},
};
/* A frame name's buffer, as write_pprof.c's: a file's base name, whose
 * bytes may each be a 4-byte escape, with "[...]" or "+0x" and 16 digits. */
#define NAME_BUF (PATH_MAX + 4)

struct flame_views {
	struct flame *trees[V_NR];
	int err;		      /* the first failure: no file is written then */
	bool took_live;		      /* the processes held at the end are in */
	uint64_t not_in_tree;	      /* samples a failure left out, for the warning */
	char *bufs[MAX_STACK_FRAMES]; /* a frame's name each, made as deep stacks come */
};

int flame_views_new(struct flame_views **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

/* Adds a stack of p to the views with a weight each (0: not to that one). */
static void add_stack(struct flame_views *fv, struct proc *p, const struct sample *s,
		      const uint64_t w[V_NR])
{
	const char *names[MAX_STACK_FRAMES + 1];
	struct frame_iter it = {0};
	size_t n = 0, v;
	int err = 0;

	if (fv->err) {
		fv->not_in_tree++;
		return;
	}
	/* Root first: the comm, then the frames (user then kernel). */
	names[n++] = p->comm;
	if (s->stack < p->stack_off.n) {
		frame_iter_init(&it, p, s, true);
		while (frame_iter_next(&it)) {
			size_t slot = n - 1;

			if (!fv->bufs[slot] && !(fv->bufs[slot] = malloc(NAME_BUF))) {
				err = -ENOMEM;
				break;
			}
			names[n++] =
			    frame_iter_name(&it, fv->bufs[slot], NAME_BUF, NULL, NULL, NULL);
		}
	} else {
		names[n++] = "[off-cpu] stack not recorded"; /* as profile.pb.gz */
	}
	for (v = 0; v < V_NR && !err; v++)
		if (w[v] && !fv->trees[v] && !(fv->trees[v] = flame_new()))
			err = -ENOMEM;
	/* Into every view at once: each frame's name made safe once. */
	if (!err)
		err = flame_add_n(fv->trees, w, V_NR, names, n, it.nk);
	if (err == -EINVAL) /* no frame: nothing to add */
		err = 0;
	if (err) {
		fv->err = err;
		fv->not_in_tree++;
	}
}

void flame_fold_add(struct flame_views *fv, struct proc *p, const struct offcpu *oc)
{
	const struct offcpu_sum *os;
	size_t j, n;

	for (j = 0; j < p->samples.n; j++) {
		const struct sample *s = &p->samples.v[j];

		add_stack(fv, p, s, (uint64_t[V_NR]){s->count, 0, 0});
	}
	os = offcpu_sums_of(oc, p, &n);
	for (j = 0; j < n; j++) {
		struct sample s = {.stack = os[j].stack, .tid = os[j].tid};
		uint64_t us = (os[j].ns + 500) / 1000;

		add_stack(fv, p, &s, (uint64_t[V_NR]){0, us, 0});
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

struct flame_out {
	const struct run_info *ri;
	int view;
};

static int fill_folded(void *ctx, FILE *f, int fd)
{
	const struct flame_out *o = ctx;
	int err = take_live(o->ri, o->view);

	(void)fd;
	return err ? err : folded_write(o->ri->flame->trees[o->view], f);
}

static int fill_flamegraph(void *ctx, FILE *f, int fd)
{
	const struct flame_out *o = ctx;
	const struct run_info *ri = o->ri;
	char title[1024];
	size_t len;
	int err = take_live(ri, o->view), k;

	(void)fd;
	if (err)
		return err;
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

int write_flame(const struct run_info *ri)
{
	char cmd[PATH_MAX + 64];
	int first = 0, v;

	for (v = 0; v < (ri->offcpu ? V_NR : 1); v++) {
		struct flame_out o = {ri, v};

		/* Each command as it runs here: flamegraph.pl only where it is
		 * installed, else the file's path. */
		if (ri->readers.flamegraph)
			snprintf(cmd, sizeof(cmd), "flamegraph.pl %s%s/%s > %s",
				 v == V_CPU ? "" : "--countname=us ", ri->outdir, views[v].folded,
				 views[v].svg);
		else
			snprintf(cmd, sizeof(cmd), "%s/%s", ri->outdir, views[v].folded);
		OUT_FIRST(first, outdir_emit(ri->out, views[v].folded, 0, cmd, fill_folded, &o));
		snprintf(cmd, sizeof(cmd), "%s%s/%s", ri->readers.xdg_open ? "xdg-open " : "",
			 ri->outdir, views[v].html);
		OUT_FIRST(first, outdir_emit(ri->out, views[v].html, 0, cmd, fill_flamegraph, &o));
	}
	return first;
}
