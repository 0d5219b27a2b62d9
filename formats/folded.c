#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "formats/folded.h"
#include "formats/util.h"

struct flame {
	struct flame_node *nodes;
	size_t n, cap;
	char *scratch; /* the name being looked up */
	size_t scratch_cap;
	uint32_t *path; /* the stack's node ids, counted once all are found */
	size_t path_cap;
};

struct flame *flame_new(void)
{
	struct flame *fl = calloc(1, sizeof(*fl));

	if (!fl)
		return NULL;
	if (fmt_grow((void **)&fl->nodes, &fl->cap, 1, sizeof(*fl->nodes)) ||
	    !(fl->nodes[0].name = strdup("all"))) {
		flame_free(fl);
		return NULL;
	}
	fl->nodes[0] = (struct flame_node){.name = fl->nodes[0].name};
	fl->n = 1;
	return fl;
}

void flame_free(struct flame *fl)
{
	size_t i;

	if (!fl)
		return;
	for (i = 0; i < fl->n; i++) {
		free(fl->nodes[i].name);
		free(fl->nodes[i].kids);
	}
	free(fl->nodes);
	free(fl->scratch);
	free(fl->path);
	free(fl);
}

const struct flame_node *flame_node(const struct flame *fl, uint32_t id)
{
	return id < fl->n ? &fl->nodes[id] : NULL;
}

size_t flame_nodes(const struct flame *fl)
{
	return fl->n;
}

/* The name made safe (folded_name) into *buf (of *cap bytes, grown). */
static int safe_name(char **buf, size_t *cap, const char *name, enum folded_kind kind)
{
	static const char unknown[] = "[unknown]", ksuffix[] = "_[k]";
	size_t len = fmt_sanitize(NULL, 0, name, strlen(name)), i, j;
	char *s;

	if (fmt_grow((void **)buf, cap, len + sizeof(unknown) + sizeof(ksuffix), 1))
		return -ENOMEM;
	s = *buf;
	fmt_sanitize(s, len + 1, name, strlen(name));
	if (!len) {
		memcpy(s, unknown, sizeof(unknown));
		len = sizeof(unknown) - 1;
	}
	for (i = 0; i < len; i++)
		if (s[i] == ';')
			s[i] = ':';
		else if (s[i] == ' ' && kind == FOLDED_COMM)
			s[i] = '_';
	/* flamegraph.pl takes "... f 12 7" for a differential line (counts
	 * 12 and 7): the number must not end a frame after a space. */
	for (j = len; j > 0 && ((s[j - 1] >= '0' && s[j - 1] <= '9') || s[j - 1] == '.'); j--)
		;
	if (j < len && j > 0 && s[j - 1] == ' ')
		s[j - 1] = '_';
	if (kind == FOLDED_KERNEL) {
		memcpy(s + len, ksuffix, sizeof(ksuffix));
		len += sizeof(ksuffix) - 1;
	}
	s[len] = 0;
	return 0;
}

