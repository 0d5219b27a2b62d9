/* CPython's line tables (formats/pyline.h). The three decoders follow
 * Objects/codeobject.c of their versions: 3.8's PyCode_Addr2Line, 3.10's
 * and 3.11's advance() over PyCodeAddressRange. */
#include <errno.h>
#include <limits.h>
#include "formats/pyline.h"

enum pyline_format pyline_format_of(int major, int minor)
{
	if (major != 3 || minor < 8)
		return PYLINE_NONE;
	if (minor <= 9)
		return PYLINE_LNOTAB;
	if (minor == 10)
		return PYLINE_LINETABLE;
	return PYLINE_LOCATIONS;
}

void pyline_iter_init(struct pyline_iter *it, enum pyline_format fmt, const uint8_t *tab,
		      size_t len, int firstlineno)
{
	it->p = tab;
	it->end = tab ? tab + len : tab;
	it->fmt = fmt;
	it->line = firstlineno;
	it->offset = 0;
	it->done = 0;
}

/* Adds a signed delta to the running line: -EINVAL when it leaves
 * [0, INT_MAX] (no compiled code has a negative line, and CPython's own int
 * would overflow), so that a line is never mistaken for "no line" (-1). */
static int add_line(struct pyline_iter *it, int64_t delta)
{
	it->line += delta;
	return it->line < 0 || it->line > INT_MAX ? -EINVAL : 0;
}

/* The location table's varints: 6 bits a byte, low first, bit 6 saying
 * another follows; an entry's payload bytes all have bit 7 clear. At most 5
 * bytes (30 bits): CPython writes no more for an int. */
static int read_varint(const uint8_t **p, const uint8_t *end, uint32_t *v)
{
	uint32_t val = 0;
	unsigned shift = 0;
	uint8_t b;

	do {
		if (*p >= end || shift > 24 || (**p & 0x80))
			return -EINVAL;
		b = *(*p)++;
		val |= (uint32_t)(b & 63) << shift;
		shift += 6;
	} while (b & 64);
	*v = val;
	return 0;
}

/* co_lnotab: the line of the range up to the next delta, then the line
 * delta; the last line holds to the end of the code. */
static int next_lnotab(struct pyline_iter *it, struct pyline_range *r)
{
	while (it->end - it->p >= 2) {
		uint8_t addr = it->p[0];
		int8_t dl = (int8_t)it->p[1];
		int64_t line = it->line;

		it->p += 2;
		if (add_line(it, dl))
			return -EINVAL;
		if (addr) {
			r->start = it->offset;
			r->end = it->offset += addr;
			r->line = (int)line;
			return 1;
		}
	}
	/* An odd last byte is ignored, as CPython's size / 2 does. */
	it->done = 1;
	r->start = it->offset;
	r->end = UINT64_MAX;
	r->line = (int)it->line;
	return 1;
}

/* 3.10's co_linetable: each pair ends a range; -128 says it has no line
 * (without moving the running line). */
static int next_linetable(struct pyline_iter *it, struct pyline_range *r)
{
	while (it->end - it->p >= 2) {
		uint8_t addr = it->p[0];
		int8_t dl = (int8_t)it->p[1];
		int line = -1;

		it->p += 2;
		if (dl != -128) {
			if (add_line(it, dl))
				return -EINVAL;
			line = (int)it->line;
		}
		if (addr) {
			r->start = it->offset;
			r->end = it->offset += addr;
			r->line = line;
			return 1;
		}
	}
	if (it->p != it->end)
		return -EINVAL;
	it->done = 1;
	return 0;
}

/* 3.11's location table (Objects/locations.md): a header byte 1CCCCLLL,
 * code C and L+1 code units, then the code's varints. */
static int next_locations(struct pyline_iter *it, struct pyline_range *r)
{
	while (it->p < it->end) {
		uint8_t h = *it->p++;
		unsigned code = (h >> 3) & 15, units = (h & 7) + 1;
		int64_t delta = 0;
		int line;

		if (!(h & 0x80))
			return -EINVAL;
		if (code == 13 || code == 14) { /* no columns; long form */
			uint32_t u;

			if (read_varint(&it->p, it->end, &u))
				return -EINVAL;
			delta = u & 1 ? -(int64_t)(u >> 1) : (int64_t)(u >> 1);
		} else if (code >= 10 && code <= 12) { /* one line: the delta in the code */
			delta = code - 10;
		}
		/* The rest of the entry (end line, columns) up to the next header. */
		while (it->p < it->end && !(*it->p & 0x80))
			it->p++;
		if (code == 15) {
			line = -1;
		} else {
			if (add_line(it, delta))
				return -EINVAL;
			line = (int)it->line;
		}
		r->start = it->offset;
		r->end = it->offset += 2 * units;
		r->line = line;
		return 1;
	}
	it->done = 1;
	return 0;
}

int pyline_next(struct pyline_iter *it, struct pyline_range *r)
{
	if (it->done)
		return 0;
	if (!it->p || it->line < 0 || it->line > INT_MAX)
		return -EINVAL;
	switch (it->fmt) {
	case PYLINE_LNOTAB:
		return next_lnotab(it, r);
	case PYLINE_LINETABLE:
		return next_linetable(it, r);
	case PYLINE_LOCATIONS:
		return next_locations(it, r);
	default:
		return -EINVAL;
	}
}

int pyline_lookup(enum pyline_format fmt, const uint8_t *tab, size_t len, int firstlineno,
		  int64_t off, int *line)
{
	struct pyline_iter it;
	struct pyline_range r;
	int ret;

	if (fmt != PYLINE_LNOTAB && fmt != PYLINE_LINETABLE && fmt != PYLINE_LOCATIONS)
		return -EINVAL;
	if (off < 0) {
		*line = firstlineno;
		return 0;
	}
	pyline_iter_init(&it, fmt, tab, tab ? len : 0, firstlineno);
	if (!tab) /* an empty table: co_lnotab of a code with no lines */
		it.p = it.end = (const uint8_t *)"";
	while ((ret = pyline_next(&it, &r)) == 1) {
		if ((uint64_t)off >= r.start && (uint64_t)off < r.end) {
			if (r.line < 0)
				return -ENOENT;
			*line = r.line;
			return 0;
		}
	}
	return ret < 0 ? ret : -ENOENT;
}
