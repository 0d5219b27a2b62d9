/* pprof profile.proto, read in place: see pprof_in.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "formats/pprof_in.h"
#include "formats/protobuf.h"
#include <zlib.h>

void pprof_in_free(struct pprof_in *in)
{
	free(in->strings.v);
	free(in->types.v);
	free(in->samples.v);
	free(in->locids.v);
	free(in->values.v);
	free(in->labels.v);
	free(in->mappings.v);
	free(in->locations.v);
	free(in->lines.v);
	free(in->functions.v);
	idtab_free(&in->map_ix);
	idtab_free(&in->loc_ix);
	idtab_free(&in->fn_ix);
}

int pprof_in_gunzip(const void *gz, size_t n, size_t max, struct fmt_buf *out)
{
	const unsigned char *p = gz;
	z_stream z = {0};
	int zr = Z_OK, err = 0;

	if (n < 2 || p[0] != 0x1f || p[1] != 0x8b)
		return -EBADMSG;
	/* 16 + 15: gzip only, not zlib or raw deflate. */
	if (inflateInit2(&z, 16 + 15) != Z_OK)
		return -ENOMEM;
	z.next_in = (unsigned char *)p;
	while (!err) {
		size_t room;

		/* zlib counts in uInt: the input is fed at most 1 GiB at a time. */
		if (!z.avail_in) {
			size_t left = n - (size_t)(z.next_in - p);

			z.avail_in = left > (1u << 30) ? 1u << 30 : (uInt)left;
		}
		if (zr == Z_STREAM_END) {
			/* Another member, or the end: anything else is not gzip. */
			if (!z.avail_in)
				break;
			if (z.avail_in < 2 || z.next_in[0] != 0x1f || z.next_in[1] != 0x8b) {
				err = -EILSEQ;
				break;
			}
			if (inflateReset(&z) != Z_OK) {
				err = -ENOMEM;
				break;
			}
		}
		if (out->n >= max) {
			err = -EFBIG;
			break;
		}
		room = max - out->n < 65536 ? max - out->n : 65536;
		if (fmt_grow((void **)&out->p, &out->cap, out->n + room, 1)) {
			err = -ENOMEM;
			break;
		}
		z.next_out = out->p + out->n;
		z.avail_out = (uInt)room;
		zr = inflate(&z, Z_NO_FLUSH);
		out->n += room - z.avail_out;
		if (zr == Z_MEM_ERROR)
			err = -ENOMEM;
		else if (zr == Z_DATA_ERROR || zr == Z_NEED_DICT || zr == Z_STREAM_ERROR)
			err = -EILSEQ;
		/* No progress with all the input given: it ended mid-stream. */
		else if (zr == Z_BUF_ERROR && !z.avail_in && z.next_in == p + n)
			err = -ENODATA;
		else if (zr != Z_STREAM_END && !z.avail_in && z.next_in == p + n && z.avail_out)
			err = -ENODATA;
	}
	inflateEnd(&z);
	return err;
}

int pprof_in_vtype(const struct pb_field *f, struct pvtype *t)
{
	struct pb_reader r = pb_sub(f);
	struct pb_field g;

	while (pb_next(&r, &g))
		if (g.field == 1 && g.wire == PB_VARINT)
			t->type = g.v;
		else if (g.field == 2 && g.wire == PB_VARINT)
			t->unit = g.v;
	return r.err;
}

static int read_label(const struct pb_field *f, struct pprof_in *in)
{
	struct pb_reader r = pb_sub(f);
	struct pb_field g;
	struct plabel l = {0};

	while (pb_next(&r, &g)) {
		if (g.wire != PB_VARINT)
			continue;
		if (g.field == 1)
			l.key = g.v;
		else if (g.field == 2)
			l.str = g.v;
		else if (g.field == 3)
			l.num = (int64_t)g.v;
		else if (g.field == 4)
			l.unit = g.v;
	}
	return r.err ? r.err : VEC_PUSH(in->labels, l);
}

static int read_sample(const struct pb_field *f, struct pprof_in *in)
{
	struct pb_reader r = pb_sub(f);
	struct pb_field g;
	struct psample s = {in->locids.n, 0, in->values.n, 0, in->labels.n, 0, 0, false};
	int err = 0;

	while (!err && pb_next(&r, &g)) {
		struct pb_values it = pb_values(&g);
		uint64_t v;

		if (g.field == 1)
			while (!err && pb_values_next(&it, &v))
				err = VEC_PUSH(in->locids, v);
		else if (g.field == 2)
			while (!err && pb_values_next(&it, &v))
				err = VEC_PUSH(in->values, (int64_t)v);
		else if (g.field == 3 && g.wire == PB_LEN)
			err = read_label(&g, in);
		if (!err && (g.field == 1 || g.field == 2))
			err = it.r.err;
	}
	if (err || r.err)
		return err ? err : r.err;
	s.nlocs = in->locids.n - s.loc0;
	s.nvals = in->values.n - s.val0;
	s.nlabs = in->labels.n - s.lab0;
	return VEC_PUSH(in->samples, s);
}

