/* Pyroscope's ingest form: a pprof profile of two processes (written by
 * formats/pprof.c, gunzipped as the push reads it) becomes one part per
 * process, whose profile is read back and checked sample by sample against
 * what was put in, its tables holding only what its samples use and no
 * sample label; names from hostile process names keep to Pyroscope's key
 * syntax; the query is percent-encoded; malformed input is refused. */
#include <errno.h>
#include <string.h>
#include "check.h"
#include "formats/pprof_in.h"
#include "formats/pyroscope.h"
#include "pprofutil.h"

static char dir[] = "/tmp/test_pyroscope.XXXXXX";

/* pid 77: 40 samples in hot under main, 20 in warm (a thread of another
 * name); pid 88 ("bad,name}={x"): 5 in the kernel's do_idle under cold.
 * With off-CPU time, pid 77 also waits 3 ms in warm, twice. */
static struct pprof *build(bool offcpu)
{
	struct pprof *p = pprof_new(10101010, 1800000000500000000LL, 2500000000LL);
	uint64_t m = pprof_mapping(p, 0x400000, 0x500000, 0, "/srv/app", "beef", true);
	uint64_t km =
	    pprof_mapping(p, 0xffff800000000000ULL, UINT64_MAX, 0, "[kernel.kallsyms]", NULL, true);
	struct pprof_line lh = {"hot", NULL, "app.c", 3, 0}, lw = {"warm", NULL, NULL, 0, 0},
			  lc = {"cold", NULL, NULL, 0, 0}, lk = {"do_idle", NULL, NULL, 0, 0},
			  lm = {"main", NULL, NULL, 0, 0};
	uint64_t h = pprof_location(p, m, 0x401000, &lh, 1),
		 w = pprof_location(p, m, 0x402000, &lw, 1),
		 c = pprof_location(p, m, 0x403000, &lc, 1),
		 k = pprof_location(p, km, 0xffffffff81000000ULL, &lk, 1),
		 mn = pprof_location(p, m, 0x404000, &lm, 1);
	uint64_t s[2] = {h, mn};
	struct pprof_label lab[3] = {
	    {"pid", NULL, 77, "pid"}, {"tid", NULL, 78, "tid"}, {"comm", "app", 0, NULL}};
	int i;

	CHECK(m && km && h && w && c && k && mn);
	if (offcpu)
		pprof_enable_offcpu(p);
	for (i = 0; i < 40; i++) {
		lab[1].num = 78 + i % 4; /* four threads: four samples in pprof */
		CHECK(pprof_add_sample(p, s, 2, 1, lab, 3) == 0);
	}
	s[0] = w;
	lab[2].str = "worker";
	CHECK(pprof_add_sample(p, s, 2, 20, lab, 3) == 0);
	if (offcpu)
		CHECK(pprof_add_offcpu(p, s, 2, 3000000, 2, lab, 3) == 0);
	lab[0].num = lab[1].num = 88;
	lab[2].str = "bad,name}={x";
	s[0] = k;
	s[1] = c;
	CHECK(pprof_add_sample(p, s, 2, 5, lab, 3) == 0);
	return p;
}

struct got {
	int n;
	char name[2][512], config[512];
	int64_t samples[2], from, until, rate;
	struct pprof_in in[2];
	unsigned char *pb[2];
	int stop_after; /* returns 7 after this many parts; 0: never */
};

static int on_part(void *ctx, const struct pyro_part *p)
{
	struct got *g = ctx;

	CHECK(g->n < 2);
	if (g->n >= 2)
		return -1;
	snprintf(g->name[g->n], sizeof(g->name[0]), "%s", p->name);
	snprintf(g->config, sizeof(g->config), "%s", p->type_config);
	g->samples[g->n] = p->samples;
	g->from = p->from;
	g->until = p->until;
	g->rate = p->sample_rate;
	/* The profile is the caller's only during the call. */
	g->pb[g->n] = malloc(p->len);
	memcpy(g->pb[g->n], p->profile, p->len);
	CHECK(pprof_in_read(g->pb[g->n], p->len, &g->in[g->n]) == 0);
	g->n++;
	return g->stop_after && g->n == g->stop_after ? 7 : 0;
}

