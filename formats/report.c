/* The text report of a pprof profile: see report.h. What it computes is
 * pprof's -top at its default granularity (functions): a function's flat
 * value is that of the samples whose leaf frame it is (an inlined frame's
 * innermost line), its cum value that of the samples with it anywhere on
 * the stack, counted once however often it recurs; rows go by flat, then
 * name, then cum, as pprof's FlatNameOrder. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <sys/types.h>
#include "formats/report.h"
#include "formats/util.h"

/* Values come from outside: sums saturate rather than overflow (signed
 * overflow is undefined), and |INT64_MIN| is INT64_MAX. */
static int64_t abs64(int64_t v)
{
	return v == INT64_MIN ? INT64_MAX : v < 0 ? -v : v;
}

static int64_t sat_add(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_add_overflow(a, b, &r))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

/* ---- units, as pprof's internal/measurement ---- */

struct unit {
	const char *name;
	const char *const *aliases;
	double factor;
};
static const char
    *const ns_a[] = {"ns", "nanosecond", NULL},
	   *const us_a[] = {"us", "microsecond", NULL}, *const ms_a[] = {"ms", "millisecond", NULL},
	   *const s_a[] = {"s", "sec", "second", NULL}, *const h_a[] = {"hour", "hr", NULL};
static const struct unit time_units[] = {
    {"ns", ns_a, 1}, {"us", us_a, 1e3}, {"ms", ms_a, 1e6}, {"s", s_a, 1e9}, {"hrs", h_a, 3600e9}};
static const char *const b_a[] = {"b", "byte", NULL},
			 *const kb_a[] = {"kb", "kbyte", "kilobyte", NULL},
			 *const mb_a[] = {"mb", "mbyte", "megabyte", NULL},
			 *const gb_a[] = {"gb", "gbyte", "gigabyte", NULL},
			 *const tb_a[] = {"tb", "tbyte", "terabyte", NULL};
static const struct unit mem_units[] = {{"B", b_a, 1},
					{"kB", kb_a, 1024.0},
					{"MB", mb_a, 1024.0 * 1024},
					{"GB", gb_a, 1024.0 * 1024 * 1024},
					{"TB", tb_a, 1024.0 * 1024 * 1024 * 1024}};
#define NUNITS 5

/* The unit of this name (case aside, a plural's s aside) in time's or
 * memory's table, its table in *tab; NULL when neither has it. */
static const struct unit *sniff(const char *name, const struct unit **tab)
{
	char low[32];
	size_t n = strlen(name), i, k;
	const struct unit *tabs[2] = {time_units, mem_units};

	if (n >= sizeof(low))
		return NULL;
	for (i = 0; i < n; i++)
		low[i] = (char)(name[i] >= 'A' && name[i] <= 'Z' ? name[i] - 'A' + 'a' : name[i]);
	low[n] = 0;
	if (n > 2 && low[n - 1] == 's')
		low[n - 1] = 0;
	for (k = 0; k < 2; k++)
		for (i = 0; i < NUNITS; i++) {
			const char *const *a;

			for (a = tabs[k][i].aliases; *a; a++)
				if (!strcmp(*a, low)) {
					*tab = tabs[k];
					return &tabs[k][i];
				}
		}
	return NULL;
}

/* The largest unit of tab that v (in base units) is at least one of; the
 * base unit (time: s, pprof's default) for 0. */
static const struct unit *autoscale(const struct unit *tab, double v)
{
	const struct unit *best = NULL;
	size_t i;

	for (i = 0; i < NUNITS; i++)
		if (v / tab[i].factor >= 1.0)
			best = &tab[i];
	if (best)
		return best;
	return tab == time_units ? &time_units[3] : &mem_units[0];
}

const char *report_unit(int64_t min, int64_t max, const char *unit)
{
	const struct unit *tab = NULL, *u = sniff(unit, &tab), *lo, *hi;

	if (!u)
		return unit;
	lo = autoscale(tab, (double)abs64(min) * u->factor);
	hi = autoscale(tab, (double)abs64(max) * u->factor);
	/* A listing that spans units: its smallest value may read as 0.01 of
	 * a larger one. */
	if (lo != hi && (double)abs64(min) * 100 < (double)abs64(max))
		lo = autoscale(tab, (double)abs64(min) * 100 * u->factor);
	return lo->name;
}

