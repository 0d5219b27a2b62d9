/* Folded stacks (formats/folded.c): merging, totals, the names made safe
 * for the format, and lines as flamegraph.pl parses them. (Real recordings
 * are checked against pprof in tests/integration/test_flame.sh.) */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "formats/folded.h"

/* The folded text of fl (malloc'd). */
static char *folded(const struct flame *fl)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	CHECK(folded_write(fl, f) == 0);
	fclose(f);
	return buf;
}

/* Each line as flamegraph.pl reads it: /^(.*)\s+?(\d+(?:\.\d*)?)$/, then
 * the same again on the stack for a differential line, which must not
 * match; frames non-empty. The sum of the counts, or -1. */
static long long check_lines(const char *text)
{
	long long sum = 0;
	const char *p = text;

	while (*p) {
		const char *nl = strchr(p, '\n'), *sp, *q, *d;
		char *end;
		long long n;

		if (!nl)
			return -1;
		for (sp = nl; sp > p && sp[-1] != ' '; sp--)
			;
		if (sp == p || sp == nl)
			return -1;
		n = strtoll(sp, &end, 10);
		if (end != nl || n <= 0)
			return -1;
		/* no number after a space at the stack's end */
		for (d = sp - 1; d > p && ((d[-1] >= '0' && d[-1] <= '9') || d[-1] == '.'); d--)
			;
		if (d < sp - 1 && d > p && (d[-1] == ' ' || d[-1] == '\t'))
			return -1;
		/* no empty frame, no control byte */
		for (q = p; q < sp - 1; q++)
			if ((*q == ';' && (q == p || q[-1] == ';' || q + 1 == sp - 1)) ||
			    (unsigned char)*q < 0x20)
				return -1;
		sum += n;
		p = nl + 1;
	}
	return sum;
}

static void test_merge_and_totals(void)
{
	struct flame *fl = flame_new();
	const char *a[] = {"split", "main", "worker", "func_six"};
	const char *b[] = {"split", "main", "worker", "func_three"};
	const char *c[] = {"split", "main", "read", "vfs_read", "memset"};
	char *text;

	CHECK(fl);
	CHECK(flame_add(fl, a, 4, 0, 5) == 0);
	CHECK(flame_add(fl, b, 4, 0, 3) == 0);
	CHECK(flame_add(fl, a, 4, 0, 1) == 0);
	CHECK(flame_add(fl, c, 5, 2, 2) == 0);
	CHECK(flame_add(fl, a, 3, 0, 4) == 0); /* worker itself, a prefix of a */
	text = folded(fl);
	CHECKF(text && !strcmp(text, "split;main;read;vfs_read_[k];memset_[k] 2\n"
				     "split;main;worker 4\n"
				     "split;main;worker;func_six 6\n"
				     "split;main;worker;func_three 3\n"),
	       "%s", text);
	CHECK(check_lines(text) == 15);
	CHECK(flame_node(fl, 0)->total == 15);
	/* all, split, main, worker, func_six, func_three, read, vfs_read, memset */
	CHECK(flame_nodes(fl) == 9);
	CHECK(flame_node(fl, 9) == NULL);
	free(text);
	flame_free(fl);
}

static void test_bad_calls(void)
{
	struct flame *fl = flame_new();
	const char *a[] = {"p", "f"};
	char *text;

	CHECK(flame_add(fl, a, 0, 0, 1) == -EINVAL);
	CHECK(flame_add(fl, a, 2, 0, 0) == -EINVAL);
	CHECK(flame_add(fl, a, 2, 2, 1) == -EINVAL); /* the comm is no kernel frame */
	text = folded(fl);
	CHECK(text && !*text);
	CHECK(flame_node(fl, 0)->total == 0);
	free(text);
	flame_free(fl);
}

