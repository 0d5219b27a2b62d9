/* A memory image of V8 heap objects in node 20's layout (V8 11.3, x86_64,
 * no pointer compression: the values of its v8dbg_* constants), for the
 * unit tests of formats/v8_*.c. Objects are put at IMG_BASE and up; their
 * tagged pointers have the heap object tag. */
#ifndef TESTS_UNIT_V8_IMAGE_H
#define TESTS_UNIT_V8_IMAGE_H

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include "formats/v8_string.h"

#define IMG_BASE 0x10000000ULL
#define IMG_SIZE (1u << 16)

/* node 20's instance types */
#define T_SEQ2	 32
#define T_CONS2	 33
#define T_EXT2	 34
#define T_SLICE2 35
#define T_THIN2	 37
#define T_SEQ1	 40
#define T_CONS1	 41
#define T_SLICE1 43
#define T_THIN1	 45
#define T_SFI	 262

static const struct v8_string_layout node20_strings = {
    .map = 0,
    .map_type = 12,
    .length = 12,
    .seq1_data = 16,
    .seq2_data = 16,
    .cons_first = 16,
    .cons_second = 24,
    .sliced_parent = 16,
    .sliced_offset = 24,
    .thin_actual = 16,
    .first_nonstring = 128,
    .repr_mask = 7,
    .enc_mask = 8,
    .one_byte_tag = 8,
    .seq_tag = 0,
    .cons_tag = 1,
    .sliced_tag = 3,
    .thin_tag = 5,
    .heap_tag = 1,
    .heap_tag_mask = 3,
    .smi_shift = 32,
};

struct img {
	uint8_t buf[IMG_SIZE];
	size_t n;
	int fail; /* reads fail with -EFAULT */
	unsigned reads;
};

static int img_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct img *m = ctx;

	m->reads++;
	if (m->fail || addr < IMG_BASE || addr - IMG_BASE > m->n || len > m->n - (addr - IMG_BASE))
		return -EFAULT;
	memcpy(buf, m->buf + (addr - IMG_BASE), len);
	return 0;
}

/* Room for an object of len bytes, 8-aligned: its tagged pointer. */
static uint64_t img_alloc(struct img *m, size_t len)
{
	uint64_t at;

	m->n = (m->n + 7) & ~(size_t)7;
	at = IMG_BASE + m->n;
	m->n += (len + 7) & ~(size_t)7;
	return at + 1;
}

static void img_put(struct img *m, uint64_t tagged, uint32_t off, const void *p, size_t len)
{
	memcpy(m->buf + (tagged - 1 - IMG_BASE) + off, p, len);
}

static void img_u64(struct img *m, uint64_t tagged, uint32_t off, uint64_t v)
{
	img_put(m, tagged, off, &v, 8);
}

static void img_u32(struct img *m, uint64_t tagged, uint32_t off, uint32_t v)
{
	img_put(m, tagged, off, &v, 4);
}

/* A map of the type: its tagged pointer. */
static uint64_t img_map(struct img *m, uint16_t type)
{
	uint64_t p = img_alloc(m, 80);

	img_put(m, p, 12, &type, 2);
	return p;
}

static uint64_t img_obj(struct img *m, uint16_t type, size_t len)
{
	uint64_t map = img_map(m, type), p = img_alloc(m, len);

	img_u64(m, p, 0, map);
	return p;
}

static uint64_t img_seq1(struct img *m, const char *s)
{
	size_t n = strlen(s);
	uint64_t p = img_obj(m, T_SEQ1, 16 + n);

	img_u32(m, p, 12, (uint32_t)n);
	img_put(m, p, 16, s, n);
	return p;
}

static uint64_t img_seq2(struct img *m, const uint16_t *u, size_t n)
{
	uint64_t p = img_obj(m, T_SEQ2, 16 + 2 * n);

	img_u32(m, p, 12, (uint32_t)n);
	img_put(m, p, 16, u, 2 * n);
	return p;
}

static uint64_t img_cons(struct img *m, uint64_t a, uint64_t b, uint32_t len)
{
	uint64_t p = img_obj(m, T_CONS1, 32);

	img_u32(m, p, 12, len);
	img_u64(m, p, 16, a);
	img_u64(m, p, 24, b);
	return p;
}

#endif
