/* The OTLP profiles encoder, read back by its decoder: a pprof profile of
 * two processes (written by formats/pprof.c, gzip and all, and gunzipped as
 * the push reads it) becomes a request whose every sample, value, stack,
 * attribute and resource is checked against what was put in; malformed
 * pprof input is refused; the receiver's answers and cgroup paths parse. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include "check.h"
#include "formats/otlp.h"
#include "formats/pprof.h"
#include "formats/protobuf.h"
#include "pprofutil.h"

static char dir[] = "/tmp/test_otlp.XXXXXX";

/* pid 123 (two threads): 60 samples in func_a, 30 in func_b, both under
 * main; pid 456: 10 in the kernel's read_zero under func_c. */
static struct pprof *build(bool offcpu)
{
	struct pprof *p = pprof_new(10000000, 1700000000000000000LL, 2000000000LL);
	uint64_t m = pprof_mapping(p, 0x400000, 0x500000, 0, "/bin/prog", "abcd", true);
	uint64_t km =
	    pprof_mapping(p, 0xffff800000000000ULL, UINT64_MAX, 0, "[kernel.kallsyms]", NULL, true);
	struct pprof_line la = {"func_a", NULL, "a.c", 10, 0}, lb = {"func_b", NULL, NULL, 0, 0},
			  lc = {"func_c", NULL, NULL, 0, 0}, lk = {"read_zero", NULL, NULL, 0, 0},
			  lm = {"main", NULL, NULL, 0, 0};
	uint64_t a = pprof_location(p, m, 0x401000, &la, 1),
		 b = pprof_location(p, m, 0x402000, &lb, 1),
		 c = pprof_location(p, m, 0x403000, &lc, 1),
		 k = pprof_location(p, km, 0xffffffff81000000ULL, &lk, 1),
		 mn = pprof_location(p, m, 0x404000, &lm, 1);
	uint64_t s[3];
	struct pprof_label lab[4] = {{"pid", NULL, 123, "pid"},
				     {"tid", NULL, 124, "tid"},
				     {"comm", "prog", 0, NULL},
				     {"cpu", NULL, 1, "cpu"}};
	int i;

	if (offcpu)
		pprof_enable_offcpu(p);
	CHECK(m && km && a && b && c && k && mn);
	s[1] = mn;
	for (i = 0; i < 60; i++) {
		s[0] = a;
		lab[1].num = 124 + i % 2; /* two threads */
		lab[3].num = i % 2;	  /* cpu 0 stays: its unit keeps it in pprof */
		CHECK(pprof_add_sample(p, s, 2, 1, lab, 4) == 0);
	}
	s[0] = b;
	CHECK(pprof_add_sample(p, s, 2, 30, lab, 4) == 0);
	if (offcpu) {
		struct pprof_label ol[4] = {{"pid", NULL, 123, "pid"},
					    {"tid", NULL, 124, "tid"},
					    {"comm", "prog", 0, NULL},
					    {"offcpu", "blocked", 0, NULL}};

		CHECK(pprof_add_offcpu(p, s, 2, 5000000, 7, ol, 4) == 0);
	}
	lab[0].num = 456;
	lab[1].num = 456;
	lab[2].str = "other";
	s[0] = k;
	s[1] = c;
	CHECK(pprof_add_sample(p, s, 2, 10, lab, 4) == 0);
	return p;
}

static const char *str(const struct otlp_request *q, int32_t i)
{
	return q->strings.v[i];
}

/* The leaf function of a sample. */
static const char *leaf(const struct otlp_request *q, const struct otlp_sample *s)
{
	const struct otlp_stack *st = &q->stacks.v[s->stack];
	const struct otlp_location *l;

	if (!st->locs.n)
		return "";
	l = &q->locations.v[st->locs.v[0]];
	return l->lines.n ? str(q, q->functions.v[l->lines.v[0].function].name) : "";
}

