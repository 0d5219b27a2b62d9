/* The profile.proto writer, read back by zlib and by the real pprof: names,
 * proportions, numeric labels, merging, deep stacks, reused JIT addresses. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include "check.h"
#include "testutil.h"
#include "formats/pprof.h"

static char dir[] = "/tmp/test_pprof.XXXXXX";
static const char *pprof_bin;

static struct pprof *build(void)
{
	struct pprof *p = pprof_new(10000000, 1700000000000000000LL, 2000000000LL);
	uint64_t m = pprof_mapping(p, 0x400000, 0x500000, 0, "/bin/prog", "abcd", true);
	uint64_t km =
	    pprof_mapping(p, 0xffff800000000000ULL, UINT64_MAX, 0, "[kernel.kallsyms]", NULL, true);
	struct pprof_line la = {"func_a", NULL, "a.c", 10, 8}, lb = {"func_b", NULL, NULL, 0, 0},
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

	CHECK(m && km && a && b && c && k && mn);
	/* Same mapping and address, same first function: the same location. */
	CHECK(pprof_location(p, m, 0x401000, &la, 1) == a);
	s[1] = mn;
	for (i = 0; i < 60; i++) {
		s[0] = a;
		lab[3].num = i % 2; /* two CPUs: two distinct samples, each merged */
		CHECK(pprof_add_sample(p, s, 2, 1, lab, 4) == 0);
	}
	s[0] = b;
	CHECK(pprof_add_sample(p, s, 2, 30, lab, 4) == 0);
	s[0] = k;
	s[1] = c;
	s[2] = mn;
	CHECK(pprof_add_sample(p, s, 3, 10, lab, 4) == 0);
	CHECK(pprof_nsamples(p) == 4);
	return p;
}

static char *write_profile(struct pprof *p, const char *name)
{
	static char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0 && pprof_write_fd(p, fd) == 0);
	close(fd);
	return path;
}

/* Samples without a location only (a kernel thread's file under
 * --no-kernel): the table of locations is empty. UBSan stopped CI's
 * sanitizer run here (an offset applied to its NULL vector). Merged,
 * written, and a profile pprof reads (it shows no sample without a
 * location). */
static void test_no_locations(void)
{
	struct pprof *p = pprof_new(10000000, 1700000000000000000LL, 1000000000LL);
	struct pprof_label lab = {"pid", NULL, 7, "pid"};
	char *path, *out;

	CHECK(pprof_add_sample(p, NULL, 0, 3, &lab, 1) == 0);
	CHECK(pprof_add_sample(p, NULL, 0, 2, &lab, 1) == 0);
	CHECK(pprof_nsamples(p) == 1);
	path = write_profile(p, "empty.pb.gz");
	if (access(pprof_bin, X_OK) == 0) {
		out = run_cmd("%s -raw %s 2>&1", pprof_bin, path);
		CHECKF(strstr(out, "samples/count cpu/nanoseconds") && !strstr(out, "failed"), "%s",
		       out);
		free(out);
	}
	pprof_free(p);
}

static void test_gzip_and_tags(void)
{
	struct pprof *p = build();
	char *path = write_profile(p, "a.pb.gz"), buf[4096];
	gzFile z = gzopen(path, "rb");
	int n = z ? gzread(z, buf, sizeof(buf)) : -1;

	CHECK(n > 100);
	/* field 1 (sample_type), length-delimited, first */
	CHECK(n > 0 && (unsigned char)buf[0] == (1 << 3 | 2));
	CHECK(memmem(buf, n, "samples", 7) && memmem(buf, n, "nanoseconds", 11));
	if (z)
		gzclose(z);
	pprof_free(p);
}

