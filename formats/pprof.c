/* pprof profile.proto writer, on the protobuf primitives of
 * formats/protobuf.h (shared with the OTLP encoder). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include "formats/util.h"
#include "formats/pprof.h"
#include "formats/protobuf.h"

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
	int64_t start_line;
};

struct label {
	uint32_t key, str, unit;
	int64_t num;
};

struct sample {
	size_t loc0, lab0; /* into sample_locs, sample_labels */
	uint32_t nlocs, nlabels;
	union {
		struct {
			int64_t count;
			int64_t off_ns, off_count; /* pprof_add_offcpu */
		};
		int64_t heap[4]; /* pprof_add_heap's values */
	};
};

/* Mappings, locations and samples: those kept to the end, or a scope's.
 * Their ids are map_id0 / loc_id0 + index + 1; the idtabs hold the index. */
struct table {
	uint64_t map_id0, loc_id0;
	VEC(struct mapping) mappings;
	VEC(struct location) locations;
	VEC(struct line) lines;
	VEC(struct sample) samples;
	VEC(uint64_t) sample_locs;
	VEC(struct label) sample_labels;
	struct idtab map_ix, loc_ix, sample_ix; /* id - 1 by key */
};

/* A scope's mapping and location ids lie above every kept one's (a varint
 * one byte longer), so that they never meet however many scopes go by. */
#define SCOPE_ID0 (1ULL << 28)

struct pprof {
	int64_t period, time_nanos, duration_nanos;
	bool offcpu;		/* pprof_enable_offcpu: three more sample types */
	bool heap;		/* pprof_enable_heap: the four of a heap profile instead */
	VEC(uint32_t) comments; /* string indices */
	VEC(char *) strings;
	VEC(struct function) functions;
	struct idtab str_ix, fn_ix;
	struct table keep, scope;
	bool in_scope;
	int spill_fd;		/* -1: none */
	bool spill_failed;	/* scopes stay in memory from then on */
	uint64_t spilled;	/* bytes in spill_fd */
	size_t spilled_samples; /* for pprof_nsamples */
	uint64_t main_mapping;
};

static bool str_eq(const void *ctx, uint32_t i, const void *key)
{
	const struct pprof *p = ctx;

	return !strcmp(p->strings.v[i], key);
}

/* String table index of s (0 is ""); UINT32_MAX on ENOMEM. */
static uint32_t intern(struct pprof *p, const char *s)
{
	uint64_t h;
	uint32_t id;
	char *d;

	if (!s || !*s)
		return 0;
	h = hash_str(s);
	id = (uint32_t)(idtab_find(&p->str_ix, h, str_eq, p, s) + 1);
	if (id)
		return id;
	d = strdup(s);
	if (!d || VEC_PUSH(p->strings, d) || idtab_insert(&p->str_ix, h, p->strings.n - 1)) {
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
	p->spill_fd = -1;
	p->scope.map_id0 = p->scope.loc_id0 = SCOPE_ID0;
	return p;
}

static void table_free(struct table *t)
{
	free(t->mappings.v);
	free(t->locations.v);
	free(t->lines.v);
	free(t->samples.v);
	free(t->sample_locs.v);
	free(t->sample_labels.v);
	idtab_free(&t->map_ix);
	idtab_free(&t->loc_ix);
	idtab_free(&t->sample_ix);
}

void pprof_free(struct pprof *p)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; i < p->strings.n; i++)
		free(p->strings.v[i]);
	free(p->strings.v);
	free(p->functions.v);
	VEC_FREE(p->comments);
	idtab_free(&p->str_ix);
	idtab_free(&p->fn_ix);
	table_free(&p->keep);
	table_free(&p->scope);
	free(p);
}

void pprof_set_duration(struct pprof *p, int64_t duration_nanos)
{
	p->duration_nanos = duration_nanos;
}

static bool map_eq(const void *ctx, uint32_t i, const void *key)
{
	const struct table *t = ctx;
	const struct mapping *a = &t->mappings.v[i], *b = key;

	return a->start == b->start && a->limit == b->limit && a->offset == b->offset &&
	       a->file == b->file;
}

