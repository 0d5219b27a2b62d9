/* bpftrace-rec report's text (formats/report.c) on profiles written here by
 * formats/pprof.c, with known shares, and the reader's gunzip
 * (formats/pprof_in.c) on whole, cut, corrupt, concatenated and too large
 * streams. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include "check.h"
#include "formats/pprof.h"
#include "formats/pprof_in.h"
#include "formats/report.h"

static char dir[] = "/tmp/test_report.XXXXXX";

/* A profile written and read back as the report reads it: the file's
 * bytes into *gz, inflated into *pb, read into in. */
static void load(struct pprof *p, struct fmt_buf *gz, struct fmt_buf *pb, struct pprof_in *in)
{
	char path[256];
	int fd;
	ssize_t r;

	snprintf(path, sizeof(path), "%s/p.pb.gz", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0 && pprof_write_fd(p, fd) == 0);
	*gz = (struct fmt_buf){0};
	gz->p = malloc(1 << 20);
	r = pread(fd, gz->p, 1 << 20, 0);
	CHECK(r > 0);
	gz->n = r > 0 ? (size_t)r : 0;
	close(fd);
	*pb = (struct fmt_buf){0};
	CHECK(pprof_in_gunzip(gz->p, gz->n, 1 << 24, pb) == 0);
	CHECK(pprof_in_read(pb->p, pb->n, in) == 0);
}

/* func_six, func_three and lib_spin doing 6:3:1 under main, as the demo
 * workload: pid 100 (prog) runs the first two, pid 200 (other) the third.
 * 10 ms a sample. */
static struct pprof *split_profile(void)
{
	struct pprof *p = pprof_new(10000000, 1700000000000000000LL, 2000000000LL);
	uint64_t m = pprof_mapping(p, 0x400000, 0x500000, 0, "/usr/bin/prog", "abcd", true);
	struct pprof_line six = {"func_six", NULL, "split.c", 36, 30},
			  three = {"func_three", NULL, "split.c", 45, 40},
			  spin = {"lib_spin", NULL, "libwork.c", 14, 10},
			  mainl = {"main", NULL, "split.c", 82, 70};
	uint64_t l6 = pprof_location(p, m, 0x401000, &six, 1),
		 l3 = pprof_location(p, m, 0x402000, &three, 1),
		 ls = pprof_location(p, m, 0x403000, &spin, 1),
		 lm = pprof_location(p, m, 0x404000, &mainl, 1);
	struct pprof_label a[2] = {{"pid", NULL, 100, "pid"}, {"comm", "prog", 0, NULL}},
			   b[2] = {{"pid", NULL, 200, "pid"}, {"comm", "other", 0, NULL}};
	uint64_t s[2] = {l6, lm};

	pprof_set_main_mapping(p, m);
	CHECK(pprof_add_sample(p, s, 2, 60, a, 2) == 0);
	s[0] = l3;
	CHECK(pprof_add_sample(p, s, 2, 30, a, 2) == 0);
	s[0] = ls;
	CHECK(pprof_add_sample(p, s, 2, 10, b, 2) == 0);
	return p;
}

/* The report's text, malloc'd. */
static char *report(const struct pprof_in *in, const struct report_opts *o, int *err)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	*err = report_write(f, in, o);
	fclose(f);
	return out;
}

/* The row of a function in the first top of text (its columns), or false. */
static bool row(const char *text, const char *fn, char cols[5][32], char *where, size_t wlen)
{
	const char *p = text;
	char name[128], rest[256];

	while (p && *p) {
		const char *nl = strchr(p, '\n');
		char line[512];
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		int k;

		if (n >= sizeof(line))
			n = sizeof(line) - 1;
		memcpy(line, p, n);
		line[n] = 0;
		rest[0] = 0;
		k = sscanf(line, "%31s %31s %31s %31s %31s %127s %255[^\n]", cols[0], cols[1],
			   cols[2], cols[3], cols[4], name, rest);
		if (k >= 6 && !strcmp(name, fn)) {
			snprintf(where, wlen, "%s", rest);
			return true;
		}
		p = nl ? nl + 1 : NULL;
	}
	return false;
}