static void test_real_pprof(void)
{
	struct pprof *p = build();
	char *path = write_profile(p, "b.pb.gz"), *out;

	out = run_cmd("%s -top -nodecount=10 %s 2>&1", pprof_bin, path);
	CHECKF(top_pct(out, "func_a") == 60.0 && top_pct(out, "func_b") == 30.0 &&
		   top_pct(out, "read_zero") == 10.0,
	       "%s", out);
	free(out);
	/* numeric pid label: -tagfocus works */
	out = run_cmd("%s -top -tagfocus=pid=123 %s 2>&1", pprof_bin, path);
	CHECKF(top_pct(out, "func_a") == 60.0, "%s", out);
	free(out);
	out = run_cmd("%s -top -tagfocus=pid=999 %s 2>&1", pprof_bin, path);
	CHECKF(top_pct(out, "func_a") < 0, "%s", out);
	free(out);
	/* A function's first line (Python's code objects have one): pprof
	 * -raw prints it as s=. */
	out = run_cmd("%s -raw %s 2>&1", pprof_bin, path);
	CHECKF(strstr(out, "func_a a.c:10 s=8"), "%s", out);
	free(out);
	out = run_cmd("%s -raw %s 2>&1", pprof_bin, path);
	CHECKF(strstr(out, "samples/count cpu/nanoseconds") && strstr(out, "Period: 10000000") &&
		   strstr(out, "[FN]"),
	       "%s", out);
	free(out);
	out = run_cmd("%s -tags %s 2>&1", pprof_bin, path);
	/* cpu 0 too: pprof drops a numeric label of value 0 that has no unit */
	CHECKF(strstr(out, "comm: Total 1.0s") && strstr(out, "prog") &&
		   strstr(out, "cpu: Total 1.0s") && strstr(out, "300.0ms (30.00%): 0"),
	       "%s", out);
	free(out);
	pprof_free(p);
}

/* Off-CPU time: its own sample types, cpu still the default view, wall the
 * sum; off-CPU time merges into a CPU sample of the same stack and labels. */
static void test_offcpu(void)
{
	struct pprof *p = pprof_new(10000000, 1700000000000000000LL, 2000000000LL);
	uint64_t m = pprof_mapping(p, 0x400000, 0x500000, 0, "/bin/prog", NULL, true);
	struct pprof_line lw = {"wait_fn", NULL, NULL, 0, 0}, lr = {"run_fn", NULL, NULL, 0, 0};
	uint64_t w = pprof_location(p, m, 0x401000, &lw, 1),
		 r = pprof_location(p, m, 0x402000, &lr, 1);
	struct pprof_label lab[1] = {{"pid", NULL, 1, "pid"}};
	char *path, *out;

	CHECK(pprof_add_offcpu(p, &w, 1, 1, 1, lab, 1) == -EINVAL); /* not enabled */
	pprof_enable_offcpu(p);
	CHECK(pprof_add_sample(p, &r, 1, 50, lab, 1) == 0);	       /* 0.5 s of CPU */
	CHECK(pprof_add_offcpu(p, &w, 1, 1500000000, 3, lab, 1) == 0); /* 1.5 s in 3 waits */
	CHECK(pprof_add_offcpu(p, &r, 1, 250000000, 1, lab, 1) == 0);  /* run_fn waits too */
	CHECK(pprof_nsamples(p) == 2);
	path = write_profile(p, "offcpu.pb.gz");
	out = run_cmd("%s -top -unit=ms %s 2>&1", pprof_bin, path);
	CHECKF(strstr(out, "Type: cpu\n") && strstr(out, "500ms") && !strstr(out, "wait_fn"), "%s",
	       out);
	free(out);
	out = run_cmd("%s -sample_index=offcpu -top -unit=ms %s 2>&1", pprof_bin, path);
	CHECKF(strstr(out, "Type: offcpu\n") && strstr(out, "1500ms") && strstr(out, "250ms"), "%s",
	       out);
	free(out);
	out = run_cmd("%s -sample_index=wall -top -unit=ms %s 2>&1", pprof_bin, path);
	CHECKF(strstr(out, "Total samples = 2250ms") && strstr(out, "750ms"), "%s", out);
	free(out);
	out = run_cmd("%s -sample_index=offcpu_waits -top %s 2>&1", pprof_bin, path);
	CHECKF(strstr(out, "Total samples = 4"), "%s", out);
	free(out);
	pprof_free(p);
}

/* A heap profile: Go's four sample types, inuse_space the default view,
 * values merged per stack, the comments shown by pprof. */