char *folded_name(const char *name, enum folded_kind kind)
{
	char *buf = NULL;
	size_t cap = 0;

	if (safe_name(&buf, &cap, name, kind)) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* The child of parent named name, made when missing: its id, or
 * UINT32_MAX on ENOMEM. Children stay sorted: a binary search finds one. */
static uint32_t child(struct flame *fl, uint32_t parent, const char *name)
{
	struct flame_node *p = &fl->nodes[parent];
	uint32_t lo = 0, hi = p->nkids, id;
	size_t cap;
	char *copy;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		int c = strcmp(fl->nodes[p->kids[mid]].name, name);

		if (!c)
			return p->kids[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (fl->n >= UINT32_MAX || p->nkids == UINT32_MAX)
		return UINT32_MAX;
	cap = p->cap;
	if (fmt_grow((void **)&p->kids, &cap, (size_t)p->nkids + 1, sizeof(*p->kids)) ||
	    cap > UINT32_MAX)
		return UINT32_MAX;
	p->cap = cap;
	if (fmt_grow((void **)&fl->nodes, &fl->cap, fl->n + 1, sizeof(*fl->nodes)))
		return UINT32_MAX;
	p = &fl->nodes[parent]; /* moved */
	if (!(copy = strdup(name)))
		return UINT32_MAX;
	id = fl->n++;
	fl->nodes[id] = (struct flame_node){.name = copy};
	memmove(p->kids + lo + 1, p->kids + lo, (p->nkids - lo) * sizeof(*p->kids));
	p->kids[lo] = id;
	p->nkids++;
	return id;
}

int flame_add(struct flame *fl, const char *const *frames, size_t n, size_t nkernel, uint64_t count)
{
	return flame_add_n(&fl, &count, 1, frames, n, nkernel);
}

int flame_add_n(struct flame *const *fls, const uint64_t *counts, size_t nfl,
		const char *const *frames, size_t n, size_t nkernel)
{
	struct flame *first = NULL;
	uint32_t at[FLAME_ADD_MAX] = {0};
	size_t i, t;

	for (t = 0; t < nfl && t < FLAME_ADD_MAX; t++)
		if (counts[t] && !first)
			first = fls[t];
	if (!n || !first || nkernel >= n || nfl > FLAME_ADD_MAX)
		return -EINVAL;
	for (t = 0; t < nfl; t++)
		if (counts[t] &&
		    fmt_grow((void **)&fls[t]->path, &fls[t]->path_cap, n, sizeof(*fls[t]->path)))
			return -ENOMEM;
	/* Every frame found or made first, in every tree: a stack that runs
	 * out of memory half-way leaves empty nodes, never a partial count.
	 * Each name is made safe once, in the first tree's scratch. */
	for (i = 0; i < n; i++) {
		enum folded_kind kind = !i		   ? FOLDED_COMM
					: i >= n - nkernel ? FOLDED_KERNEL
							   : FOLDED_USER;

		if (safe_name(&first->scratch, &first->scratch_cap, frames[i], kind))
			return -ENOMEM;
		for (t = 0; t < nfl; t++) {
			if (!counts[t])
				continue;
			at[t] = child(fls[t], at[t], first->scratch);
			if (at[t] == UINT32_MAX)
				return -ENOMEM;
			fls[t]->path[i] = at[t];
		}
	}
	for (t = 0; t < nfl; t++) {
		if (!counts[t])
			continue;
		fls[t]->nodes[0].total += counts[t];
		for (i = 0; i < n; i++)
			fls[t]->nodes[fls[t]->path[i]].total += counts[t];
		fls[t]->nodes[at[t]].self += counts[t];
	}
	return 0;
}

int flame_merge(struct flame *dst, const struct flame *src, uint64_t scale)
{
	/* Pairs (src node, its dst node), depth first: a deep stack costs
	 * memory here, not C stack. */
	struct {
		uint32_t s, d;
	} *todo = NULL;
	size_t n = 0, cap = 0;
	int err = 0;

	if (!scale)
		return 0;
	if (fmt_grow((void **)&todo, &cap, 1, sizeof(*todo)))
		return -ENOMEM;
	todo[n++].s = 0;
	todo[0].d = 0;
	dst->nodes[0].total += src->nodes[0].total * scale;
	while (n && !err) {
		uint32_t s = todo[--n].s, d = todo[n].d, k;

		for (k = 0; k < src->nodes[s].nkids && !err; k++) {
			const struct flame_node *sk = &src->nodes[src->nodes[s].kids[k]];
			uint32_t dk = child(dst, d, sk->name);

			if (dk == UINT32_MAX ||
			    fmt_grow((void **)&todo, &cap, n + 1, sizeof(*todo))) {
				err = -ENOMEM;
				break;
			}
			dst->nodes[dk].total += sk->total * scale;
			dst->nodes[dk].self += sk->self * scale;
			todo[n].s = src->nodes[s].kids[k];
			todo[n++].d = dk;
		}
	}
	free(todo);
	return err;
}

/* The lines of node id's subtree; path[0..depth) holds the frames above
 * it, and takes its own below. */
static void write_node(const struct flame *fl, uint32_t id, uint32_t *path, size_t depth, FILE *f)
{
	const struct flame_node *nd = &fl->nodes[id];
	uint32_t k;
	size_t i;

	if (nd->self) {
		for (i = 0; i < depth; i++) {
			fputs(fl->nodes[path[i]].name, f);
			fputc(';', f);
		}
		fprintf(f, "%s %llu\n", nd->name, (unsigned long long)nd->self);
	}
	path[depth] = id;
	for (k = 0; k < nd->nkids; k++)
		write_node(fl, nd->kids[k], path, depth + 1, f);
}

/* The deepest path below id, in frames. */
static size_t depth_of(const struct flame *fl, uint32_t id)
{
	size_t d = 0, k;

	for (k = 0; k < fl->nodes[id].nkids; k++) {
		size_t c = 1 + depth_of(fl, fl->nodes[id].kids[k]);

		if (c > d)
			d = c;
	}
	return d;
}

int folded_write(const struct flame *fl, FILE *f)
{
	uint32_t *path = calloc(depth_of(fl, 0) + 1, sizeof(*path));
	uint32_t k;

	if (!path)
		return -ENOMEM;
	/* The root ("all") is no frame of the lines. */
	for (k = 0; k < fl->nodes[0].nkids; k++)
		write_node(fl, fl->nodes[0].kids[k], path, 0, f);
	free(path);
	return ferror(f) ? -EIO : 0;
}
