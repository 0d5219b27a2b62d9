/* OTLP profiles from a pprof profile, and their decoder: see otlp.h. Field
 * numbers are opentelemetry-proto's profiles/v1development as the
 * Collector v0.165.0 (pdata v1.71.0) reads it: each Profile has one
 * sample_type, and the strings, mappings, locations, functions, stacks and
 * attributes live in one ProfilesDictionary whose entry 0 of each table is
 * the zero value. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "formats/otlp.h"
#include "formats/pprof_in.h"
#include "formats/protobuf.h"

/* ---- the request's dictionary, interned ---- */

struct ostack {
	size_t i0, n; /* into stack_locs */
};
struct oattr {
	uint32_t key, unit, str; /* str: a string value's index; else num */
	bool is_str;
	int64_t num;
};

struct dict {
	VEC(struct pstr) strings;
	struct idtab str_ix;
	VEC(struct ostack) stacks;
	VEC(uint64_t) stack_locs;
	struct idtab stack_ix;
	VEC(struct oattr) attrs;
	struct idtab attr_ix;
	int err;
};

static bool dstr_eq(const void *ctx, uint32_t i, const void *key)
{
	const struct pstr *a = &((const struct dict *)ctx)->strings.v[i], *b = key;

	return a->n == b->n && !memcmp(a->p, b->p, a->n);
}

static uint32_t dstr(struct dict *d, const char *p, size_t n)
{
	struct pstr s = {p, n};
	uint64_t h = hash_bytes(p, n);
	uint32_t i;

	if (d->err)
		return 0;
	i = idtab_find(&d->str_ix, h, dstr_eq, d, &s);
	if (i != UINT32_MAX)
		return i;
	if (VEC_PUSH(d->strings, s) || idtab_insert(&d->str_ix, h, d->strings.n - 1)) {
		d->err = -ENOMEM;
		return 0;
	}
	return d->strings.n - 1;
}

static uint32_t dcstr(struct dict *d, const char *s)
{
	return dstr(d, s, strlen(s));
}

struct stack_key {
	const uint64_t *v;
	size_t n;
};

static bool stack_eq(const void *ctx, uint32_t i, const void *key)
{
	const struct dict *d = ctx;
	const struct ostack *s = &d->stacks.v[i];
	const struct stack_key *k = key;

	if (s->n != k->n)
		return false;
	return !k->n || !memcmp(&d->stack_locs.v[s->i0], k->v, k->n * sizeof(*k->v));
}

static uint32_t dstack(struct dict *d, const uint64_t *locs, size_t n)
{
	struct stack_key k = {locs, n};
	struct ostack s = {d->stack_locs.n, n};
	uint64_t h = hash_bytes(locs, n * sizeof(*locs));
	uint32_t i;
	size_t j;

	if (d->err)
		return 0;
	i = idtab_find(&d->stack_ix, h, stack_eq, d, &k);
	if (i != UINT32_MAX)
		return i;
	for (j = 0; j < n; j++)
		if (VEC_PUSH(d->stack_locs, locs[j]))
			d->err = -ENOMEM;
	if (d->err || VEC_PUSH(d->stacks, s) || idtab_insert(&d->stack_ix, h, d->stacks.n - 1)) {
		d->err = -ENOMEM;
		return 0;
	}
	return d->stacks.n - 1;
}

static bool attr_eq(const void *ctx, uint32_t i, const void *key)
{
	const struct oattr *a = &((const struct dict *)ctx)->attrs.v[i], *b = key;

	return a->key == b->key && a->unit == b->unit && a->is_str == b->is_str &&
	       (a->is_str ? a->str == b->str : a->num == b->num);
}

static uint32_t dattr(struct dict *d, struct oattr a)
{
	uint64_t h;
	uint32_t i;

	if (d->err)
		return 0;
	h = hash_u64(((uint64_t)a.key << 32 | a.unit) ^
		     hash_u64(a.is_str ? a.str : (uint64_t)a.num));
	i = idtab_find(&d->attr_ix, h, attr_eq, d, &a);
	if (i != UINT32_MAX)
		return i;
	if (VEC_PUSH(d->attrs, a) || idtab_insert(&d->attr_ix, h, d->attrs.n - 1)) {
		d->err = -ENOMEM;
		return 0;
	}
	return d->attrs.n - 1;
}

static void dict_free(struct dict *d)
{
	free(d->strings.v);
	free(d->stacks.v);
	free(d->stack_locs.v);
	free(d->attrs.v);
	idtab_free(&d->str_ix);
	idtab_free(&d->stack_ix);
	idtab_free(&d->attr_ix);
}

/* ---- encoding ---- */

