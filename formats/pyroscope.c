/* Pyroscope's ingest form from a pprof profile: see pyroscope.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "formats/pprof_in.h"
#include "formats/protobuf.h"
#include "formats/pyroscope.h"

#define VALUE_MAX 512 /* a label value; Pyroscope's default limit is 2048 */

static void keep_if(char *out, size_t cap, const char *s, size_t n, bool (*ok)(unsigned char))
{
	size_t i, o = 0;

	for (i = 0; i < n && s[i] && o + 1 < cap; i++)
		out[o++] = ok((unsigned char)s[i]) ? s[i] : '_';
	out[o] = 0;
	if (!o)
		snprintf(out, cap, "unknown");
}

static bool app_ok(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       strchr("_.-/", c);
}

static bool value_ok(unsigned char c)
{
	return c > ' ' && c < 0x7f && !strchr(",{}=\"'\\", c);
}

void pyro_app_name(char *out, size_t cap, const char *s, size_t n)
{
	keep_if(out, cap, s, n, app_ok);
}

void pyro_label_value(char *out, size_t cap, const char *s, size_t n)
{
	keep_if(out, cap, s, n, value_ok);
}

/* ---- a process's profile, its tables pruned ---- */

/* Old index -> new id (0: not used yet), and the old indices in the order
 * they were first used: cleared after each process by walking that list. */
struct remap {
	uint32_t *id;
	VEC(uint32_t) used;
};

struct split {
	const struct pprof_in *in;
	struct remap str, map, loc, fn;
	struct fmt_buf out, s1, s2;
	int err;
};

static int remap_init(struct remap *r, size_t n)
{
	r->id = calloc(n ? n : 1, sizeof(*r->id));
	return r->id ? 0 : -ENOMEM;
}

static uint32_t remap(struct split *sp, struct remap *r, uint32_t old)
{
	if (!r->id[old]) {
		if (VEC_PUSH(r->used, old)) {
			sp->err = -ENOMEM;
			return 0;
		}
		r->id[old] = (uint32_t)r->used.n;
	}
	return r->id[old];
}

static void remap_clear(struct remap *r)
{
	size_t i;

	for (i = 0; i < r->used.n; i++)
		r->id[r->used.v[i]] = 0;
	r->used.n = 0;
}