static void test_shares(void)
{
	struct pprof *p = split_profile();
	struct fmt_buf gz, pb;
	struct pprof_in in = {0};
	struct report_opts o = {.source = "d/profile.pb.gz"};
	char c[5][32], where[256], *out;
	int err;

	load(p, &gz, &pb, &in);
	out = report(&in, &o, &err);
	CHECK(err == 0);
	/* pprof -top's header and columns. */
	CHECKF(strstr(out, "== cpu: d/profile.pb.gz\nFile: prog\nBuild ID: abcd\nType: cpu\n"),
	       "%s", out);
	CHECKF(strstr(out, "Duration: 2s, Total samples = 1000ms (50.00%)\n"), "%s", out);
	CHECKF(strstr(out, "Showing nodes accounting for 1000ms, 100% of 1000ms total\n"
			   "      flat  flat%   sum%        cum   cum%\n"),
	       "%s", out);
	/* 60/30/10, flat and cum, the hottest line of each. */
	CHECKF(row(out, "func_six", c, where, sizeof(where)) && !strcmp(c[0], "600ms") &&
		   !strcmp(c[1], "60.00%") && !strcmp(c[2], "60.00%") && !strcmp(c[3], "600ms") &&
		   !strcmp(c[4], "60.00%") && !strcmp(where, "split.c:36"),
	       "%s", out);
	CHECKF(row(out, "func_three", c, where, sizeof(where)) && !strcmp(c[1], "30.00%") &&
		   !strcmp(c[2], "90.00%") && !strcmp(c[4], "30.00%"),
	       "%s", out);
	CHECKF(row(out, "lib_spin", c, where, sizeof(where)) && !strcmp(c[1], "10.00%") &&
		   !strcmp(c[2], "100%") && !strcmp(where, "libwork.c:14"),
	       "%s", out);
	/* main: nothing flat, everything cum; after the others (flat first). */
	CHECKF(row(out, "main", c, where, sizeof(where)) && !strcmp(c[0], "0") &&
		   !strcmp(c[3], "1000ms") && !strcmp(c[4], "100%") && !strcmp(where, "split.c:82"),
	       "%s", out);
	CHECK(strstr(out, "func_six") < strstr(out, "func_three") &&
	      strstr(out, "lib_spin") < strstr(out, " main "));
	/* Per process: the shares, then each one's own top. */
	CHECKF(strstr(out, "== cpu by process (the pid label)\n"
			   "       cpu      %      pid  comm\n"
			   "     900ms 90.00%      100  prog\n"
			   "     100ms 10.00%      200  other\n"),
	       "%s", out);
	CHECKF(strstr(out, "== cpu of pid 100 (prog)\n"), "%s", out);
	CHECKF(strstr(out, "  600ms 66.67% 66.67%      600ms 66.67%  func_six split.c:36\n"), "%s",
	       out);
	CHECKF(strstr(out, "== cpu of pid 200 (other)\n"), "%s", out);
	CHECKF(strstr(out, "  100ms   100%   100%      100ms   100%  lib_spin libwork.c:14\n"),
	       "%s", out);
	free(out);

	/* -n 1: the top row only, said so. */
	o.rows = 1;
	out = report(&in, &o, &err);
	CHECKF(err == 0 && strstr(out, "Showing top 1 nodes out of 4\n") &&
		   !row(out, "func_three", c, where, sizeof(where)),
	       "%s", out);
	free(out);

	/* --pid: that process's samples, its shares of its own total. */
	o.rows = 0;
	o.has_pid = true;
	o.pid = 100;
	out = report(&in, &o, &err);
	CHECKF(err == 0 && strstr(out, "== cpu: d/profile.pb.gz, pid 100\n") &&
		   row(out, "func_six", c, where, sizeof(where)) && !strcmp(c[1], "66.67%") &&
		   !strstr(out, "lib_spin") && !strstr(out, "by process"),
	       "%s", out);
	free(out);
	o.pid = 300;
	out = report(&in, &o, &err);
	CHECK(err == -ENOENT);
	free(out);

	/* --sample-type: the counts; an unknown type is -ENOENT. */
	o.has_pid = false;
	o.sample_type = "samples";
	out = report(&in, &o, &err);
	CHECKF(err == 0 && strstr(out, "Type: samples\n") &&
		   strstr(out, "        60 60.00% 60.00%         60 60.00%  func_six split.c:36\n"),
	       "%s", out);
	free(out);
	o.sample_type = "nope";
	out = report(&in, &o, &err);
	CHECK(err == -ENOENT);
	free(out);

	pprof_in_free(&in);
	free(gz.p);
	free(pb.p);
	pprof_free(p);
}

