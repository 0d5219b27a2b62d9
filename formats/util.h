/* Small helpers shared by the format readers and writers. */
#ifndef FORMATS_UTIL_H
#define FORMATS_UTIL_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* Grows *p (of *cap elements of sz bytes) to hold want, doubling, with
 * overflow checked. 0 or -ENOMEM. */
static inline int fmt_grow(void **p, size_t *cap, size_t want, size_t sz)
{
	size_t c = *cap ? *cap : 16;
	void *np;

	if (want <= *cap)
		return 0;
	while (c < want) {
		if (c > SIZE_MAX / 2 / sz)
			return -ENOMEM;
		c *= 2;
	}
	np = realloc(*p, c * sz);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = c;
	return 0;
}

/* Up to 16 hex digits from p (before end) into *v; returns the first
 * character after them, or NULL when there is none. */
static inline const char *fmt_hex(const char *p, const char *end, uint64_t *v)
{
	const char *s = p;

	*v = 0;
	for (; p < end && p - s < 16; p++) {
		int c = *p, d;

		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			break;
		*v = *v << 4 | d;
	}
	return p > s ? p : NULL;
}

#endif