struct enc {
	const struct pprof_in *in;
	const struct otlp_meta *m;
	struct dict d;
	struct fmt_buf s1, s2, s3, s4; /* nested messages, innermost last */
	uint32_t *str_of;	       /* the pprof string i's index in d */
};

static uint32_t pstr_ix(struct enc *e, uint64_t i)
{
	return e->str_of[i];
}

/* An AnyValue: a string (field 1) or an int (field 3). */
static void put_any_str(struct fmt_buf *b, unsigned field, const char *s, size_t n,
			struct fmt_buf *sub)
{
	pb_len(sub, 1, s, n);
	pb_msg(b, field, sub);
}

static void put_any_int(struct fmt_buf *b, unsigned field, int64_t v, struct fmt_buf *sub)
{
	pb_tag(sub, 3, PB_VARINT);
	fmt_put_uleb(sub, (uint64_t)v);
	pb_msg(b, field, sub);
}

/* A resource's KeyValue (key as a string: resources are outside the
 * dictionary). */
static void put_kv_str(struct fmt_buf *b, const char *key, const char *s, struct fmt_buf *kv,
		       struct fmt_buf *any)
{
	pb_str(kv, 1, key);
	put_any_str(kv, 2, s, strlen(s), any);
	pb_msg(b, 1, kv);
}

static void put_kv_int(struct fmt_buf *b, const char *key, int64_t v, struct fmt_buf *kv,
		       struct fmt_buf *any)
{
	pb_str(kv, 1, key);
	put_any_int(kv, 2, v, any);
	pb_msg(b, 1, kv);
}

const struct otlp_process *otlp_process_find(const struct otlp_process *v, size_t n, int64_t pid)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (v[i].pid == pid)
			return &v[i];
	return NULL;
}

/* The Resource of a process: first, a group's first sample. */
static void put_resource(struct enc *e, struct fmt_buf *b, const struct psample *first)
{
	const struct otlp_process *p =
	    first->has_pid ? otlp_process_find(e->m->procs, e->m->nprocs, first->pid) : NULL;
	char name[256];
	const char *base;

	if (p && p->exe_path) {
		base = strrchr(p->exe_path, '/');
		snprintf(name, sizeof(name), "%s", base ? base + 1 : p->exe_path);
	} else {
		struct pstr c = pprof_in_label(e->in, first, "comm");

		snprintf(name, sizeof(name), "%.*s", (int)(c.n < 255 ? c.n : 255), c.p);
	}
	if (e->m->host_name)
		put_kv_str(&e->s2, "host.name", e->m->host_name, &e->s3, &e->s4);
	if (e->m->service_name || name[0])
		put_kv_str(&e->s2, "service.name", e->m->service_name ? e->m->service_name : name,
			   &e->s3, &e->s4);
	if (first->has_pid)
		put_kv_int(&e->s2, "process.pid", first->pid, &e->s3, &e->s4);
	if (name[0])
		put_kv_str(&e->s2, "process.executable.name", name, &e->s3, &e->s4);
	if (p && p->exe_path)
		put_kv_str(&e->s2, "process.executable.path", p->exe_path, &e->s3, &e->s4);
	if (p && p->container_id)
		put_kv_str(&e->s2, "container.id", p->container_id, &e->s3, &e->s4);
	pb_msg(b, 1, &e->s2);
}

/* A label as a sample attribute, by OpenTelemetry's names where there is
 * one; the pprof-only units (pid, tid, cpu: pprof drops a 0 without one)
 * are left behind with them. */
static uint32_t label_attr(struct enc *e, const struct plabel *l)
{
	const struct pprof_in *in = e->in;
	struct oattr a = {0, 0, 0, l->str != 0, l->num};
	bool named = true;

	if (pprof_in_str_is(in, l->key, "tid"))
		a.key = dcstr(&e->d, "thread.id");
	else if (pprof_in_str_is(in, l->key, "comm"))
		a.key = dcstr(&e->d, "thread.name");
	else if (pprof_in_str_is(in, l->key, "cpu"))
		a.key = dcstr(&e->d, "cpu.logical_number");
	else if (pprof_in_str_is(in, l->key, "offcpu"))
		a.key = dcstr(&e->d, "bpftrace_rec.offcpu");
	else {
		a.key = pstr_ix(e, l->key);
		named = false;
	}
	if (a.is_str)
		a.str = pstr_ix(e, l->str);
	else if (!named)
		a.unit = pstr_ix(e, l->unit);
	return dattr(&e->d, a);
}

