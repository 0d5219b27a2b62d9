/* user/symbols.c: the /proc/kallsyms parser (kallsyms_parse) and the ELF
 * symbol reader, on inputs the fuzzers (tests/fuzz/fuzz_kallsyms.c,
 * fuzz_symbols.c) found them mishandling; a cgo Go program's source lines. */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check.h"
#include "testutil.h"
#include "user/symbols.h"

/* kallsyms_parse takes a malloc'd text; this gives it a copy of s. */
static int parse(const char *s)
{
	size_t len = strlen(s);
	char *t = malloc(len + 1);

	if (!t)
		return -1;
	memcpy(t, s, len + 1);
	return kallsyms_parse(t, len);
}

static void test_kallsyms_basic(void)
{
	const char *mod = "unset";

	CHECK(parse("ffffffff81000000 T _stext\n"
		    "ffffffff81000100 t helper\n"
		    "ffffffff81000200 D some_data\n"
		    "ffffffffc0000000 t mod_func\t[mymod]\n") == 0);
	CHECK(kallsyms_lookup(0xffffffff81000150, &mod) &&
	      !strcmp(kallsyms_lookup(0xffffffff81000150, &mod), "helper") && mod == NULL);
	CHECK(kallsyms_lookup(0xffffffffc0000010, &mod) &&
	      !strcmp(kallsyms_lookup(0xffffffffc0000010, &mod), "mod_func") && mod &&
	      !strcmp(mod, "mymod"));
	CHECK(kallsyms_lookup(0x1000, NULL) == NULL);
	kallsyms_free();
}

/* No text symbol at all: an empty table, and qsort must not see its NULL
 * (a UBSan report, found by fuzzing). */
static void test_kallsyms_no_text(void)
{
	CHECK(parse("") == 0);
	CHECK(kallsyms_lookup(0x1000, NULL) == NULL);
	kallsyms_free();
	CHECK(parse("ffffffff81000000 D data\nnonsense\n") == 0);
	CHECK(kallsyms_lookup(0xffffffff81000000, NULL) == NULL);
	kallsyms_free();
}

/* "ADDR t" with no name: the name was taken from 3 bytes past the type,
 * beyond the line's end (past the buffer's end on the last line, a heap
 * overflow found by fuzzing; else the next line, as a bogus name). */
static void test_kallsyms_no_name(void)
{
	const char *name;

	CHECK(parse("1000 t\n2000 T real\n") == 0);
	name = kallsyms_lookup(0x1000, NULL);
	CHECKF(name == NULL, "0x1000 named \"%s\"", name);
	name = kallsyms_lookup(0x2000, NULL);
	CHECK(name && !strcmp(name, "real"));
	kallsyms_free();
	CHECK(parse("2000 T real\n1000 t") == 0);
	CHECK(kallsyms_lookup(0x1000, NULL) == NULL);
	kallsyms_free();
}

struct find {
	const char *name;
	uint64_t vaddr;
};

static int find_sym(void *ctx, const struct symfile_sym *s)
{
	struct find *f = ctx;

	if (!strcmp(s->name, f->name))
		f->vaddr = s->vaddr;
	return 0;
}

/* A stripped ELF (the fuzzer's seed): no symbol, an empty table, whose NULL
 * qsort must not see (UBSan); functions are still found by their FDEs. */
static void test_no_symbols(void)
{
	const char *path = "tests/fuzz/corpus/symbols/stripped";
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct symfile *f = fd >= 0 ? symfile_get(fd, path) : NULL;
	struct find any = {"", 0};
	const char *name = NULL;

	CHECK(f != NULL);
	if (f) {
		CHECK(symfile_foreach(f, find_sym, &any) == 0 && any.vaddr == 0);
		CHECK(symfile_lookup(f, 0x144, NULL, NULL, NULL) == NULL);
		CHECK(symfile_func_start(f, 0x150, &name) == 0x40014a); /* in mid */
	}
	symfiles_free();
	if (fd >= 0)
		close(fd);
}

/* A copy of this program with a second .eh_frame_hdr, as objcopy adds one:
 * at address 0. */
