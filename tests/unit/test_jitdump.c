/* jitdump and perf-map parsers: the real fixtures from node 20, HotSpot 17
 * and Mono, time-aware resolution, and hostile input. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "check.h"
#include "testutil.h"
#include "formats/jitdump.h"
#include "formats/perfmap.h"
#include "formats/util.h"

#define NODE "../shared/fixtures/jitdump/node20-functions-only.dump"
#define JAVA "../shared/fixtures/jitdump/java17-jvmti-subset.dump"

static void test_node_fixture(void)
{
	size_t len;
	char *b = slurp(NODE, &len);
	struct jitdump d;
	const struct jit_sym *s;
	const struct jit_line *l;
	const char *err;

	CHECK(b != NULL);
	if (!b)
		return;
	CHECK(jitdump_parse(b, len, NULL, NULL, &d, &err) == 0);
	CHECK(d.version == 1 && d.pid == 14859 && d.timed);
	CHECK(d.records[JIT_LOAD] == 21 && d.records[JIT_DEBUG_INFO] == 21);
	CHECK(d.records[JIT_UNWINDING_INFO] == 21 && d.truncated_bytes == 0);
	/* Garbled DEBUG_INFO file names (NULs inside) are counted, not fatal. */
	CHECK(d.bad_names == 8);
	s = jitdump_lookup(&d, 0x7f0b2dfc3a40 + 100, 587314288964ULL + 10);
	CHECK(s && !strcmp(s->name, "JS:^requireBuiltin node:internal/bootstrap/realm:420:24"));
	CHECK(s && s->size == 620 && s->nlines == 17);
	l = s ? jitdump_line(s, 0x7f0b2dfc3a40 + 100) : NULL;
	CHECKF(l && strstr(l->file, "realm") && l->line >= 420, "%s:%u", l ? l->file : "-",
	       l ? l->line : 0);
	CHECK(jitdump_lookup(&d, 0x1000, 0) == NULL);
	jitdump_free(&d);
	free(b);
}

static void test_java_fixture(void)
{
	size_t len;
	char *b = slurp(JAVA, &len);
	struct jitdump d;
	const struct jit_sym *s;
	const char *err;

	CHECK(b != NULL);
	if (!b)
		return;
	CHECK(jitdump_parse(b, len, NULL, NULL, &d, &err) == 0);
	CHECK(d.records[JIT_LOAD] == 69 && d.records[JIT_CLOSE] == 1 && d.nsyms == 69);
	s = jitdump_lookup(&d, 0x7f8bc5401a40 + 4, 703746866537ULL);
	CHECK(s && !strcmp(s->name, "LHot;coldHelper(I)I"));
	jitdump_free(&d);
	free(b);
}

/* Every prefix parses (a truncated tail is normal) and yields a prefix of
 * the symbols; mutated copies never crash. */
static void test_truncation_and_garbage(void)
{
	size_t len, i, prev = 0;
	char *b = slurp(NODE, &len), *m;
	struct jitdump d;
	const char *err;
	unsigned seed = 12345;

	if (!b)
		return;
	for (i = 0; i <= len; i++) {
		int r = jitdump_parse(b, i, NULL, NULL, &d, &err);

		if (i < 40) {
			CHECK(r == -EINVAL && err);
			continue;
		}
		CHECK(r == 0);
		CHECK(d.nsyms >= prev);
		prev = d.nsyms;
		jitdump_free(&d);
	}
	CHECK(prev == 21);
	m = malloc(len);
	for (i = 0; i < 3000; i++) {
		size_t k;

		memcpy(m, b, len);
		for (k = 0; k < 8; k++) {
			seed = seed * 1103515245 + 12345;
			m[(seed >> 8) % len] = (char)(seed >> 16);
		}
		if (jitdump_parse(m, len, NULL, NULL, &d, &err) == 0)
			jitdump_free(&d);
	}
	/* An oversized record length stops the parse there. */
	memcpy(m, b, len);
	memset(m + 44, 0xff, 4);
	CHECK(jitdump_parse(m, len, NULL, NULL, &d, &err) == 0 && d.nsyms == 0 &&
	      d.truncated_bytes == len - 40);
	jitdump_free(&d);
	CHECK(jitdump_parse("garbage garbage garbage garbage garbage garbage", 48, NULL, NULL, &d,
			    &err) == -EINVAL &&
	      strstr(err, "magic"));
	free(m);
	free(b);
}