/* A sample attribute's value by key, or NULL. */
static const struct otlp_value *sample_attr(const struct otlp_request *q,
					    const struct otlp_sample *s, const char *key)
{
	size_t i;

	for (i = 0; i < s->attrs.n; i++)
		if (!strcmp(str(q, q->attrs.v[s->attrs.v[i]].key), key))
			return &q->attrs.v[s->attrs.v[i]].v;
	return NULL;
}

static const struct otlp_resource *resource_of(const struct otlp_request *q, int64_t pid)
{
	size_t i;

	for (i = 0; i < q->resources.n; i++) {
		const struct otlp_value *v = otlp_resource_attr(&q->resources.v[i], "process.pid");

		if (v && !v->is_str && v->num == pid)
			return &q->resources.v[i];
	}
	return NULL;
}

static bool attr_is(const struct otlp_resource *r, const char *key, const char *want)
{
	const struct otlp_value *v = otlp_resource_attr(r, key);

	return v && v->is_str && !strcmp(v->str, want);
}

static const struct otlp_profile *profile_of(const struct otlp_request *q,
					     const struct otlp_resource *r, const char *type)
{
	size_t i;

	for (i = 0; r && i < r->profiles.n; i++)
		if (!strcmp(str(q, r->profiles.v[i].type), type))
			return &r->profiles.v[i];
	return NULL;
}

/* Encodes build(offcpu) and decodes it into q. */
static void round_trip(bool offcpu, const struct otlp_meta *m, struct otlp_request *q,
		       struct otlp_stats *st)
{
	struct pprof *p = build(offcpu);
	size_t n;
	unsigned char *pb = pprof_bytes(p, dir, &n);
	struct fmt_buf out = {0};
	const char *why = NULL;
	int err;

	err = otlp_from_pprof(pb, n, m, &out, st);
	CHECKF(err == 0, "otlp_from_pprof: %d", err);
	err = otlp_decode(out.p, out.n, q, &why);
	CHECKF(err == 0, "otlp_decode: %s", why);
	free(out.p);
	free(pb);
	pprof_free(p);
}