void report_value(char *buf, size_t len, int64_t v, const char *unit, const char *out_unit)
{
	const struct unit *tab = NULL, *from = sniff(unit, &tab), *to = NULL, *t2 = NULL;
	const char *suffix = out_unit;
	double x = (double)v;
	size_t n;

	if (from) {
		to = sniff(out_unit, &t2);
		if (!to || t2 != tab)
			to = autoscale(tab, (double)abs64(v) * from->factor);
		x = x * from->factor / to->factor;
		suffix = to->name;
	} else if (!strcmp(out_unit, "count") || !strcmp(out_unit, "sample") ||
		   !strcmp(out_unit, "unit") || !*out_unit) {
		suffix = "";
	}
	snprintf(buf, len, "%.2f", x);
	n = strlen(buf);
	if (n > 3 && !strcmp(buf + n - 3, ".00"))
		buf[n - 3] = 0;
	if (!strcmp(buf, "0") || !strcmp(buf, "-0")) {
		snprintf(buf, len, "0");
		return;
	}
	n = strlen(buf);
	snprintf(buf + n, len > n ? len - n : 0, "%s", suffix);
}

void report_pct(char *buf, size_t len, int64_t v, int64_t total)
{
	double r = total ? (double)abs64(v) / (double)abs64(total) * 100 : 0;

	if (r >= 99.95 && r <= 100.05)
		snprintf(buf, len, "  100%%");
	else if (r >= 1.0)
		snprintf(buf, len, "%5.2f%%", r);
	else
		snprintf(buf, len, "%5.2g%%", r);
}

/* ---- sample types ---- */

static bool type_is(const struct pprof_in *in, size_t i, const char *name)
{
	return pprof_in_str_is(in, in->types.v[i].type, name);
}

int report_type_index(const struct pprof_in *in, const char *name)
{
	size_t i;

	for (i = 0; i < in->types.n; i++)
		if (type_is(in, i, name))
			return (int)i;
	return -ENOENT;
}

size_t report_types(const struct pprof_in *in, size_t *idx)
{
	static const char *const ours[] = {"cpu", "offcpu", "wall"};
	size_t n = 0, k, i;

	for (k = 0; k < 3; k++) {
		int j = report_type_index(in, ours[k]);

		if (j >= 0)
			idx[n++] = (size_t)j;
	}
	if (n || !in->types.n)
		return n;
	for (i = 0; in->default_type && i < in->types.n; i++)
		if (in->types.v[i].type == in->default_type) {
			idx[0] = i;
			return 1;
		}
	idx[0] = in->types.n - 1;
	return 1;
}

/* ---- one top ---- */

/* A row: a function by its name, or, for a location with no function
 * name, its mapping's file ("[libfoo.so]", pprof's name then). */
struct node {
	struct pstr name;
	bool objfile;
	int64_t flat, cum;
	size_t seen; /* the sample (its index + 1) last added to cum */
	char *shown; /* its printable name, once the sums are done */
	/* Its line with the most value, the "file:line" shown. */
	uint64_t hot_file;
	int64_t hot_line, hot_v;
};
/* A (function, file, line) of the stacks, for the node's hottest line. */
struct line_acc {
	uint32_t node;
	uint64_t file;
	int64_t line, v;
	size_t seen;
};

struct top {
	const struct pprof_in *in;
	VEC(struct node) nodes;
	VEC(struct line_acc) lines;
	struct idtab node_ix, line_ix;
	int64_t total;
	size_t nsamples;
};

struct node_key {
	struct pstr name;
	bool objfile;
};

static uint64_t node_hash(const struct node_key *k)
{
	return hash_bytes(k->name.p, k->name.n) ^ k->objfile;
}

static bool node_eq(const void *ctx, uint32_t i, const void *key)
{
	const struct node *n = &((const struct top *)ctx)->nodes.v[i];
	const struct node_key *k = key;

	return n->objfile == k->objfile && n->name.n == k->name.n &&
	       (!k->name.n || !memcmp(n->name.p, k->name.p, k->name.n));
}

