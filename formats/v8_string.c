/* V8 heap strings (formats/v8_string.h). */
#include <errno.h>
#include <string.h>
#include "formats/v8_string.h"

struct sctx {
	const struct v8_string_layout *l;
	v8_read_fn rd;
	void *ctx;
	char *out;
	size_t size, pos;
	unsigned reads, chars;
	uint32_t hi; /* a two-byte string's high surrogate, waiting for its pair */
	int full;    /* the output (or V8_STRING_MAX) is reached: the rest is not read */
	int keep_nl; /* a script's text: its line feeds kept, for its lines */
};

static int rd(struct sctx *s, uint64_t addr, void *buf, size_t len)
{
	if (++s->reads > V8_STRING_READS)
		return -ELOOP;
	if (addr + len < addr)
		return -EINVAL;
	return s->rd(s->ctx, addr, buf, len);
}

/* The object's start from a tagged pointer; 0: not a heap object's. */
static uint64_t untag(const struct v8_string_layout *l, uint64_t p)
{
	if ((p & l->heap_tag_mask) != l->heap_tag || p < 4096)
		return 0;
	return p - l->heap_tag;
}

static int type_of(struct sctx *s, uint64_t obj, uint16_t *type)
{
	uint64_t map;
	int r;

	if ((r = rd(s, obj + s->l->map, &map, 8)))
		return r;
	if (!(map = untag(s->l, map)))
		return -EINVAL;
	return rd(s, map + s->l->map_type, type, 2);
}

int v8_instance_type(const struct v8_string_layout *l, v8_read_fn rdf, void *ctx, uint64_t obj,
		     uint16_t *type)
{
	struct sctx s = {.l = l, .rd = rdf, .ctx = ctx};

	if (!(obj = untag(l, obj)))
		return -EINVAL;
	return type_of(&s, obj, type);
}

/* The string object at obj: its type and length, checked. */
static int str_head(struct sctx *s, uint64_t obj, uint16_t *type, uint32_t *len)
{
	int32_t n;
	int r;

	if ((r = type_of(s, obj, type)))
		return r;
	if (*type >= s->l->first_nonstring)
		return -EINVAL;
	if ((r = rd(s, obj + s->l->length, &n, 4)))
		return r;
	if (n < 0 || n > (1 << 29))
		return -EINVAL;
	*len = (uint32_t)n;
	return 0;
}

