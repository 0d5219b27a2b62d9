#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "formats/perfmap.h"
#include "formats/util.h"

#define MAX_LINE 4096 /* longer lines are not a perf map's */

/* A hex field, with or without 0x; more than 16 digits is not an address. */
static bool hex(const char **p, const char *end, uint64_t *v)
{
	const char *s = *p, *e;

	if (end - s > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	e = fmt_hex(s, end, v);
	if (!e || (e < end && ((*e >= '0' && *e <= '9') || (*e >= 'a' && *e <= 'f') ||
			       (*e >= 'A' && *e <= 'F'))))
		return false;
	*p = e;
	return true;
}

static int cmp(const void *a, const void *b)
{
	const struct perfmap_sym *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

int perfmap_parse(const char *buf, size_t len, struct perfmap *out)
{
	size_t cap = 0, line = 0, text_len = 0, text_cap = 0, i;
	const char *p = buf, *end = buf + len;

	memset(out, 0, sizeof(*out));
	while (p < end) {
		const char *nl = memchr(p, '\n', end - p), *le = nl ? nl : end, *q = p, *name;
		struct perfmap_sym s;
		size_t n, clean;

		line++;
		if (le > p && le[-1] == '\r')
			le--;
		if (le - p > MAX_LINE || !hex(&q, le, &s.start) || q >= le || *q != ' ')
			goto bad;
		q++;
		if (!hex(&q, le, &s.size) || q >= le || *q != ' ')
			goto bad;
		name = q + 1;
		if (name >= le)
			goto bad;
		n = le - name;
		if (memchr(name, 0, n))
			goto bad;
		/* Sanitized (fmt_sanitize): names reach terminals and files. The
		 * text grows with the names, never with the input's size: an input
		 * of garbage costs nothing. Offsets until the end (it moves). */
		clean = fmt_sanitize(NULL, 0, name, n);
		if (fmt_grow((void **)&out->text, &text_cap, text_len + clean + 1, 1) ||
		    fmt_grow((void **)&out->syms, &cap, out->nsyms + 1, sizeof(s))) {
			perfmap_free(out);
			return -ENOMEM;
		}
		fmt_sanitize(out->text + text_len, clean + 1, name, n);
		s.name = NULL;
		s.name_off = text_len;
		s.order = line;
		text_len += clean + 1;
		out->syms[out->nsyms++] = s;
		goto next;
	bad:
		if (le > p)
			out->bad_lines++;
	next:
		p = nl ? nl + 1 : end;
	}
	for (i = 0; i < out->nsyms; i++)
		out->syms[i].name = out->text + out->syms[i].name_off;
	if (out->nsyms) /* syms is NULL when no line parsed; qsort wants a pointer */
		qsort(out->syms, out->nsyms, sizeof(*out->syms), cmp);
	return 0;
}

void perfmap_free(struct perfmap *m)
{
	free(m->syms);
	free(m->text);
	memset(m, 0, sizeof(*m));
}

const struct perfmap_sym *perfmap_lookup(const struct perfmap *m, uint64_t addr)
{
	const struct perfmap_sym *best = NULL;
	size_t lo = 0, hi = m->nsyms, i, k;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->syms[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Overlapping entries: the latest line covering addr. */
	for (i = lo, k = 0; i-- > 0 && k < 256; k++)
		if (addr - m->syms[i].start < (m->syms[i].size ? m->syms[i].size : 1) &&
		    (!best || m->syms[i].order > best->order))
			best = &m->syms[i];
	return best;
}