static bool line_eq(const void *ctx, uint32_t i, const void *key)
{
	const struct line_acc *l = &((const struct top *)ctx)->lines.v[i];
	const struct line_acc *k = key;

	return l->node == k->node && l->file == k->file && l->line == k->line;
}

/* The node of a name, made when new; UINT32_MAX on ENOMEM. */
static uint32_t node_of(struct top *t, struct pstr name, bool objfile)
{
	struct node_key k = {name, objfile};
	uint64_t h = node_hash(&k);
	uint32_t i = idtab_find(&t->node_ix, h, node_eq, t, &k);
	struct node n = {.name = name, .objfile = objfile};

	if (i != UINT32_MAX)
		return i;
	if (t->nodes.n >= UINT32_MAX - 1 || VEC_PUSH(t->nodes, n))
		return UINT32_MAX;
	i = (uint32_t)(t->nodes.n - 1);
	if (idtab_insert(&t->node_ix, h, i)) {
		t->nodes.n--;
		return UINT32_MAX;
	}
	return i;
}

/* Adds v to a frame of sample si (its index + 1): flat for the leaf, cum
 * once per sample, and to its line. 0 or -ENOMEM. */
static int add_frame(struct top *t, uint32_t ni, uint64_t file, int64_t line, int64_t v, size_t si,
		     bool leaf)
{
	struct node *n = &t->nodes.v[ni];
	struct line_acc k = {ni, file, line, 0, 0};
	uint64_t h;
	uint32_t li;

	if (leaf)
		n->flat = sat_add(n->flat, v);
	if (n->seen != si) {
		n->seen = si;
		n->cum = sat_add(n->cum, v);
	}
	if (!file && !line)
		return 0;
	h = hash_u64((uint64_t)ni << 32 ^ file) ^ hash_u64((uint64_t)line);
	li = idtab_find(&t->line_ix, h, line_eq, t, &k);
	if (li == UINT32_MAX) {
		if (t->lines.n >= UINT32_MAX - 1 || VEC_PUSH(t->lines, k))
			return -ENOMEM;
		li = (uint32_t)(t->lines.n - 1);
		if (idtab_insert(&t->line_ix, h, li)) {
			t->lines.n--;
			return -ENOMEM;
		}
	}
	if (t->lines.v[li].seen != si) {
		t->lines.v[li].seen = si;
		t->lines.v[li].v = sat_add(t->lines.v[li].v, v);
	}
	return 0;
}

/* The frames of one sample, leaf first. 0 or -ENOMEM. */
static int add_sample(struct top *t, const struct psample *s, int64_t v, size_t si)
{
	const struct pprof_in *in = t->in;
	bool leaf = true;
	size_t j, k;
	int err = 0;

	for (j = 0; j < s->nlocs && !err; j++) {
		const struct plocation *l =
		    &in->locations.v[pprof_in_location(in, in->locids.v[s->loc0 + j])];
		bool named = false;

		for (k = 0; k < l->nlines && !err; k++) {
			const struct pline *ln = &in->lines.v[l->line0 + k];
			const struct pfunction *f =
			    &in->functions.v[pprof_in_function(in, ln->function)];
			uint32_t ni;

			if (!in->strings.v[f->name].n)
				continue;
			ni = node_of(t, in->strings.v[f->name], false);
			err = ni == UINT32_MAX
				  ? -ENOMEM
				  : add_frame(t, ni, f->filename, ln->line, v, si, leaf);
			leaf = false;
			named = true;
		}
		if (!named && !err) {
			/* No name: its object's, else "<unknown>" (pprof's). */
			struct pstr obj = {"", 0};
			uint32_t ni;

			if (l->mapping)
				obj = in->strings
					  .v[in->mappings.v[pprof_in_mapping(in, l->mapping)].file];
			ni = node_of(t, obj, true);
			err = ni == UINT32_MAX ? -ENOMEM : add_frame(t, ni, 0, 0, v, si, leaf);
			leaf = false;
		}
	}
	return err;
}