uint64_t pprof_mapping(struct pprof *p, uint64_t start, uint64_t limit, uint64_t offset,
		       const char *file, const char *build_id, bool has_functions)
{
	struct mapping m = {start,	  limit, offset, intern(p, file), intern(p, build_id),
			    has_functions};
	uint64_t h = mix(mix(mix(mix(0, start), limit), offset), m.file);
	struct table *t = &p->keep;
	uint32_t id;

	if (m.file == UINT32_MAX || m.build_id == UINT32_MAX)
		return 0;
	id = (uint32_t)(idtab_find(&t->map_ix, h, map_eq, t, &m) + 1);
	if (!id && p->in_scope) {
		t = &p->scope;
		id = (uint32_t)(idtab_find(&t->map_ix, h, map_eq, t, &m) + 1);
	}
	if (!id) {
		if (VEC_PUSH(t->mappings, m) || idtab_insert(&t->map_ix, h, t->mappings.n - 1))
			return 0;
		id = t->mappings.n;
	}
	return t->map_id0 + id;
}

int pprof_set_main_mapping(struct pprof *p, uint64_t mapping_id)
{
	if (!mapping_id || mapping_id > p->keep.mappings.n)
		return -EINVAL;
	p->main_mapping = mapping_id;
	return 0;
}

static bool fn_eq(const void *ctx, uint32_t i, const void *key)
{
	const struct pprof *p = ctx;
	const struct function *a = &p->functions.v[i], *b = key;

	return a->name == b->name && a->system_name == b->system_name &&
	       a->filename == b->filename && a->start_line == b->start_line;
}

static uint32_t function_id(struct pprof *p, const struct pprof_line *l)
{
	struct function f = {intern(p, l->function),
			     intern(p, l->system_name ? l->system_name : l->function),
			     intern(p, l->filename), l->start_line};
	uint64_t h =
	    mix(mix(mix(mix(1, f.name), f.system_name), f.filename), (uint64_t)f.start_line);
	uint32_t id;

	if (f.name == UINT32_MAX || f.system_name == UINT32_MAX || f.filename == UINT32_MAX)
		return 0;
	id = (uint32_t)(idtab_find(&p->fn_ix, h, fn_eq, p, &f) + 1);
	if (id)
		return id;
	if (VEC_PUSH(p->functions, f) || idtab_insert(&p->fn_ix, h, p->functions.n - 1))
		return 0;
	return p->functions.n;
}

struct loc_key {
	uint64_t mapping, address;
	uint32_t fn0;
};

static bool loc_eq(const void *ctx, uint32_t i, const void *key)
{
	const struct table *t = ctx;
	const struct location *a = &t->locations.v[i];
	const struct loc_key *k = key;

	return a->mapping == k->mapping && a->address == k->address && a->fn0 == k->fn0;
}

uint64_t pprof_location(struct pprof *p, uint64_t mapping_id, uint64_t address,
			const struct pprof_line *lines, size_t nlines)
{
	/* A scope's locations: those in its mappings, or in none. */
	struct table *t =
	    mapping_id > SCOPE_ID0 || (p->in_scope && !mapping_id) ? &p->scope : &p->keep;
	struct loc_key k = {mapping_id, address, 0};
	struct location l = {mapping_id, address, 0, t->lines.n, 0};
	uint64_t h;
	uint32_t id;
	size_t i;

	/* JIT code reuses addresses: the function is part of the key. */
	if (nlines && (lines[0].function || lines[0].filename) &&
	    !(k.fn0 = function_id(p, &lines[0])))
		return 0;
	l.fn0 = k.fn0;
	h = mix(mix(mix(2, mapping_id), address), k.fn0);
	id = (uint32_t)(idtab_find(&t->loc_ix, h, loc_eq, t, &k) + 1);
	if (id)
		return t->loc_id0 + id;
	for (i = 0; i < nlines; i++) {
		struct line ln = {0, lines[i].line};

		if (!lines[i].function && !lines[i].filename)
			continue;
		ln.function = function_id(p, &lines[i]);
		if (!ln.function || VEC_PUSH(t->lines, ln))
			return 0;
		l.nlines++;
	}
	if (VEC_PUSH(t->locations, l) || idtab_insert(&t->loc_ix, h, t->locations.n - 1))
		return 0;
	return t->loc_id0 + t->locations.n;
}

struct sample_key {
	const uint64_t *locs;
	size_t nlocs;
	const struct label *labels;
	size_t nlabels;
};

/* A sample's locations: NULL for none (sample_locs.v is NULL while no
 * sample has one: a stack with no frame, e.g. a kernel thread's under
 * --no-kernel), never an offset applied to NULL. */
static const uint64_t *locs_of(const struct table *t, const struct sample *s)
{
	return s->nlocs ? &t->sample_locs.v[s->loc0] : NULL;
}

