/* The FDR writer, read back by our reader and by the real llvm-xray (with
 * an instrumentation map from formats/xray_map). */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check.h"
#include "testutil.h"
#include "formats/xray_fdr.h"
#include "formats/xray_map.h"

static char dir[] = "/tmp/test_xray_fdr.XXXXXX";

static bool have_xray(void)
{
	return system("llvm-xray --version >/dev/null 2>&1") == 0;
}

/* The call count llvm-xray account prints for a function name. */
static long account_count(const char *out, const char *name)
{
	char *copy = strdup(out), *line, *save = NULL;
	long n = -1;

	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		long id, count;
		size_t ll = strlen(line), nl = strlen(name);

		if (sscanf(line, "%ld %ld", &id, &count) == 2 && ll > nl &&
		    !strcmp(line + ll - nl, name) &&
		    (line[ll - nl - 1] == ' ' || line[ll - nl - 1] == ':'))
			n = count;
	}
	free(copy);
	return n;
}

/* Files and lines as user/xray.c gives them: a source line, a source file
 * whose line is unknown, the object a function is in, none. */
static const struct xray_map_func funcs[] = {
    {"main", 0, 0, "/src/prog.c", 10},
    {"_ZN3foo3barEv", 0, 0, "/src/foo.cc", 0},
    {"compute", 0, 0, "/usr/lib/x86_64-linux-gnu/libm.so.6", 0},
    {"recurse", 0, 0, NULL, 0},
};

static void write_map(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	CHECK(fd >= 0);
	CHECK(xray_map_write(fd, funcs, 4) == 0);
	close(fd);
}

/* Two threads: main calls foo::bar 1000 times and compute (with two args)
 * 10 times; recurse nests 5 deep; thread 2 migrates CPUs and sleeps > 4.3 s
 * (a TSCWrap). */
static struct fdr *build(int version, uint64_t bufsize, uint64_t flight)
{
	struct fdr_opts o = {.version = version,
			     .pid = 4242,
			     .buffer_size = bufsize,
			     .flight_recorder_bytes = flight,
			     .wall_sec = 1700000000};
	struct fdr *w = fdr_new(&o);
	uint64_t ts = 1000000, args[2] = {7, 9};
	int i;

	CHECK(w != NULL);
	CHECK(fdr_func(w, 100, 0, ts, FDR_ENTRY, 1, NULL, 0) == 0);
	for (i = 0; i < 1000; i++) {
		CHECK(fdr_func(w, 100, 0, ts += 10, FDR_ENTRY, 2, NULL, 0) == 0);
		/* thread 2 interleaves */
		if (i == 500) {
			int d;

			CHECK(fdr_func(w, 200, 1, ts, FDR_ENTRY, 3, args, 2) == 0);
			for (d = 0; d < 5; d++)
				CHECK(fdr_func(w, 200, 1, ts + d, FDR_ENTRY, 4, NULL, 0) == 0);
			for (d = 0; d < 5; d++)
				CHECK(fdr_func(w, 200, 0, ts + 10 + d, FDR_EXIT, 4, NULL, 0) == 0);
			CHECK(fdr_func(w, 200, 0, ts + 5000000000ULL, FDR_EXIT, 3, NULL, 0) == 0);
		}
		CHECK(fdr_func(w, 100, 0, ts += 20, FDR_EXIT, 2, NULL, 0) == 0);
	}
	for (i = 0; i < 9; i++) {
		CHECK(fdr_func(w, 100, 1, ts += 5, FDR_ENTRY, 3, args, 2) == 0);
		CHECK(fdr_func(w, 100, 1, ts += 5, FDR_EXIT, 3, NULL, 0) == 0);
	}
	CHECK(fdr_func(w, 100, 1, ts += 5, FDR_EXIT, 1, NULL, 0) == 0);
	return w;
}

struct counts {
	long entries[8], exits[8], args, cpu1;
	int32_t pid;
};

static int count_rec(void *ctx, const struct fdr_record *r)
{
	struct counts *c = ctx;

	if (r->func_id < 8) {
		if (r->action == FDR_EXIT)
			c->exits[r->func_id]++;
		else
			c->entries[r->func_id]++;
	}
	if (r->nargs == 2 && r->args[0] == 7 && r->args[1] == 9)
		c->args++;
	if (r->cpu == 1)
		c->cpu1++;
	c->pid = r->pid;
	return 0;
}