static void test_heap(void)
{
	struct pprof *p = pprof_new(0, 1700000000000000000LL, 2000000000LL);
	uint64_t m = pprof_mapping(p, 0x400000, 0x500000, 0, "/bin/prog", NULL, true);
	struct pprof_line la = {"alloc_fn", NULL, NULL, 0, 0}, lk = {"keep_fn", NULL, NULL, 0, 0};
	uint64_t a = pprof_location(p, m, 0x401000, &la, 1),
		 k = pprof_location(p, m, 0x402000, &lk, 1);
	struct pprof_label lab[1] = {{"pid", NULL, 1, "pid"}};
	int64_t va[4] = {10, 6000, 0, 0}, vk[4] = {4, 4000, 2, 2000};
	char *path, *out;

	pprof_enable_heap(p, 524288);
	CHECK(pprof_add_sample(p, &a, 1, 1, lab, 1) == -EINVAL); /* a CPU sample: no */
	CHECK(pprof_add_heap(p, &a, 1, va, lab, 1) == 0);
	CHECK(pprof_add_heap(p, &k, 1, vk, lab, 1) == 0);
	CHECK(pprof_add_heap(p, &k, 1, vk, lab, 1) == 0); /* merged */
	CHECK(pprof_add_comment(p, "sampled every 524288 bytes") == 0);
	CHECK(pprof_nsamples(p) == 2);
	path = write_profile(p, "heap.pb.gz");
	out = run_cmd("%s -top -unit=B %s 2>&1", pprof_bin, path);
	CHECKF(strstr(out, "Type: inuse_space\n") && strstr(out, "4000B") &&
		   strstr(out, "keep_fn") && strstr(out, "sampled every 524288 bytes"),
	       "%s", out);
	free(out);
	out = run_cmd("%s -sample_index=alloc_space -top -unit=B %s 2>&1", pprof_bin, path);
	CHECKF(strstr(out, "Total samples = 14000B") && strstr(out, "6000B"), "%s", out);
	free(out);
	out = run_cmd("%s -sample_index=alloc_objects -top %s 2>&1", pprof_bin, path);
	CHECKF(strstr(out, "Total samples = 18"), "%s", out);
	free(out);
	out = run_cmd("%s -raw %s 2>&1", pprof_bin, path);
	CHECKF(strstr(out, "alloc_objects/count alloc_space/bytes inuse_objects/count "
			   "inuse_space/bytes") &&
		   strstr(out, "Period: 524288") && strstr(out, "PeriodType: space bytes"),
	       "%s", out);
	free(out);
	pprof_free(p);
}

/* 200 frames round-trip; two JIT functions at one address stay apart. */
static void test_deep_and_reuse(void)
{
	struct pprof *p = pprof_new(1000000, 0, 0);
	uint64_t m = pprof_mapping(p, 0x1000, 0x100000, 0, "jit", NULL, true), locs[200];
	struct pprof_line l = {"frame", NULL, NULL, 0, 0}, j1 = {"JS:first", NULL, NULL, 0, 0},
			  j2 = {"JS:second", NULL, NULL, 0, 0};
	char *path, *out;
	int i;

	for (i = 0; i < 200; i++)
		locs[i] = pprof_location(p, m, 0x2000 + i * 16, &l, 1);
	locs[0] = pprof_location(p, m, 0x9000, &j1, 1);
	CHECK(pprof_add_sample(p, locs, 200, 1, NULL, 0) == 0);
	locs[0] = pprof_location(p, m, 0x9000, &j2, 1);
	CHECK(locs[0] && pprof_add_sample(p, locs, 200, 3, NULL, 0) == 0);
	path = write_profile(p, "c.pb.gz");
	out = run_cmd("%s -top %s 2>&1", pprof_bin, path);
	CHECKF(top_pct(out, "JS:first") == 25.0 && top_pct(out, "JS:second") == 75.0, "%s", out);
	free(out);
	out = run_cmd("%s -traces %s 2>&1", pprof_bin, path);
	{
		int n = 0;
		const char *s = out;

		while ((s = strstr(s, " frame\n")))
			n++, s++;
		CHECKF(n == 2 * 199, "%d frames in traces", n);
	}
	free(out);
	pprof_free(p);
}

/* Scopes spilled to a file: 50 processes of one program, each at its own
 * address (ASLR), folded one by one around a kept kernel mapping; the real
 * pprof reads every process's samples back, names them, and shows the main
 * mapping set at the end as the program. One scope written while the spill
 * file could not take it stays in memory: nothing is lost. */
