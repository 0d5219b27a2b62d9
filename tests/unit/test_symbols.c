/* user/symbols.c: the /proc/kallsyms parser (kallsyms_parse) and the ELF
 * symbol reader, on inputs the fuzzers (tests/fuzz/fuzz_kallsyms.c,
 * fuzz_symbols.c) found them mishandling. */
#include <fcntl.h>
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

static int find_sym(void *ctx, uint64_t vaddr, uint64_t size, const char *name)
{
	struct find *f = ctx;

	(void)size;
	if (!strcmp(name, f->name))
		f->vaddr = vaddr;
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

	CHECK(f != NULL);
	if (f) {
		CHECK(symfile_foreach(f, find_sym, &any) == 0 && any.vaddr == 0);
		CHECK(symfile_lookup(f, 0x144, NULL, NULL) == NULL);
		CHECK(symfile_func_start(f, 0x150) == 0x40014a); /* in mid */
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
		got = symfile_func_start(f, off + 4);
		CHECKF(got == want.vaddr, "%#llx, want %#llx", (unsigned long long)got,
		       (unsigned long long)want.vaddr);
	}
	symfiles_free();
	if (fd >= 0)
		close(fd);
}

int main(void)
{
	RUN_TEST(test_kallsyms_basic);
	RUN_TEST(test_kallsyms_no_text);
	RUN_TEST(test_kallsyms_no_name);
	RUN_TEST(test_no_symbols);
	if (make_two())
		RUN_TEST(test_two_eh_frame_hdrs);
	else
		SKIP_TEST(test_two_eh_frame_hdrs, "objcopy could not add a section");
	free(run_cmd("rm -rf %s", two_dir));
	CHECK_EXIT();
}
