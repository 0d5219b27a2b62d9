/* TEMPORARY until formats/procmaps lands. */
#ifndef USER_MAPS_H
#define USER_MAPS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
struct maps_entry {
	uint64_t start, end, offset, inode;
	unsigned dev_major, dev_minor;
	bool exec, deleted;
	char *path;
};
static inline int maps_parse(const char *text, size_t len, struct maps_entry **out, size_t *n)
{
	const char *p = text, *end = text + len;
	struct maps_entry *v = NULL;
	size_t cnt = 0, cap = 0;

	while (p < end) {
		const char *nl = memchr(p, '\n', end - p);
		char line[4200], perms[8];
		struct maps_entry e = {0};
		int off = 0;
		size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
		unsigned long long s, en, o, ino;

		if (l >= sizeof(line))
			l = sizeof(line) - 1;
		memcpy(line, p, l);
		line[l] = 0;
		p += l + 1;
		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &s, &en, perms, &o, &e.dev_major,
			   &e.dev_minor, &ino, &off) < 7)
			continue;
		e.start = s, e.end = en, e.offset = o, e.inode = ino;
		e.exec = perms[2] == 'x';
		{
			char *path = line + off;
			size_t pl = strlen(path);
			if (pl > 10 && !strcmp(path + pl - 10, " (deleted)")) {
				path[pl - 10] = 0;
				e.deleted = true;
			}
			e.path = strdup(path);
		}
		if (cnt == cap) {
			cap = cap ? cap * 2 : 64;
			v = realloc(v, cap * sizeof(*v));
		}
		v[cnt++] = e;
	}
	*out = v;
	*n = cnt;
	return 0;
}
static inline void maps_free(struct maps_entry *e, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(e[i].path);
	free(e);
}
#endif