static void test_scopes(void)
{
	struct pprof *p = pprof_new(1000000, 0, 0);
	uint64_t km = pprof_mapping(p, 0xffff800000000000ULL, UINT64_MAX, 0, "[kernel.kallsyms]",
				    NULL, true),
		 kexec = pprof_location(p, km, 0xffffffff81000100ULL,
					&(struct pprof_line){.function = "do_execve"}, 1);
	struct pprof_line lmain = {.function = "main"}, lspin = {"spin", NULL, "spin.c", 7, 0};
	char spill[256], *path, *out;
	int fd, i;

	snprintf(spill, sizeof(spill), "%s/spill", dir);
	fd = open(spill, O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0 && km && kexec);
	pprof_spill_to(p, fd);
	for (i = 0; i < 50; i++) {
		uint64_t base = 0x550000000000ULL + (uint64_t)i * 0x100000, m, locs[3];
		struct pprof_label lab[2] = {{"pid", NULL, 1000 + i, "pid"},
					     {.key = "comm", .str = "spin"}};

		pprof_scope_begin(p);
		m = pprof_mapping(p, base, base + 0x10000, 0, "/usr/bin/spin", NULL, true);
		CHECK(m > km);
		locs[0] = pprof_location(p, m, base + 0x1100, &lspin, 1);
		locs[1] = pprof_location(p, m, base + 0x1200, &lmain, 1);
		CHECK(pprof_add_sample(p, locs, 2, 3, lab, 2) == 0);
		locs[0] = kexec;
		locs[1] = locs[0] ? pprof_location(p, m, base + 0x1000, &lmain, 1) : 0;
		CHECK(pprof_add_sample(p, locs, 2, 1, lab, 2) == 0);
		if (i == 30) { /* the disk is full: this scope and the later ones stay */
			int full = open("/dev/full", O_WRONLY);

			CHECK(full >= 0);
			pprof_spill_to(p, full);
			CHECK(pprof_scope_end(p) == -ENOSPC);
			close(full);
		} else {
			CHECK(pprof_scope_end(p) == 0);
		}
	}
	CHECK(pprof_nsamples(p) == 100);
	/* A live process's, outside any scope: kept, and the program. */
	{
		uint64_t m = pprof_mapping(p, 0x400000, 0x500000, 0, "/usr/bin/main", "ab12", true),
			 loc = pprof_location(p, m, 0x401000, &lmain, 1);
		struct pprof_label lab = {"pid", NULL, 7, "pid"};

		CHECK(pprof_add_sample(p, &loc, 1, 50, &lab, 1) == 0);
		CHECK(pprof_set_main_mapping(p, m) == 0);
	}
	pprof_spill_to(p, fd); /* read back as it was before the disk filled */
	path = write_profile(p, "scopes.pb.gz");
	close(fd);
	out = run_cmd("%s -top -nodecount=10 %s 2>&1", pprof_bin, path);
	/* 50 processes: 150 spin, 50 do_execve; 50 main */
	CHECKF(strstr(out, "File: main") && top_pct(out, "spin") == 60.0 &&
		   top_pct(out, "do_execve") == 20.0 && top_pct(out, "main") == 20.0,
	       "%s", out);
	free(out);
	out = run_cmd("%s -top -tagfocus=pid=1049 %s 2>&1", pprof_bin, path);
	CHECKF(top_pct(out, "spin") == 1.2 && top_pct(out, "do_execve") == 0.4, "%s", out);
	free(out);
	out = run_cmd("%s -top -tagfocus=pid=1007 %s 2>&1", pprof_bin, path);
	CHECKF(top_pct(out, "spin") == 1.2 && top_pct(out, "do_execve") == 0.4, "%s", out);
	free(out);
	out = run_cmd("%s -list=spin %s 2>&1", pprof_bin, path);
	CHECKF(strstr(out, "spin.c"), "%s", out);
	free(out);
	pprof_free(p);
}

int main(void)
{
	pprof_bin = getenv("PPROF") ? getenv("PPROF") : "tools/pprof";
	if (!mkdtemp(dir))
		return 1;
	RUN_TEST(test_gzip_and_tags);
	RUN_TEST(test_no_locations);
	if (access(pprof_bin, X_OK) == 0) {
		RUN_TEST(test_real_pprof);
		RUN_TEST(test_deep_and_reuse);
		RUN_TEST(test_scopes);
		RUN_TEST(test_offcpu);
		RUN_TEST(test_heap);
	} else {
		SKIP_TEST(test_real_pprof, "tools/pprof not built (make deps)");
		SKIP_TEST(test_deep_and_reuse, "tools/pprof not built (make deps)");
		SKIP_TEST(test_scopes, "tools/pprof not built (make deps)");
		SKIP_TEST(test_offcpu, "tools/pprof not built (make deps)");
		SKIP_TEST(test_heap, "tools/pprof not built (make deps)");
	}
	{
		char cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		if (system(cmd))
			return 1;
	}
	CHECK_EXIT();
}