static bool id_eq_map(const void *ctx, uint32_t i, const void *key)
{
	return ((const struct pprof_in *)ctx)->mappings.v[i].id == *(const uint64_t *)key;
}
static bool id_eq_loc(const void *ctx, uint32_t i, const void *key)
{
	return ((const struct pprof_in *)ctx)->locations.v[i].id == *(const uint64_t *)key;
}
static bool id_eq_fn(const void *ctx, uint32_t i, const void *key)
{
	return ((const struct pprof_in *)ctx)->functions.v[i].id == *(const uint64_t *)key;
}

/* The index of an id in its table, or UINT32_MAX. */
static uint32_t find_id(const struct pprof_in *in, const struct idtab *t, idtab_eq_fn eq,
			uint64_t id)
{
	return idtab_find(t, hash_u64(id), eq, in, &id);
}

/* Adds an id's index; a second entry of the same id is malformed. */
static int index_id(struct pprof_in *in, struct idtab *t, idtab_eq_fn eq, uint64_t id, size_t i)
{
	if (!id || find_id(in, t, eq, id) != UINT32_MAX)
		return -EINVAL;
	return idtab_insert(t, hash_u64(id), (uint32_t)i);
}

static int read_mapping(const struct pb_field *f, struct pprof_in *in)
{
	struct pb_reader r = pb_sub(f);
	struct pb_field g;
	struct pmapping m = {0};

	while (pb_next(&r, &g)) {
		if (g.wire != PB_VARINT)
			continue;
		switch (g.field) {
		case 1:
			m.id = g.v;
			break;
		case 2:
			m.start = g.v;
			break;
		case 3:
			m.limit = g.v;
			break;
		case 4:
			m.offset = g.v;
			break;
		case 5:
			m.file = g.v;
			break;
		case 6:
			m.build_id = g.v;
			break;
		case 7:
			m.has_functions = g.v;
			break;
		case 8:
			m.has_filenames = g.v;
			break;
		case 9:
			m.has_line_numbers = g.v;
			break;
		case 10:
			m.has_inline_frames = g.v;
			break;
		}
	}
	if (r.err || VEC_PUSH(in->mappings, m))
		return r.err ? r.err : -ENOMEM;
	return index_id(in, &in->map_ix, id_eq_map, m.id, in->mappings.n - 1);
}

static int read_location(const struct pb_field *f, struct pprof_in *in)
{
	struct pb_reader r = pb_sub(f);
	struct pb_field g;
	struct plocation l = {0, 0, 0, in->lines.n, 0};

	while (pb_next(&r, &g)) {
		if (g.field == 1 && g.wire == PB_VARINT)
			l.id = g.v;
		else if (g.field == 2 && g.wire == PB_VARINT)
			l.mapping = g.v;
		else if (g.field == 3 && g.wire == PB_VARINT)
			l.address = g.v;
		else if (g.field == 4 && g.wire == PB_LEN) {
			struct pb_reader lr = pb_sub(&g);
			struct pb_field h;
			struct pline ln = {0, 0};

			while (pb_next(&lr, &h))
				if (h.field == 1 && h.wire == PB_VARINT)
					ln.function = h.v;
				else if (h.field == 2 && h.wire == PB_VARINT)
					ln.line = (int64_t)h.v;
			if (lr.err)
				return lr.err;
			if (VEC_PUSH(in->lines, ln))
				return -ENOMEM;
		}
	}
	if (r.err)
		return r.err;
	l.nlines = in->lines.n - l.line0;
	if (VEC_PUSH(in->locations, l))
		return -ENOMEM;
	return index_id(in, &in->loc_ix, id_eq_loc, l.id, in->locations.n - 1);
}

static int read_function(const struct pb_field *f, struct pprof_in *in)
{
	struct pb_reader r = pb_sub(f);
	struct pb_field g;
	struct pfunction fn = {0};

	while (pb_next(&r, &g)) {
		if (g.wire != PB_VARINT)
			continue;
		if (g.field == 1)
			fn.id = g.v;
		else if (g.field == 2)
			fn.name = g.v;
		else if (g.field == 3)
			fn.system_name = g.v;
		else if (g.field == 4)
			fn.filename = g.v;
	}
	if (r.err || VEC_PUSH(in->functions, fn))
		return r.err ? r.err : -ENOMEM;
	return index_id(in, &in->fn_ix, id_eq_fn, fn.id, in->functions.n - 1);
}