/* Recursion counts a function's cum once a sample; off-CPU profiles show
 * cpu, offcpu and wall by default, not the counts. */
static void test_recursion_and_types(void)
{
	struct pprof *p = pprof_new(10000000, 0, 0);
	uint64_t m = pprof_mapping(p, 0x400000, 0x500000, 0, "/bin/r", NULL, true);
	struct pprof_line rl = {"rec", NULL, NULL, 0, 0}, ml = {"main", NULL, NULL, 0, 0};
	uint64_t lr = pprof_location(p, m, 0x401000, &rl, 1),
		 lm = pprof_location(p, m, 0x402000, &ml, 1);
	uint64_t s[4] = {lr, lr, lr, lm};
	struct pprof_label a = {"pid", NULL, 1, "pid"};
	struct fmt_buf gz, pb;
	struct pprof_in in = {0};
	struct report_opts o = {0};
	size_t idx[8];
	char *out;
	int err;

	pprof_enable_offcpu(p);
	CHECK(pprof_add_sample(p, s, 4, 4, &a, 1) == 0);
	CHECK(pprof_add_offcpu(p, s + 3, 1, 60000000, 2, &a, 1) == 0);
	load(p, &gz, &pb, &in);
	CHECK(report_types(&in, idx) == 3 && pprof_in_str_is(&in, in.types.v[idx[0]].type, "cpu") &&
	      pprof_in_str_is(&in, in.types.v[idx[1]].type, "offcpu") &&
	      pprof_in_str_is(&in, in.types.v[idx[2]].type, "wall"));
	out = report(&in, &o, &err);
	CHECKF(err == 0 && strstr(out, "      40ms   100%   100%       40ms   100%  rec\n") &&
		   strstr(out, "== offcpu\n") && strstr(out, "== wall\n") &&
		   strstr(out, "      60ms 60.00% 60.00%      100ms   100%  main\n") &&
		   !strstr(out, "Type: samples") && !strstr(out, "Type: offcpu_waits"),
	       "%s", out);
	/* One process: no top of its own, its line in the table. */
	CHECK(!strstr(out, "== cpu of pid"));
	free(out);
	pprof_in_free(&in);
	free(gz.p);
	free(pb.p);
	pprof_free(p);
}

/* The same rows as the real pprof's -top of the same file: each of
 * pprof's rows (flat, flat%, sum%, cum, cum%, name) is the report's, in
 * its order. */
static void test_same_as_pprof(const char *pprof_bin)
{
	struct pprof *p = split_profile();
	struct fmt_buf gz, pb;
	struct pprof_in in = {0};
	struct report_opts o = {0};
	char cmd[512], line[512], *out, *mine, *at;
	FILE *f;
	int err, rows = 0;

	load(p, &gz, &pb, &in);
	out = report(&in, &o, &err);
	/* The report's first top, its columns without the file:line. */
	mine = strstr(out, "      flat  flat%");
	snprintf(cmd, sizeof(cmd), "%s -top %s/p.pb.gz 2>/dev/null", pprof_bin, dir);
	f = popen(cmd, "r");
	at = mine;
	while (f && fgets(line, sizeof(line), f)) {
		char *nl = strchr(line, '\n');

		if (nl)
			*nl = 0;
		if (!strstr(line, "%") || strstr(line, "Showing") || strstr(line, "Duration"))
			continue;
		rows++;
		/* pprof's row is the start of the report's next row. */
		CHECKF(at && (at = strstr(at, line)), "pprof's row '%s' not in order in: %s", line,
		       mine);
	}
	if (f)
		pclose(f);
	CHECKF(rows == 5, "%d rows of pprof", rows);
	free(out);
	pprof_in_free(&in);
	free(gz.p);
	free(pb.p);
	pprof_free(p);
}