static bool sample_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct table *t = ctx;
	const struct sample *s = &t->samples.v[id];
	const struct sample_key *k = key;
	size_t i;

	if (s->nlocs != k->nlocs || s->nlabels != k->nlabels)
		return false;
	if (k->nlocs && memcmp(locs_of(t, s), k->locs, k->nlocs * sizeof(*k->locs)))
		return false;
	for (i = 0; i < k->nlabels; i++) {
		const struct label *a = &t->sample_labels.v[s->lab0 + i], *b = &k->labels[i];

		if (a->key != b->key || a->str != b->str || a->num != b->num || a->unit != b->unit)
			return false;
	}
	return true;
}

void pprof_enable_offcpu(struct pprof *p)
{
	p->offcpu = true;
}

static int add_sample(struct pprof *p, const uint64_t *locs, size_t nlocs, const int64_t v[4],
		      const struct pprof_label *labels, size_t nlabels)
{
	struct table *t = p->in_scope ? &p->scope : &p->keep;
	struct label lab[16];
	struct sample_key k = {locs, nlocs, lab, nlabels};
	struct sample s;
	uint64_t h = 3;
	uint32_t id;
	size_t i;

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
	id = (uint32_t)(idtab_find(&t->sample_ix, h, sample_eq, t, &k) + 1);
	if (id) {
		for (i = 0; i < 4; i++)
			t->samples.v[id - 1].heap[i] += v[i];
		return 0;
	}
	s.loc0 = t->sample_locs.n;
	s.lab0 = t->sample_labels.n;
	s.nlocs = nlocs;
	s.nlabels = nlabels;
	memcpy(s.heap, v, sizeof(s.heap));
	for (i = 0; i < nlocs; i++)
		if (VEC_PUSH(t->sample_locs, locs[i]))
			return -ENOMEM;
	for (i = 0; i < nlabels; i++)
		if (VEC_PUSH(t->sample_labels, lab[i]))
			return -ENOMEM;
	if (VEC_PUSH(t->samples, s) || idtab_insert(&t->sample_ix, h, t->samples.n - 1))
		return -ENOMEM;
	return 0;
}

int pprof_add_sample(struct pprof *p, const uint64_t *locs, size_t nlocs, int64_t count,
		     const struct pprof_label *labels, size_t nlabels)
{
	int64_t v[4] = {count};

	if (p->heap)
		return -EINVAL;
	return add_sample(p, locs, nlocs, v, labels, nlabels);
}

int pprof_add_offcpu(struct pprof *p, const uint64_t *locs, size_t nlocs, int64_t ns, int64_t count,
		     const struct pprof_label *labels, size_t nlabels)
{
	int64_t v[4] = {0, ns, count};

	if (!p->offcpu)
		return -EINVAL;
	return add_sample(p, locs, nlocs, v, labels, nlabels);
}

void pprof_enable_heap(struct pprof *p, int64_t rate)
{
	p->heap = true;
	p->period = rate;
}

int pprof_add_heap(struct pprof *p, const uint64_t *locs, size_t nlocs, const int64_t v[4],
		   const struct pprof_label *labels, size_t nlabels)
{
	if (!p->heap)
		return -EINVAL;
	return add_sample(p, locs, nlocs, v, labels, nlabels);
}

int pprof_add_comment(struct pprof *p, const char *text)
{
	uint32_t id = intern(p, text);

	if (id == UINT32_MAX || VEC_PUSH(p->comments, id))
		return -ENOMEM;
	return 0;
}

size_t pprof_nsamples(const struct pprof *p)
{
	return p->keep.samples.n + p->scope.samples.n + p->spilled_samples;
}

static void put_value_type(struct fmt_buf *b, unsigned field, struct pprof *p, const char *type,
			   const char *unit, struct fmt_buf *sub)
{
	pb_uint(sub, 1, intern(p, type));
	pb_uint(sub, 2, intern(p, unit));
	pb_msg(b, field, sub);
}

static void encode_samples(const struct pprof *p, const struct table *t, struct fmt_buf *b,
			   struct fmt_buf *sub, struct fmt_buf *sub2)
{
	size_t i, j;

