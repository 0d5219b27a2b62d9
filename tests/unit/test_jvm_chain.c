/* user/runtime/jvm_chain.h: a compiled Java frame's chain of inlined
 * methods, named when every method reads and marked where one does not. A
 * chain here is a0 (innermost, inlined into a1) ... up to the frame's own
 * method; the reader names the methods of `readable` and fails on the
 * rest, as a Method* freed with its class does. Before the mark, a chain
 * cut at a1 gave a0 alone: the frame's own method, and with it every
 * caller above the cut, was dropped, and a0 shown under the next physical
 * frame's method. */
#include <stdbool.h>
#include <string.h>
#include "check.h"
#include "user/runtime/jvm_chain.h"

/* user/runtime/jvm.c's, which the test does not link. */
const struct jvm_method jvm_chain_cut = {JVM_CHAIN_CUT_NAME, JVM_CHAIN_CUT_NAME, NULL, 0};

#define NM 6
static const struct jvm_method methods[NM] = {
    {"T.a0", "T.a0()V", "T.java", 10}, {"T.a1", "T.a1()V", "T.java", 20},
    {"T.a2", "T.a2()V", "T.java", 30}, {"T.a3", "T.a3()V", "T.java", 40},
    {"T.a4", "T.a4()V", "T.java", 50}, {"T.root", "T.root()V", "T.java", 60},
};
/* Method* i is 0x1000 * (i + 1); meta[i] holds it (metadata index i + 1). */
static const uint64_t meta[NM] = {0x1000, 0x2000, 0x3000, 0x4000, 0x5000, 0x6000};
static bool readable[NM];

static int read_m(void *ctx, uint64_t m, int32_t bci, struct jvm_named *out)
{
	(void)ctx;
	if (m % 0x1000 || m < 0x1000 || m / 0x1000 > NM || !readable[m / 0x1000 - 1])
		return -1;
	*out = (struct jvm_named){&methods[m / 0x1000 - 1], bci >= 0 ? bci + 100 : 0};
	return 0;
}

/* The chain a0, a1, a2, root: metadata indexes 1, 2, 3, 6; bcis 0..3. */
static struct jvm_scope chain[4] = {{1, 0, 0}, {2, 1, 0}, {3, 2, 0}, {6, 3, 0}};

static void all_readable(void)
{
	for (int i = 0; i < NM; i++)
		readable[i] = true;
}

/* out[0, n) as "name:line name:line ...". */
static const char *show(const struct jvm_named *out, int n)
{
	static char buf[512];
	size_t len = 0;

	buf[0] = 0;
	for (int i = 0; i < n && len < sizeof(buf); i++)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s:%d", i ? " " : "",
					out[i].m->name, out[i].line);
	return buf;
}

static const char *names(int k, const struct jvm_scope *sc, size_t nmeta, int max)
{
	struct jvm_named out[16];
	int n = jvm_chain_names(sc, k, meta, nmeta, 0x6000, read_m, NULL, out, max);

	return show(out, n);
}

static void test_chain_whole(void)
{
	all_readable();
	CHECKF(!strcmp(names(4, chain, NM, 16), "T.a0:100 T.a1:101 T.a2:102 T.root:103"), "%s",
	       names(4, chain, NM, 16));
	/* No scopes: left to the caller (the frame's own method alone). */
	CHECK(!strcmp(names(0, chain, NM, 16), ""));
}

static void test_chain_cut_middle(void)
{
	all_readable();
	readable[1] = false; /* a1's class unloaded */
	CHECKF(!strcmp(names(4, chain, NM, 16), "T.a0:100 " JVM_CHAIN_CUT_NAME ":0 T.root:103"),
	       "%s", names(4, chain, NM, 16));
}

static void test_chain_cut_innermost(void)
{
	all_readable();
	readable[0] = false;
	CHECKF(!strcmp(names(4, chain, NM, 16), JVM_CHAIN_CUT_NAME ":0 T.root:103"), "%s",
	       names(4, chain, NM, 16));
}

static void test_chain_cut_root(void)
{
	all_readable();
	readable[5] = false; /* the frame's own method too: the mark ends it */
	CHECKF(
	    !strcmp(names(4, chain, NM, 16), "T.a0:100 T.a1:101 T.a2:102 " JVM_CHAIN_CUT_NAME ":0"),
	    "%s", names(4, chain, NM, 16));
}

static void test_chain_bad_index(void)
{
	struct jvm_scope bad[4] = {{1, 0, 0}, {0, 1, 0}, {3, 2, 0}, {6, 3, 0}};
	struct jvm_scope far[2] = {{1, 0, 0}, {6, 3, 0}};

	all_readable();
	/* Index 0 (a NULL Method*) and one past the metadata. */
	CHECKF(!strcmp(names(4, bad, NM, 16), "T.a0:100 " JVM_CHAIN_CUT_NAME ":0 T.root:103"), "%s",
	       names(4, bad, NM, 16));
	CHECKF(!strcmp(names(2, far, 5, 16), "T.a0:100 " JVM_CHAIN_CUT_NAME ":0 T.root:103"), "%s",
	       names(2, far, 5, 16));
	/* Scopes that did not decode (jvm_scopes_chain's -EINVAL): the mark,
	 * then the frame's own method at its entry. */
	CHECKF(!strcmp(names(-22, chain, NM, 16), JVM_CHAIN_CUT_NAME ":0 T.root:0"), "%s",
	       names(-22, chain, NM, 16));
}

static void test_chain_max(void)
{
	all_readable();
	/* Room for 3: one method, the mark, the frame's own. */
	CHECKF(!strcmp(names(4, chain, NM, 3), "T.a0:100 " JVM_CHAIN_CUT_NAME ":0 T.root:103"),
	       "%s", names(4, chain, NM, 3));
	CHECKF(!strcmp(names(4, chain, NM, 4), "T.a0:100 T.a1:101 T.a2:102 T.root:103"), "%s",
	       names(4, chain, NM, 4));
	CHECK(!strcmp(names(4, chain, NM, 1), ""));
}

int main(void)
{
	RUN_TEST(test_chain_whole);
	RUN_TEST(test_chain_cut_middle);
	RUN_TEST(test_chain_cut_innermost);
	RUN_TEST(test_chain_cut_root);
	RUN_TEST(test_chain_bad_index);
	RUN_TEST(test_chain_max);
	CHECK_EXIT();
}
