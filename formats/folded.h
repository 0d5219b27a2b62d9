/* Stacks merged into a tree of frames, and written as folded stacks
 * ("comm;root;...;leaf count" a line), the text that Brendan Gregg's
 * flamegraph.pl, speedscope and inferno read. Plain C, no BPF: see
 * tests/unit/test_folded.c. The tree grows with distinct stacks only, never
 * with how many samples or processes had them. */
#ifndef FORMATS_FOLDED_H
#define FORMATS_FOLDED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* A frame of the tree: node 0 is the root ("all", no frame), its children
 * the processes. Children are sorted by name (strcmp), as flamegraph.pl
 * sorts its input. */
struct flame_node {
	char *name;	/* safe for the format (folded_name) */
	uint64_t total; /* samples with this frame: self + the children's totals */
	uint64_t self;	/* samples whose leaf this frame is */
	uint32_t *kids; /* node ids */
	uint32_t nkids, cap;
};

struct flame;
struct flame *flame_new(void);
void flame_free(struct flame *fl);

/* Adds count samples of one stack: frames[0] names the process (its comm),
 * frames[1..n) the stack from its root to its leaf, of which the last
 * nkernel are kernel frames. Names are made safe as folded_name says.
 * 0, -EINVAL (no frame, no sample, nkernel >= n), or -ENOMEM (the tree is
 * unchanged: nothing of the stack was counted). */
int flame_add(struct flame *fl, const char *const *frames, size_t n, size_t nkernel,
	      uint64_t count);
/* The same stack added to nfl trees at once (at most FLAME_ADD_MAX), with
 * a count each (0: not to that tree), its names made safe once (a
 * recording's views, write_flame.c: most of the work of adding a stack).
 * -EINVAL also when every count is 0; on -ENOMEM no tree counted it. */
#define FLAME_ADD_MAX 4
int flame_add_n(struct flame *const *fls, const uint64_t *counts, size_t nfl,
		const char *const *frames, size_t n, size_t nkernel);
/* Adds every stack of src into dst, its counts times scale, as flame_add
 * would have added each (a recording's wall-clock view, made at the end
 * from its CPU view at a sample's period and its off-CPU view, instead of
 * a third tree held through the recording). Names are src's, already
 * safe. 0 or -ENOMEM (dst then holds part of src: not to be written). */
int flame_merge(struct flame *dst, const struct flame *src, uint64_t scale);
/* Node id (0: the root); NULL past the last. */
const struct flame_node *flame_node(const struct flame *fl, uint32_t id);
size_t flame_nodes(const struct flame *fl);

/* A frame's name as the format needs it (malloc'd; NULL on ENOMEM).
 * Control characters and invalid UTF-8 become \xNN (fmt_sanitize); ';'
 * (the frame separator) becomes ':', as perf's stackcollapse.py does; a
 * space before a trailing number ("f 12") becomes '_', since flamegraph.pl
 * reads "stack N M" as a differential line and would take that number for
 * the count; an empty name is "[unknown]". Kernel frames get "_[k]", as
 * stackcollapse-perf.pl --kernel writes them; the process's comm gets every
 * space as '_', as stackcollapse-perf.pl writes its first frame. */
enum folded_kind { FOLDED_USER, FOLDED_KERNEL, FOLDED_COMM };
char *folded_name(const char *name, enum folded_kind kind);

/* One line per distinct stack, in the tree's order (sorted), "a;b;c N\n".
 * 0 or -EIO. */
int folded_write(const struct flame *fl, FILE *f);

#endif