static char two_dir[] = "/tmp/test_symbols.XXXXXX", two_path[64];

static int make_two(void)
{
	char *out;
	int ok;

	if (!mkdtemp(two_dir))
		return 0;
	out = run_cmd("cd %s && objcopy -O binary --only-section=.eh_frame_hdr /proc/%d/exe hdr && "
		      "objcopy --add-section .ehx=hdr /proc/%d/exe one && "
		      "objcopy --rename-section .ehx=.eh_frame_hdr one two && echo ok",
		      two_dir, getpid(), getpid());
	ok = out && !strcmp(out, "ok\n");
	free(out);
	snprintf(two_path, sizeof(two_path), "%s/two", two_dir);
	return ok;
}

/* The second table replaced the first, which leaked (LeakSanitizer, found
 * by fuzzing), and its addresses, relative to 0, hid every function start:
 * the first table is kept. */
static void test_two_eh_frame_hdrs(void)
{
	struct find want = {"find_sym", 0};
	struct symfile *f;
	uint64_t off = UINT64_MAX, got;
	const char *name = NULL;
	int fd = open(two_path, O_RDONLY | O_CLOEXEC);

	CHECK(fd >= 0);
	f = fd >= 0 ? symfile_get(fd, two_path) : NULL;
	CHECK(f != NULL);
	if (f) {
		symfile_foreach(f, find_sym, &want);
		off = want.vaddr ? symfile_offset(f, want.vaddr) : UINT64_MAX;
	}
	CHECK(off != UINT64_MAX);
	if (off != UINT64_MAX) {
		got = symfile_func_start(f, off + 4, &name);
		CHECKF(got == want.vaddr, "%#llx, want %#llx", (unsigned long long)got,
		       (unsigned long long)want.vaddr);
	}
	symfiles_free();
	if (fd >= 0)
		close(fd);
}

struct named {
	const char *name;
	struct symfile_sym s;
	int seen;
};

static int find_named(void *ctx, const struct symfile_sym *s)
{
	struct named *n = ctx;

	for (; n->name; n++)
		if (!strcmp(s->name, n->name) && (!n->s.version || !s->hidden == !n->s.hidden)) {
			n->s = *s;
			n->seen++;
		}
	return 0;
}

/* libnames.so (tests/unit/names_lib.c, stripped, built next to this
 * program): C++ and Rust names demangled, the mangled one kept as the
 * system name; .dynsym's versions; every alias at an address listed. */
static void test_names(void)
{
	struct named want[] = {
	    {"_ZN2ns3fooISt6vectorIiSaIiEEEEvT_", {0}, 0},
	    {"_ZN4core3fmt9Formatter3pad17h0d2e1c0a2a5c8f1bE", {0}, 0},
	    {"_RNvNtCs1234_7mycrate3foo3bar", {0}, 0},
	    {"plain_fn", {0}, 0},
	    {"impl_free", {0}, 0},
	    {"vfree", {.version = "", .hidden = false}, 0},
	    {"vfree", {.version = "", .hidden = true}, 0},
	    {NULL, {0}, 0},
	};
	static const char *const display[] = {
	    ("void ns::foo<std::vector<int, std::allocator<int> > >(std::vector<int, "
	     "std::allocator<int> >)"),
	    "core::fmt::Formatter::pad", "mycrate::foo::bar", "plain_fn"};
	char exe[512], path[600], *slash;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	const char *name, *sys;
	struct symfile *f = NULL;
	size_t i;
	int fd = -1;

	if (n > 0) {
		exe[n] = 0;
		if ((slash = strrchr(exe, '/')))
			*slash = 0;
		snprintf(path, sizeof(path), "%s/libnames.so", exe);
		fd = open(path, O_RDONLY | O_CLOEXEC);
	}
	CHECKF(fd >= 0, "%s", path);
	f = fd >= 0 ? symfile_get(fd, path) : NULL;
	CHECK(f != NULL);
	if (!f)
		goto out;
	CHECK(symfile_foreach(f, find_named, want) == 0);
	for (i = 0; want[i].name; i++)
		CHECKF(want[i].seen == 1, "%s seen %d times", want[i].name, want[i].seen);
	for (i = 0; i < 4; i++) {
		uint64_t off = symfile_offset(f, want[i].s.vaddr);

		CHECKF(want[i].s.display && !strcmp(want[i].s.display, display[i]), "%s: \"%s\"",
		       want[i].name, want[i].s.display);
		name = symfile_lookup(f, off, NULL, NULL, &sys);
		CHECKF(name && !strcmp(name, display[i]), "lookup: \"%s\"", name);
		if (i < 3)
			CHECKF(sys && !strcmp(sys, want[i].name), "system name \"%s\"", sys);
		else
			CHECK(sys == NULL);
		/* Once per symbol: the same string again. */
		CHECK(symfile_lookup(f, off, NULL, NULL, NULL) == name);
	}
	/* impl_free and vfree@@V_2: one address, one name for it. */
	CHECK(want[4].s.vaddr && want[4].s.vaddr == want[5].s.vaddr);
	CHECK(want[4].s.primary && want[4].s.primary == want[5].s.primary);
	CHECK(want[5].s.version && !strcmp(want[5].s.version, "V_2") && !want[5].s.hidden);
	CHECK(want[6].s.version && !strcmp(want[6].s.version, "V_1") && want[6].s.hidden);
	CHECK(want[6].s.vaddr != want[5].s.vaddr);
out:
	symfiles_free();
	if (fd >= 0)
		close(fd);
}

