/* pprof profile.proto writer. The protobuf encoding is written by hand: the
 * message is small and fixed, and a varint/length-delimited encoder is a
 * few lines where a protobuf library would need generated code. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include "formats/util.h"
#include "formats/pprof.h"

/* Wire types: 0 varint, 2 length-delimited. */
static void put_tag(struct fmt_buf *b, unsigned field, unsigned wire)
{
	fmt_put_uleb(b, (uint64_t)field << 3 | wire);
}

/* A varint field; proto3 omits zero values. */
static void put_uint(struct fmt_buf *b, unsigned field, uint64_t v)
{
	if (!v)
		return;
	put_tag(b, field, 0);
	fmt_put_uleb(b, v);
}

static void put_len(struct fmt_buf *b, unsigned field, const void *p, size_t n)
{
	put_tag(b, field, 2);
	fmt_put_uleb(b, n);
	fmt_put(b, p, n);
}

/* A nested message, encoded in `sub` (reset here for the next one). */
static void put_msg(struct fmt_buf *b, unsigned field, struct fmt_buf *sub)
{
	if (sub->err)
		b->err = sub->err;
	put_len(b, field, sub->p, sub->n);
	sub->n = 0;
}

static void put_packed(struct fmt_buf *b, unsigned field, const uint64_t *v, size_t n,
		       struct fmt_buf *tmp)
{
	size_t i;

	for (i = 0; i < n; i++)
		fmt_put_uleb(tmp, v[i]);
	put_msg(b, field, tmp);
}

/* Open-addressing index of ids (1-based) by a caller-computed hash. */
struct index {
	uint32_t *slot;
	uint64_t *hash;
	size_t cap, n;
};

typedef int (*eq_fn)(const struct pprof *p, uint32_t id, const void *key);

static uint32_t index_find(const struct index *ix, uint64_t h, eq_fn eq, const struct pprof *p,
			   const void *key, size_t *pos)
{
	size_t i, mask = ix->cap - 1;

	if (!ix->cap) {
		*pos = 0;
		return 0;
	}
	for (i = h & mask; ix->slot[i]; i = (i + 1) & mask)
		if (ix->hash[i] == h && eq(p, ix->slot[i], key))
			return ix->slot[i];
	*pos = i;
	return 0;
}

static int index_add(struct index *ix, uint64_t h, uint32_t id)
{
	size_t i, mask;

	if ((ix->n + 1) * 2 > ix->cap) {
		struct index nx = {0};
		size_t j;

		nx.cap = ix->cap ? ix->cap * 2 : 1024;
		nx.slot = calloc(nx.cap, sizeof(*nx.slot));
		nx.hash = calloc(nx.cap, sizeof(*nx.hash));
		if (!nx.slot || !nx.hash) {
			free(nx.slot);
			free(nx.hash);
			return -ENOMEM;
		}
		for (j = 0; j < ix->cap; j++) {
			if (!ix->slot[j])
				continue;
			for (i = ix->hash[j] & (nx.cap - 1); nx.slot[i]; i = (i + 1) & (nx.cap - 1))
				;
			nx.slot[i] = ix->slot[j];
			nx.hash[i] = ix->hash[j];
		}
		nx.n = ix->n;
		free(ix->slot);
		free(ix->hash);
		*ix = nx;
	}
	mask = ix->cap - 1;
	for (i = h & mask; ix->slot[i]; i = (i + 1) & mask)
		;
	ix->slot[i] = id;
	ix->hash[i] = h;
	ix->n++;
	return 0;
}

static void index_free(struct index *ix)
{
	free(ix->slot);
	free(ix->hash);
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
	h ^= h >> 31;
	h *= 0xbf58476d1ce4e5b9ULL;
	return h ^ (h >> 29);
}

static uint64_t hash_str(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 0x100000001b3ULL;
	return mix(h, 0);
}

struct mapping {
	uint64_t start, limit, offset;
	uint32_t file, build_id;
	int has_functions;
};

struct location {
	uint64_t mapping, address;
	uint32_t fn0; /* function of the first line: part of the key */
	size_t line0; /* into lines */
	uint32_t nlines;
};

struct line {
	uint32_t function;
	int64_t line;
};

struct function {
	uint32_t name, system_name, filename;
};

struct label {
	uint32_t key, str, unit;
	int64_t num;
};

struct sample {
	size_t loc0, lab0; /* into sample_locs, sample_labels */
	uint32_t nlocs, nlabels;
	int64_t count;
};

