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

/* One InliningPosition as V8 lays it out (little endian, padded). */
static void inl(uint8_t *b, int id, int64_t caller, uint32_t literal)
{
	uint8_t *e = b + (size_t)id * V8_INLINING_POSITION_SIZE;

	memset(e, 0xee, V8_INLINING_POSITION_SIZE); /* the padding: anything */
	for (int k = 0; k < 8; k++)
		e[k] = (uint8_t)((uint64_t)caller >> (8 * k));
	for (int k = 0; k < 4; k++)
		e[8 + k] = (uint8_t)(literal >> (8 * k));
}

static void test_inline(void)
{
	/* run inlined fnA (id 0, literal 3) at 600, fnA inlined hotLoop (id
	 * 1, literal 5) at 300; run inlined fnB (id 2, literal 4) at 650. */
	uint8_t b[4 * V8_INLINING_POSITION_SIZE];
	struct v8_inline_frame f[4];
	size_t n = 0;

	inl(b, 0, sp(600, -1), 3);
	inl(b, 1, sp(300, 0), 5);
	inl(b, 2, sp(650, -1), 4);
	CHECK(!v8_inline_expand(b, 3 * V8_INLINING_POSITION_SIZE, sp(200, 1), f, 4, &n) && n == 3);
	CHECK(f[0].literal == 5 && f[0].script_offset == 200);
	CHECK(f[1].literal == 3 && f[1].script_offset == 300);
	CHECK(f[2].literal == -1 && f[2].script_offset == 600);
	CHECK(!v8_inline_expand(b, 3 * V8_INLINING_POSITION_SIZE, sp(320, 2), f, 4, &n) && n == 2 &&
	      f[0].literal == 4 && f[1].literal == -1 && f[1].script_offset == 650);
	/* Not inlined: the code's own function alone, no positions needed. */
	CHECK(!v8_inline_expand(NULL, 0, sp(77, -1), f, 1, &n) && n == 1 && f[0].literal == -1 &&
	      f[0].script_offset == 77);
	/* Too few frames allowed; an id past the positions; a cut position. */
	CHECK(v8_inline_expand(b, 3 * V8_INLINING_POSITION_SIZE, sp(200, 1), f, 2, &n) == -E2BIG);
	CHECK(v8_inline_expand(b, 3 * V8_INLINING_POSITION_SIZE, sp(200, 3), f, 4, &n) == -EINVAL);
	CHECK(v8_inline_expand(b, 3 * V8_INLINING_POSITION_SIZE - 1, sp(200, 0), f, 4, &n) ==
	      -EINVAL);
	/* A literal index past an int; a cycle (id 3's caller is itself). */
	inl(b, 3, sp(10, -1), 0x80000000u);
	CHECK(v8_inline_expand(b, sizeof(b), sp(5, 3), f, 4, &n) == -EINVAL);
	inl(b, 3, sp(10, 3), 1);
	CHECK(v8_inline_expand(b, sizeof(b), sp(5, 3), f, 4, &n) == -EINVAL);
	/* id 0 and 1 calling each other: refused once past the positions. */
	inl(b, 0, sp(1, 1), 1);
	inl(b, 1, sp(2, 0), 2);
	CHECK(v8_inline_expand(b, 2 * V8_INLINING_POSITION_SIZE, sp(5, 0), f, 4, &n) == -EINVAL);
}

int main(void)
{
	RUN_TEST(test_inline);
	RUN_TEST(test_find);
	RUN_TEST(test_hostile);
	RUN_TEST(test_lines);
	return check_tests_failed ? 1 : 0;
}