/* Every PLT stub objdump names (func@plt, in .plt, .plt.sec and .plt.got),
 * named the same at its start and in its middle: this program's own,
 * libpython's (.plt and .plt.got) and ld.so's. They were named by the
 * nearest symbol before them (_init), or not at all. */
/* symfile_synth_run's callback: 1 at the stub wanted. */
struct stub_key {
	uint64_t va;
	const char *name;
};

static int is_stub(void *ctx, const struct symfile_sym *s)
{
	const struct stub_key *k = ctx;

	return s->vaddr == k->va && s->size && !strcmp(s->display, k->name);
}

static void check_plt(const char *path, bool must)
{
	char *out = run_cmd("objdump -d -j .plt -j .plt.sec -j .plt.got '%s' 2>/dev/null", path);
	char *line, *save = NULL;
	struct symfile *f = NULL;
	size_t stubs = 0, bad = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 && !must) {
		free(out);
		return;
	}
	f = fd >= 0 ? symfile_get(fd, path) : NULL;
	CHECKF(f != NULL, "%s", path);
	for (line = out && f ? strtok_r(out, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		unsigned long long va;
		char want[256];
		const char *got, *mid;
		uint64_t off;

		/* "0000000000001030 <open@plt>:"; PLT0 is "<x@plt-0x10>". */
		if (sscanf(line, "%llx <%255[^>]>:", &va, want) != 2 || !strstr(want, "@plt") ||
		    strstr(want, "@plt-") || strstr(want, "@plt+"))
			continue;
		stubs++;
		off = symfile_offset(f, va);
		got = off == UINT64_MAX ? NULL : symfile_lookup(f, off, NULL, NULL, NULL);
		mid = off == UINT64_MAX ? NULL : symfile_lookup(f, off + 6, NULL, NULL, NULL);
		/* The run of stubs from the middle of one holds it (what
		 * names-PID.so gets for cpu-PID.prof's readers). */
		struct stub_key k = {va, want};

		if (!got || strcmp(got, want) || !mid || strcmp(mid, want) ||
		    symfile_synth_run(f, off + 6, is_stub, &k) != 1) {
			if (bad++ < 3)
				fprintf(stderr, "%s: %#llx is \"%s\", +6 \"%s\", want \"%s\"\n",
					path, va, got ? got : "(null)", mid ? mid : "(null)", want);
		}
	}
	CHECKF(!must || stubs > 0, "%s: objdump named no PLT stub", path);
	CHECKF(bad == 0, "%s: %zu of %zu stubs misnamed", path, bad, stubs);
	free(out);
	symfiles_free();
	if (fd >= 0)
		close(fd);
}