static void top_free(struct top *t)
{
	size_t i;

	for (i = 0; i < t->nodes.n; i++)
		free(t->nodes.v[i].shown);
	free(t->nodes.v);
	free(t->lines.v);
	idtab_free(&t->node_ix);
	idtab_free(&t->line_ix);
}

/* A string of the profile, safe for a terminal; NULL on ENOMEM. */
static char *clean(struct pstr s)
{
	return fmt_sanitize_dup(s.p, s.n);
}

static const char *base_name(struct pstr s, size_t *n)
{
	const char *p = s.p, *end = s.p + s.n, *q;

	for (q = p; q < end; q++)
		if (*q == '/' && q + 1 < end)
			p = q + 1;
	*n = (size_t)(end - p);
	return p;
}

/* The printable names, after the sums; 0 or -ENOMEM. */
static int name_nodes(struct top *t)
{
	size_t i;

	for (i = 0; i < t->lines.n; i++) {
		const struct line_acc *l = &t->lines.v[i];
		struct node *n = &t->nodes.v[l->node];

		if (abs64(l->v) > abs64(n->hot_v) ||
		    (l->v == n->hot_v && (!n->hot_file && !n->hot_line))) {
			n->hot_v = l->v;
			n->hot_file = l->file;
			n->hot_line = l->line;
		}
	}
	for (i = 0; i < t->nodes.n; i++) {
		struct node *n = &t->nodes.v[i];
		size_t bn;
		const char *b;

		if (!n->objfile) {
			n->shown = clean(n->name);
		} else if (!n->name.n) {
			n->shown = strdup("<unknown>");
		} else {
			b = base_name(n->name, &bn);
			size_t len = fmt_sanitize(NULL, 0, b, bn);

			if ((n->shown = malloc(len + 3))) {
				n->shown[0] = '[';
				fmt_sanitize(n->shown + 1, len + 1, b, bn);
				memcpy(n->shown + 1 + len, "]", 2);
			}
		}
		if (!n->shown)
			return -ENOMEM;
	}
	return 0;
}