static void test_names(void)
{
	static const struct {
		const char *in;
		enum folded_kind kind;
		const char *out;
	} cases[] = {
	    {"f;g", FOLDED_USER, "f:g"},
	    {"line\nbreak\r", FOLDED_USER, "line\\x0abreak\\x0d"},
	    {"operator() 12", FOLDED_USER, "operator()_12"},
	    {"f 1.5", FOLDED_USER, "f_1.5"},
	    {"f 12a", FOLDED_USER, "f 12a"},
	    {"12", FOLDED_USER, "12"},
	    {"foo(int, long)", FOLDED_USER, "foo(int, long)"},
	    {"", FOLDED_USER, "[unknown]"},
	    {"do_syscall_64", FOLDED_KERNEL, "do_syscall_64_[k]"},
	    {"", FOLDED_KERNEL, "[unknown]_[k]"},
	    {"Web Content", FOLDED_COMM, "Web_Content"},
	    {"a;b 7", FOLDED_COMM, "a:b_7"},
	    {"bad\xff\xfe utf8", FOLDED_USER, "bad\\xff\\xfe utf8"},
	    {"</script><script>alert(1)</script>;x 12", FOLDED_USER,
	     "</script><script>alert(1)</script>:x_12"},
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *s = folded_name(cases[i].in, cases[i].kind);

		CHECKF(s && !strcmp(s, cases[i].out), "%zu: '%s' -> '%s', want '%s'", i,
		       cases[i].in, s, cases[i].out);
		free(s);
	}
}

/* Hostile names in every position: each still one frame of one line. */
static void test_hostile_lines(void)
{
	struct flame *fl = flame_new();
	const char *a[] = {"evil comm 3", "main", "a;b;c", "\n", "", "leaf 42"};
	const char *b[] = {"evil comm 3", "main", "</script>;x 12"};
	char *text;

	CHECK(flame_add(fl, a, 6, 0, 7) == 0);
	CHECK(flame_add(fl, b, 3, 1, 2) == 0);
	text = folded(fl);
	CHECKF(text && !strcmp(text, "evil_comm_3;main;</script>:x_12_[k] 2\n"
				     "evil_comm_3;main;a:b:c;\\x0a;[unknown];leaf_42 7\n"),
	       "%s", text);
	CHECK(check_lines(text) == 9);
	/* the checker sees the faults it looks for */
	CHECK(check_lines("a;f 12 3\n") == -1);
	CHECK(check_lines("a;;b 3\n") == -1);
	CHECK(check_lines("a;b; 3\n") == -1);
	CHECK(check_lines("a;b 0\n") == -1);
	CHECK(check_lines("a;b 3") == -1);
	free(text);
	flame_free(fl);
}

/* Memory follows distinct stacks: the same stacks of many processes of one
 * program (comm) add no node. */
static void test_bounded(void)
{
	struct flame *fl = flame_new();
	const char *a[] = {"sh", "main", "exec", "strlen"};
	size_t nodes;
	int i;

	CHECK(flame_add(fl, a, 4, 1, 1) == 0);
	nodes = flame_nodes(fl);
	for (i = 0; i < 100000; i++)
		CHECK(flame_add(fl, a, 4, 1, 1) == 0);
	CHECK(flame_nodes(fl) == nodes);
	CHECK(flame_node(fl, 0)->total == 100001);
	flame_free(fl);
}

/* Children sorted: many siblings in any order give sorted lines. */
static void test_sorted_siblings(void)
{
	struct flame *fl = flame_new();
	char name[16], *text, *p, prev[32] = "";
	const char *st[] = {"p", name};
	int i, lines = 0;

	for (i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "f%d", (i * 7919) % 1000);
		CHECK(flame_add(fl, st, 2, 0, 1) == 0);
	}
	text = folded(fl);
	CHECK(text && check_lines(text) == 1000);
	for (p = text; p && *p; p = strchr(p, '\n') + 1, lines++) {
		char cur[32];

		CHECK(sscanf(p, "%31[^ ]", cur) == 1);
		CHECKF(strcmp(prev, cur) < 0, "%s after %s", cur, prev);
		strcpy(prev, cur);
	}
	CHECK(lines == 1000);
	free(text);
	flame_free(fl);
}

/* flame_add_n: each tree gets what flame_add would have given it alone
 * (names made safe, kernel suffix, its own count; none where its count is
 * 0), whatever the other trees hold. */