static void test_plt(void)
{
	char exe[512];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	CHECK(n > 0);
	if (n > 0) {
		exe[n] = 0;
		check_plt(exe, true);
	}
	check_plt("/lib64/ld-linux-x86-64.so.2", true);
	check_plt("/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0", false);
}

/* Debian's ld.so: no .symtab, and no FDE at its entry point, the root of
 * every stack sampled while it loads a program: named _start there (and
 * in its middle), as perf names it; nothing after it is. A copy without
 * its build id, so that libc6-dbg's symbols (which name _start) are not
 * found for it. */
static void test_entry(void)
{
	char dir[] = "/tmp/test_symbols_entry.XXXXXX", path[64];
	char *out = NULL;
	unsigned long long entry = 0;
	int fd = -1;
	struct symfile *f = NULL;
	const char *a, *b, *c = NULL;
	uint64_t off;

	if (mkdtemp(dir)) {
		snprintf(path, sizeof(path), "%s/ld.so", dir);
		free(run_cmd("objcopy --remove-section .note.gnu.build-id "
			     "/lib64/ld-linux-x86-64.so.2 %s",
			     path));
		out = run_cmd("readelf -h %s | sed -n 's/.*Entry point address: *//p'", path);
		entry = out ? strtoull(out, NULL, 16) : 0;
		fd = open(path, O_RDONLY | O_CLOEXEC);
	}
	f = fd >= 0 ? symfile_get(fd, path) : NULL;
	CHECK(entry && f);
	if (entry && f) {
		off = symfile_offset(f, entry);
		a = symfile_lookup(f, off, NULL, NULL, NULL);
		b = symfile_lookup(f, off + 3, NULL, NULL, NULL);
		CHECKF(a && !strcmp(a, "_start") && b && !strcmp(b, "_start"), "\"%s\", \"%s\"",
		       a ? a : "(null)", b ? b : "(null)");
		/* Not a function to trace. */
		struct find want = {"_start", 0};

		symfile_foreach(f, find_sym, &want);
		CHECK(want.vaddr == 0);
		/* Made here, so given to cpu-PID.prof's readers. */
		struct stub_key k = {entry, "_start"};

		CHECK(symfile_synth_run(f, off + 3, is_stub, &k) == 1);
		/* The function after it is not _start. */
		symfile_func_start(f, off + 0x200, &c);
		c = symfile_lookup(f, off + 0x200, NULL, NULL, NULL);
		CHECKF(!c || strcmp(c, "_start"), "0x200 past the entry: %s", c);
	}
	free(out);
	symfiles_free();
	if (fd >= 0)
		close(fd);
	free(run_cmd("rm -rf %s", dir));
}

/* glibc's __restore_rt, absent from stripped libc's symbols: its signal
 * frame's FDE starts one byte before its code (mov $15,%rax; syscall),
 * where a caller's pc - 1 lands. Found here by its bytes. */
static void test_restore_rt(void)
{
	static const unsigned char code[] = {0x48, 0xc7, 0xc0, 0x0f, 0, 0, 0, 0x0f, 0x05};
	const char *path = "/lib/x86_64-linux-gnu/libc.so.6";
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct symfile *f = fd >= 0 ? symfile_get(fd, path) : NULL;
	const char *name = NULL, *other = NULL;
	char *buf = NULL, *hit = NULL;
	off_t size = fd >= 0 ? lseek(fd, 0, SEEK_END) : -1;

	CHECK(f && size > 0);
	if (f && size > 0 && (buf = malloc(size)) && pread(fd, buf, size, 0) == size)
		hit = memmem(buf, size, code, sizeof(code));
	CHECK(hit != NULL);
	if (hit) {
		uint64_t off = hit - buf;

		CHECK(symfile_lookup(f, off - 1, NULL, NULL, NULL) == NULL);
		CHECK(symfile_func_start(f, off - 1, &name) == off - 1); /* libc: vaddr = off */
		CHECKF(name && !strcmp(name, "__restore_rt"), "\"%s\"", name ? name : "(null)");
		/* An ordinary function's FDE gives no such name. */
		symfile_func_start(f, off - 0x40, &other);
		CHECK(other == NULL);
	}
	free(buf);
	symfiles_free();
	if (fd >= 0)
		close(fd);
}