	for (i = 0; i < t->samples.n; i++) {
		const struct sample *s = &t->samples.v[i];
		uint64_t cpu = (uint64_t)(s->count * p->period);
		uint64_t v[5] = {(uint64_t)s->count, cpu, (uint64_t)s->off_ns,
				 (uint64_t)s->off_count, cpu + (uint64_t)s->off_ns};

		pb_packed(sub, 1, locs_of(t, s), s->nlocs, sub2);
		if (p->heap)
			pb_packed(sub, 2, (const uint64_t *)s->heap, 4, sub2);
		else
			pb_packed(sub, 2, v, p->offcpu ? 5 : 2, sub2);
		for (j = 0; j < s->nlabels; j++) {
			const struct label *l = &t->sample_labels.v[s->lab0 + j];

			pb_uint(sub2, 1, l->key);
			pb_uint(sub2, 2, l->str);
			pb_uint(sub2, 3, (uint64_t)l->num);
			pb_uint(sub2, 4, l->unit);
			pb_msg(sub, 3, sub2);
		}
		pb_msg(b, 2, sub);
	}
}

static void encode_mapping(const struct mapping *m, uint64_t id, struct fmt_buf *b,
			   struct fmt_buf *sub)
{
	pb_uint(sub, 1, id);
	pb_uint(sub, 2, m->start);
	pb_uint(sub, 3, m->limit);
	pb_uint(sub, 4, m->offset);
	pb_uint(sub, 5, m->file);
	pb_uint(sub, 6, m->build_id);
	/* Without has_functions pprof re-symbolizes from the binaries and
	 * overwrites the names written here. */
	pb_uint(sub, 7, m->has_functions);
	pb_uint(sub, 8, m->has_functions);
	pb_uint(sub, 9, m->has_functions);
	pb_msg(b, 3, sub);
}

/* Mappings (but main_mapping, written first) and locations. */
static void encode_places(const struct pprof *p, const struct table *t, struct fmt_buf *b,
			  struct fmt_buf *sub, struct fmt_buf *sub2)
{
	size_t i, j;

	for (i = 0; i < t->mappings.n; i++)
		if (t->map_id0 + i + 1 != p->main_mapping)
			encode_mapping(&t->mappings.v[i], t->map_id0 + i + 1, b, sub);
	for (i = 0; i < t->locations.n; i++) {
		const struct location *l = &t->locations.v[i];

		pb_uint(sub, 1, t->loc_id0 + i + 1);
		pb_uint(sub, 2, l->mapping);
		pb_uint(sub, 3, l->address);
		for (j = 0; j < l->nlines; j++) {
			pb_uint(sub2, 1, t->lines.v[l->line0 + j].function);
			pb_uint(sub2, 2, (uint64_t)t->lines.v[l->line0 + j].line);
			pb_msg(sub, 4, sub2);
		}
		pb_msg(b, 4, sub);
	}
}

/* The Profile message but what was spilled, which follows it (a message's
 * fields may come in any order; repeated ones add up). Every string is
 * interned before the string table is written: the value types' come
 * first. pprof shows the first mapping as the program ("File:"). */
