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
#include "user/outdir.h"
#include "user/output.h"
#include "user/proc.h"
#include "user/util.h"
#include "user/writers.h"

static struct flame *tree;
static int tree_err;	     /* the first failure: no file is written then */
static bool took_live;	     /* the processes held at the end are in */
static uint64_t not_in_tree; /* samples a failure left out, for the warning */

/* A frame name's buffer, as write_pprof.c's: a file's base name, whose
 * bytes may each be a 4-byte escape, with "[...]" or "+0x" and 16 digits. */
#define NAME_BUF (PATH_MAX + 4)
static char *bufs[MAX_STACK_FRAMES]; /* a frame's each, made as deep stacks come */

void flame_fold_add(struct proc *p)
{
	const char *names[MAX_STACK_FRAMES + 1];
	size_t j;

	if (!tree && !tree_err && !(tree = flame_new()))
		tree_err = -ENOMEM;
	for (j = 0; j < p->samples.n; j++) {
		const struct sample *s = &p->samples.v[j];
		struct frame_iter it;
		size_t n = 0;
		int err = 0;

		if (tree_err) {
			not_in_tree += s->count;
			continue;
		}
		/* Root first: the comm, then the frames (user then kernel). */
		names[n++] = p->comm;
		frame_iter_init(&it, p, s, true);
		while (frame_iter_next(&it)) {
			size_t slot = n - 1;

			if (!bufs[slot] && !(bufs[slot] = malloc(NAME_BUF))) {
				err = -ENOMEM;
				break;
			}
			names[n++] = frame_iter_name(&it, bufs[slot], NAME_BUF, NULL, NULL, NULL);
		}
		if (!err)
			err = flame_add(tree, names, n, it.nk, s->count);
		if (err == -EINVAL) /* no sample: nothing to add */
			continue;
		if (err) {
			tree_err = err;
			not_in_tree += s->count;
		}
	}
}

static int take_live(const struct run_info *ri)
{
	size_t i;

	if (!took_live) {
		took_live = true;
		for (i = 0; i < ri->procs->v.n; i++)
			flame_fold_add(ri->procs->v.v[i]);
		if (tree_err)
			warn("stacks.folded and flamegraph.html: %s (%llu samples could not be "
			     "added): not written",
			     strerror(-tree_err), (unsigned long long)not_in_tree);
	}
	if (tree_err)
		return tree_err;
	return tree && flame_node(tree, 0)->total ? 0 : -ENODATA;
}

static int fill_folded(void *ctx, FILE *f, int fd)
{
	int err = take_live(ctx);

	(void)fd;
	return err ? err : folded_write(tree, f);
}

static int fill_flamegraph(void *ctx, FILE *f, int fd)
{
	const struct run_info *ri = ctx;
	char title[1024];
	size_t len;
	int err = take_live(ri), k;

	(void)fd;
	if (err)
		return err;
	len = snprintf(title, sizeof(title), "%.1f s at %d Hz (%s):", ri->duration_ns / 1e9,
		       ri->freq, ri->event);
	for (k = 0; k < ri->argc && len < sizeof(title); k++)
		len += snprintf(title + len, sizeof(title) - len, " %s", ri->argv[k]);
	return flamegraph_write_html(tree, title, f);
}

static void flame_free_all(void)
{
	size_t i;

	flame_free(tree);
	tree = NULL;
	for (i = 0; i < MAX_STACK_FRAMES; i++) {
		free(bufs[i]);
		bufs[i] = NULL;
	}
}

int write_flame(const struct run_info *ri)
{
	char cmd[PATH_MAX + 64];
	int first = 0;

	if (ri->readers.flamegraph)
		snprintf(cmd, sizeof(cmd), "flamegraph.pl %s/stacks.folded > flame.svg",
			 ri->outdir);
	else
		snprintf(cmd, sizeof(cmd), "%s/stacks.folded", ri->outdir);
	OUT_FIRST(first, outdir_emit(ri->out, "stacks.folded", 0, cmd, fill_folded, (void *)ri));
	snprintf(cmd, sizeof(cmd), "%s%s/flamegraph.html", ri->readers.xdg_open ? "xdg-open " : "",
		 ri->outdir);
	OUT_FIRST(first,
		  outdir_emit(ri->out, "flamegraph.html", 0, cmd, fill_flamegraph, (void *)ri));
	flame_free_all();
	return first;
}