static void test_round_trip(void)
{
	struct otlp_process procs[] = {{123, "/usr/bin/prog",
					"0123456789abcdef0123456789abcdef"
					"0123456789abcdef0123456789abcdef"}};
	struct otlp_meta m = {"host1", NULL, "1.0", procs, 1};
	struct otlp_request q;
	struct otlp_stats st;
	const struct otlp_resource *r1, *r2;
	const struct otlp_profile *p1, *p2, *c1;
	int64_t fa = 0, fb = 0, rz = 0, tot = 0, t124 = 0, t125 = 0;
	size_t i;

	round_trip(false, &m, &q, &st);
	/* Every table's entry 0 is the zero value. */
	CHECK(q.strings.n && !q.strings.v[0][0]);
	CHECK(q.mappings.n == 3 && !q.mappings.v[0].start && !q.mappings.v[0].filename);
	CHECK(q.locations.n == 6 && !q.locations.v[0].lines.n && !q.locations.v[0].address);
	CHECK(q.functions.n && !q.functions.v[0].name);
	CHECK(q.stacks.n && !q.stacks.v[0].locs.n);
	CHECK(q.attrs.n && !q.attrs.v[0].key);
	CHECK(q.resources.n == 2 && st.resources == 2);
	r1 = resource_of(&q, 123);
	r2 = resource_of(&q, 456);
	CHECK(r1 && r2);
	if (!r1 || !r2)
		goto out;
	CHECK(attr_is(r1, "host.name", "host1") && attr_is(r2, "host.name", "host1"));
	CHECK(attr_is(r1, "process.executable.path", "/usr/bin/prog"));
	CHECK(attr_is(r1, "process.executable.name", "prog"));
	CHECK(attr_is(r1, "service.name", "prog"));
	CHECK(attr_is(r1, "container.id",
		      "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"));
	/* Not in procs: named from its samples' comm, no path, no container. */
	CHECK(attr_is(r2, "process.executable.name", "other") &&
	      attr_is(r2, "service.name", "other"));
	CHECK(!otlp_resource_attr(r2, "process.executable.path") &&
	      !otlp_resource_attr(r2, "container.id"));
	CHECK(r1->scope_name && !strcmp(r1->scope_name, "bpftrace-rec") &&
	      !strcmp(r1->scope_version, "1.0"));
	/* A profile per type: samples/count, cpu/nanoseconds. */
	CHECK(r1->profiles.n == 2 && st.profiles == 4);
	p1 = profile_of(&q, r1, "samples");
	c1 = profile_of(&q, r1, "cpu");
	p2 = profile_of(&q, r2, "samples");
	CHECK(p1 && c1 && p2);
	if (!p1 || !c1 || !p2)
		goto out;
	CHECK(!strcmp(str(&q, p1->unit), "count") && !strcmp(str(&q, c1->unit), "nanoseconds"));
	CHECK(!strcmp(str(&q, p1->period_type), "cpu") &&
	      !strcmp(str(&q, p1->period_unit), "nanoseconds") && p1->period == 10000000);
	CHECK(p1->time_ns == 1700000000000000000ULL && p1->duration_ns == 2000000000ULL);
	for (i = 0; i < p1->samples.n; i++) {
		const struct otlp_sample *s = &p1->samples.v[i];
		const struct otlp_value *tid = sample_attr(&q, s, "thread.id"),
					*tn = sample_attr(&q, s, "thread.name"),
					*cpu = sample_attr(&q, s, "cpu.logical_number");
		const char *f = leaf(&q, s);

		CHECK(s->values.n == 1 && tid && !tid->is_str && tn && tn->is_str &&
		      !strcmp(tn->str, "prog") && cpu && !cpu->is_str);
		CHECK(!sample_attr(&q, s, "pid") && !sample_attr(&q, s, "process.pid"));
		/* main is the caller of every sample of pid 123. */
		CHECK(q.stacks.v[s->stack].locs.n == 2);
		if (!s->values.n || !tid)
			continue;
		tot += s->values.v[0];
		fa += !strcmp(f, "func_a") ? s->values.v[0] : 0;
		fb += !strcmp(f, "func_b") ? s->values.v[0] : 0;
		t124 += tid->num == 124 ? s->values.v[0] : 0;
		t125 += tid->num == 125 ? s->values.v[0] : 0;
	}
	CHECKF(tot == 90 && fa == 60 && fb == 30, "tot %ld a %ld b %ld", (long)tot, (long)fa,
	       (long)fb);
	CHECKF(t124 == 30 && t125 == 60, "tid 124: %ld, 125: %ld", (long)t124, (long)t125);
	for (i = 0; i < p2->samples.n; i++) {
		const struct otlp_sample *s = &p2->samples.v[i];

		rz += !strcmp(leaf(&q, s), "read_zero") ? s->values.v[0] : 0;
	}
	CHECK(rz == 10);
	/* cpu/nanoseconds: the count times the period, sample by sample. */
	tot = 0;
	for (i = 0; i < c1->samples.n; i++)
		tot += c1->samples.v[i].values.v[0];
	CHECK(tot == 90 * 10000000LL);
	CHECK(st.ntypes == 2 && st.values[0] == 100 && st.values[1] == 100 * 10000000LL &&
	      st.samples == p1->samples.n + c1->samples.n + 2 * p2->samples.n);
	/* The kernel frame's mapping, and the program's build id. */
	for (i = 1; i < q.mappings.n; i++) {
		const struct otlp_mapping *mp = &q.mappings.v[i];

		if (!strcmp(str(&q, mp->filename), "/bin/prog")) {
			CHECK(mp->start == 0x400000 && mp->limit == 0x500000 && mp->attrs.n == 1);
			if (mp->attrs.n)
				CHECK(!strcmp(str(&q, q.attrs.v[mp->attrs.v[0]].key),
					      "process.executable.build_id.gnu") &&
				      !strcmp(q.attrs.v[mp->attrs.v[0]].v.str, "abcd"));
		} else {
			CHECK(!strcmp(str(&q, mp->filename), "[kernel.kallsyms]"));
		}
	}
out:
	otlp_request_free(&q);
}