/* A stripped libz's functions that no symbol covers (deflate's internals):
 * symfile_fde_run gives each, at any offset in it, with its FDE's range as
 * readelf reads it from .eh_frame, and its neighbours of the same kind in
 * address order, padding at most between them; never a function a symbol
 * covers (deflate). */
struct fde_rows {
	uint64_t start[4096], end[4096];
	size_t n;
};

struct fde_got {
	const struct fde_rows *rows;
	struct symfile *f;
	uint64_t last; /* where the one before ended, 0 first */
	size_t n, bad;
	bool has; /* the function asked about was given */
	uint64_t want;
};

static int check_fde(void *ctx, const struct symfile_sym *s)
{
	struct fde_got *g = ctx;
	size_t i;

	for (i = 0; i < g->rows->n && g->rows->start[i] != s->vaddr; i++)
		;
	if (i == g->rows->n || g->rows->end[i] - s->vaddr != s->size || s->name ||
	    symfile_lookup(g->f, symfile_offset(g->f, s->vaddr), NULL, NULL, NULL) ||
	    (g->last && (s->vaddr < g->last || s->vaddr - g->last >= 16))) {
		CHECKF(false, "FDE run: %#llx+%#llx", (unsigned long long)s->vaddr,
		       (unsigned long long)s->size);
		g->bad++;
	}
	g->has |= s->vaddr == g->want;
	g->last = s->vaddr + s->size;
	g->n++;
	return 0;
}

static void test_fde_run(void)
{
	const char *path = "/lib/x86_64-linux-gnu/libz.so.1";
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct symfile *f = fd >= 0 ? symfile_get(fd, path) : NULL;
	char *out = run_cmd("readelf -wf %s", path), *p = out;
	static struct fde_rows rows;
	size_t i, named = 0, runs = 0;

	CHECK(f && out);
	rows.n = 0;
	while (p && (p = strstr(p, " FDE cie=")) && rows.n < 4096) {
		unsigned long long a, b;

		if ((p = strstr(p, "pc=")) && sscanf(p, "pc=%llx..%llx", &a, &b) == 2) {
			rows.start[rows.n] = a;
			rows.end[rows.n++] = b;
		}
	}
	CHECK(rows.n > 20);
	for (i = 0; f && i < rows.n; i++) {
		uint64_t off = symfile_offset(f, rows.start[i]);
		uint64_t mid = off + (rows.end[i] - rows.start[i]) / 2;
		struct fde_got g = {&rows, f, 0, 0, 0, false, rows.start[i]};
		bool sym = symfile_lookup(f, mid, NULL, NULL, NULL) != NULL;

		CHECK(symfile_fde_run(f, mid, check_fde, &g) == 0);
		if (sym) {
			CHECKF(g.n == 0, "%#llx has a symbol", (unsigned long long)rows.start[i]);
			continue;
		}
		named++;
		runs += g.n > 0;
		CHECKF(g.has && !g.bad, "%#llx: not in its run", (unsigned long long)rows.start[i]);
	}
	/* libz's statics (deflate_slow, longest_match...) are most of its code. */
	CHECKF(named > 20 && runs == named, "%zu FDE-named functions, %zu in runs", named, runs);
	free(out);
	symfiles_free();
	if (fd >= 0)
		close(fd);
}

/* tests/workloads/gocgo.go built by the newer Go (/usr/local/go, 1.26+,
 * whose line table no longer holds its text start; GO_NEW names another):
 * cgo links it with the C linker, whose .text begins with C code, before
 * runtime.text. symfile_srcline gives every instruction of its main.*
 * functions the function's file and line that Go's own objdump lists. */
static char go_dir[] = "/tmp/test_symbols_go.XXXXXX";
static const char *go_new = "/usr/local/go/bin/go";

struct go_rows {
	struct symfile *f;
	size_t bad;
};