static void test_units(void)
{
	char b[64];

	report_value(b, sizeof(b), 1202400000, "nanoseconds", "ms");
	CHECK(!strcmp(b, "1202.40ms"));
	report_value(b, sizeof(b), 998000000, "nanoseconds", "ms");
	CHECK(!strcmp(b, "998ms"));
	report_value(b, sizeof(b), 0, "nanoseconds", "ms");
	CHECK(!strcmp(b, "0"));
	report_value(b, sizeof(b), 42, "count", "count");
	CHECK(!strcmp(b, "42"));
	report_value(b, sizeof(b), 3 << 20, "bytes", "MB");
	CHECK(!strcmp(b, "3MB"));
	/* pprof's choice: the smallest value's unit, unless the total's is
	 * another and 100 times larger. */
	CHECK(!strcmp(report_unit(4010000, 1991980000, "nanoseconds"), "ms"));
	CHECK(!strcmp(report_unit(2000000000, 2000000000, "nanoseconds"), "s"));
	CHECK(!strcmp(report_unit(5, 10, "count"), "count"));
	report_pct(b, sizeof(b), 1, 1);
	CHECK(!strcmp(b, "  100%"));
	report_pct(b, sizeof(b), 6036, 10000);
	CHECK(!strcmp(b, "60.36%"));
	report_pct(b, sizeof(b), 2, 1000);
	CHECK(!strcmp(b, "  0.2%"));
	report_pct(b, sizeof(b), INT64_MIN, 1);
	CHECK(b[0]);
}

/* The gzip a profile comes in: whole, two members, cut, corrupt, not gzip,
 * and one inflating past the limit. */
static void test_gunzip(void)
{
	struct pprof *p = split_profile();
	struct fmt_buf gz, pb, two = {0}, o = {0};
	struct pprof_in in = {0};
	size_t n;

	load(p, &gz, &pb, &in);
	n = pb.n;
	/* Two members: the second's bytes follow the first's. */
	fmt_put(&two, gz.p, gz.n);
	fmt_put(&two, gz.p, gz.n);
	CHECK(pprof_in_gunzip(two.p, two.n, 1 << 24, &o) == 0 && o.n == 2 * n);
	o.n = 0;
	CHECK(pprof_in_gunzip(gz.p, gz.n - 4, 1 << 24, &o) == -ENODATA);
	o.n = 0;
	CHECK(pprof_in_gunzip(gz.p, gz.n / 2, 1 << 24, &o) == -ENODATA);
	o.n = 0;
	CHECK(pprof_in_gunzip(gz.p, 10, 1 << 24, &o) == -ENODATA);
	o.n = 0;
	CHECK(pprof_in_gunzip(pb.p, pb.n, 1 << 24, &o) == -EBADMSG);
	o.n = 0;
	CHECK(pprof_in_gunzip(gz.p, 1, 1 << 24, &o) == -EBADMSG);
	o.n = 0;
	CHECK(pprof_in_gunzip(gz.p, gz.n, n - 1, &o) == -EFBIG && o.n <= n - 1);
	/* The CRC: the last 8 bytes are CRC32 and size. */
	two.n = 0;
	fmt_put(&two, gz.p, gz.n);
	two.p[two.n - 8] ^= 0xff;
	o.n = 0;
	CHECK(pprof_in_gunzip(two.p, two.n, 1 << 24, &o) == -EILSEQ);
	/* Trailing bytes that are not a member. */
	two.p[two.n - 8] ^= 0xff;
	fmt_put(&two, "junk", 4);
	o.n = 0;
	CHECK(pprof_in_gunzip(two.p, two.n, 1 << 24, &o) == -EILSEQ);
	free(two.p);
	free(o.p);
	pprof_in_free(&in);
	free(gz.p);
	free(pb.p);
	pprof_free(p);
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	/* Time: lines are local time; the tests' are in UTC. */
	setenv("TZ", "UTC", 1);
	RUN_TEST(test_shares);
	RUN_TEST(test_recursion_and_types);
	RUN_TEST(test_units);
	{
		const char *pprof_bin = getenv("PPROF") ? getenv("PPROF") : "tools/pprof";

		if (access(pprof_bin, X_OK) == 0) {
			check_failures = 0;
			test_same_as_pprof(pprof_bin);
			printf("%s test_same_as_pprof\n", check_failures ? "FAIL" : "PASS");
			check_tests_failed += !!check_failures;
		} else {
			SKIP_TEST(test_same_as_pprof, "tools/pprof not built (make deps)");
		}
	}
	RUN_TEST(test_gunzip);
	{
		char cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		if (system(cmd))
			return 1;
	}
	CHECK_EXIT();
}
