/* user/symbols.c: the /proc/kallsyms parser (kallsyms_parse), on texts the
 * fuzzer (tests/fuzz/fuzz_kallsyms.c) found it mishandled. */
#include <stdlib.h>
#include <string.h>
#include "check.h"
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

int main(void)
{
	RUN_TEST(test_kallsyms_basic);
	RUN_TEST(test_kallsyms_no_text);
	RUN_TEST(test_kallsyms_no_name);
	CHECK_EXIT();
}
