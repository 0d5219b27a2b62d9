/* formats/v8_string.c on memory images of V8 strings (tests/unit/v8_image.h):
 * every representation it reads, UTF-16 to UTF-8, the output's cut, then
 * hostile images: not a string, a bad length or slice, an external
 * string, a cons cycle, a failing read. */
#include <stdio.h>
#include <stdlib.h>
#include "check.h"
#include "v8_image.h"

static struct img *img_new(void)
{
	struct img *m = calloc(1, sizeof(*m));

	m->n = 64; /* nothing at IMG_BASE: no object's pointer is the image's first byte */
	return m;
}

static int str(struct img *m, uint64_t p, char *out, size_t size)
{
	return v8_string_read(&node20_strings, img_read, m, p, out, size, NULL);
}

static void test_seq(void)
{
	struct img *m = img_new();
	uint16_t u[] = {'h', 0xe9, 0x20ac, 0xd83d, 0xde00, '!'}; /* h é € 😀 ! */
	uint64_t a = img_seq1(m, "nmethod"), b = img_seq2(m, u, 6), e = img_seq1(m, "");
	char out[64];
	size_t len = 0;

	CHECK(!v8_string_read(&node20_strings, img_read, m, a, out, sizeof(out), &len));
	CHECK(!strcmp(out, "nmethod") && len == 7);
	CHECK(!str(m, b, out, sizeof(out)));
	CHECKF(!strcmp(out, "h\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80!"), "%s", out);
	CHECK(!str(m, e, out, sizeof(out)) && !out[0]);
	free(m);
}

static void test_surrogates_and_controls(void)
{
	struct img *m = img_new();
	uint16_t u[] = {0xdc00, 'a', 0xd800, 'b', 0xd800};
	uint64_t a = img_seq2(m, u, 5), c = img_seq1(m, "a\nb\x7f");
	char out[64];

	CHECK(!str(m, a, out, sizeof(out)));
	CHECKF(!strcmp(out, "\xef\xbf\xbd"
			    "a\xef\xbf\xbd"
			    "b\xef\xbf\xbd"),
	       "%s", out);
	CHECK(!str(m, c, out, sizeof(out)) && !strcmp(out, "a?b?"));
	free(m);
}

static void test_cons_thin_sliced(void)
{
	struct img *m = img_new();
	uint64_t a = img_seq1(m, "Holder"), b = img_seq1(m, "."), c = img_seq1(m, "nmethod");
	uint64_t ab = img_cons(m, a, b, 7), abc = img_cons(m, ab, c, 14);
	uint64_t thin = img_obj(m, T_THIN1, 24), sl = img_obj(m, T_SLICE1, 32);
	uint64_t sl_cons = img_obj(m, T_SLICE1, 32);
	char out[64];

	CHECK(!str(m, abc, out, sizeof(out)) && !strcmp(out, "Holder.nmethod"));
	img_u32(m, thin, 12, 14);
	img_u64(m, thin, 16, abc);
	CHECK(!str(m, thin, out, sizeof(out)) && !strcmp(out, "Holder.nmethod"));
	img_u32(m, sl, 12, 3);
	img_u64(m, sl, 16, c);
	img_u64(m, sl, 24, 1ULL << 32); /* Smi 1 */
	CHECK(!str(m, sl, out, sizeof(out)) && !strcmp(out, "met"));
	/* A slice of a cons across its parts (V8 slices flat strings only,
	 * but the reader does not rely on it). */
	img_u32(m, sl_cons, 12, 5);
	img_u64(m, sl_cons, 16, abc);
	img_u64(m, sl_cons, 24, 4ULL << 32);
	CHECK(!str(m, sl_cons, out, sizeof(out)) && !strcmp(out, "er.nm"));
	free(m);
}

