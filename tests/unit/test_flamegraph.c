/* The HTML flame graph (formats/flamegraph.c): its data (the tree in
 * preorder, each name once), what is left out, and names from outside kept
 * as text. (tests/integration/test_flame.sh loads real pages in headless
 * Chromium.) */
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "formats/flamegraph.h"

static char *html(const struct flame *fl, const char *title)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	CHECK(flamegraph_write_html(fl, title, NULL, f) == 0);
	fclose(f);
	return buf;
}

static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (; (hay = strstr(hay, needle)); hay += strlen(needle))
		n++;
	return n;
}

static void test_data(void)
{
	struct flame *fl = flame_new();
	const char *a[] = {"p", "a", "b"};
	const char *b[] = {"p", "b"};
	char *s;

	CHECK(flame_add(fl, a, 3, 0, 3) == 0);
	CHECK(flame_add(fl, b, 2, 0, 1) == 0);
	s = html(fl, "t");
	CHECK(s);
	/* names sorted, "b" once for its two nodes; nodes in preorder as
	 * [name, total, children]: all(4) > p(4) > {a(3) > b(3), b(1)} */
	CHECKF(s && strstr(s, "\"names\": [\"a\",\n\"all\",\n\"b\",\n\"p\"],\n"
			      "\"nodes\": [1,4,1,3,4,2,0,3,1,2,3,0,2,1,0]}"),
	       "%s", s ? strstr(s, "\"names\"") : "");
	CHECK(s && strstr(s, "\"omitted\": 0"));
	free(s);
	flame_free(fl);
}

/* A frame under FLAMEGRAPH_MIN_KEPT of the samples is left out, and
 * counted; its samples stay in its caller's total. */
static void test_small_left_out(void)
{
	struct flame *fl = flame_new();
	const char *big[] = {"p", "main", "hot"};
	const char *tiny[] = {"p", "main", "cold", "colder"};
	char *s;

	CHECK(flame_add(fl, big, 3, 0, 100000) == 0);
	CHECK(flame_add(fl, tiny, 4, 0, 5) == 0); /* 0.005% */
	s = html(fl, "");
	CHECK(s && strstr(s, "\"hot\""));
	CHECK(s && !strstr(s, "cold"));
	CHECK(s && strstr(s, "\"omitted\": 2"));
	/* main: 100005, with one child kept */
	CHECKF(s && strstr(s, ",100005,1,"), "%s", s ? strstr(s, "\"nodes\"") : "");
	free(s);
	flame_free(fl);
}

/* A function named to end the script element and start another stays a
 * string: the page's own two elements are the only ones. */
static void test_hostile_name(void)
{
	struct flame *fl = flame_new();
	const char *a[] = {"p", "</script><script>alert(1)</script><!--", "x"};
	char *s;

	CHECK(flame_add(fl, a, 3, 0, 1) == 0);
	s = html(fl, "</script><b>title</b>");
	CHECK(s);
	CHECKF(s && count(s, "</script>") == 2 && count(s, "<script") == 2 && !strstr(s, "<!--") &&
		   !strstr(s, "<b>"),
	       "%d %d", s ? count(s, "</script>") : -1, s ? count(s, "<script") : -1);
	CHECK(s && strstr(s, "\"\\u003c/script\\u003e\\u003cscript\\u003ealert(1)\\u003c/"
			     "script\\u003e\\u003c!--\""));
	CHECK(s && strstr(s, "\"title\": \"\\u003c/script\\u003e\\u003cb\\u003etitle"));
	free(s);
	flame_free(fl);
}

static void test_json_str(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	flamegraph_json_str(f, "q\"b\\n\n\x01\x7f<>&\xe2\x80\xa8\xe2\x80\xa9\xc3\xa9");
	fclose(f);
	CHECKF(buf && !strcmp(buf, "\"q\\\"b\\\\n\\u000a\\u0001\\u007f\\u003c\\u003e\\u0026"
				   "\\u2028\\u2029\xc3\xa9\""),
	       "%s", buf);
	free(buf);
}

int main(void)
{
	RUN_TEST(test_data);
	RUN_TEST(test_small_left_out);
	RUN_TEST(test_hostile_name);
	RUN_TEST(test_json_str);
	CHECK_EXIT();
}