/* One sample of one type: stack, attributes, the value. */
static void put_sample(struct enc *e, struct fmt_buf *b, const struct psample *s, size_t type)
{
	const struct pprof_in *in = e->in;
	uint64_t locs[512], attrs[16];
	size_t j, nl = 0, na = 0;
	int64_t v = in->values.v[s->val0 + type];

	/* pprof location ids to the dictionary's indices (location i is
	 * entry i + 1); a stack deeper than any the recorder takes is cut. */
	for (j = 0; j < s->nlocs && nl < sizeof(locs) / sizeof(locs[0]); j++)
		locs[nl++] = pprof_in_location(in, in->locids.v[s->loc0 + j]) + 1;
	for (j = 0; j < s->nlabs && na < sizeof(attrs) / sizeof(attrs[0]); j++) {
		const struct plabel *l = &in->labels.v[s->lab0 + j];

		if (!pprof_in_str_is(in, l->key, "pid"))
			attrs[na++] = label_attr(e, l);
	}
	pb_uint(&e->s4, 1, dstack(&e->d, locs, nl));
	if (na) {
		struct fmt_buf tmp = {0};

		pb_packed(&e->s4, 2, attrs, na, &tmp);
		free(tmp.p);
	}
	pb_packed(&e->s4, 4, (const uint64_t *)&v, 1, &e->s3);
	pb_msg(b, 2, &e->s4);
}

static void put_vtype(struct enc *e, struct fmt_buf *b, unsigned field, const struct pvtype *t)
{
	pb_uint(&e->s4, 1, pstr_ix(e, t->type));
	pb_uint(&e->s4, 2, pstr_ix(e, t->unit));
	pb_msg(b, field, &e->s4);
}

/* A process's ResourceProfiles: samples order[0..n), one profile a type. */
static void put_process(struct enc *e, struct fmt_buf *out, const size_t *order, size_t n,
			struct otlp_stats *st)
{
	const struct pprof_in *in = e->in;
	struct fmt_buf rp = {0}, sp = {0}, prof = {0};
	size_t t, i, kept;

	put_resource(e, &rp, &in->samples.v[order[0]]);
	pb_str(&e->s2, 1, "bpftrace-rec");
	if (e->m->scope_version)
		pb_str(&e->s2, 2, e->m->scope_version);
	pb_msg(&sp, 1, &e->s2);
	for (t = 0; t < in->types.n; t++) {
		put_vtype(e, &prof, 1, &in->types.v[t]);
		for (i = kept = 0; i < n; i++) {
			const struct psample *s = &in->samples.v[order[i]];

			if (!in->values.v[s->val0 + t])
				continue;
			put_sample(e, &prof, s, t);
			kept++;
			if (t < sizeof(st->values) / sizeof(st->values[0]))
				st->values[t] += in->values.v[s->val0 + t];
		}
		if (!kept) {
			prof.n = 0; /* nothing of this type */
			continue;
		}
		pb_fixed64(&prof, 3, (uint64_t)in->time_ns);
		pb_uint(&prof, 4, (uint64_t)in->duration_ns);
		put_vtype(e, &prof, 5, &in->period_type);
		pb_uint(&prof, 6, (uint64_t)in->period);
		pb_msg(&sp, 2, &prof);
		st->profiles++;
		st->samples += kept;
	}
	pb_msg(&rp, 2, &sp);
	pb_msg(out, 1, &rp);
	st->resources++;
	if (rp.err || sp.err || prof.err)
		out->err = -ENOMEM;
	free(rp.p);
	free(sp.p);
	free(prof.p);
}

static void put_int32s(struct fmt_buf *b, unsigned field, const uint64_t *v, size_t n,
		       struct fmt_buf *tmp)
{
	if (n)
		pb_packed(b, field, v, n, tmp);
}