static int by_index(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* A string's index in the new table: "" stays 0, the others from 1. */
static uint64_t str_ix(struct split *sp, uint64_t old)
{
	return old ? remap(sp, &sp->str, (uint32_t)old) : 0;
}

static void put_vtype(struct split *sp, unsigned field, const struct pvtype *t)
{
	pb_uint(&sp->s1, 1, str_ix(sp, t->type));
	pb_uint(&sp->s1, 2, str_ix(sp, t->unit));
	pb_msg(&sp->out, field, &sp->s1);
}

/* The samples order[0..n) as a Profile in sp->out; their first type's sum
 * in *total. */
static void encode_process(struct split *sp, const size_t *order, size_t n, int64_t *total)
{
	const struct pprof_in *in = sp->in;
	uint64_t locs[1024];
	size_t i, j;

	*total = 0;
	for (i = 0; i < in->types.n; i++)
		put_vtype(sp, 1, &in->types.v[i]);
	for (i = 0; i < n; i++) {
		const struct psample *s = &in->samples.v[order[i]];
		size_t nl = 0;

		/* A stack deeper than any the recorder takes is cut. */
		for (j = 0; j < s->nlocs && nl < sizeof(locs) / sizeof(locs[0]); j++)
			locs[nl++] =
			    remap(sp, &sp->loc, pprof_in_location(in, in->locids.v[s->loc0 + j]));
		if (nl)
			pb_packed(&sp->s1, 1, locs, nl, &sp->s2);
		if (s->nvals)
			pb_packed(&sp->s1, 2, (const uint64_t *)&in->values.v[s->val0], s->nvals,
				  &sp->s2);
		pb_msg(&sp->out, 2, &sp->s1);
		if (s->nvals) /* wrapping, not overflowing, on hostile values */
			*total = (int64_t)((uint64_t)*total + (uint64_t)in->values.v[s->val0]);
	}
	/* The mappings used, in the profile's order: pprof shows the first as
	 * the program (the recorder writes the main one first), where the
	 * order of first use would often name the kernel. */
	for (i = 0; i < sp->loc.used.n; i++) {
		const struct plocation *l = &in->locations.v[sp->loc.used.v[i]];

		if (l->mapping)
			remap(sp, &sp->map, pprof_in_mapping(in, l->mapping));
	}
	if (sp->map.used.n)
		qsort(sp->map.used.v, sp->map.used.n, sizeof(*sp->map.used.v), by_index);
	for (i = 0; i < sp->map.used.n; i++)
		sp->map.id[sp->map.used.v[i]] = (uint32_t)i + 1;
	/* The locations used, in id order of first use (as remap gave them),
	 * which use functions. */
	for (i = 0; i < sp->loc.used.n; i++) {
		const struct plocation *l = &in->locations.v[sp->loc.used.v[i]];

		pb_uint(&sp->s1, 1, i + 1);
		if (l->mapping)
			pb_uint(&sp->s1, 2, sp->map.id[pprof_in_mapping(in, l->mapping)]);
		pb_uint(&sp->s1, 3, l->address);
		for (j = 0; j < l->nlines; j++) {
			const struct pline *ln = &in->lines.v[l->line0 + j];

			pb_uint(&sp->s2, 1,
				remap(sp, &sp->fn, pprof_in_function(in, ln->function)));
			pb_uint(&sp->s2, 2, (uint64_t)ln->line);
			pb_msg(&sp->s1, 4, &sp->s2);
		}
		pb_msg(&sp->out, 4, &sp->s1);
	}
	for (i = 0; i < sp->map.used.n; i++) {
		const struct pmapping *m = &in->mappings.v[sp->map.used.v[i]];

		pb_uint(&sp->s1, 1, i + 1);
		pb_uint(&sp->s1, 2, m->start);
		pb_uint(&sp->s1, 3, m->limit);
		pb_uint(&sp->s1, 4, m->offset);
		pb_uint(&sp->s1, 5, str_ix(sp, m->file));
		pb_uint(&sp->s1, 6, str_ix(sp, m->build_id));
		pb_uint(&sp->s1, 7, m->has_functions);
		pb_uint(&sp->s1, 8, m->has_filenames);
		pb_uint(&sp->s1, 9, m->has_line_numbers);
		pb_uint(&sp->s1, 10, m->has_inline_frames);
		pb_msg(&sp->out, 3, &sp->s1);
	}
	for (i = 0; i < sp->fn.used.n; i++) {
		const struct pfunction *f = &in->functions.v[sp->fn.used.v[i]];

		pb_uint(&sp->s1, 1, i + 1);
		pb_uint(&sp->s1, 2, str_ix(sp, f->name));
		pb_uint(&sp->s1, 3, str_ix(sp, f->system_name));
		pb_uint(&sp->s1, 4, str_ix(sp, f->filename));
		pb_msg(&sp->out, 5, &sp->s1);
	}
	pb_uint(&sp->out, 9, (uint64_t)in->time_ns);
	pb_uint(&sp->out, 10, (uint64_t)in->duration_ns);
	put_vtype(sp, 11, &in->period_type);
	pb_uint(&sp->out, 12, (uint64_t)in->period);
	pb_uint(&sp->out, 14, str_ix(sp, in->default_type));
	/* The strings last: every table above has named its own. */
	pb_len(&sp->out, 6, "", 0);
	for (i = 0; i < sp->str.used.n; i++) {
		const struct pstr *s = &in->strings.v[sp->str.used.v[i]];

		pb_len(&sp->out, 6, s->p, s->n);
	}
	remap_clear(&sp->str);
	remap_clear(&sp->map);
	remap_clear(&sp->loc);
	remap_clear(&sp->fn);
}

/* ---- the name, the query ---- */

/* key=value, after a comma but for the first (*count 0). */
static void add_label(struct fmt_buf *b, int *count, const char *key, const char *s, size_t n)
{
	char v[VALUE_MAX];

	pyro_label_value(v, sizeof(v), s, n);
	if ((*count)++)
		fmt_put(b, ",", 1);
	fmt_put(b, key, strlen(key));
	fmt_put(b, "=", 1);
	fmt_put(b, v, strlen(v));
}

/* "APP{labels}" of a process: first, a sample of it. NUL-terminated. */
static void put_name(struct fmt_buf *b, const struct pprof_in *in, const struct pyro_meta *m,
		     const struct psample *first)
{
	const struct otlp_process *p =
	    first->has_pid ? otlp_process_find(m->procs, m->nprocs, first->pid) : NULL;
	struct pstr exe = pprof_in_label(in, first, "comm");
	char app[256], num[32];
	int count = 0;

	if (p && p->exe_path) {
		const char *base = strrchr(p->exe_path, '/');

		exe.p = base ? base + 1 : p->exe_path;
		exe.n = strlen(exe.p);
	}
	if (m->service_name)
		pyro_app_name(app, sizeof(app), m->service_name, strlen(m->service_name));
	else
		pyro_app_name(app, sizeof(app), exe.p, exe.n);
	fmt_put(b, app, strlen(app));
	fmt_put(b, "{", 1);
	if (m->host_name)
		add_label(b, &count, "host_name", m->host_name, strlen(m->host_name));
	if (first->has_pid) {
		snprintf(num, sizeof(num), "%" PRId64, first->pid);
		add_label(b, &count, "process_pid", num, strlen(num));
	}
	if (exe.n)
		add_label(b, &count, "process_executable_name", exe.p, exe.n);
	if (p && p->exe_path)
		add_label(b, &count, "process_executable_path", p->exe_path, strlen(p->exe_path));
	if (p && p->container_id)
		add_label(b, &count, "container_id", p->container_id, strlen(p->container_id));
	fmt_put(b, "}", 2); /* and the NUL */
}

/* sample_type_config: every type summed; Pyroscope names the profile
 * process_cpu from the "cpu" type (and "wall" when there is one). */
static void put_type_config(struct fmt_buf *b, const struct pprof_in *in)
{
	static const char rest[] =
	    "\":{\"units\":\"samples\",\"aggregation\":\"sum\",\"sampled\":true}";
	size_t i;
	char v[64];

	fmt_put(b, "{", 1);
	for (i = 0; i < in->types.n; i++) {
		const struct pstr *t = &in->strings.v[in->types.v[i].type];

		pyro_app_name(v, sizeof(v), t->p, t->n);
		fmt_put(b, i ? ",\"" : "\"", i ? 2 : 1);
		fmt_put(b, v, strlen(v));
		fmt_put(b, rest, strlen(rest));
	}
	fmt_put(b, "}", 2);
}

static void put_escaped(struct fmt_buf *b, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    strchr("-._~", c)) {
			fmt_put(b, s, 1);
		} else {
			char e[3] = {'%', hex[c >> 4], hex[c & 15]};

			fmt_put(b, e, 3);
		}
	}
}