static void got_free(struct got *g)
{
	int i;

	for (i = 0; i < g->n; i++) {
		pprof_in_free(&g->in[i]);
		free(g->pb[i]);
	}
}

static bool has_string(const struct pprof_in *in, const char *s)
{
	size_t i;

	for (i = 0; i < in->strings.n; i++)
		if (pprof_in_str_is(in, i, s))
			return true;
	return false;
}

/* The leaf function's name of a sample. */
static bool leaf_is(const struct pprof_in *in, const struct psample *s, const char *fn)
{
	const struct plocation *l = &in->locations.v[pprof_in_location(in, in->locids.v[s->loc0])];
	const struct pfunction *f =
	    &in->functions.v[pprof_in_function(in, in->lines.v[l->line0].function)];

	return pprof_in_str_is(in, f->name, fn);
}

/* The values of one type over the samples whose leaf is fn. */
static int64_t sum_leaf(const struct pprof_in *in, const char *fn, size_t type)
{
	int64_t sum = 0;
	size_t i;

	for (i = 0; i < in->samples.n; i++)
		if (leaf_is(in, &in->samples.v[i], fn))
			sum += in->values.v[in->samples.v[i].val0 + type];
	return sum;
}

static void test_split(void)
{
	struct pprof *p = build(false);
	size_t n;
	unsigned char *pb = pprof_bytes(p, dir, &n);
	struct otlp_process procs[] = {{77, "/srv/app", "0123abcd"}};
	struct pyro_meta m = {"host one", NULL, procs, 1};
	struct got g = {0};
	const struct pprof_in *a = &g.in[0], *b = &g.in[1];

	CHECK(pyro_split(pb, n, &m, on_part, &g) == 0);
	CHECKF(g.n == 2, "%d parts", g.n);
	if (g.n == 2) {
		CHECKF(!strcmp(g.name[0], "app{host_name=host_one,process_pid=77,"
					  "process_executable_name=app,process_executable_path=/"
					  "srv/app,container_id=0123abcd}"),
		       "%s", g.name[0]);
		/* Not in procs: named by its comm, sanitized. */
		CHECKF(!strcmp(g.name[1], "bad_name___x{host_name=host_one,process_pid=88,"
					  "process_executable_name=bad_name___x}"),
		       "%s", g.name[1]);
		/* Every sample of each, each value as it was; no label. */
		CHECKF(g.samples[0] == 60 && g.samples[1] == 5, "%lld %lld",
		       (long long)g.samples[0], (long long)g.samples[1]);
		CHECK(a->types.n == 2 && b->types.n == 2);
		CHECK(sum_leaf(a, "hot", 0) == 40 && sum_leaf(a, "warm", 0) == 20);
		CHECK(sum_leaf(a, "hot", 1) == 40 * 10101010LL);
		CHECK(sum_leaf(b, "do_idle", 0) == 5 &&
		      sum_leaf(b, "do_idle", 1) == 5 * 10101010LL);
		CHECK(a->labels.n == 0 && b->labels.n == 0);
		/* Its own tables only. */
		CHECKF(a->functions.n == 3 && a->locations.n == 3 && a->mappings.n == 1,
		       "%zu %zu %zu", a->functions.n, a->locations.n, a->mappings.n);
		CHECKF(b->functions.n == 2 && b->locations.n == 2 && b->mappings.n == 2,
		       "%zu %zu %zu", b->functions.n, b->locations.n, b->mappings.n);
		CHECK(!has_string(b, "hot") && !has_string(b, "main") && has_string(b, "/srv/app"));
		/* The program's mapping first, as in the profile, though the
		 * kernel's frame is the leaf. */
		CHECK(b->mappings.n == 2 && pprof_in_str_is(b, b->mappings.v[0].file, "/srv/app"));
		CHECK(!has_string(a, "do_idle") && !has_string(a, "pid") && !has_string(a, "comm"));
		CHECK(a->mappings.v[0].has_functions &&
		      pprof_in_str_is(a, a->mappings.v[0].file, "/srv/app"));
		CHECK(pprof_in_str_is(a, a->mappings.v[0].build_id, "beef"));
		/* The header: time, period, the default type. */
		CHECK(a->time_ns == 1800000000500000000LL && a->duration_ns == 2500000000LL);
		CHECK(a->period == 10101010 && pprof_in_str_is(a, a->period_type.type, "cpu"));
		CHECK(a->default_type == 0);
		/* The window rounded out to seconds; 99 Hz from the period. */
		CHECK(g.from == 1800000000 && g.until == 1800000003 && g.rate == 99);
		CHECKF(!strcmp(g.config, "{\"samples\":{\"units\":\"samples\",\"aggregation\":"
					 "\"sum\",\"sampled\":true},\"cpu\":{\"units\":\"samples\","
					 "\"aggregation\":\"sum\",\"sampled\":true}}"),
		       "%s", g.config);
	}
	got_free(&g);

	/* --service-name names them all; a callback's error stops. */
	memset(&g, 0, sizeof(g));
	g.stop_after = 1;
	m.service_name = "web shop";
	m.host_name = NULL;
	CHECK(pyro_split(pb, n, &m, on_part, &g) == 7);
	CHECK(g.n == 1 && !strncmp(g.name[0], "web_shop{process_pid=77,", 24));
	got_free(&g);
	free(pb);
	pprof_free(p);
}