#define ARRAY(T)                                                                                   \
	struct {                                                                                   \
		T *v;                                                                              \
		size_t n, cap;                                                                     \
	}

#define PUSH(a, x)                                                                                 \
	(fmt_grow((void **)&(a).v, &(a).cap, (a).n + 1, sizeof(*(a).v))                            \
	     ? -ENOMEM                                                                             \
	     : ((a).v[(a).n++] = (x), 0))

struct pprof {
	int64_t period, time_nanos, duration_nanos;
	ARRAY(char *) strings;
	ARRAY(struct mapping) mappings;
	ARRAY(struct location) locations;
	ARRAY(struct line) lines;
	ARRAY(struct function) functions;
	ARRAY(struct sample) samples;
	ARRAY(uint64_t) sample_locs;
	ARRAY(struct label) sample_labels;
	struct index str_ix, map_ix, loc_ix, fn_ix, sample_ix;
};

static int str_eq(const struct pprof *p, uint32_t id, const void *key)
{
	return !strcmp(p->strings.v[id - 1], key);
}

/* String table index of s (0 is ""); UINT32_MAX on ENOMEM. */
static uint32_t intern(struct pprof *p, const char *s)
{
	uint64_t h;
	uint32_t id;
	size_t pos;
	char *d;

	if (!s || !*s)
		return 0;
	h = hash_str(s);
	id = index_find(&p->str_ix, h, str_eq, p, s, &pos);
	if (id)
		return id;
	d = strdup(s);
	if (!d || PUSH(p->strings, d) || index_add(&p->str_ix, h, p->strings.n)) {
		free(d);
		return UINT32_MAX;
	}
	return p->strings.n; /* strings.v[i] is table entry i + 1 */
}

struct pprof *pprof_new(int64_t period_ns, int64_t time_nanos, int64_t duration_nanos)
{
	struct pprof *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->period = period_ns;
	p->time_nanos = time_nanos;
	p->duration_nanos = duration_nanos;
	return p;
}

void pprof_free(struct pprof *p)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; i < p->strings.n; i++)
		free(p->strings.v[i]);
	free(p->strings.v);
	free(p->mappings.v);
	free(p->locations.v);
	free(p->lines.v);
	free(p->functions.v);
	free(p->samples.v);
	free(p->sample_locs.v);
	free(p->sample_labels.v);
	index_free(&p->str_ix);
	index_free(&p->map_ix);
	index_free(&p->loc_ix);
	index_free(&p->fn_ix);
	index_free(&p->sample_ix);
	free(p);
}

static int map_eq(const struct pprof *p, uint32_t id, const void *key)
{
	const struct mapping *a = &p->mappings.v[id - 1], *b = key;

	return a->start == b->start && a->limit == b->limit && a->offset == b->offset &&
	       a->file == b->file;
}

uint64_t pprof_mapping(struct pprof *p, uint64_t start, uint64_t limit, uint64_t offset,
		       const char *file, const char *build_id, bool has_functions)
{
	struct mapping m = {start,	  limit, offset, intern(p, file), intern(p, build_id),
			    has_functions};
	uint64_t h = mix(mix(mix(mix(0, start), limit), offset), m.file);
	uint32_t id;
	size_t pos;

	if (m.file == UINT32_MAX || m.build_id == UINT32_MAX)
		return 0;
	id = index_find(&p->map_ix, h, map_eq, p, &m, &pos);
	if (id)
		return id;
	if (PUSH(p->mappings, m) || index_add(&p->map_ix, h, p->mappings.n))
		return 0;
	return p->mappings.n;
}

static int fn_eq(const struct pprof *p, uint32_t id, const void *key)
{
	const struct function *a = &p->functions.v[id - 1], *b = key;

	return a->name == b->name && a->system_name == b->system_name && a->filename == b->filename;
}

static uint32_t function_id(struct pprof *p, const struct pprof_line *l)
{
	struct function f = {intern(p, l->function),
			     intern(p, l->system_name ? l->system_name : l->function),
			     intern(p, l->filename)};
	uint64_t h = mix(mix(mix(1, f.name), f.system_name), f.filename);
	uint32_t id;
	size_t pos;

	if (f.name == UINT32_MAX || f.system_name == UINT32_MAX || f.filename == UINT32_MAX)
		return 0;
	id = index_find(&p->fn_ix, h, fn_eq, p, &f, &pos);
	if (id)
		return id;
	if (PUSH(p->functions, f) || index_add(&p->fn_ix, h, p->functions.n))
		return 0;
	return p->functions.n;
}

struct loc_key {
	uint64_t mapping, address;
	uint32_t fn0;
};

