/* formats/pyline.c against CPython itself: tests/unit/pyline_vectors.txt
 * holds, for every code object of a fixed source compiled by each CPython
 * 3.8-3.13, its line table and the line PyCode_Addr2Line gives for every
 * 2-byte offset (scripts/gen-pyline-vectors.sh, which also checks that
 * answer against dis/co_lines()/co_positions()). Then the same tables
 * truncated, corrupted and overflowing, in buffers of their exact size so
 * that ASan (make SANITIZE=1) sees any read past them. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "formats/pyline.h"
#include "testutil.h"

struct vec {
	int major, minor, firstlineno;
	char name[128];
	uint8_t *tab;
	size_t len, ncode; /* table bytes; bytes of bytecode */
	int *lines;	   /* ncode / 2 */
};
static struct vec vecs[512];
static size_t nvecs;

static int hexval(int c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static int load(const char *path)
{
	size_t len;
	char *text = slurp(path, &len), *save = NULL, *l;
	struct vec *v = NULL;

	if (!text)
		return -1;
	for (l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char hex[65536];

		if (!strncmp(l, "code ", 5) && nvecs < 512) {
			v = &vecs[nvecs++];
			if (sscanf(l, "code %d.%d %127s %d %zu %65535s", &v->major, &v->minor,
				   v->name, &v->firstlineno, &v->ncode, hex) != 6)
				return -1;
			v->len = strcmp(hex, "-") ? strlen(hex) / 2 : 0;
			v->tab = malloc(v->len ? v->len : 1);
			for (size_t i = 0; i < v->len; i++)
				v->tab[i] = hexval(hex[2 * i]) << 4 | hexval(hex[2 * i + 1]);
		} else if (!strncmp(l, "lines ", 6) && v) {
			char *p = l + 6, *end;

			v->lines = calloc(v->ncode / 2 + 1, sizeof(int));
			for (size_t i = 0; i < v->ncode / 2; i++, p = end) {
				v->lines[i] = (int)strtol(p, &end, 10);
				if (end == p)
					return -1;
			}
		}
	}
	free(text);
	return 0;
}

/* Every offset of every code object of every version: the interpreter's line. */
static void test_vectors(void)
{
	int versions[16] = {0}, bad = 0;

	CHECK(nvecs >= 100);
	for (size_t k = 0; k < nvecs; k++) {
		struct vec *v = &vecs[k];
		enum pyline_format fmt = pyline_format_of(v->major, v->minor);

		CHECKF(v->lines, "%d.%d %s: no lines", v->major, v->minor, v->name);
		if (!v->lines)
			continue;
		versions[v->minor & 15]++;
		for (size_t i = 0; i < v->ncode / 2; i++) {
			int line = -7,
			    ret = pyline_lookup(fmt, v->tab, v->len, v->firstlineno,
						(int64_t)(2 * i), &line),
			    want = v->lines[i];

			if (want < 0 ? ret != -ENOENT : ret != 0 || line != want) {
				if (bad++ < 10)
					CHECKF(0, "%d.%d %s offset %zu: ret %d line %d, CPython %d",
					       v->major, v->minor, v->name, 2 * i, ret, line, want);
			}
		}
	}
	CHECKF(!bad, "%d offsets wrong", bad);
	for (int m = 8; m <= 13; m++)
		CHECKF(versions[m] >= 15, "3.%d: %d code objects", m, versions[m]);
}

/* The ranges, in order, tile [0, end of code) with the same lines; 3.10
 * and 3.11+ end exactly at the code's end, co_lnotab runs to UINT64_MAX. */
static void test_ranges(void)
{
	for (size_t k = 0; k < nvecs; k++) {
		struct vec *v = &vecs[k];
		enum pyline_format fmt = pyline_format_of(v->major, v->minor);
		struct pyline_iter it;
		struct pyline_range r;
		uint64_t at = 0;
		int ret, ok = 1;

		if (!v->lines)
			continue;
		pyline_iter_init(&it, fmt, v->tab, v->len, v->firstlineno);
		while ((ret = pyline_next(&it, &r)) == 1) {
			ok &= r.start == at && r.end > r.start;
			for (uint64_t o = r.start; o < r.end && o < v->ncode; o += 2)
				ok &= v->lines[o / 2] == r.line;
			at = r.end;
		}
		CHECKF(ret == 0 && ok, "%d.%d %s: ret %d", v->major, v->minor, v->name, ret);
		CHECKF(fmt == PYLINE_LNOTAB ? at == UINT64_MAX : at == v->ncode,
		       "%d.%d %s: ends at %llu of %zu", v->major, v->minor, v->name,
		       (unsigned long long)at, v->ncode);
	}
}

/* A frame not started yet (f_lasti -1) is at the first line; past the
 * end of a 3.10+ table is no line. */
static void test_edges(void)
{
	int line = 0;

	for (size_t k = 0; k < nvecs; k++) {
		struct vec *v = &vecs[k];
		enum pyline_format fmt = pyline_format_of(v->major, v->minor);

		CHECK(!pyline_lookup(fmt, v->tab, v->len, v->firstlineno, -2, &line) &&
		      line == v->firstlineno);
		if (fmt != PYLINE_LNOTAB)
			CHECK(pyline_lookup(fmt, v->tab, v->len, v->firstlineno, (int64_t)v->ncode,
					    &line) == -ENOENT);
	}
	CHECK(pyline_format_of(3, 7) == PYLINE_NONE && pyline_format_of(2, 9) == PYLINE_NONE);
	CHECK(pyline_format_of(3, 9) == PYLINE_LNOTAB &&
	      pyline_format_of(3, 10) == PYLINE_LINETABLE);
	CHECK(pyline_format_of(3, 14) == PYLINE_LOCATIONS);
	CHECK(pyline_lookup(PYLINE_NONE, (const uint8_t *)"\0\1", 2, 1, 0, &line) == -EINVAL);
	CHECK(pyline_lookup(PYLINE_LOCATIONS, NULL, 0, 1, 0, &line) == -ENOENT);
}

/* Hostile tables: every prefix of every real one, each byte flipped, and
 * tables built to overflow. Each answer is bounded; none reads past len. */
static void test_hostile(void)
{
	static const uint8_t up[] = {0x01, 0x7f};   /* co_lnotab: +127 lines a byte */
	static const uint8_t down[] = {0x01, 0x81}; /* -127 lines */
	/* Location table: a long-form entry whose varint never ends. */
	static const uint8_t runaway[] = {0xf0, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f};
	/* A payload byte where a header must be. */
	static const uint8_t nohdr[] = {0x05, 0x80};
	size_t n = 1 << 16, i;
	uint8_t *big = malloc(2 * n);
	int line, steps = 0;

	for (size_t k = 0; k < nvecs; k++) {
		struct vec *v = &vecs[k];
		enum pyline_format fmt = pyline_format_of(v->major, v->minor);

		for (size_t cut = 0; cut <= v->len; cut++) {
			uint8_t *t = malloc(cut ? cut : 1);

			memcpy(t, v->tab, cut);
			for (int64_t off = 0; off < (int64_t)v->ncode + 4;
			     off += 2 + 14 * (off > 64))
				steps +=
				    pyline_lookup(fmt, t, cut, v->firstlineno, off, &line) != 0;
			free(t);
		}
		for (i = 0; i < v->len && i < 64; i++) {
			uint8_t *t = malloc(v->len);

			memcpy(t, v->tab, v->len);
			t[i] ^= 0xa5;
			pyline_lookup(fmt, t, v->len, v->firstlineno, (int64_t)v->ncode - 2, &line);
			free(t);
		}
	}
	CHECK(steps > 0); /* some cut tables give no line: the lookups ran */
	for (i = 0; i < n; i++)
		memcpy(big + 2 * i, up, 2);
	/* 2^16 * 127 lines from INT_MAX - 10: leaves int, so malformed. */
	CHECK(pyline_lookup(PYLINE_LNOTAB, big, 2 * n, INT_MAX - 10, (int64_t)n, &line) == -EINVAL);
	CHECK(pyline_lookup(PYLINE_LINETABLE, big, 2 * n, INT_MAX - 10, (int64_t)n, &line) ==
	      -EINVAL);
	CHECK(!pyline_lookup(PYLINE_LNOTAB, big, 2 * n, 1, 3, &line) && line == 1 + 3 * 127);
	/* Below line 0 (found by fuzz_pyline): malformed, never a line -1. */
	CHECK(pyline_lookup(PYLINE_LNOTAB, down, sizeof(down), 5, 1, &line) == -EINVAL);
	CHECK(pyline_lookup(PYLINE_LOCATIONS, NULL, 0, -3, 0, &line) == -EINVAL);
	CHECK(pyline_lookup(PYLINE_LOCATIONS, runaway, sizeof(runaway), 1, 0, &line) == -EINVAL);
	CHECK(pyline_lookup(PYLINE_LOCATIONS, nohdr, sizeof(nohdr), 1, 0, &line) == -EINVAL);
	/* Every header byte alone: 8 code units at most, none reads on. */
	for (i = 0; i < 256; i++) {
		uint8_t b = (uint8_t)i;
		int ret = pyline_lookup(PYLINE_LOCATIONS, &b, 1, 5, 0, &line);

		CHECKF(i < 0x80					    ? ret == -EINVAL
		       : i >= 0xf8				    ? ret == -ENOENT
		       : (i >> 3 & 15) == 13 || (i >> 3 & 15) == 14 ? ret == -EINVAL
								    : ret == 0,
		       "header %#zx: %d", i, ret);
	}
	free(big);
}

int main(void)
{
	const char *path = getenv("PYLINE_VECTORS");

	if (!path)
		path = "tests/unit/pyline_vectors.txt";
	if (load(path)) {
		printf("FAIL test_pyline: cannot read the vectors %s\n", path);
		return 1;
	}
	RUN_TEST(test_vectors);
	RUN_TEST(test_ranges);
	RUN_TEST(test_edges);
	RUN_TEST(test_hostile);
	for (size_t k = 0; k < nvecs; k++) {
		free(vecs[k].tab);
		free(vecs[k].lines);
	}
	CHECK_EXIT();
}