void pyro_query(struct fmt_buf *out, const struct pyro_part *p, const char *spy)
{
	char num[96];

	fmt_put(out, "name=", 5);
	put_escaped(out, p->name);
	/* No format=pprof: Pyroscope's ingest handler
	 * (pkg/ingester/pyroscope/ingest_handler.go,
	 * readInputRawDataFromRequest) takes the whole body as one raw pprof
	 * when the query says format=pprof, before it looks for a multipart
	 * Content-Type, and the form failed there (HTTP 422, "parsing
	 * IngestInput-pprof failed: ... wrong wireType = 5 for field
	 * Function"). Without a format, a multipart/form-data body is read as
	 * the form (profile and sample_type_config), and stored. */
	snprintf(num, sizeof(num), "&from=%" PRId64 "&until=%" PRId64, p->from, p->until);
	fmt_put(out, num, strlen(num));
	if (p->sample_rate) {
		snprintf(num, sizeof(num), "&sampleRate=%" PRId64, p->sample_rate);
		fmt_put(out, num, strlen(num));
	}
	if (spy) {
		fmt_put(out, "&spyName=", 9);
		put_escaped(out, spy);
	}
}

/* One field of the form: a file, as curl's MIME API sent it before the
 * spool (Pyroscope's handler reads the parts by name). */