static int encode(struct pprof *p, struct fmt_buf *b)
{
	struct fmt_buf sub = {0}, sub2 = {0};
	size_t i;

	if (p->heap) {
		/* Go's heap profile: pprof -sample_index picks a view by these
		 * names, and shows inuse_space first. */
		put_value_type(b, 1, p, "alloc_objects", "count", &sub);
		put_value_type(b, 1, p, "alloc_space", "bytes", &sub);
		put_value_type(b, 1, p, "inuse_objects", "count", &sub);
		put_value_type(b, 1, p, "inuse_space", "bytes", &sub);
		intern(p, "space"); /* the period type's, below the strings */
	} else {
		put_value_type(b, 1, p, "samples", "count", &sub);
		put_value_type(b, 1, p, "cpu", "nanoseconds", &sub);
	}
	if (p->offcpu && !p->heap) {
		put_value_type(b, 1, p, "offcpu", "nanoseconds", &sub);
		put_value_type(b, 1, p, "offcpu_waits", "count", &sub);
		put_value_type(b, 1, p, "wall", "nanoseconds", &sub);
	}
	if (p->main_mapping)
		encode_mapping(&p->keep.mappings.v[p->main_mapping - 1], p->main_mapping, b, &sub);
	encode_samples(p, &p->keep, b, &sub, &sub2);
	encode_places(p, &p->keep, b, &sub, &sub2);
	encode_samples(p, &p->scope, b, &sub, &sub2); /* not spilled */
	encode_places(p, &p->scope, b, &sub, &sub2);
	for (i = 0; i < p->functions.n; i++) {
		pb_uint(&sub, 1, i + 1);
		pb_uint(&sub, 2, p->functions.v[i].name);
		pb_uint(&sub, 3, p->functions.v[i].system_name);
		pb_uint(&sub, 4, p->functions.v[i].filename);
		if (p->functions.v[i].start_line > 0)
			pb_uint(&sub, 5, (uint64_t)p->functions.v[i].start_line);
		pb_msg(b, 5, &sub);
	}
	pb_len(b, 6, "", 0);
	for (i = 0; i < p->strings.n; i++)
		pb_len(b, 6, p->strings.v[i], strlen(p->strings.v[i]));
	pb_uint(b, 9, (uint64_t)p->time_nanos);
	pb_uint(b, 10, (uint64_t)p->duration_nanos);
	if (p->heap)
		put_value_type(b, 11, p, "space", "bytes", &sub);
	else
		put_value_type(b, 11, p, "cpu", "nanoseconds", &sub);
	pb_uint(b, 12, (uint64_t)p->period);
	for (i = 0; i < p->comments.n; i++)
		pb_uint(b, 13, p->comments.v[i]);
	/* pprof shows the last sample type unless default_sample_type names
	 * one: the CPU view stays the default. Interned above with the types. */
	if (p->heap)
		pb_uint(b, 14, intern(p, "inuse_space"));
	else if (p->offcpu)
		pb_uint(b, 14, intern(p, "cpu"));
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

void pprof_spill_to(struct pprof *p, int fd)
{
	p->spill_fd = fd;
}

void pprof_scope_begin(struct pprof *p)
{
	p->in_scope = true;
}

int pprof_scope_end(struct pprof *p)
{
	struct table *t = &p->scope;
	struct fmt_buf b = {0}, sub = {0}, sub2 = {0};
	int err;

	p->in_scope = false;
	if (p->spill_fd < 0 || p->spill_failed)
		return 0; /* kept in memory, written at the end */
	encode_samples(p, t, &b, &sub, &sub2);
	encode_places(p, t, &b, &sub, &sub2);
	err = sub.err ? sub.err : sub2.err ? sub2.err : b.err;
	if (!err)
		err = write_all(p->spill_fd, b.p, b.n);
	free(b.p);
	free(sub.p);
	free(sub2.p);
	if (err) {
		/* A part written stays out of the profile (only the first
		 * `spilled` bytes are read back); the scope stays in memory,
		 * and so do the later ones. */
		p->spill_failed = true;
		return err;
	}
	p->spilled += b.n;
	p->spilled_samples += t->samples.n;
	t->map_id0 += t->mappings.n;
	t->loc_id0 += t->locations.n;
	t->mappings.n = t->locations.n = t->lines.n = 0;
	t->samples.n = t->sample_locs.n = t->sample_labels.n = 0;
	idtab_clear(&t->map_ix);
	idtab_clear(&t->loc_ix);
	idtab_clear(&t->sample_ix);
	return 0;
}

/* Feeds n bytes to the compressor, writing what it gives out. */
static int deflate_to(z_stream *z, int fd, const void *in, size_t n, int flush)
{
	unsigned char out[65536];
	int zr, err = 0;

	z->next_in = (unsigned char *)in;
	z->avail_in = n;
	do {
		z->next_out = out;
		z->avail_out = sizeof(out);
		zr = deflate(z, flush);
		if (zr == Z_STREAM_ERROR)
			return -EIO;
		err = write_all(fd, out, sizeof(out) - z->avail_out);
	} while (!err && (z->avail_out == 0 || (flush == Z_FINISH && zr != Z_STREAM_END)));
	return err;
}

int pprof_write_fd(struct pprof *p, int fd)
{
	struct fmt_buf b = {0};
	unsigned char buf[65536];
	z_stream z = {0};
	uint64_t off;
	int err;

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
	err = deflate_to(&z, fd, b.p, b.n, Z_NO_FLUSH);
	for (off = 0; !err && off < p->spilled;) {
		size_t want = p->spilled - off < sizeof(buf) ? p->spilled - off : sizeof(buf);
		ssize_t r = pread(p->spill_fd, buf, want, (off_t)off);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			err = r < 0 ? -errno : -EIO; /* the spill file shrank */
			break;
		}
		err = deflate_to(&z, fd, buf, (size_t)r, Z_NO_FLUSH);
		off += r;
	}
	if (!err)
		err = deflate_to(&z, fd, NULL, 0, Z_FINISH);
	deflateEnd(&z);
	free(b.p);
	return err;
}