static size_t build(char **buf, uint64_t flags, int swap)
{
	size_t len = 0;
	FILE *f = open_memstream(buf, &len);
	struct jit_line lines[2] = {{0x1000, 10, 0, "a.js"}, {0x1010, 12, 0, "a.js"}};

	jitdump_write_header(f, 42, 1, flags);
	jitdump_write_debug(f, 100, 0x1000, lines, 2);
	jitdump_write_load(f, 100, 42, 42, 0x1000, 0x40, 1, "first");
	jitdump_write_load(f, 200, 42, 42, 0x1000, 0x40, 2, "second"); /* reuses the address */
	jitdump_write_load(f, 300, 42, 42, 0x2000, 0x20, 3, "mover");
	jitdump_write_move(f, 400, 42, 42, 0x2000, 0x3000, 0x20, 3);
	jitdump_write_load(f, 500, 42, 42, 0x4000, 0x10, 4, "unknown record follows");
	{
		uint32_t id = 99, size = 24;
		uint64_t ts = 600, pad = 0;

		fwrite(&id, 4, 1, f);
		fwrite(&size, 4, 1, f);
		fwrite(&ts, 8, 1, f);
		fwrite(&pad, 8, 1, f);
	}
	jitdump_write_load(f, 700, 42, 42, 0x5000, 0x10, 5, "after unknown");
	jitdump_write_close(f, 800);
	fclose(f);
	if (swap) { /* byte-swap every field of the header and records */
		/* Only the header fields we check: magic, version, size, pid. */
		uint32_t v[6];
		int i;

		memcpy(v, *buf, sizeof(v));
		for (i = 0; i < 6; i++)
			v[i] = __builtin_bswap32(v[i]);
		memcpy(*buf, v, sizeof(v));
		len = 40; /* the records would need swapping too: a header-only dump */
	}
	return len;
}

static uint64_t tsc_to_ns(void *ctx, uint64_t raw)
{
	(void)ctx;
	return raw * 10; /* a 100 MHz "TSC" */
}

static void test_time_aware(void)
{
	char *b;
	size_t len = build(&b, 0, 0);
	struct jitdump d;
	const struct jit_sym *s;
	const char *err;

	CHECK(jitdump_parse(b, len, NULL, NULL, &d, &err) == 0);
	CHECK(d.unknown == 1 && d.nsyms == 6);
	s = jitdump_lookup(&d, 0x1008, 150);
	CHECK(s && !strcmp(s->name, "first") && s->nlines == 2);
	CHECK(s && jitdump_line(s, 0x1012)->line == 12);
	s = jitdump_lookup(&d, 0x1008, 250);
	CHECK(s && !strcmp(s->name, "second"));
	s = jitdump_lookup(&d, 0x1008, 50); /* before any load: the nearest */
	CHECK(s && !strcmp(s->name, "first"));
	CHECK(jitdump_lookup(&d, 0x2008, 350) &&
	      !strcmp(jitdump_lookup(&d, 0x2008, 350)->name, "mover"));
	s = jitdump_lookup(&d, 0x3008, 450); /* moved */
	CHECK(s && !strcmp(s->name, "mover"));
	s = jitdump_lookup(&d, 0x5004, 750);
	CHECK(s && !strcmp(s->name, "after unknown"));
	jitdump_free(&d);
	free(b);
	/* TSC timestamps are converted, not compared raw. */
	len = build(&b, JITDUMP_FLAGS_ARCH_TIMESTAMP, 0);
	CHECK(jitdump_parse(b, len, tsc_to_ns, NULL, &d, &err) == 0 && d.timed);
	s = jitdump_lookup(&d, 0x1008, 1500);
	CHECK(s && !strcmp(s->name, "first"));
	s = jitdump_lookup(&d, 0x1008, 2500);
	CHECK(s && !strcmp(s->name, "second"));
	jitdump_free(&d);
	CHECK(jitdump_parse(b, len, NULL, NULL, &d, &err) == 0 && !d.timed);
	s = jitdump_lookup(&d, 0x1008, 0); /* untimed: the last load */
	CHECK(s && !strcmp(s->name, "second"));
	jitdump_free(&d);
	free(b);
	/* The other byte order, from the magic. */
	len = build(&b, 0, 1);
	CHECK(jitdump_parse(b, len, NULL, NULL, &d, &err) == 0 && d.pid == 42 && d.version == 1);
	jitdump_free(&d);
	free(b);
}

/* LOADs and no DEBUG_INFO: the symbols have no lines, and the line table,
 * never allocated, must not be offset (UBSan: zero offset to NULL; found by
 * fuzzing). */
static void test_no_debug_info(void)
{
	char *b = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&b, &len);
	struct jitdump d;
	const struct jit_sym *s;
	const char *err;

	jitdump_write_header(f, 42, 0, 0);
	jitdump_write_load(f, 100, 42, 42, 0x1000, 0x40, 1, "nolines");
	fclose(f);
	CHECK(jitdump_parse(b, len, NULL, NULL, &d, &err) == 0 && d.nsyms == 1);
	s = jitdump_lookup(&d, 0x1008, 150);
	CHECK(s && s->nlines == 0 && jitdump_line(s, 0x1008) == NULL);
	jitdump_free(&d);
	free(b);
}

