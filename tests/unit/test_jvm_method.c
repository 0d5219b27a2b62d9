/* user/runtime/jvm_method.h: a Java method's names and lines read while its
 * class is unloaded and the memory taken by another class shaped the same
 * (tests/workloads/JChurn.java's two Workers): A's evenSpin and B's oddSpin,
 * their Method and ConstMethod at the same addresses, as CI's jvm_churn had
 * them. The memory turns from A's to B's after the k-th read, for every k:
 * what is read is all A's, all B's, or refused. Before the second read of
 * what the names are read through, a turn between the name's read and the
 * line table's gave A's evenSpin at B's line 14 (CI's jvm_churn failure). */
#include <stdint.h>
#include <string.h>
#include "check.h"
#include "user/runtime/jvm_method.h"

static const struct jvm_method_layout L = {
    .m_const = 8,
    .c_constants = 8,
    .c_code_size = 16,
    .c_name_index = 18,
    .c_sig_index = 20,
    .c_flags = 22,
    .c_size = 48,
    .cp_holder = 16,
    .cp_source_file = 24,
    .cp_size = 64,
    .k_name = 24,
    .sym_length = 4,
    .sym_body = 6,
    .flag_lines = 1,
    .c_words = 28,
    .c_idnum = 24,
    .k_constants = 32,
    .k_methods = 40,
    .arr_len = 0,
    .arr_data = 8,
    .sym_refcount = 0,
    .has_refcount = 1,
    .k_init_state = 48,
    .linked = 2,
};

#define BASE	0x10000u
#define SIZE	0x10000u
#define METHOD	0x10000u
#define CM	0x11000u
#define KLASS	0x14000u
#define KLASS_A 0x14100u /* A's class, where the pool is A's (test_pool_reused) */
#define ARRAY	0x14200u
#define ARRAY_A 0x14300u
#define SYM_CLS 0x15000u
#define SYM_SIG 0x15100u
#define SYM_SRC 0x15200u
#define SYM_EVN 0x15300u
#define SYM_ODD 0x15400u

struct mem {
	uint8_t a[SIZE], b[SIZE];
	int reads, turn_at; /* reads before the turn from a to b */
};

static void put(uint8_t *m, uint64_t at, const void *v, size_t n)
{
	memcpy(m + (at - BASE), v, n);
}

static void put64(uint8_t *m, uint64_t at, uint64_t v)
{
	put(m, at, &v, 8);
}

static void put16(uint8_t *m, uint64_t at, uint16_t v)
{
	put(m, at, &v, 2);
}

static void put32(uint8_t *m, uint64_t at, uint32_t v)
{
	put(m, at, &v, 4);
}

static void sym(uint8_t *m, uint64_t at, const char *s)
{
	uint32_t hash_and_refcount = 0x12340001; /* one reference */

	put(m, at, &hash_and_refcount, 4);
	put16(m, at + 4, (uint16_t)strlen(s));
	put(m, at + 6, s, strlen(s));
}

/* One class's method: its ConstMethod at CM, its constant pool at cp. The
 * compressed line tables: (bci 0, line first), (2, first + 1), (end, first
 * + 2), as javac's for the two spin loops. */