static void test_add_n(void)
{
	struct flame *fls[3] = {flame_new(), flame_new(), flame_new()};
	const char *a[] = {"my comm", "main", "f;g", "do_nanosleep"};
	const char *b[] = {"my comm", "main", "h 12"};
	char *text[3];
	int i;

	CHECK(fls[0] && fls[1] && fls[2]);
	CHECK(flame_add(fls[1], b, 3, 0, 9) == 0); /* a tree that differs already */
	CHECK(flame_add_n(fls, (uint64_t[]){5, 0, 7}, 3, a, 4, 1) == 0);
	CHECK(flame_add_n(fls, (uint64_t[]){0, 2, 3}, 3, b, 3, 0) == 0);
	CHECK(flame_add_n(fls, (uint64_t[]){0, 0, 0}, 3, b, 3, 0) == -EINVAL);
	CHECK(flame_add_n(fls, (uint64_t[]){1, 1, 1, 1, 1}, FLAME_ADD_MAX + 1, b, 3, 0) == -EINVAL);
	for (i = 0; i < 3; i++)
		text[i] = folded(fls[i]);
	CHECKF(text[0] && !strcmp(text[0], "my_comm;main;f:g;do_nanosleep_[k] 5\n"), "%s", text[0]);
	CHECKF(text[1] && !strcmp(text[1], "my_comm;main;h_12 11\n"), "%s", text[1]);
	CHECKF(text[2] && !strcmp(text[2], "my_comm;main;f:g;do_nanosleep_[k] 7\n"
					   "my_comm;main;h_12 3\n"),
	       "%s", text[2]);
	CHECK(flame_node(fls[0], 0)->total == 5 && flame_node(fls[1], 0)->total == 11 &&
	      flame_node(fls[2], 0)->total == 10);
	for (i = 0; i < 3; i++) {
		free(text[i]);
		flame_free(fls[i]);
	}
}

/* The wall view made at the end: the CPU tree at a sample's period plus
 * the off-CPU tree gives what adding each stack to a third tree gave. */
static void test_merge(void)
{
	struct flame *cpu = flame_new(), *off = flame_new(), *wall = flame_new(),
		     *want = flame_new();
	const char *a[] = {"my comm", "main", "f;g", "do_nanosleep"};
	const char *b[] = {"my comm", "main", "h 12"};
	const char *c[] = {"other", "main", "work"};
	char *got = NULL, *exp = NULL;

	CHECK(cpu && off && wall && want);
	if (!cpu || !off || !wall || !want)
		goto out;
	CHECK(flame_add_n((struct flame *[]){cpu, want}, (uint64_t[]){3, 3 * 10101}, 2, b, 3, 0) ==
	      0);
	CHECK(flame_add_n((struct flame *[]){cpu, want}, (uint64_t[]){2, 2 * 10101}, 2, c, 3, 0) ==
	      0);
	CHECK(flame_add_n((struct flame *[]){off, want}, (uint64_t[]){7000, 7000}, 2, a, 4, 1) ==
	      0);
	CHECK(flame_add_n((struct flame *[]){off, want}, (uint64_t[]){55, 55}, 2, b, 3, 0) == 0);
	CHECK(flame_merge(wall, cpu, 10101) == 0 && flame_merge(wall, off, 1) == 0);
	CHECK(flame_merge(wall, cpu, 0) == 0); /* nothing */
	got = folded(wall);
	exp = folded(want);
	CHECKF(got && exp && !strcmp(got, exp), "merged:\n%s\nadded:\n%s", got, exp);
	CHECK(flame_nodes(wall) == flame_nodes(want));
	CHECK(flame_node(wall, 0)->total == 5 * 10101 + 7055 &&
	      flame_node(wall, 0)->total == flame_node(want, 0)->total);
out:
	free(got);
	free(exp);
	flame_free(cpu);
	flame_free(off);
	flame_free(wall);
	flame_free(want);
}

int main(void)
{
	RUN_TEST(test_merge_and_totals);
	RUN_TEST(test_bad_calls);
	RUN_TEST(test_names);
	RUN_TEST(test_hostile_lines);
	RUN_TEST(test_bounded);
	RUN_TEST(test_sorted_siblings);
	RUN_TEST(test_add_n);
	RUN_TEST(test_merge);
	CHECK_EXIT();
}
