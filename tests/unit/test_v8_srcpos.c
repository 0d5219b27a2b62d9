/* formats/v8_srcpos.c: source position tables encoded as V8's
 * SourcePositionTableBuilder does, line ends, and hostile tables. */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include "check.h"
#include "formats/v8_srcpos.h"

/* V8's encoding (src/codegen/source-position-table.cc): zigzag, then 7
 * bits a byte, low first. */
static size_t put(uint8_t *b, size_t i, int64_t v)
{
	uint64_t u = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);

	do {
		b[i++] = (uint8_t)((u & 0x7f) | (u > 0x7f ? 0x80 : 0));
		u >>= 7;
	} while (u);
	return i;
}

struct ent {
	int off;
	int64_t pos;
	int statement;
};

static size_t encode(uint8_t *b, const struct ent *e, size_t n)
{
	int64_t off = 0, pos = 0;
	size_t i = 0;

	for (size_t k = 0; k < n; k++) {
		int64_t d = e[k].off - off;

		i = put(b, i, e[k].statement ? d : -d - 1);
		i = put(b, i, e[k].pos - pos);
		off = e[k].off;
		pos = e[k].pos;
	}
	return i;
}

/* A SourcePosition's raw value: script offset, inlining id (-1: none). */
static int64_t sp(int32_t script_off, int inl)
{
	return (int64_t)script_off << 1 | (int64_t)(inl + 1) << 31;
}

static void test_find(void)
{
	/* Positions go back and forth (an expression's, then its
	 * statement's); code offsets only up. */
	const struct ent e[] = {{0, sp(120, -1), 1},	      {4, sp(131, -1), 0},
				{9, sp(125, -1), 1},	      {9, sp(300, -1), 0},
				{200, sp(70000, 2), 1},	      {201, sp(40, 0), 0},
				{5000, sp(1 << 29, 65534), 1}};
	uint8_t b[256];
	size_t n = encode(b, e, sizeof(e) / sizeof(e[0]));
	int64_t p = -1;

	CHECK(v8_srcpos_find(b, n, 0, &p) == 0 && p == sp(120, -1));
	CHECK(v8_srcpos_find(b, n, 3, &p) == 0 && p == sp(120, -1));
	CHECK(v8_srcpos_find(b, n, 4, &p) == 0 && v8_srcpos_script_offset(p) == 131);
	/* Two entries at one offset: the last. */
	CHECK(v8_srcpos_find(b, n, 9, &p) == 0 && v8_srcpos_script_offset(p) == 300);
	CHECK(v8_srcpos_find(b, n, 199, &p) == 0 && v8_srcpos_script_offset(p) == 300);
	CHECK(v8_srcpos_find(b, n, 200, &p) == 0 && v8_srcpos_script_offset(p) == 70000 &&
	      v8_srcpos_inlining_id(p) == 2);
	CHECK(v8_srcpos_find(b, n, 201, &p) == 0 && v8_srcpos_script_offset(p) == 40 &&
	      v8_srcpos_inlining_id(p) == 0);
	CHECK(v8_srcpos_find(b, n, 1u << 31, &p) == 0 && v8_srcpos_script_offset(p) == 1 << 29 &&
	      v8_srcpos_inlining_id(p) == 65534);
	CHECK(v8_srcpos_inlining_id(sp(5, -1)) == -1);
	/* Nothing before the first entry; an empty table. */
	n = encode(b, &e[1], 1);
	CHECK(v8_srcpos_find(b, n, 3, &p) == -ENOENT);
	CHECK(v8_srcpos_find(b, 0, 3, &p) == -ENOENT);
}

static void test_hostile(void)
{
	uint8_t b[64];
	int64_t p;
	size_t n;

	/* A VLQ cut at the end, and one longer than 64 bits. */
	n = put(b, 0, 0);
	b[n++] = 0x80;
	CHECK(v8_srcpos_find(b, n, 10, &p) == -EINVAL);
	memset(b, 0xff, 12);
	b[12] = 0;
	CHECK(v8_srcpos_find(b, 13, 10, &p) == -EINVAL);
	/* A position going below 0. */
	n = put(b, 0, 0);
	n = put(b, n, -4);
	CHECK(v8_srcpos_find(b, n, 10, &p) == -EINVAL);
	/* A code offset past an int. */
	n = put(b, 0, (int64_t)INT32_MAX + 1);
	n = put(b, n, 2);
	CHECK(v8_srcpos_find(b, n, 10, &p) == -EINVAL);
	n = put(b, 0, INT32_MAX);
	n = put(b, n, 2);
	n = put(b, n, INT32_MAX);
	n = put(b, n, 2);
	CHECK(v8_srcpos_find(b, n, UINT32_MAX, &p) == -EINVAL);
	/* A position past 47 bits. */
	n = put(b, 0, 0);
	n = put(b, n, 1LL << 47);
	CHECK(v8_srcpos_find(b, n, 10, &p) == -EINVAL);
}

static void test_lines(void)
{
	const char *src = "'use strict';\nfunction f() {\n\treturn 1;\n}\n";
	int32_t ends[8];
	size_t n = v8_line_ends(src, strlen(src), ends, 8);
	int line = 0;

	CHECK(n == 5 && ends[0] == 13 && ends[3] == 41 && ends[4] == 42);
	CHECK(!v8_line_of(ends, n, 0, &line) && line == 1);
	CHECK(!v8_line_of(ends, n, 13, &line) && line == 1);
	CHECK(!v8_line_of(ends, n, 14, &line) && line == 2);
	CHECK(!v8_line_of(ends, n, 31, &line) && line == 3);
	CHECK(!v8_line_of(ends, n, 42, &line) && line == 5);
	CHECK(v8_line_of(ends, n, 43, &line) == -EINVAL);
	CHECK(v8_line_of(ends, n, -1, &line) == -EINVAL);
	CHECK(v8_line_of(ends, 0, 0, &line) == -EINVAL);
	/* Cut at max: the last end is a '\n', not the text's end. */
	CHECK(v8_line_ends(src, strlen(src), ends, 2) == 2 && ends[1] == 28);
	/* Ends not ascending where the search looks. */
	ends[0] = 50;
	ends[1] = 10;
	ends[2] = 60;
	CHECK(v8_line_of(ends, 3, 20, &line) == -EINVAL);
}

int main(void)
{
	RUN_TEST(test_find);
	RUN_TEST(test_hostile);
	RUN_TEST(test_lines);
	return check_tests_failed ? 1 : 0;
}