/* The ProfilesDictionary, every table with its zero entry first. */
static void put_dictionary(struct enc *e, struct fmt_buf *out)
{
	const struct pprof_in *in = e->in;
	struct fmt_buf dict = {0}, *a = &e->s2, *b = &e->s3, *c = &e->s4;
	size_t i, j;

	pb_msg(&dict, 1, a); /* mapping 0 */
	for (i = 0; i < in->mappings.n; i++) {
		const struct pmapping *m = &in->mappings.v[i];

		pb_uint(a, 1, m->start);
		pb_uint(a, 2, m->limit);
		pb_uint(a, 3, m->offset);
		pb_uint(a, 4, pstr_ix(e, m->file));
		if (m->build_id) {
			uint64_t at = dattr(
			    &e->d, (struct oattr){dcstr(&e->d, "process.executable.build_id.gnu"),
						  0, pstr_ix(e, m->build_id), true, 0});

			put_int32s(a, 5, &at, 1, b);
		}
		pb_msg(&dict, 1, a);
	}
	pb_msg(&dict, 2, a); /* location 0 */
	for (i = 0; i < in->locations.n; i++) {
		const struct plocation *l = &in->locations.v[i];

		if (l->mapping)
			pb_uint(a, 1, pprof_in_mapping(in, l->mapping) + 1);
		pb_uint(a, 2, l->address);
		for (j = 0; j < l->nlines; j++) {
			const struct pline *ln = &in->lines.v[l->line0 + j];

			pb_uint(b, 1, pprof_in_function(in, ln->function) + 1);
			pb_uint(b, 2, (uint64_t)ln->line);
			pb_msg(a, 3, b);
		}
		pb_msg(&dict, 2, a);
	}
	pb_msg(&dict, 3, a); /* function 0 */
	for (i = 0; i < in->functions.n; i++) {
		const struct pfunction *f = &in->functions.v[i];

		pb_uint(a, 1, pstr_ix(e, f->name));
		pb_uint(a, 2, pstr_ix(e, f->system_name));
		pb_uint(a, 3, pstr_ix(e, f->filename));
		pb_msg(&dict, 3, a);
	}
	pb_msg(&dict, 4, a); /* link 0: no links */
	/* Attributes before strings: their keys are interned as they go. */
	pb_msg(&dict, 6, a); /* attribute 0 */
	for (i = 1; i < e->d.attrs.n; i++) {
		const struct oattr *at = &e->d.attrs.v[i];

		pb_uint(a, 1, at->key);
		if (at->is_str)
			put_any_str(a, 2, e->d.strings.v[at->str].p, e->d.strings.v[at->str].n, c);
		else
			put_any_int(a, 2, at->num, c);
		pb_uint(a, 3, at->unit);
		pb_msg(&dict, 6, a);
	}
	for (i = 0; i < e->d.stacks.n; i++) {
		const struct ostack *s = &e->d.stacks.v[i];

		if (s->n) /* stack 0 is empty, and maybe all: no &NULL[0] */
			put_int32s(a, 1, &e->d.stack_locs.v[s->i0], s->n, b);
		pb_msg(&dict, 7, a);
	}
	for (i = 0; i < e->d.strings.n; i++)
		pb_len(&dict, 5, e->d.strings.v[i].p, e->d.strings.v[i].n);
	pb_msg(out, 2, &dict);
	free(dict.p);
}

int otlp_from_pprof(const void *pb, size_t n, const struct otlp_meta *m, struct fmt_buf *out,
		    struct otlp_stats *st)
{
	struct pprof_in in = {0};
	struct enc e = {.in = &in, .m = m};
	size_t *order = NULL, i, g;
	int err;

	memset(st, 0, sizeof(*st));
	err = pprof_in_read(pb, n, &in);
	if (!err && !(e.str_of = calloc(in.strings.n, sizeof(*e.str_of))))
		err = -ENOMEM;
	if (!err && !(order = pprof_in_by_pid(&in)))
		err = -ENOMEM;
	if (err)
		goto out;
	st->ntypes = in.types.n;
	/* Entry 0 of each table: "", the empty stack, the empty attribute. */
	dstr(&e.d, "", 0);
	dstack(&e.d, NULL, 0);
	dattr(&e.d, (struct oattr){0});
	for (i = 0; i < in.strings.n; i++)
		e.str_of[i] = dstr(&e.d, in.strings.v[i].p, in.strings.v[i].n);
	/* A process's samples together. */
	for (g = i = 0; in.samples.n && i <= in.samples.n; i++) {
		const struct psample *a = i < in.samples.n ? &in.samples.v[order[i]] : NULL,
				     *b = &in.samples.v[order[g]];

		if (i == g)
			continue;
		if (a && a->has_pid == b->has_pid && a->pid == b->pid)
			continue;
		put_process(&e, out, order + g, i - g, st);
		g = i;
	}
	put_dictionary(&e, out);
	if (e.d.err || e.s1.err || e.s2.err || e.s3.err || e.s4.err)
		err = -ENOMEM;
	else
		err = out->err;
out:
	free(order);
	free(e.str_of);
	free(e.s1.p);
	free(e.s2.p);
	free(e.s3.p);
	free(e.s4.p);
	dict_free(&e.d);
	pprof_in_free(&in);
	return err;
}

/* ---- decoding ---- */

static char *dup_field(const struct pb_field *f)
{
	char *s = malloc(f->len + 1);

	if (s) {
		memcpy(s, f->data, f->len);
		s[f->len] = 0;
	}
	return s;
}