static int loc_eq(const struct pprof *p, uint32_t id, const void *key)
{
	const struct location *a = &p->locations.v[id - 1];
	const struct loc_key *k = key;

	return a->mapping == k->mapping && a->address == k->address && a->fn0 == k->fn0;
}

uint64_t pprof_location(struct pprof *p, uint64_t mapping_id, uint64_t address,
			const struct pprof_line *lines, size_t nlines)
{
	struct loc_key k = {mapping_id, address, 0};
	struct location l = {mapping_id, address, 0, p->lines.n, 0};
	uint64_t h;
	uint32_t id;
	size_t pos, i;

	/* JIT code reuses addresses: the function is part of the key. */
	if (nlines && (lines[0].function || lines[0].filename) &&
	    !(k.fn0 = function_id(p, &lines[0])))
		return 0;
	l.fn0 = k.fn0;
	h = mix(mix(mix(2, mapping_id), address), k.fn0);
	id = index_find(&p->loc_ix, h, loc_eq, p, &k, &pos);
	if (id)
		return id;
	for (i = 0; i < nlines; i++) {
		struct line ln = {0, lines[i].line};

		if (!lines[i].function && !lines[i].filename)
			continue;
		ln.function = function_id(p, &lines[i]);
		if (!ln.function || PUSH(p->lines, ln))
			return 0;
		l.nlines++;
	}
	if (PUSH(p->locations, l) || index_add(&p->loc_ix, h, p->locations.n))
		return 0;
	return p->locations.n;
}

struct sample_key {
	const uint64_t *locs;
	size_t nlocs;
	const struct label *labels;
	size_t nlabels;
};

static int sample_eq(const struct pprof *p, uint32_t id, const void *key)
{
	const struct sample *s = &p->samples.v[id - 1];
	const struct sample_key *k = key;
	size_t i;

	if (s->nlocs != k->nlocs || s->nlabels != k->nlabels)
		return 0;
	if (memcmp(&p->sample_locs.v[s->loc0], k->locs, k->nlocs * sizeof(*k->locs)))
		return 0;
	for (i = 0; i < k->nlabels; i++) {
		const struct label *a = &p->sample_labels.v[s->lab0 + i], *b = &k->labels[i];

		if (a->key != b->key || a->str != b->str || a->num != b->num || a->unit != b->unit)
			return 0;
	}
	return 1;
}

int pprof_add_sample(struct pprof *p, const uint64_t *locs, size_t nlocs, int64_t count,
		     const struct pprof_label *labels, size_t nlabels)
{
	struct label lab[16];
	struct sample_key k = {locs, nlocs, lab, nlabels};
	struct sample s;
	uint64_t h = 3;
	uint32_t id;
	size_t i, pos;

	if (nlabels > sizeof(lab) / sizeof(lab[0]))
		return -EINVAL;
	for (i = 0; i < nlabels; i++) {
		lab[i].key = intern(p, labels[i].key);
		lab[i].str = intern(p, labels[i].str);
		lab[i].unit = intern(p, labels[i].str ? NULL : labels[i].num_unit);
		lab[i].num = labels[i].str ? 0 : labels[i].num;
		if (lab[i].key == UINT32_MAX || lab[i].str == UINT32_MAX ||
		    lab[i].unit == UINT32_MAX)
			return -ENOMEM;
		h = mix(mix(mix(mix(h, lab[i].key), lab[i].str), (uint64_t)lab[i].num),
			lab[i].unit);
	}
	for (i = 0; i < nlocs; i++)
		h = mix(h, locs[i]);
	id = index_find(&p->sample_ix, h, sample_eq, p, &k, &pos);
	if (id) {
		p->samples.v[id - 1].count += count;
		return 0;
	}
	s.loc0 = p->sample_locs.n;
	s.lab0 = p->sample_labels.n;
	s.nlocs = nlocs;
	s.nlabels = nlabels;
	s.count = count;
	for (i = 0; i < nlocs; i++)
		if (PUSH(p->sample_locs, locs[i]))
			return -ENOMEM;
	for (i = 0; i < nlabels; i++)
		if (PUSH(p->sample_labels, lab[i]))
			return -ENOMEM;
	if (PUSH(p->samples, s) || index_add(&p->sample_ix, h, p->samples.n))
		return -ENOMEM;
	return 0;
}

size_t pprof_nsamples(const struct pprof *p)
{
	return p->samples.n;
}

