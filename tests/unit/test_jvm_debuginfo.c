/* formats/jvm_debuginfo.c: UNSIGNED5 against HotSpot's writer
 * (CompressedWriteStream::write_int_mb, written again here), hand-made line
 * tables, PcDesc arrays and scope chains, and the real data of a JDK 17 JVM
 * in tests/unit/jvm_vectors.txt (scripts/gen-jvm-vectors.sh, which checked
 * it against javap and HotSpot's own printout of the nmethod): every line
 * table of a class with its javap pairs and the line of every bci, and a
 * C2 nmethod of six() with spin() inlined. Truncated and corrupted inputs
 * are given in buffers of their exact size, so that ASan (make SANITIZE=1)
 * sees any read past them. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "formats/jvm_debuginfo.h"
#include "testutil.h"

/* HotSpot's writer: low codes end a value, high codes carry 6 bits. */
static size_t put_int(uint8_t *b, uint32_t v)
{
	size_t n = 0;

	for (int i = 0;; i++) {
		if (v < 192 || i == 4) {
			b[n++] = (uint8_t)v;
			return n;
		}
		v -= 192;
		b[n++] = (uint8_t)(192 + v % 64);
		v >>= 6;
	}
}

static size_t put_signed(uint8_t *b, int32_t v)
{
	return put_int(b, ((uint32_t)v << 1) ^ (uint32_t)(v >> 31));
}

/* A copy of b[0, n) in a buffer of exactly n bytes. */
static uint8_t *exact(const uint8_t *b, size_t n)
{
	uint8_t *p = malloc(n ? n : 1);

	memcpy(p, b, n);
	return p;
}

static void test_unsigned5(void)
{
	static const uint32_t vals[] = {0,	    1,		191,	   192,	     193,
					255,	    256,	12479,	   12480,    12481,
					798911,	    798912,	51130559,  51130560, 0x7fffffff,
					0x80000000, 0xfffffffe, 0xffffffff};
	uint8_t b[8];

	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		size_t n = put_int(b, vals[i]);
		uint8_t *p = exact(b, n);
		const uint8_t *q = p;
		uint32_t v = 1;
		int32_t s = 1;

		CHECKF(jvm_read_int(&q, p + n, &v) == 0 && v == vals[i] && q == p + n,
		       "%u: %u, %td of %zu bytes", vals[i], v, q - p, n);
		/* Every shorter buffer ends the value early. */
		for (size_t k = 0; k < n; k++) {
			q = p;
			CHECKF(jvm_read_int(&q, p + k, &v) == -EINVAL && q == p, "%u in %zu",
			       vals[i], k);
		}
		free(p);
		n = put_signed(b, (int32_t)vals[i]);
		p = exact(b, n);
		q = p;
		CHECKF(jvm_read_signed_int(&q, p + n, &s) == 0 && s == (int32_t)vals[i], "%d: %d",
		       (int32_t)vals[i], s);
		free(p);
	}
	/* Lengths: 191 one byte, 192 two, the fifth byte taken whole. */
	CHECK(put_int(b, 191) == 1 && put_int(b, 192) == 2 && put_int(b, 0xffffffff) == 5);
	{
		const uint8_t five[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0x00};
		const uint8_t *q = five;
		uint32_t v;

		CHECK(jvm_read_int(&q, five + sizeof(five), &v) == 0 && q == five + 5);
		q = NULL;
		CHECK(jvm_read_int(&q, five, &v) == -EINVAL);
	}
}

/* One (bci, line) pair after another as HotSpot's
 * CompressedLineNumberWriteStream writes them, then the terminator. */
static size_t put_lnt(uint8_t *b, const int (*pairs)[2], size_t n)
{
	size_t len = 0;
	int bci = 0, line = 0;

	for (size_t i = 0; i < n; i++) {
		int db = pairs[i][0] - bci, dl = pairs[i][1] - line;

		if (db >= 0 && db < 32 && dl >= 0 && dl < 8 && (db << 3 | dl) != 0xff &&
		    (db | dl)) {
			b[len++] = (uint8_t)(db << 3 | dl);
		} else {
			b[len++] = 0xff;
			len += put_signed(b + len, db);
			len += put_signed(b + len, dl);
		}
		bci = pairs[i][0];
		line = pairs[i][1];
	}
	b[len++] = 0;
	return len;
}

