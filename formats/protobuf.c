/* The protobuf wire format: see protobuf.h. */
#include "formats/protobuf.h"

void pb_tag(struct fmt_buf *b, unsigned field, unsigned wire)
{
	fmt_put_uleb(b, (uint64_t)field << 3 | wire);
}

void pb_uint(struct fmt_buf *b, unsigned field, uint64_t v)
{
	if (!v)
		return;
	pb_tag(b, field, PB_VARINT);
	fmt_put_uleb(b, v);
}

void pb_fixed64(struct fmt_buf *b, unsigned field, uint64_t v)
{
	unsigned char le[8];
	int i;

	if (!v)
		return;
	for (i = 0; i < 8; i++)
		le[i] = (unsigned char)(v >> (8 * i));
	pb_tag(b, field, PB_I64);
	fmt_put(b, le, 8);
}

void pb_len(struct fmt_buf *b, unsigned field, const void *p, size_t n)
{
	pb_tag(b, field, PB_LEN);
	fmt_put_uleb(b, n);
	fmt_put(b, p, n);
}

void pb_str(struct fmt_buf *b, unsigned field, const char *s)
{
	pb_len(b, field, s, strlen(s));
}

void pb_msg(struct fmt_buf *b, unsigned field, struct fmt_buf *sub)
{
	if (sub->err)
		b->err = sub->err;
	pb_len(b, field, sub->p, sub->n);
	sub->n = 0;
}

void pb_packed(struct fmt_buf *b, unsigned field, const uint64_t *v, size_t n, struct fmt_buf *tmp)
{
	size_t i;

	for (i = 0; i < n; i++)
		fmt_put_uleb(tmp, v[i]);
	pb_msg(b, field, tmp);
}

/* A varint of at most 10 bytes before the end; -EINVAL otherwise. */
static int get_uleb(struct pb_reader *r, uint64_t *v)
{
	unsigned shift = 0;

	*v = 0;
	while (r->p < r->end && shift < 70) {
		uint8_t c = *r->p++;

		*v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return 0;
		shift += 7;
	}
	return r->err = -EINVAL;
}

static int get_fixed(struct pb_reader *r, unsigned n, uint64_t *v)
{
	unsigned i;

	if ((size_t)(r->end - r->p) < n)
		return r->err = -EINVAL;
	*v = 0;
	for (i = 0; i < n; i++)
		*v |= (uint64_t)r->p[i] << (8 * i);
	r->p += n;
	return 0;
}

int pb_next(struct pb_reader *r, struct pb_field *f)
{
	uint64_t key;

	if (r->err || r->p >= r->end || get_uleb(r, &key))
		return 0;
	if (key >> 3 == 0 || key >> 3 > 0x1fffffff) {
		r->err = -EINVAL;
		return 0;
	}
	f->field = (unsigned)(key >> 3);
	f->wire = key & 7;
	f->v = 0;
	f->data = NULL;
	f->len = 0;
	switch (f->wire) {
	case PB_VARINT:
		return !get_uleb(r, &f->v);
	case PB_I64:
		return !get_fixed(r, 8, &f->v);
	case PB_I32:
		return !get_fixed(r, 4, &f->v);
	case PB_LEN:
		if (get_uleb(r, &f->v))
			return 0;
		if (f->v > (uint64_t)(r->end - r->p)) {
			r->err = -EINVAL;
			return 0;
		}
		f->data = r->p;
		f->len = (size_t)f->v;
		r->p += f->len;
		return 1;
	default:
		r->err = -EINVAL;
		return 0;
	}
}

struct pb_values pb_values(const struct pb_field *f)
{
	struct pb_values it = {pb_reader(NULL, 0), 0, f->v};

	if (f->wire == PB_LEN)
		it.r = pb_reader(f->data, f->len);
	else if (f->wire == PB_VARINT)
		it.once = 1;
	else
		it.r.err = -EINVAL;
	return it;
}

int pb_values_next(struct pb_values *it, uint64_t *v)
{
	if (it->once) {
		it->once = 0;
		*v = it->v;
		return 1;
	}
	if (it->r.err || it->r.p >= it->r.end)
		return 0;
	return !get_uleb(&it->r, v);
}
