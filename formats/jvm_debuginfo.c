/* HotSpot's compressed debug data (formats/jvm_debuginfo.h), after JDK 17's
 * compressedStream.hpp, method.cpp (CompressedLineNumberReadStream,
 * line_number_from_bci), nmethod.cpp (find_pc_desc_internal) and
 * scopeDesc.cpp (decode_body). */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include "formats/jvm_debuginfo.h"

enum {
	U5_LG_H = 6,  /* bits of payload in a high byte */
	U5_L = 192,   /* bytes below it are low (final) bytes */
	U5_MAX_I = 4, /* bytes are numbered 0..4: the fifth is taken whole */
	SERIALIZED_NULL = 0,
	INVOCATION_ENTRY_BCI = -1,
};

int jvm_read_int(const uint8_t **p, const uint8_t *end, uint32_t *v)
{
	const uint8_t *q = *p;
	uint32_t sum = 0;

	/* HotSpot adds each byte's whole value (the writer took L off first),
	 * wrapping in 32 bits as its jint does. */
	for (int i = 0; i <= U5_MAX_I; i++) {
		uint32_t b;

		if (!q || q >= end)
			return -EINVAL;
		b = *q++;
		sum += b << (U5_LG_H * i);
		if (b < U5_L || i == U5_MAX_I)
			break;
	}
	*p = q;
	*v = sum;
	return 0;
}

int jvm_read_signed_int(const uint8_t **p, const uint8_t *end, int32_t *v)
{
	uint32_t u;

	if (jvm_read_int(p, end, &u))
		return -EINVAL;
	*v = (int32_t)((u >> 1) ^ (0u - (u & 1)));
	return 0;
}

void jvm_lnt_init(struct jvm_lnt_iter *it, const uint8_t *tab, size_t len)
{
	it->p = tab;
	it->end = tab ? tab + len : tab;
	it->bci = it->line = 0;
	it->done = false;
}

int jvm_lnt_next(struct jvm_lnt_iter *it, int *bci, int *line)
{
	uint8_t b;

	if (it->done)
		return 0;
	if (!it->p || it->p >= it->end)
		return -EINVAL;
	b = *it->p++;
	if (!b) {
		it->done = true;
		return 0;
	}
	if (b == 0xff) {
		int32_t db, dl;

		if (jvm_read_signed_int(&it->p, it->end, &db) ||
		    jvm_read_signed_int(&it->p, it->end, &dl))
			return -EINVAL;
		it->bci += db;
		it->line += dl;
	} else {
		it->bci += b >> 3;
		it->line += b & 7;
	}
	/* int64 sums of int32 deltas cannot overflow before this stops them. */
	if (it->bci < 0 || it->bci > INT32_MAX || it->line < 0 || it->line > INT32_MAX)
		return -EINVAL;
	*bci = (int)it->bci;
	*line = (int)it->line;
	return 1;
}

int jvm_line_for_bci(const uint8_t *tab, size_t len, int bci, int *line)
{
	struct jvm_lnt_iter it;
	int b, l, ret, best_bci = 0, best_line = -1;

	if (bci == INVOCATION_ENTRY_BCI)
		bci = 0;
	if (bci < 0)
		return -ENOENT;
	jvm_lnt_init(&it, tab, len);
	while ((ret = jvm_lnt_next(&it, &b, &l)) == 1) {
		if (b == bci) {
			*line = l;
			return 0;
		}
		/* >=: of pairs at the same bci, the last one read wins. */
		if (b < bci && b >= best_bci) {
			best_bci = b;
			best_line = l;
		}
	}
	if (ret < 0)
		return ret;
	if (best_line < 0)
		return -ENOENT;
	*line = best_line;
	return 0;
}

static int32_t rd_i32(const uint8_t *p)
{
	int32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static bool layout_ok(const struct jvm_pcdesc_layout *l)
{
	return l && l->size >= 4 && l->size <= 1024 && l->pc_offset <= l->size - 4 &&
	       l->scope_decode_offset <= l->size - 4 && l->obj_decode_offset <= l->size - 4 &&
	       l->flags <= l->size - 4;
}

int jvm_pcdesc_find(const uint8_t *pcs, size_t len, const struct jvm_pcdesc_layout *l,
		    int32_t pc_offset, bool exact, struct jvm_pcdesc *out)
{
	size_t n, lo, hi;
	int32_t lo_pc, hi_pc;
	const uint8_t *r;

	if (!layout_ok(l) || (len && !pcs) || len % l->size)
		return -EINVAL;
	n = len / l->size;
	if (n < 2)
		return -ENOENT;
	if (rd_i32(pcs + l->pc_offset) != -1)
		return -EINVAL;
	if (pc_offset < 0)
		return -ENOENT;
	/* The search keeps pc(lo) < pc_offset <= pc(hi), as HotSpot's does;
	 * a record met outside [pc(lo), pc(hi)] is out of order. Equal
	 * neighbours are allowed: HotSpot pads the array with copies of the
	 * last record. */
	lo = 0;
	lo_pc = -1;
	hi = n - 1;
	hi_pc = rd_i32(pcs + hi * l->size + l->pc_offset);
	if (hi_pc < lo_pc)
		return -EINVAL;
	if (hi_pc < pc_offset)
		return -ENOENT;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		int32_t v = rd_i32(pcs + mid * l->size + l->pc_offset);

		if (v < lo_pc || v > hi_pc)
			return -EINVAL;
		if (v < pc_offset) {
			lo = mid;
			lo_pc = v;
		} else {
			hi = mid;
			hi_pc = v;
		}
	}
	if (exact && hi_pc != pc_offset)
		return -ENOENT;
	r = pcs + hi * l->size;
	out->pc_offset = hi_pc;
	out->scope_decode_offset = rd_i32(r + l->scope_decode_offset);
	out->obj_decode_offset = rd_i32(r + l->obj_decode_offset);
	out->flags = rd_i32(r + l->flags);
	out->index = hi;
	return 0;
}

int jvm_scopes_chain(const uint8_t *data, size_t len, int decode_offset, struct jvm_scope *out,
		     int max)
{
	int n = 0;
	int64_t off = decode_offset;

	if (off == SERIALIZED_NULL)
		return 0;
	if (!data)
		return -EINVAL;
	while (off != SERIALIZED_NULL) {
		const uint8_t *p, *end = data + len;
		uint32_t sender, method, bci, skip;

		if (off < 0 || (uint64_t)off >= len)
			return -EINVAL;
		if (n >= max)
			return -E2BIG;
		p = data + off;
		if (jvm_read_int(&p, end, &sender) || jvm_read_int(&p, end, &method) ||
		    jvm_read_int(&p, end, &bci) || bci > (uint32_t)INT32_MAX)
			return -EINVAL;
		/* The locals, expressions and monitors offsets: not needed, but a
		 * header that does not hold them is not a scope. */
		for (int i = 0; i < 3; i++)
			if (jvm_read_int(&p, end, &skip))
				return -EINVAL;
		if (sender >= (uint64_t)off)
			return -EINVAL;
		out[n].metadata_index = method;
		out[n].bci = (int32_t)bci + INVOCATION_ENTRY_BCI;
		out[n].decode_offset = (int32_t)off;
		n++;
		off = sender;
	}
	return n;
}