/* --off-cpu: the off-CPU profile holds the wait alone, with its kind. */
static void test_offcpu(void)
{
	struct otlp_meta m = {NULL, "svc", NULL, NULL, 0};
	struct otlp_request q;
	struct otlp_stats st;
	const struct otlp_resource *r1;
	const struct otlp_profile *off, *waits, *smp;

	round_trip(true, &m, &q, &st);
	r1 = resource_of(&q, 123);
	CHECK(r1 && r1->profiles.n == 5);
	CHECK(r1 && attr_is(r1, "service.name", "svc") && !otlp_resource_attr(r1, "host.name"));
	off = profile_of(&q, r1, "offcpu");
	waits = profile_of(&q, r1, "offcpu_waits");
	smp = profile_of(&q, r1, "samples");
	CHECK(off && waits && smp);
	if (off && waits && smp) {
		const struct otlp_value *kind =
		    off->samples.n ? sample_attr(&q, &off->samples.v[0], "bpftrace_rec.offcpu")
				   : NULL;

		CHECK(off->samples.n == 1 && off->samples.v[0].values.v[0] == 5000000);
		CHECK(waits->samples.n == 1 && waits->samples.v[0].values.v[0] == 7);
		CHECK(kind && kind->is_str && !strcmp(kind->str, "blocked"));
		CHECK(!strcmp(leaf(&q, &off->samples.v[0]), "func_b"));
		/* The wait has no CPU sample: not in the samples profile. */
		CHECK(smp->samples.n == 3);
	}
	otlp_request_free(&q);
}

/* Input that is not a well-formed pprof profile is refused, not guessed. */
static void test_malformed(void)
{
	struct pprof *p = build(false);
	size_t n, i;
	unsigned char *pb = pprof_bytes(p, dir, &n);
	struct fmt_buf out = {0}, bad = {0};
	struct otlp_meta m = {0};
	struct otlp_stats st;
	struct otlp_request q;
	int err;

	/* Cut anywhere inside a field: -EINVAL, never a crash (ASan build). */
	for (i = 1; i < n; i += 7) {
		out.n = 0;
		err = otlp_from_pprof(pb, i, &m, &out, &st);
		CHECK(err == 0 || err == -EINVAL);
	}
	CHECK(otlp_from_pprof(pb, n - 1, &m, &out, &st) == -EINVAL);
	/* A sample naming a location that does not exist. */
	fmt_put(&bad, pb, n);
	{
		uint64_t loc = 999;
		struct fmt_buf tmp = {0}, smp = {0};

		pb_packed(&smp, 1, &loc, 1, &tmp);
		pb_msg(&bad, 2, &smp);
		free(tmp.p);
		free(smp.p);
	}
	CHECK(otlp_from_pprof(bad.p, bad.n, &m, &out, &st) == -EINVAL);
	/* A label naming a string past the table. */
	bad.n = 0;
	fmt_put(&bad, pb, n);
	{
		struct fmt_buf lab = {0}, smp = {0};

		pb_uint(&lab, 1, 100000);
		pb_msg(&smp, 3, &lab);
		pb_msg(&bad, 2, &smp);
		free(lab.p);
		free(smp.p);
	}
	CHECK(otlp_from_pprof(bad.p, bad.n, &m, &out, &st) == -EINVAL);
	/* The decoder refuses an index out of its table. */
	out.n = 0;
	CHECK(otlp_from_pprof(pb, n, &m, &out, &st) == 0);
	{
		struct fmt_buf req = {0}, rp = {0}, sp = {0}, prof = {0}, smp = {0};
		const char *why = NULL;

		pb_uint(&smp, 1, 1000); /* stack 1000 */
		pb_msg(&prof, 2, &smp);
		pb_msg(&sp, 2, &prof);
		pb_msg(&rp, 2, &sp);
		pb_msg(&req, 1, &rp);
		fmt_put(&req, out.p, out.n);
		CHECK(otlp_decode(req.p, req.n, &q, &why) == -EINVAL && why &&
		      strstr(why, "stack"));
		otlp_request_free(&q);
		free(req.p);
		free(rp.p);
		free(sp.p);
		free(prof.p);
		free(smp.p);
	}
	free(bad.p);
	free(out.p);
	free(pb);
	pprof_free(p);
}