static void test_cut(void)
{
	struct img *m = img_new();
	uint16_t u[] = {'a', 'b', 0x20ac};
	uint64_t a = img_seq2(m, u, 3), b = img_seq1(m, "abcdef");
	char out[5];
	size_t len;

	/* "ab€" needs 5 bytes and the NUL: the euro sign is left out whole. */
	CHECK(!v8_string_read(&node20_strings, img_read, m, a, out, sizeof(out), &len));
	CHECK(!strcmp(out, "ab") && len == 2);
	CHECK(!str(m, b, out, sizeof(out)) && !strcmp(out, "abcd"));
	CHECK(!str(m, b, out, 1) && !out[0]);
	CHECK(str(m, b, out, 0) == -EINVAL);
	free(m);
}

static void test_hostile(void)
{
	struct img *m = img_new();
	uint64_t a = img_seq1(m, "abc"), sfi = img_obj(m, T_SFI, 64);
	uint64_t ext = img_obj(m, 34, 32), loop = img_cons(m, 0, 0, 4);
	uint64_t bad = img_seq1(m, "xyz"), sl = img_obj(m, T_SLICE1, 32);
	uint64_t deep = a;
	char out[64] = "junk";
	uint16_t type = 0;

	CHECK(str(m, sfi, out, sizeof(out)) == -EINVAL && !out[0]);
	CHECK(!v8_instance_type(&node20_strings, img_read, m, sfi, &type) && type == T_SFI);
	CHECK(v8_instance_type(&node20_strings, img_read, m, sfi - 1, &type) == -EINVAL);
	CHECK(str(m, ext, out, sizeof(out)) == -ENOTSUP);
	CHECK(str(m, a - 1, out, sizeof(out)) == -EINVAL); /* not a tagged pointer */
	CHECK(str(m, 0x7000000001ULL, out, sizeof(out)) == -EFAULT);
	/* A cons whose second part is itself reads what its length asks;
	 * one whose first part is itself is bounded. */
	img_u64(m, loop, 16, img_seq1(m, "ab"));
	img_u64(m, loop, 24, loop);
	CHECK(!str(m, loop, out, sizeof(out)) && !strcmp(out, "abab"));
	img_u64(m, loop, 16, loop);
	CHECK(str(m, loop, out, sizeof(out)) == -ELOOP);
	img_u32(m, loop, 12, 0x7fffffff);
	CHECK(str(m, loop, out, sizeof(out)) == -EINVAL);
	/* A length past the object, negative: refused or read to the image's end. */
	img_u32(m, bad, 12, 0x80000000u);
	CHECK(str(m, bad, out, sizeof(out)) == -EINVAL);
	img_u32(m, bad, 12, 1u << 20);
	CHECK(str(m, bad, out, sizeof(out)) == -EFAULT);
	/* A slice past its parent, an odd (not Smi) offset. */
	img_u32(m, sl, 12, 3);
	img_u64(m, sl, 16, a);
	img_u64(m, sl, 24, 1ULL << 32);
	CHECK(str(m, sl, out, sizeof(out)) == -EINVAL);
	img_u64(m, sl, 24, 3);
	CHECK(str(m, sl, out, sizeof(out)) == -EINVAL);
	/* Thin strings chained past the depth. */
	for (int i = 0; i < V8_STRING_DEPTH + 2; i++) {
		uint64_t t = img_obj(m, T_THIN1, 24);

		img_u32(m, t, 12, 3);
		img_u64(m, t, 16, deep);
		deep = t;
	}
	CHECK(str(m, deep, out, sizeof(out)) == -ELOOP);
	m->fail = 1;
	CHECK(str(m, a, out, sizeof(out)) == -EFAULT && !out[0]);
	free(m);
}

int main(void)
{
	RUN_TEST(test_seq);
	RUN_TEST(test_surrogates_and_controls);
	RUN_TEST(test_cons_thin_sliced);
	RUN_TEST(test_cut);
	RUN_TEST(test_hostile);
	return check_tests_failed ? 1 : 0;
}