/* Packed (or not) int32 indices into v. */
#define READ_INDICES(f, vec, err)                                                                  \
	do {                                                                                       \
		struct pb_values it_ = pb_values(f);                                               \
		uint64_t x_;                                                                       \
		while (!(err) && pb_values_next(&it_, &x_))                                        \
			(err) = x_ > INT32_MAX ? -EINVAL : VEC_PUSH(vec, (int32_t)x_);             \
		if (!(err))                                                                        \
			(err) = it_.r.err;                                                         \
	} while (0)

/* An AnyValue: a string, a bool or an int (others: -EINVAL, not ours). */
static int read_any(const struct pb_field *f, struct otlp_value *v)
{
	struct pb_reader r = pb_sub(f);
	struct pb_field g;

	while (pb_next(&r, &g)) {
		free(v->str);
		v->str = NULL;
		v->is_str = false;
		if (g.field == 1 && g.wire == PB_LEN) {
			v->is_str = true;
			if (!(v->str = dup_field(&g)))
				return -ENOMEM;
		} else if ((g.field == 2 || g.field == 3) && g.wire == PB_VARINT) {
			v->num = (int64_t)g.v;
		} else {
			return -EINVAL;
		}
	}
	return r.err;
}

static int read_kv(const struct pb_field *f, struct otlp_resource *res)
{
	struct pb_reader r = pb_sub(f);
	struct pb_field g;
	struct otlp_kv kv = {0};
	int err = 0;

	while (!err && pb_next(&r, &g))
		if (g.field == 1 && g.wire == PB_LEN) {
			free(kv.key);
			err = (kv.key = dup_field(&g)) ? 0 : -ENOMEM;
		} else if (g.field == 2 && g.wire == PB_LEN) {
			err = read_any(&g, &kv.v);
		}
	if (!err)
		err = r.err;
	if (!err && !kv.key)
		err = -EINVAL;
	if (!err && VEC_PUSH(res->attrs, kv))
		err = -ENOMEM;
	if (err) {
		free(kv.key);
		free(kv.v.str);
	}
	return err;
}

static int read_sample_o(const struct pb_field *f, struct otlp_profile *p)
{
	struct pb_reader r = pb_sub(f);
	struct pb_field g;
	struct otlp_sample s = {0};
	int err = 0;

	while (!err && pb_next(&r, &g)) {
		if (g.field == 1 && g.wire == PB_VARINT)
			s.stack = g.v > INT32_MAX ? -1 : (int32_t)g.v;
		else if (g.field == 2)
			READ_INDICES(&g, s.attrs, err);
		else if (g.field == 4) {
			struct pb_values it = pb_values(&g);
			uint64_t x;

			while (!err && pb_values_next(&it, &x))
				err = VEC_PUSH(s.values, (int64_t)x);
			if (!err)
				err = it.r.err;
		}
	}
	if (!err)
		err = r.err;
	if (!err && VEC_PUSH(p->samples, s))
		err = -ENOMEM;
	if (err) {
		free(s.attrs.v);
		free(s.values.v);
	}
	return err;
}

static int read_profile(const struct pb_field *f, struct otlp_resource *res)
{
	struct pb_reader r = pb_sub(f);
	struct pb_field g;
	struct otlp_profile p = {0};
	int err = 0;

	if (VEC_PUSH(res->profiles, p))
		return -ENOMEM;
	/* Filled in place: what is read is freed with the request. */
	while (!err && pb_next(&r, &g)) {
		struct otlp_profile *q = &res->profiles.v[res->profiles.n - 1];
		struct pvtype t = {0, 0};

		switch (g.field << 3 | g.wire) {
		case 1 << 3 | PB_LEN:
		case 5 << 3 | PB_LEN:
			err = pprof_in_vtype(&g, &t);
			if (t.type > INT32_MAX || t.unit > INT32_MAX)
				err = -EINVAL;
			if (g.field == 1)
				q->type = (int32_t)t.type, q->unit = (int32_t)t.unit;
			else
				q->period_type = (int32_t)t.type, q->period_unit = (int32_t)t.unit;
			break;
		case 2 << 3 | PB_LEN:
			err = read_sample_o(&g, q);
			break;
		case 3 << 3 | PB_I64:
			q->time_ns = g.v;
			break;
		case 4 << 3 | PB_VARINT:
			q->duration_ns = g.v;
			break;
		case 6 << 3 | PB_VARINT:
			q->period = (int64_t)g.v;
			break;
		}
	}
	return err ? err : r.err;
}