static void lay(uint8_t *m, uint64_t cp, uint16_t code_size, uint64_t name_sym, int first)
{
	uint8_t tab[] = {
	    0xff, 0, (uint8_t)(2 * first), 2 << 3 | 1, 0xff, (uint8_t)(2 * (code_size - 4)), 2, 0};

	/* Every class's common symbols (they outlive a class: shared). */
	sym(m, SYM_CLS, "Worker");
	sym(m, SYM_SIG, "(J)J");
	sym(m, SYM_SRC, "Worker.java");
	sym(m, SYM_EVN, "evenSpin");
	sym(m, SYM_ODD, "oddSpin");
	put64(m, KLASS + L.k_name, SYM_CLS);
	put64(m, METHOD + L.m_const, CM);
	put64(m, CM + L.c_constants, cp);
	put16(m, CM + L.c_name_index, 13);
	put16(m, CM + L.c_sig_index, 14);
	put16(m, CM + L.c_code_size, code_size);
	put16(m, CM + L.c_flags, 1);
	put(m, CM + L.c_size + code_size, tab, sizeof(tab));
	put32(m, CM + L.c_words, (L.c_size + code_size + sizeof(tab) + 7) / 8);
	put16(m, CM + L.c_idnum, 1);
	put64(m, cp + L.cp_holder, KLASS);
	put64(m, KLASS + L.k_constants, cp);
	m[KLASS + L.k_init_state - BASE] = 4; /* fully_initialized */
	put64(m, KLASS + L.k_methods, ARRAY);
	put64(m, ARRAY + L.arr_len, 2);
	put64(m, ARRAY + L.arr_data + 8, METHOD);
	put16(m, cp + L.cp_source_file, 26);
	put64(m, cp + L.cp_size + 8 * 13, name_sym);
	put64(m, cp + L.cp_size + 8 * 14, SYM_SIG);
	put64(m, cp + L.cp_size + 8 * 26, SYM_SRC);
}

static size_t mem_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct mem *m = ctx;
	const uint8_t *src = m->reads++ < m->turn_at ? m->a : m->b;

	if (addr < BASE || addr >= BASE + SIZE)
		return 0;
	if (len > BASE + SIZE - addr)
		len = BASE + SIZE - addr;
	memcpy(buf, src + (addr - BASE), len);
	return len;
}

/* For every turn: refused, or one method's name with its own lines. */
static void turns(uint64_t cp_a, uint64_t cp_b)
{
	static struct mem m;
	struct jvm_method_rd r = {&L, mem_read, &m};
	int whole = 0, mixed = 0, refused = 0, k, reads;

	memset(&m, 0, sizeof(m));
	lay(m.a, cp_a, 32, SYM_EVN, 11);
	lay(m.b, cp_b, 36, SYM_ODD, 13);
	m.turn_at = 1 << 30;
	{
		struct jvm_method_read out;

		CHECK(jvm_method_read(&r, METHOD, &out) == 0);
		reads = m.reads;
		CHECKF(out.m.name && !strcmp(out.m.name, "Worker.evenSpin") &&
			   out.m.first_line == 11 && out.m.file &&
			   !strcmp(out.m.file, "Worker.java"),
		       "%s:%d", out.m.name ? out.m.name : "-", out.m.first_line);
		jvm_method_read_free(&out);
	}
	for (k = 0; k <= reads; k++) {
		struct jvm_method_read out;
		int line = -1;

		m.reads = 0;
		m.turn_at = k;
		if (jvm_method_read(&r, METHOD, &out)) {
			refused++;
			continue;
		}
		if (out.lines && jvm_line_for_bci(out.lines, out.nlines, 2, &line))
			line = -1;
		if ((!strcmp(out.m.name, "Worker.evenSpin") && line == 12) ||
		    (!strcmp(out.m.name, "Worker.oddSpin") && line == 14)) {
			whole++;
		} else {
			mixed++;
			fprintf(stderr, "turn after read %d of %d: %s at bci 2 line %d\n", k, reads,
				out.m.name, line);
		}
		jvm_method_read_free(&out);
	}
	CHECKF(!mixed && whole >= 2, "%d mixed, %d whole, %d refused of %d turns", mixed, whole,
	       refused, reads + 1);
}

/* m with B's method laid out whole, its memory never turning. */
static struct mem *b_whole(void)
{
	static struct mem m;

	memset(&m, 0, sizeof(m));
	lay(m.a, 0x12000, 36, SYM_ODD, 13);
	m.turn_at = 1 << 30;
	return &m;
}

/* The method read from m: 0, its name in name and its token in *token,
 * or the read's error. */