static void put_value_type(struct fmt_buf *b, unsigned field, struct pprof *p, const char *type,
			   const char *unit, struct fmt_buf *sub)
{
	put_uint(sub, 1, intern(p, type));
	put_uint(sub, 2, intern(p, unit));
	put_msg(b, field, sub);
}

/* The whole Profile message. Every string is interned before the string
 * table is written: the value types' come first. */
static int encode(struct pprof *p, struct fmt_buf *b)
{
	struct fmt_buf sub = {0}, sub2 = {0};
	size_t i, j;

	put_value_type(b, 1, p, "samples", "count", &sub);
	put_value_type(b, 1, p, "cpu", "nanoseconds", &sub);
	for (i = 0; i < p->samples.n; i++) {
		const struct sample *s = &p->samples.v[i];
		uint64_t v[2] = {(uint64_t)s->count, (uint64_t)(s->count * p->period)};

		put_packed(&sub, 1, &p->sample_locs.v[s->loc0], s->nlocs, &sub2);
		put_packed(&sub, 2, v, 2, &sub2);
		for (j = 0; j < s->nlabels; j++) {
			const struct label *l = &p->sample_labels.v[s->lab0 + j];

			put_uint(&sub2, 1, l->key);
			put_uint(&sub2, 2, l->str);
			put_uint(&sub2, 3, (uint64_t)l->num);
			put_uint(&sub2, 4, l->unit);
			put_msg(&sub, 3, &sub2);
		}
		put_msg(b, 2, &sub);
	}
	for (i = 0; i < p->mappings.n; i++) {
		const struct mapping *m = &p->mappings.v[i];

		put_uint(&sub, 1, i + 1);
		put_uint(&sub, 2, m->start);
		put_uint(&sub, 3, m->limit);
		put_uint(&sub, 4, m->offset);
		put_uint(&sub, 5, m->file);
		put_uint(&sub, 6, m->build_id);
		/* Without has_functions pprof re-symbolizes from the binaries
		 * and overwrites the names written here. */
		put_uint(&sub, 7, m->has_functions);
		put_uint(&sub, 8, m->has_functions);
		put_uint(&sub, 9, m->has_functions);
		put_msg(b, 3, &sub);
	}
	for (i = 0; i < p->locations.n; i++) {
		const struct location *l = &p->locations.v[i];

		put_uint(&sub, 1, i + 1);
		put_uint(&sub, 2, l->mapping);
		put_uint(&sub, 3, l->address);
		for (j = 0; j < l->nlines; j++) {
			put_uint(&sub2, 1, p->lines.v[l->line0 + j].function);
			put_uint(&sub2, 2, (uint64_t)p->lines.v[l->line0 + j].line);
			put_msg(&sub, 4, &sub2);
		}
		put_msg(b, 4, &sub);
	}
	for (i = 0; i < p->functions.n; i++) {
		put_uint(&sub, 1, i + 1);
		put_uint(&sub, 2, p->functions.v[i].name);
		put_uint(&sub, 3, p->functions.v[i].system_name);
		put_uint(&sub, 4, p->functions.v[i].filename);
		put_msg(b, 5, &sub);
	}
	put_len(b, 6, "", 0);
	for (i = 0; i < p->strings.n; i++)
		put_len(b, 6, p->strings.v[i], strlen(p->strings.v[i]));
	put_uint(b, 9, (uint64_t)p->time_nanos);
	put_uint(b, 10, (uint64_t)p->duration_nanos);
	put_value_type(b, 11, p, "cpu", "nanoseconds", &sub);
	put_uint(b, 12, (uint64_t)p->period);
	free(sub.p);
	free(sub2.p);
	if (sub.err || sub2.err)
		return -ENOMEM;
	return b->err;
}

static int write_all(int fd, const unsigned char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		p += w;
		n -= w;
	}
	return 0;
}

int pprof_write_fd(struct pprof *p, int fd)
{
	struct fmt_buf b = {0};
	unsigned char out[65536];
	z_stream z = {0};
	int err, zr;

	err = encode(p, &b);
	if (err) {
		free(b.p);
		return err;
	}
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
	    Z_OK) {
		free(b.p);
		return -ENOMEM;
	}
	z.next_in = b.p;
	z.avail_in = b.n;
	do {
		z.next_out = out;
		z.avail_out = sizeof(out);
		zr = deflate(&z, Z_FINISH);
		if (zr == Z_STREAM_ERROR) {
			err = -EIO;
			break;
		}
		err = write_all(fd, out, sizeof(out) - z.avail_out);
	} while (!err && zr != Z_STREAM_END);
	deflateEnd(&z);
	free(b.p);
	return err;
}