static int read_resource(const struct pb_field *f, struct otlp_request *q)
{
	struct pb_reader r = pb_sub(f);
	struct pb_field g;
	struct otlp_resource res0 = {0};
	int err = 0;

	if (VEC_PUSH(q->resources, res0))
		return -ENOMEM;
	while (!err && pb_next(&r, &g)) {
		struct otlp_resource *res = &q->resources.v[q->resources.n - 1];
		struct pb_reader s;
		struct pb_field h;

		if (g.wire != PB_LEN)
			continue;
		if (g.field == 1) { /* Resource */
			s = pb_sub(&g);
			while (!err && pb_next(&s, &h))
				if (h.field == 1 && h.wire == PB_LEN)
					err = read_kv(&h, res);
			if (!err)
				err = s.err;
		} else if (g.field == 2) { /* ScopeProfiles */
			s = pb_sub(&g);
			while (!err && pb_next(&s, &h)) {
				if (h.field == 1 && h.wire == PB_LEN) {
					struct pb_reader sc = pb_sub(&h);
					struct pb_field k;

					while (!err && pb_next(&sc, &k)) {
						char **dst = k.field == 1   ? &res->scope_name
							     : k.field == 2 ? &res->scope_version
									    : NULL;

						if (!dst || k.wire != PB_LEN)
							continue;
						free(*dst);
						err = (*dst = dup_field(&k)) ? 0 : -ENOMEM;
					}
					if (!err)
						err = sc.err;
				} else if (h.field == 2 && h.wire == PB_LEN) {
					err = read_profile(&h, res);
				}
			}
			if (!err)
				err = s.err;
		}
	}
	return err ? err : r.err;
}

static int read_dict_entry(const struct pb_field *f, struct otlp_request *q)
{
	struct pb_reader r = pb_sub(f);
	struct pb_field g;
	int err = 0;

	switch (f->field) {
	case 1: { /* Mapping */
		struct otlp_mapping m = {0};

		while (!err && pb_next(&r, &g)) {
			if (g.field == 5)
				READ_INDICES(&g, m.attrs, err);
			else if (g.wire != PB_VARINT)
				continue;
			else if (g.field == 1)
				m.start = g.v;
			else if (g.field == 2)
				m.limit = g.v;
			else if (g.field == 3)
				m.offset = g.v;
			else if (g.field == 4)
				m.filename = g.v > INT32_MAX ? -1 : (int32_t)g.v;
		}
		if (!err && !r.err && VEC_PUSH(q->mappings, m))
			err = -ENOMEM;
		if (err || r.err)
			free(m.attrs.v);
		break;
	}
	case 2: { /* Location */
		struct otlp_location l = {0};

		while (!err && pb_next(&r, &g)) {
			if (g.field == 1 && g.wire == PB_VARINT)
				l.mapping = g.v > INT32_MAX ? -1 : (int32_t)g.v;
			else if (g.field == 2 && g.wire == PB_VARINT)
				l.address = g.v;
			else if (g.field == 4)
				READ_INDICES(&g, l.attrs, err);
			else if (g.field == 3 && g.wire == PB_LEN) {
				struct pb_reader lr = pb_sub(&g);
				struct pb_field h;
				struct otlp_line ln = {0, 0};

				while (pb_next(&lr, &h))
					if (h.field == 1 && h.wire == PB_VARINT)
						ln.function = h.v > INT32_MAX ? -1 : (int32_t)h.v;
					else if (h.field == 2 && h.wire == PB_VARINT)
						ln.line = (int64_t)h.v;
				err = lr.err ? lr.err : VEC_PUSH(l.lines, ln);
			}
		}
		if (!err && !r.err && VEC_PUSH(q->locations, l))
			err = -ENOMEM;
		if (err || r.err) {
			free(l.lines.v);
			free(l.attrs.v);
		}
		break;
	}
	case 3: { /* Function */
		struct otlp_function fn = {0, 0, 0};

		while (pb_next(&r, &g)) {
			int32_t v = g.v > INT32_MAX ? -1 : (int32_t)g.v;

			if (g.wire != PB_VARINT)
				continue;
			if (g.field == 1)
				fn.name = v;
			else if (g.field == 2)
				fn.system_name = v;
			else if (g.field == 3)
				fn.filename = v;
		}
		if (!r.err && VEC_PUSH(q->functions, fn))
			err = -ENOMEM;
		break;
	}
	case 5: { /* a string */
		char *s = dup_field(f);

		if (!s || VEC_PUSH(q->strings, s)) {
			free(s);
			err = -ENOMEM;
		}
		return err;
	}
	case 6: { /* KeyValueAndUnit */
		struct otlp_attr a = {0};

		while (!err && pb_next(&r, &g))
			if (g.field == 1 && g.wire == PB_VARINT)
				a.key = g.v > INT32_MAX ? -1 : (int32_t)g.v;
			else if (g.field == 3 && g.wire == PB_VARINT)
				a.unit = g.v > INT32_MAX ? -1 : (int32_t)g.v;
			else if (g.field == 2 && g.wire == PB_LEN)
				err = read_any(&g, &a.v);
		if (!err && !r.err && VEC_PUSH(q->attrs, a))
			err = -ENOMEM;
		if (err || r.err)
			free(a.v.str);
		break;
	}
	case 7: { /* Stack */
		struct otlp_stack s = {0};

		while (!err && pb_next(&r, &g))
			if (g.field == 1)
				READ_INDICES(&g, s.locs, err);
		if (!err && !r.err && VEC_PUSH(q->stacks, s))
			err = -ENOMEM;
		if (err || r.err)
			free(s.locs.v);
		break;
	}
	}
	return err ? err : r.err;
}

