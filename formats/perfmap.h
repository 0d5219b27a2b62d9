/* perf map files (/tmp/perf-PID.map): lines "START SIZE NAME", hex with or
 * without 0x, names with spaces. Garbage lines are counted and skipped. No
 * times: where entries overlap, the later line wins (runtimes re-map code). */
#ifndef FORMATS_PERFMAP_H
#define FORMATS_PERFMAP_H

#include <stddef.h>
#include <stdint.h>

struct perfmap_sym {
	uint64_t start, size;
	const char *name; /* sanitized (fmt_sanitize) */
	size_t name_off;  /* of name in text */
	size_t order;	  /* line number: later wins */
};

struct perfmap {
	struct perfmap_sym *syms; /* sorted by start */
	size_t nsyms;
	size_t bad_lines;
	char *text; /* names point into it; NULL when there are none */
};

/* 0 or -ENOMEM. */
int perfmap_parse(const char *buf, size_t len, struct perfmap *out);
void perfmap_free(struct perfmap *m);
const struct perfmap_sym *perfmap_lookup(const struct perfmap *m, uint64_t addr);

#endif