/* Every string index in range, every id known; the samples' pids. */
static int pin_check(struct pprof_in *in)
{
	size_t ns = in->strings.n, i, j;

#define STR_OK(x) ((x) < ns)
	if (!STR_OK(in->period_type.type) || !STR_OK(in->period_type.unit) ||
	    !STR_OK(in->default_type))
		return -EINVAL;
	for (i = 0; i < in->types.n; i++)
		if (!STR_OK(in->types.v[i].type) || !STR_OK(in->types.v[i].unit))
			return -EINVAL;
	for (i = 0; i < in->mappings.n; i++)
		if (!STR_OK(in->mappings.v[i].file) || !STR_OK(in->mappings.v[i].build_id))
			return -EINVAL;
	for (i = 0; i < in->functions.n; i++) {
		const struct pfunction *f = &in->functions.v[i];

		if (!STR_OK(f->name) || !STR_OK(f->system_name) || !STR_OK(f->filename))
			return -EINVAL;
	}
	for (i = 0; i < in->locations.n; i++) {
		const struct plocation *l = &in->locations.v[i];

		if (l->mapping && find_id(in, &in->map_ix, id_eq_map, l->mapping) == UINT32_MAX)
			return -EINVAL;
		for (j = 0; j < l->nlines; j++)
			if (find_id(in, &in->fn_ix, id_eq_fn, in->lines.v[l->line0 + j].function) ==
			    UINT32_MAX)
				return -EINVAL;
	}
	for (i = 0; i < in->samples.n; i++) {
		struct psample *s = &in->samples.v[i];

		if (s->nvals != in->types.n)
			return -EINVAL;
		for (j = 0; j < s->nlocs; j++)
			if (find_id(in, &in->loc_ix, id_eq_loc, in->locids.v[s->loc0 + j]) ==
			    UINT32_MAX)
				return -EINVAL;
		for (j = 0; j < s->nlabs; j++) {
			const struct plabel *l = &in->labels.v[s->lab0 + j];
			const struct pstr *k;

			if (!STR_OK(l->key) || !STR_OK(l->str) || !STR_OK(l->unit))
				return -EINVAL;
			k = &in->strings.v[l->key];
			if (k->n == 3 && !memcmp(k->p, "pid", 3) && !l->str) {
				s->pid = l->num;
				s->has_pid = true;
			}
		}
	}
#undef STR_OK
	return 0;
}

int pprof_in_read(const void *pb, size_t n, struct pprof_in *in)
{
	struct pb_reader r = pb_reader(pb, n);
	struct pb_field f;
	int err = 0;

	while (!err && pb_next(&r, &f)) {
		struct pvtype t = {0, 0};

		if (f.wire == PB_LEN) {
			switch (f.field) {
			case 1:
				err = pprof_in_vtype(&f, &t);
				if (!err)
					err = VEC_PUSH(in->types, t);
				break;
			case 2:
				err = read_sample(&f, in);
				break;
			case 3:
				err = read_mapping(&f, in);
				break;
			case 4:
				err = read_location(&f, in);
				break;
			case 5:
				err = read_function(&f, in);
				break;
			case 6:
				err = VEC_PUSH(in->strings,
					       ((struct pstr){(const char *)f.data, f.len}));
				break;
			case 11:
				err = pprof_in_vtype(&f, &in->period_type);
				break;
			}
		} else if (f.wire == PB_VARINT) {
			if (f.field == 9)
				in->time_ns = (int64_t)f.v;
			else if (f.field == 10)
				in->duration_ns = (int64_t)f.v;
			else if (f.field == 12)
				in->period = (int64_t)f.v;
			else if (f.field == 14)
				in->default_type = f.v;
		}
	}
	if (!err)
		err = r.err;
	/* The string table starts with "", which index 0 means. */
	if (!err && (!in->strings.n || in->strings.v[0].n))
		err = -EINVAL;
	return err ? err : pin_check(in);
}

uint32_t pprof_in_mapping(const struct pprof_in *in, uint64_t id)
{
	return find_id(in, &in->map_ix, id_eq_map, id);
}

uint32_t pprof_in_location(const struct pprof_in *in, uint64_t id)
{
	return find_id(in, &in->loc_ix, id_eq_loc, id);
}

uint32_t pprof_in_function(const struct pprof_in *in, uint64_t id)
{
	return find_id(in, &in->fn_ix, id_eq_fn, id);
}

bool pprof_in_str_is(const struct pprof_in *in, uint64_t i, const char *s)
{
	size_t n = strlen(s);

	return in->strings.v[i].n == n && !memcmp(in->strings.v[i].p, s, n);
}

struct pstr pprof_in_label(const struct pprof_in *in, const struct psample *s, const char *key)
{
	size_t j;

	for (j = 0; j < s->nlabs; j++) {
		const struct plabel *l = &in->labels.v[s->lab0 + j];

		if (l->str && pprof_in_str_is(in, l->key, key))
			return in->strings.v[l->str];
	}
	return (struct pstr){"", 0};
}

static int by_pid(const void *a, const void *b, void *ctx)
{
	const struct pprof_in *in = ctx;
	const struct psample *x = &in->samples.v[*(const size_t *)a],
			     *y = &in->samples.v[*(const size_t *)b];

	if (x->has_pid != y->has_pid)
		return x->has_pid ? 1 : -1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

size_t *pprof_in_by_pid(const struct pprof_in *in)
{
	size_t *order = calloc(in->samples.n ? in->samples.n : 1, sizeof(*order)), i;

	if (!order)
		return NULL;
	/* qsort is not stable: ties by index. */
	for (i = 0; i < in->samples.n; i++)
		order[i] = i;
	if (in->samples.n)
		qsort_r(order, in->samples.n, sizeof(*order), by_pid, (void *)in);
	return order;
}