/* With --off-cpu: five types, each value kept, the CPU view the default. */
static void test_offcpu(void)
{
	struct pprof *p = build(true);
	size_t n;
	unsigned char *pb = pprof_bytes(p, dir, &n);
	struct pyro_meta m = {NULL, "svc", NULL, 0};
	struct got g = {0};
	const struct pprof_in *a = &g.in[0];

	CHECK(pyro_split(pb, n, &m, on_part, &g) == 0);
	CHECK(g.n == 2);
	if (g.n == 2) {
		CHECK(a->types.n == 5 && pprof_in_str_is(a, a->types.v[4].type, "wall"));
		CHECK(pprof_in_str_is(a, a->default_type, "cpu"));
		CHECK(sum_leaf(a, "warm", 2) == 3000000 && sum_leaf(a, "warm", 3) == 2);
		CHECK(sum_leaf(a, "warm", 4) == 20 * 10101010LL + 3000000);
		CHECK(sum_leaf(a, "hot", 2) == 0 && g.samples[0] == 60);
		CHECK(strstr(g.config, "\"offcpu_waits\":{") && strstr(g.config, "\"wall\":{"));
		CHECK(!strcmp(g.name[0], "svc{process_pid=77,process_executable_name=app}"));
	}
	got_free(&g);
	free(pb);
	pprof_free(p);
}

static void test_query(void)
{
	struct pyro_part p = {
	    .name = "app{host_name=a/b,process_pid=1}", .from = 10, .until = 20, .sample_rate = 99};
	struct fmt_buf q = {0};

	pyro_query(&q, &p, "bpftrace-rec");
	fmt_put(&q, "", 1);
	/* No format: with format=pprof Pyroscope's ingest handler takes the
	 * whole body as one raw pprof, and the form that is sent fails there
	 * (HTTP 422, "wrong wireType = 5 for field Function"). */
	CHECKF(!strcmp((char *)q.p, "name=app%7Bhost_name%3Da%2Fb%2Cprocess_pid%3D1%7D&from=10"
				    "&until=20&sampleRate=99&spyName=bpftrace-rec"),
	       "%s", (char *)q.p);
	CHECK(!strstr((char *)q.p, "format="));
	free(q.p);
}