static int read_token(struct mem *m, char *name, size_t len, uint32_t *token)
{
	struct jvm_method_rd r = {&L, mem_read, m};
	struct jvm_method_read out;
	int ret = jvm_method_read(&r, METHOD, &out);

	snprintf(name, len, "%s", ret ? "-" : out.m.name);
	*token = ret ? 0 : out.token;
	if (!ret)
		jvm_method_read_free(&out);
	return ret;
}

static int read_name(struct mem *m, char *name, size_t len)
{
	uint32_t token;

	return read_token(m, name, len, &token);
}

/* B's constant pool elsewhere: A's, freed, still holds A's name. */
static void test_turn_cp_moved(void)
{
	turns(0x12000, 0x13000);
}

/* B's constant pool where A's was. */
static void test_turn_cp_same(void)
{
	turns(0x12000, 0x12000);
}

/* B's method whole, but its constant pool's memory A's pool now (A's
 * class loaded where B's was): the pool names evenSpin at B's name index.
 * Its class (A's) lists another method at B's idnum: refused. Before the
 * way back was checked: Worker.evenSpin with B's lines (CI's failure). */
static void test_pool_reused(void)
{
	struct mem *m = b_whole();
	char name[JVM_SYM_MAX];
	int ret;

	/* A's pool over B's: its name at 13, its class A's. */
	put64(m->a, 0x12000 + L.cp_size + 8 * 13, SYM_EVN);
	put64(m->a, 0x12000 + L.cp_holder, KLASS_A);
	put64(m->a, KLASS_A + L.k_name, SYM_CLS);
	put64(m->a, KLASS_A + L.k_constants, 0x12000);
	m->a[KLASS_A + L.k_init_state - BASE] = 4;
	put64(m->a, KLASS_A + L.k_methods, ARRAY_A);
	put64(m->a, ARRAY_A + L.arr_len, 2);
	put64(m->a, ARRAY_A + L.arr_data + 8, METHOD + 0x100); /* A's own method */
	ret = read_name(m, name, sizeof(name));
	CHECKF(ret == -EFAULT, "read %d: %s", ret, name);
	/* And where the class lists it: read (the check is not a refusal of all). */
	put64(m->a, ARRAY_A + L.arr_data + 8, METHOD);
	ret = read_name(m, name, sizeof(name));
	CHECKF(ret == 0 && !strcmp(name, "Worker.evenSpin"), "read %d", ret);
}

/* B's class unloaded, its method's memory whole but its name's Symbol
 * released (its count 0, as JChurn's "Worker." frames had it): refused. */
static void test_symbol_released(void)
{
	struct mem *m = b_whole();
	uint32_t released = 0x12340000;
	char name[JVM_SYM_MAX];
	int ret;

	ret = read_name(m, name, sizeof(name));
	CHECKF(ret == 0 && !strcmp(name, "Worker.oddSpin"), "read %d", ret);
	put(m->a, SYM_ODD, &released, 4);
	ret = read_name(m, name, sizeof(name));
	CHECKF(ret == -EFAULT, "read %d: %s", ret, name);
}

/* B's class unloaded, its method's memory whole, its name's Symbol freed
 * and its memory a new live Symbol's, "evenSpin" (CI's jvm_churn: B's
 * oddSpin named A's evenSpin): the read cannot tell, but its token, of the
 * Symbol's hash among the rest, is not the one the sample's walk read
 * (bpf/runtime/jvm.bpf.c's method_token), and the frame is refused
 * (user/runtime/jvm.c's method_get). A read again of what has not changed
 * has the same token. */
static void test_symbol_reused_token(void)
{
	struct mem *m = b_whole();
	uint32_t fresh = 0x56780001, t0, t1, t2;
	char name[JVM_SYM_MAX];
	int ret;

	ret = read_token(m, name, sizeof(name), &t0);
	CHECKF(ret == 0 && !read_token(m, name, sizeof(name), &t1) && t1 == t0,
	       "read %d: tokens %#x, %#x", ret, t0, t1);
	sym(m->a, SYM_ODD, "evenSpin");
	put(m->a, SYM_ODD, &fresh, 4);
	ret = read_token(m, name, sizeof(name), &t2);
	CHECKF(ret == 0 && !strcmp(name, "Worker.evenSpin") && t2 != t0,
	       "read %d: %s, token %#x (the sample's %#x)", ret, name, t2, t0);
}