#define IX_OK(i, vec) ((i) >= 0 && (size_t)(i) < (vec).n)

/* Every index within its table: the reader's contract (otlp.h). */
static int check_indices(const struct otlp_request *q, const char **why)
{
	size_t i, j, k, l;

#define BAD(what)                                                                                  \
	do {                                                                                       \
		*why = what;                                                                       \
		return -EINVAL;                                                                    \
	} while (0)
	if (!q->strings.n || q->strings.v[0][0])
		BAD("the string table does not start with \"\"");
	for (i = 0; i < q->mappings.n; i++) {
		if (!IX_OK(q->mappings.v[i].filename, q->strings))
			BAD("a mapping's file name is not in the string table");
		for (j = 0; j < q->mappings.v[i].attrs.n; j++)
			if (!IX_OK(q->mappings.v[i].attrs.v[j], q->attrs))
				BAD("a mapping's attribute is not in the attribute table");
	}
	for (i = 0; i < q->locations.n; i++) {
		const struct otlp_location *lo = &q->locations.v[i];

		if (lo->mapping && !IX_OK(lo->mapping, q->mappings))
			BAD("a location's mapping is not in the mapping table");
		for (j = 0; j < lo->lines.n; j++)
			if (!IX_OK(lo->lines.v[j].function, q->functions))
				BAD("a line's function is not in the function table");
		for (j = 0; j < lo->attrs.n; j++)
			if (!IX_OK(lo->attrs.v[j], q->attrs))
				BAD("a location's attribute is not in the attribute table");
	}
	for (i = 0; i < q->functions.n; i++) {
		const struct otlp_function *f = &q->functions.v[i];

		if (!IX_OK(f->name, q->strings) || !IX_OK(f->system_name, q->strings) ||
		    !IX_OK(f->filename, q->strings))
			BAD("a function's name is not in the string table");
	}
	for (i = 0; i < q->attrs.n; i++)
		if (!IX_OK(q->attrs.v[i].key, q->strings) || !IX_OK(q->attrs.v[i].unit, q->strings))
			BAD("an attribute's key is not in the string table");
	for (i = 0; i < q->stacks.n; i++)
		for (j = 0; j < q->stacks.v[i].locs.n; j++)
			if (!IX_OK(q->stacks.v[i].locs.v[j], q->locations))
				BAD("a stack's location is not in the location table");
	for (i = 0; i < q->resources.n; i++)
		for (j = 0; j < q->resources.v[i].profiles.n; j++) {
			const struct otlp_profile *p = &q->resources.v[i].profiles.v[j];

			if (!IX_OK(p->type, q->strings) || !IX_OK(p->unit, q->strings) ||
			    !IX_OK(p->period_type, q->strings) ||
			    !IX_OK(p->period_unit, q->strings))
				BAD("a profile's sample type is not in the string table");
			for (k = 0; k < p->samples.n; k++) {
				const struct otlp_sample *s = &p->samples.v[k];

				if (!IX_OK(s->stack, q->stacks))
					BAD("a sample's stack is not in the stack table");
				for (l = 0; l < s->attrs.n; l++)
					if (!IX_OK(s->attrs.v[l], q->attrs))
						BAD("a sample's attribute is not in the attribute "
						    "table");
			}
		}
#undef BAD
	return 0;
}

int otlp_decode(const void *p, size_t n, struct otlp_request *q, const char **why)
{
	struct pb_reader r = pb_reader(p, n);
	struct pb_field f;
	const char *dummy;
	int err = 0;

	if (!why)
		why = &dummy;
	*why = "malformed protobuf";
	memset(q, 0, sizeof(*q));
	while (!err && pb_next(&r, &f)) {
		if (f.wire != PB_LEN)
			continue;
		if (f.field == 1) {
			err = read_resource(&f, q);
		} else if (f.field == 2) {
			struct pb_reader d = pb_sub(&f);
			struct pb_field g;

			while (!err && pb_next(&d, &g))
				if (g.wire == PB_LEN)
					err = read_dict_entry(&g, q);
			if (!err)
				err = d.err;
		}
	}
	if (!err)
		err = r.err;
	if (err == -ENOMEM)
		*why = "out of memory";
	return err ? err : check_indices(q, why);
}

