/* The gperftools writer: round trip through our reader, and google-pprof
 * naming this test's own functions in a 6:3:1 profile, with no "Removing ...
 * from all stack traces". (The standalone pprof reads the files of real
 * recordings in tests/integration/test_capture.sh.) */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check.h"
#include "testutil.h"
#include "formats/cpuprofile.h"

__attribute__((noinline)) void six(void)
{
	__asm__ volatile("");
}
__attribute__((noinline)) void three(void)
{
	__asm__ volatile("");
}
__attribute__((noinline)) void one(void)
{
	__asm__ volatile("");
}
__attribute__((noinline)) void caller(void)
{
	__asm__ volatile("");
}

struct tally {
	uint64_t records, samples, maxdepth;
};

static int tally(void *ctx, uint64_t count, const uint64_t *pcs, size_t n)
{
	struct tally *t = ctx;
	size_t i;

	t->records++;
	t->samples += count;
	if (n > t->maxdepth)
		t->maxdepth = n;
	for (i = 0; i < n; i++)
		if (!pcs[i])
			return -EINVAL;
	return 0;
}

static char *write_profile(const char *maps, size_t *len)
{
	struct cpuprof *c = cpuprof_new(10000);
	uint64_t pcs[300];
	char *buf = NULL;
	FILE *f;
	int i;

	/* leaf first; every stack shares pc[1] (caller) */
	pcs[1] = (uintptr_t)caller + 4;
	pcs[0] = (uintptr_t)six + 1;
	CHECK(cpuprof_add(c, pcs, 2, 600) == 0);
	pcs[0] = (uintptr_t)three + 1;
	CHECK(cpuprof_add(c, pcs, 2, 200) == 0);
	CHECK(cpuprof_add(c, pcs, 2, 100) == 0); /* merged */
	pcs[0] = (uintptr_t)one + 1;
	CHECK(cpuprof_add(c, pcs, 2, 100) == 0);
	for (i = 0; i < 300; i++) /* deep, with zeros that must be dropped */
		pcs[i] = i % 50 == 49 ? 0 : (uintptr_t)caller + 4;
	pcs[0] = (uintptr_t)one + 1;
	CHECK(cpuprof_add(c, pcs, 300, 0) == 0);
	f = open_memstream(&buf, len);
	CHECK(cpuprof_write(c, f, maps) == 0);
	fclose(f);
	cpuprof_free(c);
	return buf;
}

static char maps[1 << 16];

static void test_roundtrip(void)
{
	size_t len;
	char *buf = write_profile("maps-text\n", &len);
	struct cpuprof_header h;
	struct tally t = {0};
	const char *m, *err;

	CHECK(cpuprof_read(buf, len, &h, tally, &t, &m, &err) == 0);
	CHECK(h.period_us == 10000);
	/* 4 stacks and floor(4/31)+1 = 1 zero-count record */
	CHECKF(t.records == 5 && t.samples == 1000, "%llu records, %llu samples",
	       (unsigned long long)t.records, (unsigned long long)t.samples);
	CHECK(t.maxdepth == 294);
	CHECK(!strcmp(m, "maps-text\n"));
	CHECK(cpuprof_read(buf, len - 20, &h, tally, &t, &m, &err) == -EINVAL && err);
	CHECK(cpuprof_read("garbage!", 8, &h, NULL, NULL, &m, &err) == -EINVAL);
	free(buf);
}

/* A stack deeper than 1024 frames (--max-stack 4096) keeps its root: the
 * writer cut every stack at 1024 pcs before, and dropped a stack's last
 * frame, [truncated], at --max-stack 1024. */
struct deep {
	size_t n;
	uint64_t root;
};

static int deepest(void *ctx, uint64_t count, const uint64_t *pcs, size_t n)
{
	struct deep *d = ctx;

	if (count && n > d->n) {
		d->n = n;
		d->root = pcs[n - 1];
	}
	return 0;
}

static void test_deep(void)
{
	struct cpuprof *c = cpuprof_new(1000);
	uint64_t pcs[4097];
	struct cpuprof_header h;
	struct deep d = {0};
	const char *m, *err;
	char *buf = NULL;
	size_t len, i;
	FILE *f;

	for (i = 0; i < 4097; i++)
		pcs[i] = 0x1000 + i;
	CHECK(cpuprof_add(c, pcs, 1025, 1) == 0);
	CHECK(cpuprof_add(c, pcs, 4097, 2) == 0);
	CHECK(cpuprof_add(c, pcs, 4097, 3) == 0); /* merged */
	f = open_memstream(&buf, &len);
	CHECK(cpuprof_write(c, f, "") == 0);
	fclose(f);
	cpuprof_free(c);
	CHECK(cpuprof_read(buf, len, &h, deepest, &d, &m, &err) == 0);
	CHECKF(d.n == 4097 && d.root == 0x1000 + 4096, "deepest %zu frames, root %#llx", d.n,
	       (unsigned long long)d.root);
	free(buf);
}

static void test_real_readers(void)
{
	char dir[] = "/tmp/test_cpuprofile.XXXXXX", path[128], exe[4096], cmd[256], *out;
	FILE *f = fopen("/proc/self/maps", "r");
	size_t len, ml = f ? fread(maps, 1, sizeof(maps) - 1, f) : 0;
	char *buf;
	ssize_t el = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (f)
		fclose(f);
	maps[ml] = 0;
	exe[el > 0 ? el : 0] = 0;
	CHECK(mkdtemp(dir) != NULL);
	buf = write_profile(maps, &len);
	snprintf(path, sizeof(path), "%s/cpu.prof", dir);
	f = fopen(path, "wb");
	fwrite(buf, 1, len, f);
	fclose(f);
	free(buf);
	out = run_cmd("google-pprof --text %s %s 2>&1", exe, path);
	CHECKF(top_pct(out, "six") == 60.0 && top_pct(out, "three") == 30.0 &&
		   top_pct(out, "one") == 10.0,
	       "%s", out);
	CHECKF(!strstr(out, "Removing"), "%s", out);
	free(out);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK(system(cmd) == 0);
}

int main(void)
{
	RUN_TEST(test_roundtrip);
	RUN_TEST(test_deep);
	if (system("google-pprof --help >/dev/null 2>&1") == 0)
		RUN_TEST(test_real_readers);
	else
		SKIP_TEST(test_real_readers, "google-pprof not installed");
	CHECK_EXIT();
}