static void test_sanitize(void)
{
	char out[16];

	pyro_label_value(out, sizeof(out), "a b,c}d{e=f\"g", 13);
	CHECKF(!strcmp(out, "a_b_c_d_e_f_g"), "%s", out);
	pyro_label_value(out, sizeof(out), "/usr/bin/x:1", 12);
	CHECK(!strcmp(out, "/usr/bin/x:1"));
	pyro_label_value(out, sizeof(out), "\xc3\xa9\n\x01", 4); /* é, a newline, a control */
	CHECK(!strcmp(out, "____"));
	pyro_label_value(out, sizeof(out), "", 0);
	CHECK(!strcmp(out, "unknown"));
	pyro_label_value(out, 4, "abcdef", 6); /* cut, terminated */
	CHECK(!strcmp(out, "abc"));
	pyro_app_name(out, sizeof(out), "my-app/v1.2:x y", 15);
	CHECKF(!strcmp(out, "my-app/v1.2_x_y"), "%s", out);
	pyro_app_name(out, sizeof(out), "a\0b", 3); /* up to a NUL */
	CHECK(!strcmp(out, "a"));
}

static int never(void *ctx, const struct pyro_part *p)
{
	(void)ctx;
	(void)p;
	CHECK(0);
	return 0;
}

static void test_malformed(void)
{
	static const unsigned char bad_string[] = {0x32, 0x01, 0x78}, /* a first string not "" */
	    bad_index[] = {0x32, 0x00, 0x0a, 0x04, 0x08, 0x05, 0x10, 0x00}; /* type string 5 */
	struct pyro_meta m = {0};

	CHECK(pyro_split(bad_string, sizeof(bad_string), &m, never, NULL) == -EINVAL);
	CHECK(pyro_split(bad_index, sizeof(bad_index), &m, never, NULL) == -EINVAL);
	CHECK(pyro_split("\xff", 1, &m, never, NULL) == -EINVAL);
	/* An empty profile: no part. */
	CHECK(pyro_split("\x32\x00", 2, &m, never, NULL) == 0);
}

/* The form's boundary is one the profile does not hold (a profile holding
 * the first candidate gets the second), and each field's bytes are there
 * whole between its head and the next boundary. */
static void test_form(void)
{
	static const char first[] = "------bpftrace-rec-00000000000000000000";
	struct pyro_part p = {.type_config = "{\"cpu\":{}}"};
	struct fmt_buf gz = {0}, out = {0};
	char ctype[128], delim[96];
	const char *b, *f;

	fmt_put(&gz, "\x1f\x8b\0", 3);
	fmt_put(&gz, first, strlen(first));
	fmt_put(&gz, "\r\n\0tail", 8);
	pyro_form(&out, ctype, sizeof(ctype), &p, gz.p, gz.n);
	CHECK(!out.err);
	CHECK(!strncmp(ctype, "multipart/form-data; boundary=", 30));
	b = ctype + 30;
	CHECK(strcmp(b, first) != 0 && strlen(b) == strlen(first));
	snprintf(delim, sizeof(delim), "\r\n--%s", b);
	/* The profile: from its head's blank line to the next delimiter. */
	f = memmem(out.p, out.n, "name=\"profile\"", 14);
	CHECK(f && !strncmp((const char *)out.p, "--", 2));
	f = strstr(f, "\r\n\r\n") + 4;
	CHECK(!memcmp(f, gz.p, gz.n) && !strncmp(f + gz.n, delim, strlen(delim)));
	f = memmem(out.p, out.n, "name=\"sample_type_config\"", 25);
	CHECK(f);
	f = strstr(f, "\r\n\r\n") + 4;
	CHECK(!strncmp(f, p.type_config, strlen(p.type_config)));
	f += strlen(p.type_config);
	CHECK(!strncmp(f, delim, strlen(delim)) && !memcmp(f + strlen(delim), "--\r\n", 4));
	CHECK((size_t)(f + strlen(delim) + 4 - (const char *)out.p) == out.n);
	free(gz.p);
	free(out.p);
}

int main(void)
{
	char path[64];

	CHECK(mkdtemp(dir));
	RUN_TEST(test_split);
	RUN_TEST(test_offcpu);
	RUN_TEST(test_query);
	RUN_TEST(test_form);
	RUN_TEST(test_sanitize);
	RUN_TEST(test_malformed);
	snprintf(path, sizeof(path), "%s/p.pb.gz", dir);
	unlink(path);
	rmdir(dir);
	return check_tests_failed ? 1 : 0;
}
