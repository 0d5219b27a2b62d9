#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "formats/procmaps.h"
#include "formats/util.h"

static const char *decnum(const char *p, const char *end, uint64_t *v)
{
	const char *s = p;

	*v = 0;
	for (; p < end && *p >= '0' && *p <= '9' && p - s < 20; p++)
		*v = *v * 10 + (*p - '0');
	return p > s ? p : NULL;
}

static const char *skip(const char *p, const char *end, char c)
{
	return p && p < end && *p == c ? p + 1 : NULL;
}

static bool parse_line(const char *p, const char *end, struct procmaps_entry *e)
{
	static const char deleted[] = " (deleted)";
	uint64_t major, minor;
	const char *perms;
	size_t len;

	memset(e, 0, sizeof(*e));
	p = skip(fmt_hex(p, end, &e->start), end, '-');
	p = p ? skip(fmt_hex(p, end, &e->end), end, ' ') : NULL;
	if (!p || end - p < 5)
		return false;
	perms = p;
	p = skip(p + 4, end, ' ');
	p = p ? skip(fmt_hex(p, end, &e->offset), end, ' ') : NULL;
	p = p ? skip(fmt_hex(p, end, &major), end, ':') : NULL;
	p = p ? skip(fmt_hex(p, end, &minor), end, ' ') : NULL;
	p = p ? decnum(p, end, &e->inode) : NULL;
	if (!p || e->end < e->start)
		return false;
	e->exec = perms[2] == 'x';
	e->dev_major = major;
	e->dev_minor = minor;
	while (p < end && *p == ' ')
		p++;
	len = end - p;
	if (len >= sizeof(deleted) - 1 &&
	    !memcmp(end - (sizeof(deleted) - 1), deleted, sizeof(deleted) - 1)) {
		e->deleted = true;
		len -= sizeof(deleted) - 1;
	}
	e->path = malloc(len + 1);
	if (!e->path)
		return false;
	memcpy(e->path, p, len);
	e->path[len] = 0;
	return true;
}

int procmaps_parse(const char *text, size_t len, struct procmaps_entry **out, size_t *n)
{
	const char *p = text, *end = text + len;
	struct procmaps_entry *v = NULL;
	size_t cnt = 0, cap = 0;

	while (p < end) {
		const char *nl = memchr(p, '\n', end - p), *le = nl ? nl : end;

		if (fmt_grow((void **)&v, &cap, cnt + 1, sizeof(*v))) {
			procmaps_free(v, cnt);
			return -ENOMEM;
		}
		if (parse_line(p, le, &v[cnt]))
			cnt++;
		p = nl ? nl + 1 : end;
	}
	*out = v;
	*n = cnt;
	return 0;
}

void procmaps_free(struct procmaps_entry *e, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(e[i].path);
	free(e);
}