static void write_trace(struct fdr *w, const char *path)
{
	FILE *f = fopen(path, "wb");

	CHECK(f != NULL);
	CHECK(fdr_write(w, f) == 0);
	fclose(f);
}

static void roundtrip(int version, uint64_t bufsize)
{
	char path[256];
	struct fdr *w = build(version, bufsize, 0);
	struct counts c = {0};
	struct fdr_file_info fi;
	const char *err = NULL;
	size_t len = 0, off = 0;
	char *buf;

	snprintf(path, sizeof(path), "%s/rt-v%d-%llu.fdr", dir, version,
		 (unsigned long long)bufsize);
	write_trace(w, path);
	fdr_free(w);
	buf = slurp(path, &len);
	CHECK(buf != NULL);
	CHECKF(fdr_read(buf, len, &fi, count_rec, &c, &err, &off) == 0, "%s at %zu", err, off);
	CHECK(fi.version == version);
	CHECK(c.entries[2] == 1000 && c.exits[2] == 1000);
	CHECK(c.entries[3] == 10 && c.exits[3] == 10);
	CHECK(c.entries[4] == 5 && c.exits[4] == 5);
	CHECK(c.args == 10);
	CHECK(c.cpu1 > 0);
	CHECK(c.pid == (version == 5 ? 4242 : 0));
	CHECK(fi.custom_events == 2); /* one opening event per thread */
	if (bufsize)
		CHECKF(fi.buffers > 4, "%llu buffers", (unsigned long long)fi.buffers);
	free(buf);
}

static void test_roundtrip_v5(void)
{
	roundtrip(5, 0);
	roundtrip(5, 512);
}

static void test_roundtrip_v1(void)
{
	roundtrip(1, 0);
	roundtrip(1, 512);
}

static void llvm_tools(int version, uint64_t bufsize)
{
	char trace[256], map[256], *out;
	struct fdr *w = build(version, bufsize, 0);

	snprintf(trace, sizeof(trace), "%s/llvm-v%d-%llu.fdr", dir, version,
		 (unsigned long long)bufsize);
	snprintf(map, sizeof(map), "%s/map.elf", dir);
	write_trace(w, trace);
	fdr_free(w);
	write_map(map);
	out = run_cmd("llvm-xray fdr-dump --verify %s 2>&1 >/dev/null; echo rc=$?", trace);
	CHECKF(strstr(out, "rc=0"), "fdr-dump --verify: %s", out);
	free(out);
	out = run_cmd("llvm-xray account -m %s %s 2>&1", map, trace);
	CHECKF(account_count(out, "foo::bar()") == 1000, "account:\n%s", out);
	CHECKF(account_count(out, "compute") == 10, "account:\n%s", out);
	CHECKF(account_count(out, "recurse") == 5, "account:\n%s", out);
	CHECKF(account_count(out, "main") == 1, "account:\n%s", out);
	/* Each function's file (llvm-xray prints its base name) and line from
	 * the map's DWARF, where llvm-xray printed "<invalid>:0:0:" before. */
	CHECKF(strstr(out, " prog.c:10:0: main\n") && strstr(out, " foo.cc:0:0: foo::bar()\n") &&
		   strstr(out, " libm.so.6:0:0: compute\n") &&
		   strstr(out, " [unknown]:0:0: recurse\n") && !strstr(out, "<invalid>"),
	       "account:\n%s", out);
	free(out);
	out = run_cmd("llvm-xray extract --symbolize %s 2>&1", map);
	CHECKF(strstr(out, "function-name: main") && !strstr(out, "<invalid>"), "extract:\n%s",
	       out);
	free(out);
	out = run_cmd("llvm-xray stack -m %s %s 2>&1", map, trace);
	CHECKF(strstr(out, "recurse") && strstr(out, "foo::bar()"), "stack:\n%s", out);
	free(out);
	out = run_cmd("llvm-xray graph -m %s %s 2>&1", map, trace);
	CHECKF(strstr(out, "digraph") && strstr(out, "compute"), "graph:\n%.500s", out);
	free(out);
	/* -y: convert names functions only when asked to */
	out = run_cmd("llvm-xray convert -f yaml -y -m %s %s 2>&1 | grep -c 'kind: function-'", map,
		      trace);
	CHECKF(atoi(out) == 2 * (1 + 1000 + 10 + 5), "yaml records: %s", out);
	free(out);
	out = run_cmd("llvm-xray convert -f yaml -y -m %s %s 2>&1 | grep -c 'function: compute, "
		      "args: \\[ 7, 9 \\]'",
		      map, trace);
	CHECKF(atoi(out) == 10, "yaml entries of compute with args 7, 9: %s", out);
	free(out);
	out = run_cmd("llvm-xray convert -f trace_event -y -m %s %s 2>&1 | grep -c '\"name\" : "
		      "\"compute\", \"ph\" : \"B\"'",
		      map, trace);
	CHECKF(atoi(out) == 10, "trace_event: %s", out);
	free(out);
}

