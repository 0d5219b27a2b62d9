/* V8's source position tables and line ends (formats/v8_srcpos.h). */
#include <errno.h>
#include "formats/v8_srcpos.h"

/* One zigzag VLQ at *i: 0 and *v, or -EINVAL. */
static int vlq(const uint8_t *b, size_t len, size_t *i, int64_t *v)
{
	uint64_t u = 0;
	unsigned shift = 0;
	uint8_t c;

	do {
		if (*i >= len || shift > 63)
			return -EINVAL;
		c = b[(*i)++];
		u |= (uint64_t)(c & 0x7f) << shift;
		shift += 7;
	} while (c & 0x80);
	*v = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
	return 0;
}

int v8_srcpos_find(const uint8_t *tab, size_t len, uint32_t code_offset, int64_t *pos)
{
	int64_t off = 0, p = 0, d, dp;
	size_t i = 0;
	int found = 0;

	for (unsigned k = 0; i < len && k < V8_SRCPOS_MAX_ENTRIES; k++) {
		if (vlq(tab, len, &i, &d) || vlq(tab, len, &i, &dp))
			return -EINVAL;
		/* A statement's delta is itself, another's -delta - 1. */
		if (d < 0)
			d = -(d + 1);
		/* Bounded so that neither sum overflows: offsets are ints,
		 * positions 47 bits. */
		if (d > INT32_MAX || dp > (1LL << 47) || dp < -(1LL << 47))
			return -EINVAL;
		off += d;
		p += dp;
		if (off > INT32_MAX || p < 0 || p >= (1LL << 47))
			return -EINVAL;
		if (off > code_offset)
			break;
		*pos = p;
		found = 1;
	}
	return found ? 0 : -ENOENT;
}

int v8_inline_expand(const uint8_t *ipos, size_t len, int64_t pos, struct v8_inline_frame *out,
		     size_t max, size_t *nout)
{
	size_t count = len / V8_INLINING_POSITION_SIZE, n = 0;
	int32_t id = v8_srcpos_inlining_id(pos);

	if (len % V8_INLINING_POSITION_SIZE)
		return -EINVAL;
	for (;;) {
		const uint8_t *e;
		uint64_t caller = 0;
		uint32_t lit = 0;

		/* Each step takes one position: more steps than positions is a
		 * cycle (V8 gives a caller's inlining a lower id than its
		 * callees', but a hostile table need not). */
		if (id >= 0 && ((size_t)id >= count || n >= count))
			return -EINVAL;
		if (n >= max)
			return -E2BIG;
		out[n].script_offset = v8_srcpos_script_offset(pos);
		if (id < 0) { /* -1: not inlined, the code's own function */
			out[n++].literal = -1;
			break;
		}
		e = ipos + (size_t)id * V8_INLINING_POSITION_SIZE;
		for (int b = 7; b >= 0; b--)
			caller = caller << 8 | e[b];
		for (int b = 11; b >= 8; b--)
			lit = lit << 8 | e[b];
		if (lit > INT32_MAX || caller >= (1ULL << 47))
			return -EINVAL;
		out[n++].literal = (int32_t)lit;
		pos = (int64_t)caller;
		id = v8_srcpos_inlining_id(pos);
	}
	*nout = n;
	return 0;
}

int v8_line_of(const int32_t *ends, size_t n, int32_t offset, int *line)
{
	size_t lo = 0, hi = n;

	if (offset < 0 || !n || ends[n - 1] < offset)
		return -EINVAL;
	/* The first end at or after offset: its line. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (mid && ends[mid - 1] > ends[mid])
			return -EINVAL;
		if (ends[mid] < offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo > (size_t)INT32_MAX - 1)
		return -EINVAL;
	*line = (int)lo + 1;
	return 0;
}

size_t v8_line_ends(const char *text, size_t len, int32_t *ends, size_t max)
{
	size_t n = 0;

	if (len > INT32_MAX)
		len = INT32_MAX;
	for (size_t i = 0; i < len && n < max; i++)
		if (text[i] == '\n')
			ends[n++] = (int32_t)i;
	if (n < max)
		ends[n++] = (int32_t)len;
	return n;
}