/* No valid line: an empty table, whose NULL qsort must not see (UBSan). */
static void test_perfmap_empty(void)
{
	struct perfmap m;

	CHECK(perfmap_parse("", 0, &m) == 0 && m.nsyms == 0);
	CHECK(perfmap_lookup(&m, 0x1000) == NULL);
	perfmap_free(&m);
	CHECK(perfmap_parse("garbage\n", 8, &m) == 0 && m.nsyms == 0 && m.bad_lines == 1);
	CHECK(perfmap_lookup(&m, 0x1000) == NULL);
	perfmap_free(&m);
}

static void test_perfmap(void)
{
	static const char text[] = "40880000 db sdb_breakpoint_trampoline\n"
				   "0x00007f34c4ec7600 0x0000000000000318 int Hot.hotLoop(int)\r\n"
				   "garbage line\n"
				   "7f00 10 first\n"
				   "7f00 10 second wins\n"
				   "zz 10 bad\n"
				   "1234 5\n"
				   "\n";
	struct perfmap m;
	const struct perfmap_sym *s;
	size_t len;
	char *b;

	CHECK(perfmap_parse(text, sizeof(text) - 1, &m) == 0);
	CHECK(m.nsyms == 4 && m.bad_lines == 3);
	s = perfmap_lookup(&m, 0x40880010);
	CHECK(s && !strcmp(s->name, "sdb_breakpoint_trampoline"));
	s = perfmap_lookup(&m, 0x7f34c4ec7600 + 0x317);
	CHECK(s && !strcmp(s->name, "int Hot.hotLoop(int)"));
	CHECK(perfmap_lookup(&m, 0x7f34c4ec7600 + 0x318) == NULL);
	s = perfmap_lookup(&m, 0x7f05);
	CHECK(s && !strcmp(s->name, "second wins"));
	perfmap_free(&m);
	b = slurp("../shared/fixtures/perfmap/hotspot17.map", &len);
	if (b) {
		CHECK(perfmap_parse(b, len, &m) == 0 && m.nsyms == 518 && m.bad_lines == 0);
		s = perfmap_lookup(&m, 0x00007f34c4ec7600 + 8);
		CHECK(s && !strcmp(s->name, "int Hot.hotLoop(int)"));
		perfmap_free(&m);
		free(b);
	}
	b = slurp("../shared/fixtures/perfmap/mono68.map", &len);
	if (b) {
		CHECK(perfmap_parse(b, len, &m) == 0 && m.nsyms == 173 && m.bad_lines == 0);
		s = perfmap_lookup(&m, 0x40880200 + 0x100);
		CHECK(s && !strcmp(s->name, "generic_trampoline_jit"));
		perfmap_free(&m);
		free(b);
	}
}

/* Names from outside: one sanitizer, used by both parsers. */
static void test_sanitize(void)
{
	static const char map[] = "1000 10 evil\x1b[2J\xff\xc2\x9b\x7f\xc3\xa9\xe2\x82\xac\\ok\n";
	const char *want = "evil\\x1b[2J\\xff\\xc2\\x9b\\x7f\xc3\xa9\xe2\x82\xac\\ok";
	char small[12], *dup, *b;
	struct perfmap m;
	struct jitdump d;
	const char *err;
	size_t len = 0;
	FILE *f;

	CHECK(fmt_sanitize(small, sizeof(small), "plain", 5) == 5 && !strcmp(small, "plain"));
	/* Truncation never splits an escape: "ab\x01" needs 6 bytes + NUL. */
	CHECK(fmt_sanitize(small, 6,
			   "ab\x01"
			   "cd",
			   5) == 8 &&
	      !strcmp(small, "ab"));
	CHECK(fmt_sanitize(small, sizeof(small), "\xf0\x9f\x98", 3) == 12); /* a cut 4-byte char */
	dup = fmt_sanitize_dup(want, strlen(want));			    /* idempotent */
	CHECK(dup && !strcmp(dup, want));
	free(dup);
	CHECK(perfmap_parse(map, sizeof(map) - 1, &m) == 0 && m.nsyms == 1);
	CHECKF(m.nsyms && !strcmp(m.syms[0].name, want), "%s", m.nsyms ? m.syms[0].name : "-");
	perfmap_free(&m);
	f = open_memstream(&b, &len);
	jitdump_write_header(f, 1, 1, 0);
	jitdump_write_load(f, 10, 1, 1, 0x1000, 16, 1, map + 8);
	fclose(f);
	CHECK(jitdump_parse(b, len, NULL, NULL, &d, &err) == 0 && d.nsyms == 1 && d.bad_names == 1);
	/* The map line's newline is part of this name: escaped too. */
	CHECK(d.nsyms && !strncmp(d.syms[0].name, want, strlen(want)) &&
	      !strcmp(d.syms[0].name + strlen(want), "\\x0a"));
	jitdump_free(&d);
	free(b);
}