static void test_answers(void)
{
	struct fmt_buf b = {0}, ps = {0};
	char msg[64];
	int64_t rejected = -1;

	/* ExportProfilesServiceResponse{partial_success{2, "two bad"}} */
	pb_uint(&ps, 1, 2);
	pb_str(&ps, 2, "two\x1b bad");
	pb_msg(&b, 1, &ps);
	CHECK(otlp_decode_response(b.p, b.n, &rejected, msg, sizeof(msg)) == 0);
	CHECK(rejected == 2 && !strcmp(msg, "two\\x1b bad"));
	CHECK(otlp_decode_response(b.p, b.n - 1, &rejected, msg, sizeof(msg)) == -EINVAL);
	/* An empty answer: all taken. */
	CHECK(otlp_decode_response("", 0, &rejected, msg, sizeof(msg)) == 0 && rejected == 0 &&
	      !msg[0]);
	/* google.rpc.Status{code 16, message} */
	b.n = 0;
	pb_uint(&b, 1, 16);
	pb_str(&b, 2, "missing token");
	CHECK(otlp_decode_status(b.p, b.n, msg, sizeof(msg)) == 0 && !strcmp(msg, "missing token"));
	free(b.p);
	free(ps.p);
}

static void test_container_id(void)
{
	const char *id = "3f1a0e1c2b3d4e5f60718293a4b5c6d7e8f90123456789abcdef0123456789ab";
	char out[65], in[512];

	snprintf(in, sizeof(in), "0::/system.slice/docker-%s.scope\n", id);
	CHECK(otlp_container_id(in, strlen(in), out) && !strcmp(out, id));
	snprintf(in, sizeof(in), "12:cpu:/docker/%s\n", id);
	CHECK(otlp_container_id(in, strlen(in), out) && !strcmp(out, id));
	snprintf(in, sizeof(in), "0::/kubepods.slice/kubepods-pod1.slice/cri-containerd-%s.scope\n",
		 id);
	CHECK(otlp_container_id(in, strlen(in), out) && !strcmp(out, id));
	snprintf(in, sizeof(in), "0::/kubepods/burstable/pod1/%s", id);
	CHECK(otlp_container_id(in, strlen(in), out) && !strcmp(out, id));
	/* Not containers: a session, a user's own 64-hex-digit name inside
	 * another word, 63 or 65 digits. */
	CHECK(!otlp_container_id("0::/user.slice/user-0.slice/session-3.scope\n", 44, out));
	snprintf(in, sizeof(in), "0::/myapp-%s\n", id);
	CHECK(!otlp_container_id(in, strlen(in), out));
	snprintf(in, sizeof(in), "0::/docker/%.63s\n", id);
	CHECK(!otlp_container_id(in, strlen(in), out));
	snprintf(in, sizeof(in), "0::/docker/%sa\n", id);
	CHECK(!otlp_container_id(in, strlen(in), out));
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	RUN_TEST(test_round_trip);
	RUN_TEST(test_offcpu);
	RUN_TEST(test_malformed);
	RUN_TEST(test_answers);
	RUN_TEST(test_container_id);
	{
		char cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		if (system(cmd))
			return 1;
	}
	return check_tests_failed ? 1 : 0;
}