static void check_go_row(void *ctx, const char *func, const char *file, int ln,
			 unsigned long long pc)
{
	struct go_rows *r = ctx;
	uint64_t off = symfile_offset(r->f, pc);
	const char *sf = NULL, *name = symfile_lookup(r->f, off, NULL, NULL, NULL);
	int sl = 0;

	if (!name || strcmp(name, func) || symfile_srcline(r->f, off, &sf, &sl) || sl != ln ||
	    !ends_with(sf, file)) {
		if (r->bad++ < 5)
			CHECKF(0, "%#llx: %s %s:%d, objdump %s %s:%d", pc, name, sf, sl, func, file,
			       ln);
	}
}

static void test_go_cgo_lines(void)
{
	char bin[128], *out, *addrs;
	unsigned long long rt = 0, text = 0;
	struct go_rows r = {0};
	size_t n = 0;
	int fd;

	snprintf(bin, sizeof(bin), "%s/gocgo", go_dir);
	out = run_cmd("GOCACHE=%s %s tool objdump -s '^main\\.' %s 2>&1", go_cache(), go_new, bin);
	/* The case this is for: C code before runtime.text. */
	addrs = run_cmd("nm %s | sed -n 's/ t runtime\\.text$//p'; readelf -SW %s | "
			"sed -n 's/.* \\.text *PROGBITS *\\([0-9a-f]*\\) .*/\\1/p'",
			bin, bin);
	CHECKF(addrs && sscanf(addrs, "%llx %llx", &rt, &text) == 2 && rt > text,
	       "runtime.text and .text at: %s", addrs ? addrs : "");
	free(addrs);
	fd = open(bin, O_RDONLY | O_CLOEXEC);
	CHECKF(fd >= 0, "%s", bin);
	r.f = fd >= 0 ? symfile_get(fd, bin) : NULL;
	CHECK(r.f != NULL);
	if (out && r.f)
		n = go_objdump_rows(out, check_go_row, &r);
	CHECKF(n > 10 && !r.bad, "%zu of %zu instructions differ", r.bad, n);
	symfiles_free();
	if (fd >= 0)
		close(fd);
	free(out);
}

/* Builds gocgo in go_dir: true, or false (why printed). */
static bool build_gocgo(void)
{
	char *out;
	bool ok;

	if (getenv("GO_NEW") && *getenv("GO_NEW"))
		go_new = getenv("GO_NEW");
	if (!mkdtemp(go_dir) || access(go_new, X_OK)) {
		fprintf(stderr, "test_go_cgo_lines: no %s\n", go_new);
		return false;
	}
	out = run_cmd("cd %s && GO111MODULE=off GOCACHE=%s CGO_ENABLED=1 %s build -o gocgo "
		      "%s/tests/workloads/gocgo.go 2>&1 && echo ok",
		      go_dir, go_cache(), go_new, getenv("PWD") ? getenv("PWD") : ".");
	ok = out && strstr(out, "ok\n");
	if (!ok)
		fprintf(stderr, "test_go_cgo_lines: %s build failed: %s\n", go_new, out ? out : "");
	free(out);
	return ok;
}

int main(void)
{
	RUN_TEST(test_kallsyms_basic);
	RUN_TEST(test_kallsyms_no_text);
	RUN_TEST(test_kallsyms_no_name);
	RUN_TEST(test_no_symbols);
	RUN_TEST(test_names);
	RUN_TEST(test_plt);
	RUN_TEST(test_entry);
	RUN_TEST(test_restore_rt);
	RUN_TEST(test_fde_run);
	if (make_two())
		RUN_TEST(test_two_eh_frame_hdrs);
	else
		SKIP_TEST(test_two_eh_frame_hdrs, "objcopy could not add a section");
	free(run_cmd("rm -rf %s", two_dir));
	/* CI has the newer Go: missing, the test fails there, not skips. */
	if (build_gocgo() || (getenv("CI") && !strcmp(getenv("CI"), "true")))
		RUN_TEST(test_go_cgo_lines);
	else
		SKIP_TEST(test_go_cgo_lines, "no Go 1.26+ at /usr/local/go (GO_NEW=) or no cgo");
	free(run_cmd("rm -rf %s", go_dir));
	CHECK_EXIT();
}