static void test_lnt_hand(void)
{
	/* Unsorted, a bci twice, big and backward deltas. */
	static const int pairs[][2] = {{0, 10}, {4, 11},  {31, 18},	 {8, 12},
				       {4, 40}, {300, 5}, {70000, 65535}};
	uint8_t b[128];
	size_t n = put_lnt(b, pairs, 7);
	uint8_t *p = exact(b, n);
	struct jvm_lnt_iter it;
	int bci, line, i = 0, ret;

	jvm_lnt_init(&it, p, n);
	while ((ret = jvm_lnt_next(&it, &bci, &line)) == 1 && i < 7) {
		CHECKF(bci == pairs[i][0] && line == pairs[i][1], "pair %d: %d:%d", i, bci, line);
		i++;
	}
	CHECK(ret == 0 && i == 7);
	CHECK(jvm_lnt_next(&it, &bci, &line) == 0); /* stays done */
	/* The first exact pair wins; else the largest bci below, the last read
	 * of equal ones. */
	CHECK(jvm_line_for_bci(p, n, 4, &line) == 0 && line == 11);
	CHECK(jvm_line_for_bci(p, n, 5, &line) == 0 && line == 40);
	CHECK(jvm_line_for_bci(p, n, 9, &line) == 0 && line == 12);
	CHECK(jvm_line_for_bci(p, n, 32, &line) == 0 && line == 18);
	CHECK(jvm_line_for_bci(p, n, 299, &line) == 0 && line == 18);
	CHECK(jvm_line_for_bci(p, n, 70001, &line) == 0 && line == 65535);
	CHECK(jvm_line_for_bci(p, n, -1, &line) == 0 && line == 10); /* SynchronizationEntryBCI */
	CHECK(jvm_line_for_bci(p, n, -2, &line) == -ENOENT);
	/* Every truncation: no terminator, an error; but an exact match before
	 * the cut is still found. */
	for (size_t k = 0; k < n; k++) {
		uint8_t *t = exact(p, k);

		CHECK(jvm_line_for_bci(t, k, 9, &line) == -EINVAL);
		if (k >= 3) /* the first pair's escape, 0 and 20 */
			CHECKF(jvm_line_for_bci(t, k, 0, &line) == 0 && line == 10, "%zu", k);
		free(t);
	}
	free(p);
	/* No pair at or below the bci. */
	{
		static const int late[][2] = {{5, 1}};

		n = put_lnt(b, late, 1);
		CHECK(jvm_line_for_bci(b, n, 2, &line) == -ENOENT);
		CHECK(jvm_line_for_bci(b, n, 6, &line) == 0 && line == 1);
		CHECK(jvm_line_for_bci((const uint8_t *)"", 1, 0, &line) == -ENOENT);
		CHECK(jvm_line_for_bci(NULL, 0, 0, &line) == -EINVAL);
	}
	/* A running bci or line below 0 or past INT32_MAX. */
	{
		uint8_t neg[16] = {0xff}, big[32] = {0x08}; /* bci 1, then +INT32_MAX */
		size_t k = 1;

		k += put_signed(neg + k, -1);
		k += put_signed(neg + k, 0);
		neg[k++] = 0;
		CHECK(jvm_line_for_bci(neg, k, 0, &line) == -EINVAL);
		k = 1;
		big[k++] = 0xff;
		k += put_signed(big + k, 0x7fffffff);
		k += put_signed(big + k, 0);
		big[k++] = 0;
		CHECK(jvm_line_for_bci(big, k, 5, &line) == -EINVAL);
	}
}