/* A's method and B's of one name in classes of one name and file, their
 * Symbols shared (a name Symbol outlives a class that uses it: every
 * incarnation has "run"), laid at the same addresses: only their lines
 * tell them apart. A's token read while it ran is not what a read of B's
 * finds (jvm_churn at bed4326: A's run named with B's lines, 2,275
 * frames); before the token held the lines, the two were equal. And the
 * line table's bytes past the ConstMethod's end, another object's, are
 * not in it. */
static void test_same_names_other_lines(void)
{
	static struct mem m;
	uint32_t ta, tb, tc;
	char a[JVM_SYM_MAX], b[JVM_SYM_MAX], c[JVM_SYM_MAX];
	int ra, rb, rc;

	memset(&m, 0, sizeof(m));
	m.turn_at = 1 << 30;
	lay(m.a, 0x12000, 32, SYM_EVN, 11);
	ra = read_token(&m, a, sizeof(a), &ta);
	lay(m.a, 0x12000, 32, SYM_EVN, 13);
	rb = read_token(&m, b, sizeof(b), &tb);
	CHECKF(!ra && !rb && !strcmp(a, b) && ta != tb, "reads %d %d: %s %#x, %s %#x", ra, rb, a,
	       ta, b, tb);
	/* A ConstMethod of 11 words (88 bytes) whose line table starts 4
	 * bytes before its end (48 + 36): a byte of it changes the token, a
	 * byte past the end does not. */
	lay(m.a, 0x12000, 36, SYM_EVN, 13);
	put32(m.a, CM + L.c_words, 11);
	ra = read_token(&m, a, sizeof(a), &ta);
	m.a[CM + 88 - BASE] ^= 0xff;
	rb = read_token(&m, b, sizeof(b), &tb);
	m.a[CM + 87 - BASE] ^= 0xff;
	rc = read_token(&m, c, sizeof(c), &tc);
	CHECKF(!ra && !rb && !rc && tb == ta && tc != ta, "reads %d %d %d: tokens %#x %#x %#x", ra,
	       rb, rc, ta, tb, tc);
}

/* Where the class sampled was, a class being loaded (its state allocated,
 * or loaded: not linked): refused. */
static void test_class_loading(void)
{
	struct mem *m = b_whole();
	char name[JVM_SYM_MAX];

	for (uint8_t state = 0; state <= 4; state++) {
		int ret;

		m->a[KLASS + L.k_init_state - BASE] = state;
		ret = read_name(m, name, sizeof(name));
		CHECKF(state < 2 ? ret == -EFAULT : ret == 0, "state %u: read %d", state, ret);
	}
}

/* A class name of 700 bytes read whole (up to JVM_SYM_MAX - 1, 1,023):
 * the header's bound was 512 for a while, and cut it. */
static void test_long_name(void)
{
	struct mem *m = b_whole();
	char cls[701], name[2 * JVM_SYM_MAX];
	int ret;

	memset(cls, 'a', 700);
	cls[700] = 0;
	sym(m->a, 0x16000, cls);
	put64(m->a, KLASS + L.k_name, 0x16000);
	ret = read_name(m, name, sizeof(name));
	CHECKF(ret == 0 && strlen(name) == 700 + strlen(".oddSpin"), "read %d: %zu bytes", ret,
	       strlen(name));
}

int main(void)
{
	RUN_TEST(test_turn_cp_moved);
	RUN_TEST(test_turn_cp_same);
	RUN_TEST(test_pool_reused);
	RUN_TEST(test_symbol_released);
	RUN_TEST(test_symbol_reused_token);
	RUN_TEST(test_same_names_other_lines);
	RUN_TEST(test_class_loading);
	RUN_TEST(test_long_name);
	return check_tests_failed != 0;
}