static void test_llvm_xray_v5(void)
{
	llvm_tools(5, 0);
	llvm_tools(5, 512); /* many buffers per thread */
}

static void test_llvm_xray_v1(void)
{
	llvm_tools(1, 0);
	llvm_tools(1, 512);
}

/* The flight recorder keeps the newest events in bounded memory; the calls
 * still open where it cut are entered again, so llvm-xray reads it. */
static void test_flight_recorder(void)
{
	struct fdr_opts o = {.version = 5, .flight_recorder_bytes = 256 << 10};
	struct fdr *w = fdr_new(&o);
	struct fdr_stats st;
	char trace[256], map[256], *out;
	uint64_t ts = 1, i, max_held = 0;

	CHECK(fdr_func(w, 7, 0, ts, FDR_ENTRY, 1, NULL, 0) == 0);
	for (i = 0; i < 200000; i++) {
		CHECK(fdr_func(w, 7, 0, ts += 3, FDR_ENTRY, 3, NULL, 0) == 0);
		CHECK(fdr_func(w, 7, 0, ts += 3, FDR_EXIT, 3, NULL, 0) == 0);
		if (i % 10000 == 0) {
			fdr_get_stats(w, &st);
			if (st.bytes_held > max_held)
				max_held = st.bytes_held;
		}
	}
	fdr_get_stats(w, &st);
	CHECKF(max_held <= (256 << 10) + 65536, "held %llu", (unsigned long long)max_held);
	CHECK(st.dropped > 300000);
	snprintf(trace, sizeof(trace), "%s/fr.fdr", dir);
	snprintf(map, sizeof(map), "%s/map.elf", dir);
	write_trace(w, trace);
	/* A snapshot leaves the writer as it was: more events, another write. */
	CHECK(fdr_func(w, 7, 0, ts += 3, FDR_EXIT, 1, NULL, 0) == 0);
	write_trace(w, trace);
	fdr_free(w);
	if (!have_xray())
		return;
	write_map(map);
	out = run_cmd("llvm-xray account -m %s %s 2>&1", map, trace);
	CHECKF(account_count(out, "main") == 1 && account_count(out, "compute") > 1000,
	       "account:\n%s", out);
	free(out);
}

static void test_empty_and_garbage(void)
{
	struct fdr_opts o = {0};
	struct fdr *w = fdr_new(&o);
	FILE *f = tmpfile();
	unsigned char junk[64];
	const char *err;
	size_t off, i;

	CHECK(fdr_write(w, f) == -ENODATA);
	CHECK(ftell(f) == 0);
	fclose(f);
	CHECK(fdr_func(w, 1, 0, 5, FDR_ENTRY, 0, NULL, 0) == -EINVAL);
	CHECK(fdr_func(w, 1, 0, 5, FDR_ENTRY, FDR_MAX_FUNC_ID + 1, NULL, 0) == -EINVAL);
	fdr_free(w);
	CHECK(fdr_read("", 0, NULL, NULL, NULL, &err, &off) == -EINVAL);
	for (i = 0; i < sizeof(junk); i++)
		junk[i] = (unsigned char)(i * 37 + 11);
	CHECK(fdr_read(junk, sizeof(junk), NULL, NULL, NULL, &err, &off) == -EINVAL && err);
	/* Every truncation of a real trace is rejected or read, never a crash. */
	w = build(5, 512, 0);
	{
		char *buf = NULL;
		size_t len = 0;
		FILE *m = open_memstream(&buf, &len);

		fdr_write(w, m);
		fclose(m);
		for (i = 0; i < len; i += 7)
			fdr_read(buf, i, NULL, NULL, NULL, &err, &off);
		CHECK(fdr_read(buf, len - 8, NULL, NULL, NULL, &err, &off) == -EINVAL);
		free(buf);
	}
	fdr_free(w);
}