static int by_flat_name_cum(const void *a, const void *b, void *ctx)
{
	const struct top *t = ctx;
	const struct node *x = &t->nodes.v[*(const uint32_t *)a],
			  *y = &t->nodes.v[*(const uint32_t *)b];
	int c;

	if (abs64(x->flat) != abs64(y->flat))
		return abs64(x->flat) > abs64(y->flat) ? -1 : 1;
	if ((c = strcmp(x->shown, y->shown)))
		return c;
	if (abs64(x->cum) != abs64(y->cum))
		return abs64(x->cum) > abs64(y->cum) ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

static bool pid_ok(const struct psample *s, bool has_pid, int64_t pid)
{
	return !has_pid || (s->has_pid && s->pid == pid);
}

/* The sums of type vi over the samples of one process (or all). 0 or
 * -ENOMEM. */
static int top_build(struct top *t, const struct pprof_in *in, size_t vi, bool has_pid, int64_t pid)
{
	size_t i;
	int err = 0;

	t->in = in;
	for (i = 0; i < in->samples.n && !err; i++) {
		const struct psample *s = &in->samples.v[i];
		int64_t v = in->values.v[s->val0 + vi];

		if (!pid_ok(s, has_pid, pid))
			continue;
		t->nsamples++;
		/* A value of 0 adds nothing, as in pprof's graph. */
		if (!v)
			continue;
		t->total = sat_add(t->total, abs64(v));
		err = add_sample(t, s, v, i + 1);
	}
	return err ? err : name_nodes(t);
}

/* A top's rows as pprof chooses them: its nodes sorted, those with a cum
 * of at most 0.5 % of the total dropped (pprof's -nodefraction), the first
 * rows kept; and the unit they are written in. */
struct rows {
	uint32_t *order;
	size_t kept, dropped, shown;
	const char *out; /* the unit */
};

static int top_select(struct top *t, const char *unit, size_t rows, struct rows *r)
{
	size_t i;
	int64_t min = 0;
	/* pprof's cut: cum <= total * 0.005 */
	double cut = (double)t->total * 0.005;

	r->order = malloc((t->nodes.n ? t->nodes.n : 1) * sizeof(*r->order));
	if (!r->order)
		return -ENOMEM;
	r->kept = 0;
	for (i = 0; i < t->nodes.n; i++)
		if ((double)abs64(t->nodes.v[i].cum) > cut)
			r->order[r->kept++] = (uint32_t)i;
	r->dropped = t->nodes.n - r->kept;
	if (r->kept)
		qsort_r(r->order, r->kept, sizeof(*r->order), by_flat_name_cum, t);
	r->shown = r->kept < rows ? r->kept : rows;
	for (i = 0; i < r->shown; i++) {
		const struct node *n = &t->nodes.v[r->order[i]];
		int64_t m = abs64(n->flat) ? abs64(n->flat) : abs64(n->cum);

		if (m && (!min || m < min))
			min = m;
	}
	r->out = report_unit(min ? min : t->total, t->total, unit);
	return 0;
}

/* pprof's lines above the rows, and the rows. 0 or -ENOMEM. */
static int top_print(FILE *f, const struct top *t, const char *unit, const struct rows *r)
{
	const struct pprof_in *in = t->in;
	size_t i;
	int64_t sum = 0, flat_sum = 0;
	char a[64], b[64], c[64], d[64], e[64];

	for (i = 0; i < r->shown; i++)
		flat_sum = sat_add(flat_sum, t->nodes.v[r->order[i]].flat);
	report_value(a, sizeof(a), flat_sum, unit, r->out);
	report_pct(b, sizeof(b), flat_sum, t->total);
	report_value(c, sizeof(c), t->total, unit, r->out);
	fprintf(f, "Showing nodes accounting for %s, %s of %s total\n", a, b + strspn(b, " "), c);
	if (r->dropped && t->total) {
		report_value(a, sizeof(a), (int64_t)((double)t->total * 0.005), unit, r->out);
		fprintf(f, "Dropped %zu node%s (cum <= %s)\n", r->dropped,
			r->dropped > 1 ? "s" : "", a);
	}
	if (r->shown < r->kept)
		fprintf(f, "Showing top %zu nodes out of %zu\n", r->shown, r->kept);
	fprintf(f, "%10s %5s%% %5s%% %10s %5s%%\n", "flat", "flat", "sum", "cum", "cum");
	for (i = 0; i < r->shown; i++) {
		const struct node *n = &t->nodes.v[r->order[i]];

		sum = sat_add(sum, n->flat);
		report_value(a, sizeof(a), n->flat, unit, r->out);
		report_pct(b, sizeof(b), n->flat, t->total);
		report_pct(c, sizeof(c), sum, t->total);
		report_value(d, sizeof(d), n->cum, unit, r->out);
		report_pct(e, sizeof(e), n->cum, t->total);
		fprintf(f, "%10s %s %s %10s %s  %s", a, b, c, d, e, n->shown);
		/* pprof -lines's "file:line": the function's line with the
		 * most time, where it is known. */
		if (n->hot_file && in->strings.v[n->hot_file].n) {
			char *file = clean(in->strings.v[n->hot_file]);

			if (!file)
				return -ENOMEM;
			if (n->hot_line > 0)
				fprintf(f, " %s:%" PRId64, file, n->hot_line);
			else
				fprintf(f, " %s", file);
			free(file);
		}
		fputc('\n', f);
	}
	return 0;
}

/* ---- the report ---- */

static void put_str(FILE *f, struct pstr s)
{
	char *c = clean(s);

	fputs(c ? c : "?", f);
	free(c);
}

/* Type vi's unit, safe, into buf. */
static const char *type_unit(const struct pprof_in *in, size_t vi, char *buf, size_t len)
{
	fmt_sanitize(buf, len, in->strings.v[in->types.v[vi].unit].p,
		     in->strings.v[in->types.v[vi].unit].n);
	return buf;
}

/* pprof's header: the program, its build id, the type, the time, the
 * duration and the total. */
static void header(FILE *f, const struct pprof_in *in, size_t vi, const char *unit, const char *out,
		   int64_t total)
{
	char a[64];

	if (in->mappings.n && in->strings.v[in->mappings.v[0].file].n) {
		size_t n;
		struct pstr file = in->strings.v[in->mappings.v[0].file], b;

		b.p = base_name(file, &n);
		b.n = n;
		fputs("File: ", f);
		put_str(f, b);
		fputc('\n', f);
		if (in->strings.v[in->mappings.v[0].build_id].n) {
			fputs("Build ID: ", f);
			put_str(f, in->strings.v[in->mappings.v[0].build_id]);
			fputc('\n', f);
		}
	}
	fputs("Type: ", f);
	put_str(f, in->strings.v[in->types.v[vi].type]);
	fputc('\n', f);
	if (in->time_ns > 0) {
		time_t s = (time_t)(in->time_ns / 1000000000);
		struct tm tm;
		char when[64];

		if (localtime_r(&s, &tm) &&
		    strftime(when, sizeof(when), "%b %-d, %Y at %-I:%M%P (%Z)", &tm))
			fprintf(f, "Time: %s\n", when);
	}
	if (in->duration_ns > 0) {
		const struct unit *tab = NULL, *u = sniff(unit, &tab);

		char d[64];

		report_value(d, sizeof(d), in->duration_ns, "nanoseconds", "auto");
		report_value(a, sizeof(a), total, unit, out);
		fprintf(f, "Duration: %s, Total samples = %s", d, a);
		/* The share of the duration, for a time. */
		if (u && tab == time_units) {
			char p[16];

			report_pct(p, sizeof(p), (int64_t)((double)total * u->factor),
				   in->duration_ns);
			fprintf(f, " (%s)", p + strspn(p, " "));
		}
		fputc('\n', f);
	}
}

struct proc_row {
	int64_t pid, total;
	size_t first; /* its first sample, for its comm */
};

static bool proc_eq(const void *ctx, uint32_t i, const void *key)
{
	return ((const struct proc_row *)ctx)[i].pid == *(const int64_t *)key;
}

static int by_total(const void *a, const void *b)
{
	const struct proc_row *x = a, *y = b;

	if (abs64(x->total) != abs64(y->total))
		return abs64(x->total) > abs64(y->total) ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* The processes (the pid label) of type vi, busiest first: malloc'd into
 * *rows (NULL when none); their count, or -ENOMEM. */
static ssize_t procs_of(const struct pprof_in *in, size_t vi, struct proc_row **rows)
{
	VEC(struct proc_row) v = {0};
	struct idtab ix = {0};
	size_t i;
	int err = 0;

	for (i = 0; i < in->samples.n && !err; i++) {
		const struct psample *s = &in->samples.v[i];
		uint64_t h;
		uint32_t k;

		if (!s->has_pid)
			continue;
		h = hash_u64((uint64_t)s->pid);
		k = idtab_find(&ix, h, proc_eq, v.v, &s->pid);
		if (k == UINT32_MAX) {
			struct proc_row r = {s->pid, 0, i};

			if (v.n >= UINT32_MAX - 1 || VEC_PUSH(v, r) ||
			    idtab_insert(&ix, h, (uint32_t)(v.n - 1))) {
				err = -ENOMEM;
				break;
			}
			k = (uint32_t)(v.n - 1);
		}
		v.v[k].total = sat_add(v.v[k].total, abs64(in->values.v[s->val0 + vi]));
	}
	idtab_free(&ix);
	if (err) {
		free(v.v);
		return err;
	}
	if (v.n)
		qsort(v.v, v.n, sizeof(*v.v), by_total);
	*rows = v.v;
	return (ssize_t)v.n;
}

static void put_comm(FILE *f, const struct pprof_in *in, size_t sample)
{
	struct pstr c = pprof_in_label(in, &in->samples.v[sample], "comm");

	if (c.n)
		put_str(f, c);
	else
		fputc('?', f);
}

/* One sample type: its top, then its processes' shares and tops. */
static int report_type(FILE *f, const struct pprof_in *in, size_t vi, const struct report_opts *o)
{
	size_t rows = o->rows ? o->rows : 20, nprocs_top = o->procs ? o->procs : 5, i;
	struct top t = {0};
	struct rows r = {0};
	struct proc_row *pr = NULL;
	ssize_t np;
	char unit[64], tname[64], a[64], b[16];
	const char *out;
	int err;

	type_unit(in, vi, unit, sizeof(unit));
	fmt_sanitize(tname, sizeof(tname), in->strings.v[in->types.v[vi].type].p,
		     in->strings.v[in->types.v[vi].type].n);
	err = top_build(&t, in, vi, o->has_pid, o->pid);
	if (!err && o->has_pid && !t.nsamples)
		err = -ENOENT;
	if (err) {
		top_free(&t);
		return err;
	}
	fprintf(f, "== %s%s%s", tname, o->source ? ": " : "", o->source ? o->source : "");
	if (o->has_pid)
		fprintf(f, ", pid %" PRId64, o->pid);
	fputc('\n', f);
	err = top_select(&t, unit, rows, &r);
	if (!err) {
		header(f, in, vi, unit, r.out, t.total);
		err = top_print(f, &t, unit, &r);
	}
	free(r.order);
	top_free(&t);
	if (err || o->has_pid)
		return err;

	/* By process: each one's share, then the busiest ones' tops. */
	np = procs_of(in, vi, &pr);
	if (np < 0)
		return (int)np;
	if (np) {
		int64_t all = 0, shown_min = 0;

		for (i = 0; i < (size_t)np; i++)
			all = sat_add(all, pr[i].total);
		for (i = 0; i < (size_t)np && i < rows; i++)
			if (pr[i].total && (!shown_min || abs64(pr[i].total) < shown_min))
				shown_min = abs64(pr[i].total);
		out = report_unit(shown_min ? shown_min : all, all, unit);
		fprintf(f, "\n== %s by process (the pid label)\n", tname);
		if ((size_t)np > rows)
			fprintf(f, "Showing top %zu processes out of %zd\n", rows, np);
		fprintf(f, "%10s %5s%% %8s  %s\n", tname, "", "pid", "comm");
		for (i = 0; i < (size_t)np && i < rows; i++) {
			report_value(a, sizeof(a), pr[i].total, unit, out);
			report_pct(b, sizeof(b), pr[i].total, all);
			fprintf(f, "%10s %s %8" PRId64 "  ", a, b, pr[i].pid);
			put_comm(f, in, pr[i].first);
			fputc('\n', f);
		}
	}
	/* One process: its top is the one above. */
	for (i = 0; np > 1 && i < (size_t)np && i < nprocs_top && !err; i++) {
		struct top pt = {0};
		struct rows pr_rows = {0};

		if (!pr[i].total)
			break;
		err = top_build(&pt, in, vi, true, pr[i].pid);
		if (!err)
			err = top_select(&pt, unit, rows, &pr_rows);
		if (!err) {
			fprintf(f, "\n== %s of pid %" PRId64 " (", tname, pr[i].pid);
			put_comm(f, in, pr[i].first);
			fputs(")\n", f);
			err = top_print(f, &pt, unit, &pr_rows);
		}
		free(pr_rows.order);
		top_free(&pt);
	}
	if (!err && np > 1 && (size_t)np > nprocs_top)
		fprintf(f, "\n(%zd more processes: --pid PID shows one)\n",
			np - (ssize_t)nprocs_top);
	free(pr);
	return err;
}

int report_write(FILE *f, const struct pprof_in *in, const struct report_opts *o)
{
	size_t *idx = malloc((in->types.n ? in->types.n : 1) * sizeof(*idx)), n, i;
	int err = 0;

	if (!idx)
		return -ENOMEM;
	if (o->sample_type) {
		int j = report_type_index(in, o->sample_type);

		n = j < 0 ? 0 : 1;
		idx[0] = j < 0 ? 0 : (size_t)j;
		if (j < 0)
			err = -ENOENT;
	} else {
		n = report_types(in, idx);
	}
	for (i = 0; i < n && !err; i++) {
		if (i)
			fputc('\n', f);
		err = report_type(f, in, idx[i], o);
	}
	free(idx);
	return err;
}
