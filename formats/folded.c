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

/* The child of parent named fl->scratch, made when missing: its id, or
 * UINT32_MAX on ENOMEM. Children stay sorted: a binary search finds one. */
static uint32_t child(struct flame *fl, uint32_t parent)
{
	struct flame_node *p = &fl->nodes[parent];
	uint32_t lo = 0, hi = p->nkids, id;
	size_t cap;
	char *name;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		int c = strcmp(fl->nodes[p->kids[mid]].name, fl->scratch);

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
	if (!(name = strdup(fl->scratch)))
		return UINT32_MAX;
	id = fl->n++;
	fl->nodes[id] = (struct flame_node){.name = name};
	memmove(p->kids + lo + 1, p->kids + lo, (p->nkids - lo) * sizeof(*p->kids));
	p->kids[lo] = id;
	p->nkids++;
	return id;
}

int flame_add(struct flame *fl, const char *const *frames, size_t n, size_t nkernel, uint64_t count)
{
	uint32_t at = 0;
	size_t i;

	if (!n || !count || nkernel >= n)
		return -EINVAL;
	if (fmt_grow((void **)&fl->path, &fl->path_cap, n, sizeof(*fl->path)))
		return -ENOMEM;
	/* Every frame found or made first: a stack that runs out of memory
	 * half-way leaves empty nodes, never a partial count. */
	for (i = 0; i < n; i++) {
		enum folded_kind kind = !i		   ? FOLDED_COMM
					: i >= n - nkernel ? FOLDED_KERNEL
							   : FOLDED_USER;

		if (safe_name(&fl->scratch, &fl->scratch_cap, frames[i], kind))
			return -ENOMEM;
		at = child(fl, at);
		if (at == UINT32_MAX)
			return -ENOMEM;
		fl->path[i] = at;
	}
	fl->nodes[0].total += count;
	for (i = 0; i < n; i++)
		fl->nodes[fl->path[i]].total += count;
	fl->nodes[at].self += count;
	return 0;
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