/* Exits by innermost call (func_id 0) and the stop's closing of open calls:
 * every entry read back has its exit, in LIFO order per thread. */
struct pairs {
	long depth[2], entries, exits, bad;
	uint32_t stack[2][8];
};

static int count_pairs(void *ctx, const struct fdr_record *r)
{
	struct pairs *p = ctx;
	int t = r->tid == 1 ? 0 : 1;

	if (r->action == FDR_ENTRY || r->action == FDR_ENTRY_ARGS) {
		p->entries++;
		if (p->depth[t] < 8)
			p->stack[t][p->depth[t]] = r->func_id;
		p->depth[t]++;
	} else if (r->action == FDR_EXIT) {
		p->exits++;
		if (!p->depth[t] || p->stack[t][--p->depth[t]] != r->func_id)
			p->bad++;
	}
	return 0;
}

static void test_close_open(void)
{
	struct fdr_opts o = {.version = 5};
	struct fdr *w = fdr_new(&o);
	struct pairs p = {0};
	char *buf = NULL;
	size_t len = 0, off;
	const char *err;
	FILE *m;

	CHECK(fdr_func(w, 1, 0, 10, FDR_ENTRY, 1, NULL, 0) == 0);
	CHECK(fdr_func(w, 1, 0, 11, FDR_ENTRY, 2, NULL, 0) == 0);
	CHECK(fdr_func(w, 2, 1, 12, FDR_ENTRY, 3, NULL, 0) == 0);
	CHECK(fdr_func(w, 1, 0, 13, FDR_EXIT, 0, NULL, 0) == 0); /* closes 2 */
	CHECK(fdr_func(w, 1, 0, 14, FDR_ENTRY, 2, NULL, 0) == 0);
	CHECK(fdr_close_open(w, 20) == 0);
	CHECK(fdr_func(w, 2, 1, 21, FDR_EXIT, 0, NULL, 0) == 0); /* none open: no record */
	/* As probes are attached: an exit whose entry was not seen, and one
	 * whose inner call's exit was missed. */
	CHECK(fdr_func(w, 2, 1, 22, FDR_EXIT, 5, NULL, 0) == 0); /* no record */
	CHECK(fdr_func(w, 2, 1, 23, FDR_ENTRY, 6, NULL, 0) == 0);
	CHECK(fdr_func(w, 2, 1, 24, FDR_ENTRY, 7, NULL, 0) == 0);
	CHECK(fdr_func(w, 2, 1, 25, FDR_EXIT, 6, NULL, 0) == 0); /* exits 7, then 6 */
	m = open_memstream(&buf, &len);
	CHECK(fdr_write(w, m) == 0);
	fclose(m);
	CHECK(fdr_read(buf, len, NULL, count_pairs, &p, &err, &off) == 0);
	CHECKF(p.entries == 6 && p.exits == 6 && !p.bad && !p.depth[0] && !p.depth[1],
	       "entries %ld exits %ld bad %ld", p.entries, p.exits, p.bad);
	free(buf);
	fdr_free(w);
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	RUN_TEST(test_roundtrip_v5);
	RUN_TEST(test_roundtrip_v1);
	RUN_TEST(test_empty_and_garbage);
	RUN_TEST(test_flight_recorder);
	RUN_TEST(test_close_open);
	if (have_xray()) {
		RUN_TEST(test_llvm_xray_v5);
		RUN_TEST(test_llvm_xray_v1);
	} else {
		SKIP_TEST(test_llvm_xray_v5, "llvm-xray not installed");
		SKIP_TEST(test_llvm_xray_v1, "llvm-xray not installed");
	}
	if (!getenv("KEEP")) {
		char cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		if (system(cmd))
			return 1;
	}
	CHECK_EXIT();
}