static void put_field(struct fmt_buf *out, const char *boundary, const char *name, const void *data,
		      size_t len)
{
	char head[256];
	int n = snprintf(head, sizeof(head),
			 "--%s\r\nContent-Disposition: form-data; name=\"%s\"; "
			 "filename=\"%s.%s\"\r\nContent-Type: application/octet-stream\r\n\r\n",
			 boundary, name, name, strcmp(name, "profile") ? "json" : "pprof");

	fmt_put(out, head, (size_t)n);
	fmt_put(out, data, len);
	fmt_put(out, "\r\n", 2);
}

void pyro_form(struct fmt_buf *out, char *ctype, size_t cap, const struct pyro_part *p,
	       const void *gz, size_t len)
{
	char boundary[64];
	uint64_t k;

	/* The first boundary (a dash line, 20 hex digits) the profile and
	 * config do not hold: a boundary inside a part would end it. */
	for (k = 0;; k++) {
		snprintf(boundary, sizeof(boundary), "------bpftrace-rec-%020" PRIu64, k);
		if (!memmem(gz, len, boundary, strlen(boundary)) &&
		    !strstr(p->type_config, boundary))
			break;
	}
	snprintf(ctype, cap, "multipart/form-data; boundary=%s", boundary);
	put_field(out, boundary, "profile", gz, len);
	put_field(out, boundary, "sample_type_config", p->type_config, strlen(p->type_config));
	fmt_put(out, "--", 2);
	fmt_put(out, boundary, strlen(boundary));
	fmt_put(out, "--\r\n", 4);
}

int pyro_split(const void *pb, size_t n, const struct pyro_meta *m, pyro_part_fn fn, void *ctx)
{
	struct pprof_in in = {0};
	struct split sp = {.in = &in};
	struct fmt_buf name = {0}, config = {0};
	size_t *order = NULL, i, g;
	int err;

	err = pprof_in_read(pb, n, &in);
	if (!err && !(order = pprof_in_by_pid(&in)))
		err = -ENOMEM;
	if (!err && (remap_init(&sp.str, in.strings.n) || remap_init(&sp.map, in.mappings.n) ||
		     remap_init(&sp.loc, in.locations.n) || remap_init(&sp.fn, in.functions.n)))
		err = -ENOMEM;
	if (!err) {
		put_type_config(&config, &in);
		err = config.err;
	}
	for (g = i = 0; !err && in.samples.n && i <= in.samples.n; i++) {
		const struct psample *a = i < in.samples.n ? &in.samples.v[order[i]] : NULL,
				     *b = &in.samples.v[order[g]];
		int64_t t = in.time_ns / 1000000000, u;
		struct pyro_part part;

		if (i == g || (a && a->has_pid == b->has_pid && a->pid == b->pid))
			continue;
		name.n = sp.out.n = 0;
		put_name(&name, &in, m, b);
		encode_process(&sp, order + g, i - g, &part.samples);
		g = i;
		if (name.err || sp.err || sp.out.err || sp.s1.err || sp.s2.err) {
			err = -ENOMEM;
			break;
		}
		/* Unsigned: a hostile profile's times must not overflow (UBSan, fuzz_pyroscope). */
		u = (int64_t)(((uint64_t)in.time_ns + (uint64_t)in.duration_ns + 999999999u) /
			      1000000000u);
		part.pid = b->pid;
		part.has_pid = b->has_pid;
		part.name = (const char *)name.p;
		part.profile = sp.out.p;
		part.len = sp.out.n;
		part.type_config = (const char *)config.p;
		part.from = t;
		part.until = u > t ? u : t + 1;
		part.sample_rate = in.period > 0 ? (1000000000 + in.period / 2) / in.period : 0;
		err = fn(ctx, &part);
	}
	free(order);
	free(name.p);
	free(config.p);
	free(sp.out.p);
	free(sp.s1.p);
	free(sp.s2.p);
	free(sp.str.id);
	free(sp.map.id);
	free(sp.loc.id);
	free(sp.fn.id);
	free(sp.str.used.v);
	free(sp.map.used.v);
	free(sp.loc.used.v);
	free(sp.fn.used.v);
	pprof_in_free(&in);
	return err;
}