static double now_s(void)
{
	struct timespec ts;

	/* CPU time, not wall time: a loaded machine (CI beside other jobs)
	 * stretches the latter several times. */
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Hostile sizes: 100k LOADs over one address and 100k MOVEs of code never
 * loaded were quadratic (25 s); n log n now, with the same answers. */
static void test_many_overlaps(void)
{
	enum { N = 100000 };
	struct jitdump d;
	const struct jit_sym *s;
	const char *err;
	size_t len = 0, i, bad, mid = 0;
	double t0, dt;
	char *b;
	FILE *f = open_memstream(&b, &len);

	jitdump_write_header(f, 1, 1, 0);
	for (i = 0; i < N; i++)
		jitdump_write_load(f, 1000 + i, 1, 1, 0x10000 + (i % 7), 4096, i,
				   i == N / 2 ? "mid" : "f");
	for (i = 0; i < N; i++)
		jitdump_write_move(f, 200000 + i, 1, 1, 0x30000, 0x40000, 64, 1000000000 + i);
	fclose(f);
	t0 = now_s();
	CHECK(jitdump_parse(b, len, NULL, NULL, &d, &err) == 0 && d.nsyms == N);
	dt = now_s() - t0;
	/* Quadratic took 25 s of CPU; n log n takes ~0.1 s. */
	CHECKF(dt < 5.0, "%.2f s of CPU", dt);
	printf("# 100k overlapping LOADs, 100k MOVEs: parsed in %.3f s\n", dt);
	/* Each load overlaps the next: it ends there. */
	for (i = 0, bad = 0; i < d.nsyms; i++) {
		s = &d.syms[i];
		bad += s->t_end != (s->t_start == 1000 + N - 1 ? UINT64_MAX : s->t_start + 1);
		mid += !strcmp(s->name, "mid");
	}
	CHECKF(bad == 0 && mid == 1, "%zu symbols end wrongly", bad);
	jitdump_free(&d);
	free(b);
}

/* The overlap pass against the pairwise rule it replaced, on random loads:
 * a symbol ends at the first later load of code overlapping it. */
static void test_overlaps_random(void)
{
	enum { N = 400 };
	unsigned seed = 7;
	struct jitdump d;
	const char *err;
	size_t len = 0, i, j, bad = 0;
	char *b;
	FILE *f = open_memstream(&b, &len);

	jitdump_write_header(f, 1, 1, 0);
	for (i = 0; i < N; i++) {
		uint64_t addr, size, t;

		seed = seed * 1103515245 + 12345;
		addr = 0x1000 + (seed >> 8) % 4096;
		seed = seed * 1103515245 + 12345;
		size = (seed >> 8) % 300; /* 0 included: one byte */
		seed = seed * 1103515245 + 12345;
		t = (seed >> 8) % 200; /* equal times too */
		jitdump_write_load(f, t, 1, 1, addr, size, i, "x");
	}
	fclose(f);
	CHECK(jitdump_parse(b, len, NULL, NULL, &d, &err) == 0 && d.nsyms == N);
	for (i = 0; i < d.nsyms; i++) {
		const struct jit_sym *x = &d.syms[i];
		uint64_t want = UINT64_MAX;

		for (j = 0; j < d.nsyms; j++) {
			const struct jit_sym *y = &d.syms[j];
			uint64_t xs = x->size ? x->size : 1, ys = y->size ? y->size : 1;
			int overlap = y->start < x->start + xs && x->start < y->start + ys;

			if (overlap && y->t_start > x->t_start && y->t_start < want)
				want = y->t_start;
		}
		bad += x->t_end != want;
	}
	CHECKF(bad == 0, "%zu symbols end wrongly", bad);
	jitdump_free(&d);
	free(b);
}

int main(void)
{
	FILE *f = fopen(NODE, "rb");

	if (f) {
		fclose(f);
		RUN_TEST(test_node_fixture);
		RUN_TEST(test_java_fixture);
		RUN_TEST(test_truncation_and_garbage);
	} else {
		SKIP_TEST(test_node_fixture, "../shared/fixtures absent");
		SKIP_TEST(test_java_fixture, "../shared/fixtures absent");
		SKIP_TEST(test_truncation_and_garbage, "../shared/fixtures absent");
	}
	RUN_TEST(test_time_aware);
	RUN_TEST(test_no_debug_info);
	RUN_TEST(test_perfmap_empty);
	RUN_TEST(test_perfmap);
	RUN_TEST(test_sanitize);
	RUN_TEST(test_many_overlaps);
	RUN_TEST(test_overlaps_random);
	CHECK_EXIT();
}