/* tests/unit/jvm_vectors.txt */
struct lnt_vec {
	char name[128];
	uint8_t *tab;
	size_t len;
	int code_size, npairs;
	int pairs[256][2];
	int *lines;
};
static struct lnt_vec lnts[64];
static int nlnts;
static struct jvm_pcdesc_layout layout;
static uint8_t *pcs, *scopes;
static size_t pcs_len, scopes_len;
static char meta[64][128];
static int nmeta;
struct chain_vec {
	int pc, scope, n;
	char names[8][128];
	int bcis[8];
};
static struct chain_vec chains[256];
static int nchains;

static int hexval(int c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static uint8_t *unhex(const char *h, size_t *len)
{
	size_t n = strlen(h) / 2;
	uint8_t *b = malloc(n ? n : 1);

	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(hexval(h[2 * i]) << 4 | hexval(h[2 * i + 1]));
	*len = n;
	return b;
}

static int load(const char *path)
{
	size_t len;
	char *text = slurp(path, &len), *save = NULL, *l;
	struct lnt_vec *v = NULL;

	if (!text)
		return -1;
	for (l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *tok, *s2 = NULL;

		if (!strncmp(l, "lnt ", 4) && nlnts < 64) {
			char hex[4096];

			v = &lnts[nlnts++];
			if (sscanf(l, "lnt %127s %d %4095s", v->name, &v->code_size, hex) != 3)
				return -1;
			v->tab = unhex(hex, &v->len);
		} else if (!strncmp(l, "pairs ", 6) && v) {
			for (tok = strtok_r(l + 6, " ", &s2); tok && v->npairs < 256;
			     tok = strtok_r(NULL, " ", &s2), v->npairs++)
				if (sscanf(tok, "%d:%d", &v->pairs[v->npairs][0],
					   &v->pairs[v->npairs][1]) != 2)
					return -1;
		} else if (!strncmp(l, "lines ", 6) && v) {
			int i = 0;

			v->lines = calloc(v->code_size + 1, sizeof(int));
			for (tok = strtok_r(l + 6, " ", &s2); tok && i < v->code_size;
			     tok = strtok_r(NULL, " ", &s2))
				v->lines[i++] = atoi(tok);
		} else if (!strncmp(l, "nmethod ", 8)) {
			if (sscanf(l, "nmethod %*s pcdesc %zu %zu %zu %zu %zu", &layout.size,
				   &layout.pc_offset, &layout.scope_decode_offset,
				   &layout.obj_decode_offset, &layout.flags) != 5)
				return -1;
		} else if (!strncmp(l, "metadata ", 9)) {
			for (tok = strtok_r(l + 9, " ", &s2); tok && nmeta < 64;
			     tok = strtok_r(NULL, " ", &s2))
				snprintf(meta[nmeta++], sizeof(meta[0]), "%s", tok);
		} else if (!strncmp(l, "pcs ", 4)) {
			pcs = unhex(l + 4, &pcs_len);
		} else if (!strncmp(l, "scopes ", 7)) {
			scopes = unhex(l + 7, &scopes_len);
		} else if (!strncmp(l, "chain ", 6) && nchains < 256) {
			struct chain_vec *c = &chains[nchains++];

			tok = strtok_r(l + 6, " ", &s2);
			c->pc = atoi(tok);
			c->scope = atoi(strtok_r(NULL, " ", &s2));
			while ((tok = strtok_r(NULL, " ", &s2)) && c->n < 8) {
				char *at = strrchr(tok, '@');

				if (!at)
					return -1;
				*at = 0;
				snprintf(c->names[c->n], sizeof(c->names[0]), "%s", tok);
				c->bcis[c->n++] = atoi(at + 1);
			}
		}
	}
	free(text);
	return 0;
}

/* Every line table of the class: javap's pairs in order, HotSpot's line
 * for every bci, and every truncation read without a fault. */
static void test_lnt_real(void)
{
	int spin = 0;

	CHECK(nlnts >= 6);
	for (int k = 0; k < nlnts; k++) {
		struct lnt_vec *v = &lnts[k];
		uint8_t *p = exact(v->tab, v->len);
		struct jvm_lnt_iter it;
		int bci, line, i = 0, ret;

		jvm_lnt_init(&it, p, v->len);
		while ((ret = jvm_lnt_next(&it, &bci, &line)) == 1 && i < v->npairs) {
			CHECKF(bci == v->pairs[i][0] && line == v->pairs[i][1], "%s pair %d",
			       v->name, i);
			i++;
		}
		CHECKF(ret == 0 && i == v->npairs && it.p == p + v->len, "%s: %d", v->name, ret);
		for (int b = 0; b < v->code_size; b++)
			CHECKF(jvm_line_for_bci(p, v->len, b, &line) == 0 && line == v->lines[b],
			       "%s@%d: %d, want %d", v->name, b, line, v->lines[b]);
		for (size_t n = 0; n < v->len; n++) {
			uint8_t *t = exact(p, n);

			ret = jvm_line_for_bci(t, n, v->code_size - 1, &line);
			CHECKF(ret == 0 || ret == -EINVAL, "%s cut at %zu: %d", v->name, n, ret);
			free(t);
		}
		/* HotSpot's printout of six()'s nmethod: spin@27 is line 13. */
		if (!strcmp(v->name, "JSplit.spin")) {
			spin = 1;
			CHECK(jvm_line_for_bci(p, v->len, 27, &line) == 0 && line == 13);
		}
		free(p);
	}
	CHECK(spin);
}

static void test_pcdesc_real(void)
{
	struct jvm_pcdesc d;
	int inlined = 0;

	CHECK(pcs && scopes && nchains >= 3 && layout.size == 16);
	if (!pcs || !scopes || nchains < 3)
		return;
	CHECK((size_t)nchains * layout.size == pcs_len);
	for (int i = 1; i < nchains; i++) {
		struct chain_vec *c = &chains[i];
		struct jvm_scope sc[8];
		int n;

		/* A return address: exactly there; a pc just before it and the
		 * previous record's pc + 1: the same record. */
		CHECKF(jvm_pcdesc_find(pcs, pcs_len, &layout, c->pc, true, &d) == 0 &&
			   d.index == (size_t)i && d.scope_decode_offset == c->scope,
		       "pc %d", c->pc);
		CHECK(jvm_pcdesc_find(pcs, pcs_len, &layout, c->pc - 1, true, &d) == -ENOENT);
		CHECK(jvm_pcdesc_find(pcs, pcs_len, &layout, c->pc, false, &d) == 0 &&
		      d.index == (size_t)i);
		CHECK(jvm_pcdesc_find(pcs, pcs_len, &layout, chains[i - 1].pc + 1, false, &d) ==
			  0 &&
		      d.index == (size_t)i && d.pc_offset == c->pc);
		n = jvm_scopes_chain(scopes, scopes_len, d.scope_decode_offset, sc, 8);
		CHECKF(n == c->n, "pc %d: %d scopes, want %d", c->pc, n, c->n);
		for (int k = 0; k < n && k < c->n; k++) {
			const char *name =
			    sc[k].metadata_index && (int)sc[k].metadata_index <= nmeta
				? meta[sc[k].metadata_index - 1]
				: "-";

			CHECKF(!strcmp(name, c->names[k]) && sc[k].bci == c->bcis[k],
			       "pc %d scope %d: %s@%d, want %s@%d", c->pc, k, name, sc[k].bci,
			       c->names[k], c->bcis[k]);
		}
		if (n == 2 && !strcmp(c->names[0], "JSplit.spin") && c->bcis[1] == 3)
			inlined++;
	}
	CHECK(inlined > 0);
	/* Past the final sentinel; before the first real record. */
	CHECK(jvm_pcdesc_find(pcs, pcs_len, &layout, chains[nchains - 1].pc + 1, false, &d) ==
	      -ENOENT);
	CHECK(jvm_pcdesc_find(pcs, pcs_len, &layout, 0, false, &d) == 0 && d.index == 1);
	/* Every truncation of the scopes data: a chain or an error. */
	for (size_t n = 0; n < scopes_len; n++) {
		uint8_t *t = exact(scopes, n);
		struct jvm_scope sc[8];

		for (int i = 0; i < nchains; i++) {
			int r = jvm_scopes_chain(t, n, chains[i].scope, sc, 8);

			CHECK(r == -EINVAL || r == chains[i].n);
		}
		free(t);
	}
}

/* A PcDesc array of JDK 17's layout from (pc, scope) pairs. */
static size_t put_pcs(uint8_t *b, const int32_t (*recs)[2], size_t n)
{
	memset(b, 0, n * 16);
	for (size_t i = 0; i < n; i++) {
		memcpy(b + i * 16, &recs[i][0], 4);
		memcpy(b + i * 16 + 4, &recs[i][1], 4);
		b[i * 16 + 12] = (uint8_t)i; /* flags: the index, to tell records apart */
	}
	return n * 16;
}

static void test_pcdesc_hand(void)
{
	static const struct jvm_pcdesc_layout l = {16, 0, 4, 8, 12};
	static const int32_t good[][2] = {{-1, 0}, {10, 5}, {20, 9}, {20, 9}, {30, 0}, {30, 0}};
	static const int32_t unsorted[][2] = {{-1, 0}, {10, 1}, {40, 1}, {20, 1}, {50, 1},
					      {60, 1}, {95, 1}, {80, 1}, {90, 0}};
	uint8_t b[16 * 16];
	size_t n = put_pcs(b, good, 6);
	struct jvm_pcdesc d;
	struct jvm_pcdesc_layout bad = l;

	CHECK(jvm_pcdesc_find(b, n, &l, 10, true, &d) == 0 && d.index == 1 &&
	      d.scope_decode_offset == 5 && d.flags == 1);
	CHECK(jvm_pcdesc_find(b, n, &l, 0, false, &d) == 0 && d.index == 1);
	CHECK(jvm_pcdesc_find(b, n, &l, 11, false, &d) == 0 && d.index == 2 && d.pc_offset == 20);
	CHECK(jvm_pcdesc_find(b, n, &l, 20, true, &d) == 0 && d.pc_offset == 20);
	CHECK(jvm_pcdesc_find(b, n, &l, 15, true, &d) == -ENOENT);
	CHECK(jvm_pcdesc_find(b, n, &l, 25, false, &d) == 0 && d.pc_offset == 30 &&
	      d.scope_decode_offset == 0);
	CHECK(jvm_pcdesc_find(b, n, &l, 31, false, &d) == -ENOENT);
	CHECK(jvm_pcdesc_find(b, n, &l, -1, false, &d) == -ENOENT);
	CHECK(jvm_pcdesc_find(b, 16, &l, 0, false, &d) == -ENOENT); /* the sentinel alone */
	CHECK(jvm_pcdesc_find(b, 0, &l, 0, false, &d) == -ENOENT);
	CHECK(jvm_pcdesc_find(b, n - 1, &l, 10, true, &d) == -EINVAL);
	b[0] = 0; /* the first sentinel is not -1 */
	CHECK(jvm_pcdesc_find(b, n, &l, 10, true, &d) == -EINVAL);
	bad.flags = 13;
	CHECK(jvm_pcdesc_find(b, n, &bad, 10, true, &d) == -EINVAL);
	bad = l;
	bad.size = 0;
	CHECK(jvm_pcdesc_find(b, n, &bad, 10, true, &d) == -EINVAL);
	CHECK(jvm_pcdesc_find(b, n, NULL, 10, true, &d) == -EINVAL);
	CHECK(jvm_pcdesc_find(NULL, 32, &l, 10, true, &d) == -EINVAL);
	/* Out of order where the search goes; elsewhere unseen, as HotSpot's. */
	n = put_pcs(b, unsorted, 9);
	CHECK(jvm_pcdesc_find(b, n, &l, 75, false, &d) == -EINVAL);
	CHECK(jvm_pcdesc_find(b, n, &l, 15, false, &d) == 0 && d.pc_offset == 40);
	/* A last record below the first. */
	{
		static const int32_t low[][2] = {{-1, 0}, {5, 1}, {-2, 0}};

		n = put_pcs(b, low, 3);
		CHECK(jvm_pcdesc_find(b, n, &l, 5, true, &d) == -EINVAL);
	}
}

/* A scope header as DebugInformationRecorder::describe_scope writes it. */
static size_t put_scope(uint8_t *b, uint32_t sender, uint32_t method, int bci)
{
	size_t n = put_int(b, sender);

	n += put_int(b + n, method);
	n += put_int(b + n, (uint32_t)(bci + 1));
	for (int i = 0; i < 3; i++)
		n += put_int(b + n, (uint32_t)i * 7);
	return n;
}

static void test_scopes_hand(void)
{
	uint8_t b[4096] = {0xff}; /* offset 0 is serialized_null: never a scope */
	size_t at[40], n = 1;
	struct jvm_scope sc[40];

	/* A chain of 32 scopes, each the caller of the next. */
	for (int i = 0; i < 32; i++) {
		at[i] = n;
		n += put_scope(b + n, i ? (uint32_t)at[i - 1] : 0, (uint32_t)i + 1, i * 300 - 1);
	}
	CHECK(jvm_scopes_chain(b, n, (int)at[31], sc, 40) == 32);
	for (int i = 0; i < 32; i++)
		CHECKF(sc[i].metadata_index == (uint32_t)(32 - i) &&
			   sc[i].bci == (31 - i) * 300 - 1 &&
			   sc[i].decode_offset == (int)at[31 - i],
		       "scope %d", i);
	CHECK(jvm_scopes_chain(b, n, (int)at[31], sc, 32) == 32);
	CHECK(jvm_scopes_chain(b, n, (int)at[31], sc, 31) == -E2BIG);
	CHECK(jvm_scopes_chain(b, n, (int)at[0], sc, 1) == 1 && sc[0].bci == -1);
	CHECK(jvm_scopes_chain(b, n, 0, sc, 0) == 0);
	CHECK(jvm_scopes_chain(b, n, -1, sc, 8) == -EINVAL);
	CHECK(jvm_scopes_chain(b, n, (int)n, sc, 8) == -EINVAL);
	CHECK(jvm_scopes_chain(NULL, 0, 5, sc, 8) == -EINVAL);
	/* A scope naming itself or a later one as its sender (a cycle). */
	n = 1 + put_scope(b + 1, 1, 1, 0);
	CHECK(jvm_scopes_chain(b, n, 1, sc, 8) == -EINVAL);
	n = 1 + put_scope(b + 1, 50, 1, 0);
	CHECK(jvm_scopes_chain(b, n, 1, sc, 8) == -EINVAL);
	/* A sender outside the data. */
	n = 200;
	n += put_scope(b + n, 100, 1, 0);
	CHECK(jvm_scopes_chain(b, 200, 200, sc, 8) == -EINVAL);
	/* A bci past INT32_MAX - 1. */
	n = 1 + put_int(b + 1, 0);
	n += put_int(b + n, 1);
	n += put_int(b + n, 0x80000000u);
	for (int i = 0; i < 3; i++)
		n += put_int(b + n, 0);
	CHECK(jvm_scopes_chain(b, n, 1, sc, 8) == -EINVAL);
	/* Every truncation of a header. */
	n = 1 + put_scope(b + 1, 0, 70000, 70000);
	for (size_t k = 2; k < n; k++) {
		uint8_t *t = exact(b, k);

		CHECKF(jvm_scopes_chain(t, k, 1, sc, 8) == -EINVAL, "%zu", k);
		free(t);
	}
	CHECK(jvm_scopes_chain(b, n, 1, sc, 8) == 1 && sc[0].metadata_index == 70000 &&
	      sc[0].bci == 70000);
}

int main(void)
{
	const char *path = getenv("JVM_VECTORS");

	RUN_TEST(test_unsigned5);
	RUN_TEST(test_lnt_hand);
	RUN_TEST(test_pcdesc_hand);
	RUN_TEST(test_scopes_hand);
	if (!path)
		path = "tests/unit/jvm_vectors.txt";
	if (load(path)) {
		printf("FAIL test_jvm_debuginfo: cannot read the vectors %s\n", path);
		return 1;
	}
	RUN_TEST(test_lnt_real);
	RUN_TEST(test_pcdesc_real);
	CHECK_EXIT();
}