void otlp_request_free(struct otlp_request *q)
{
	size_t i, j, k;

	for (i = 0; i < q->strings.n; i++)
		free(q->strings.v[i]);
	for (i = 0; i < q->mappings.n; i++)
		free(q->mappings.v[i].attrs.v);
	for (i = 0; i < q->locations.n; i++) {
		free(q->locations.v[i].lines.v);
		free(q->locations.v[i].attrs.v);
	}
	for (i = 0; i < q->stacks.n; i++)
		free(q->stacks.v[i].locs.v);
	for (i = 0; i < q->attrs.n; i++)
		free(q->attrs.v[i].v.str);
	for (i = 0; i < q->resources.n; i++) {
		struct otlp_resource *res = &q->resources.v[i];

		for (j = 0; j < res->attrs.n; j++) {
			free(res->attrs.v[j].key);
			free(res->attrs.v[j].v.str);
		}
		for (j = 0; j < res->profiles.n; j++) {
			for (k = 0; k < res->profiles.v[j].samples.n; k++) {
				free(res->profiles.v[j].samples.v[k].attrs.v);
				free(res->profiles.v[j].samples.v[k].values.v);
			}
			free(res->profiles.v[j].samples.v);
		}
		free(res->attrs.v);
		free(res->profiles.v);
		free(res->scope_name);
		free(res->scope_version);
	}
	free(q->strings.v);
	free(q->mappings.v);
	free(q->locations.v);
	free(q->functions.v);
	free(q->stacks.v);
	free(q->attrs.v);
	free(q->resources.v);
	memset(q, 0, sizeof(*q));
}

const struct otlp_value *otlp_resource_attr(const struct otlp_resource *r, const char *key)
{
	size_t i;

	for (i = 0; i < r->attrs.n; i++)
		if (!strcmp(r->attrs.v[i].key, key))
			return &r->attrs.v[i].v;
	return NULL;
}

/* A message field (string) of a message, sanitized into msg. */
static int read_message(const void *p, size_t n, unsigned field, char *msg, size_t cap,
			int64_t *num, unsigned num_field)
{
	struct pb_reader r = pb_reader(p, n);
	struct pb_field f;

	if (cap)
		msg[0] = 0;
	while (pb_next(&r, &f))
		if (f.field == field && f.wire == PB_LEN)
			fmt_sanitize(msg, cap, (const char *)f.data, f.len);
		else if (num && f.field == num_field && f.wire == PB_VARINT)
			*num = (int64_t)f.v;
	return r.err;
}

int otlp_decode_response(const void *p, size_t n, int64_t *rejected, char *msg, size_t cap)
{
	struct pb_reader r = pb_reader(p, n);
	struct pb_field f;
	int err = 0;

	*rejected = 0;
	if (cap)
		msg[0] = 0;
	while (!err && pb_next(&r, &f))
		if (f.field == 1 && f.wire == PB_LEN) /* partial_success */
			err = read_message(f.data, f.len, 2, msg, cap, rejected, 1);
	return err ? err : r.err;
}

int otlp_decode_status(const void *p, size_t n, char *msg, size_t cap)
{
	return read_message(p, n, 2, msg, cap, NULL, 0);
}

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

bool otlp_container_id(const char *cg, size_t n, char out[65])
{
	static const char *const prefixes[] = {"docker-", "cri-containerd-", "crio-", "libpod-"};
	bool found = false;
	size_t i, j, run;

	for (i = 0; i + 64 <= n; i++) {
		char before = i ? cg[i - 1] : '/';
		bool lead = before == '/';

		for (run = 0; run < 64 && is_hex(cg[i + run]); run++)
			;
		if (run < 64 || (i + 64 < n && (is_hex(cg[i + 64]) || cg[i + 64] == '-')))
			continue;
		for (j = 0; !lead && j < sizeof(prefixes) / sizeof(prefixes[0]); j++) {
			size_t pl = strlen(prefixes[j]);

			lead = i >= pl && !memcmp(cg + i - pl, prefixes[j], pl) &&
			       (i == pl || cg[i - pl - 1] == '/');
		}
		if (!lead)
			continue;
		memcpy(out, cg + i, 64);
		out[64] = 0;
		found = true;
		i += 63;
	}
	return found;
}