static void put_cp(struct sctx *s, uint32_t cp)
{
	char b[4];
	size_t n;

	if ((cp < 0x20 && !(cp == '\n' && s->keep_nl)) || cp == 0x7f)
		cp = '?'; /* names go into text formats: no control characters */
	if (cp < 0x80) {
		b[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		b[0] = (char)(0xc0 | cp >> 6);
		b[1] = (char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		b[0] = (char)(0xe0 | cp >> 12);
		b[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		b[2] = (char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		b[0] = (char)(0xf0 | cp >> 18);
		b[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		b[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
		b[3] = (char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	/* A character is written whole or not at all: no cut UTF-8. */
	if (s->pos + n > s->size - 1 || ++s->chars > V8_STRING_MAX) {
		s->full = 1;
		return;
	}
	memcpy(s->out + s->pos, b, n);
	s->pos += n;
}

static void put_unit(struct sctx *s, uint32_t u)
{
	if (s->hi && (u < 0xdc00 || u > 0xdfff)) {
		put_cp(s, 0xfffd); /* an unpaired high surrogate */
		s->hi = 0;
	}
	if (u >= 0xd800 && u <= 0xdbff) {
		s->hi = u;
	} else if (u >= 0xdc00 && u <= 0xdfff) {
		put_cp(s, s->hi ? 0x10000 + ((s->hi - 0xd800) << 10) + (u - 0xdc00) : 0xfffd);
		s->hi = 0;
	} else {
		put_cp(s, u);
	}
}

/* count characters of a sequential string's, from start, in chunks. */
static int seq_chars(struct sctx *s, uint64_t data, int two, uint32_t start, uint32_t count)
{
	uint8_t buf[256];
	uint32_t w = two ? 2 : 1;

	while (count && !s->full) {
		uint32_t n = count < sizeof(buf) / w ? count : (uint32_t)(sizeof(buf) / w);
		int r = rd(s, data + (uint64_t)start * w, buf, (size_t)n * w);

		if (r)
			return r;
		for (uint32_t i = 0; i < n && !s->full; i++)
			if (two)
				put_unit(s, (uint32_t)buf[2 * i] | (uint32_t)buf[2 * i + 1] << 8);
			else
				put_cp(s, buf[i]);
		start += n;
		count -= n;
	}
	return 0;
}

/* Characters [start, start + count) of the string at the tagged pointer
 * str. A cons string's first part by recursion, its second (the long side
 * of a string built by appending) and thin and sliced strings by the loop. */
static int emit(struct sctx *s, uint64_t str, uint32_t start, uint32_t count, int depth)
{
	const struct v8_string_layout *l = s->l;

	for (; !s->full; depth++) {
		uint64_t obj = untag(l, str), a, b;
		uint16_t type;
		uint32_t len, repr;
		int r;

		if (depth > V8_STRING_DEPTH)
			return -ELOOP;
		if (!obj)
			return -EINVAL;
		if ((r = str_head(s, obj, &type, &len)))
			return r;
		if (start > len || count > len - start)
			return -EINVAL;
		repr = type & l->repr_mask;
		if (repr == l->seq_tag) {
			int two = (type & l->enc_mask) != l->one_byte_tag;

			return seq_chars(s, obj + (two ? l->seq2_data : l->seq1_data), two, start,
					 count);
		}
		if (repr == l->thin_tag) {
			if ((r = rd(s, obj + l->thin_actual, &str, 8)))
				return r;
			continue;
		}
		if (repr == l->sliced_tag) {
			int64_t off;

			if ((r = rd(s, obj + l->sliced_parent, &a, 8)) ||
			    (r = rd(s, obj + l->sliced_offset, &b, 8)))
				return r;
			if (b & 1) /* a Smi's tag bit is clear */
				return -EINVAL;
			off = (int64_t)b >> (l->smi_shift & 63);
			if (off < 0 || off > (1 << 29))
				return -EINVAL;
			str = a;
			start += (uint32_t)off;
			continue;
		}
		if (repr == l->cons_tag) {
			uint64_t first_obj;
			uint32_t flen;

			if ((r = rd(s, obj + l->cons_first, &a, 8)) ||
			    (r = rd(s, obj + l->cons_second, &b, 8)))
				return r;
			if (!(first_obj = untag(l, a)))
				return -EINVAL;
			if ((r = str_head(s, first_obj, &type, &flen)))
				return r;
			if (start < flen) {
				uint32_t n = flen - start < count ? flen - start : count;

				if ((r = emit(s, a, start, n, depth + 1)))
					return r;
				count -= n;
				start = 0;
			} else {
				start -= flen;
			}
			if (!count)
				return 0;
			str = b;
			continue;
		}
		return -ENOTSUP; /* external, or a representation not known here */
	}
	return 0;
}

static int read_str(const struct v8_string_layout *l, v8_read_fn rdf, void *ctx, uint64_t str,
		    char *out, size_t size, size_t *len, int keep_nl)
{
	struct sctx s = {
	    .l = l, .rd = rdf, .ctx = ctx, .out = out, .size = size, .keep_nl = keep_nl};
	uint64_t obj = untag(l, str);
	uint16_t type;
	uint32_t n;
	int r;

	if (!size)
		return -EINVAL;
	out[0] = 0;
	if (len)
		*len = 0;
	if (!obj)
		return -EINVAL;
	r = str_head(&s, obj, &type, &n);
	if (!r)
		r = emit(&s, str, 0, n, 0);
	if (!r && s.hi && !s.full)
		put_cp(&s, 0xfffd);
	if (r) {
		out[0] = 0;
		return r;
	}
	out[s.pos] = 0;
	if (len)
		*len = s.pos;
	return 0;
}

int v8_string_read(const struct v8_string_layout *l, v8_read_fn rdf, void *ctx, uint64_t str,
		   char *out, size_t size, size_t *len)
{
	return read_str(l, rdf, ctx, str, out, size, len, 0);
}

int v8_string_read_text(const struct v8_string_layout *l, v8_read_fn rdf, void *ctx, uint64_t str,
			char *out, size_t size, size_t *len)
{
	return read_str(l, rdf, ctx, str, out, size, len, 1);
}
