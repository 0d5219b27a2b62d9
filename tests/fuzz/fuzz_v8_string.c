/* libFuzzer target: formats/v8_string.c on a memory image of another
 * process's V8 heap. The input is the memory at a fixed base (FAKE_BASE);
 * its first 8 bytes are the tagged pointer of the string to read, and
 * pointers in it point into the input or nowhere. Every read is
 * bounds-checked against the input. The layout is node 20's (V8 11.3,
 * x86_64). The corpus (tests/fuzz/corpus/v8_string) holds small images:
 * a one-byte string, and a cons of a two-byte string and a slice. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "formats/v8_string.h"

#define FAKE_BASE 0x10000ULL

static const struct v8_string_layout layout = {
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

struct image {
	const uint8_t *p;
	size_t n;
};

static int rd(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct image *m = ctx;

	if (addr < FAKE_BASE || addr - FAKE_BASE > m->n || len > m->n - (addr - FAKE_BASE))
		return -EFAULT;
	memcpy(buf, m->p + (addr - FAKE_BASE), len);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct image m = {data, size};
	char out[96];
	size_t len = 0;
	uint64_t p;
	uint16_t type;
	int r;

	if (size < 8)
		return 0;
	memcpy(&p, data, 8);
	v8_instance_type(&layout, rd, &m, p, &type);
	r = v8_string_read(&layout, rd, &m, p, out, sizeof(out), &len);
	/* The output always ends, is as long as said, and carries no control
	 * character (names go into text formats). */
	if (len >= sizeof(out) || out[len] || (r && len) || strlen(out) != len)
		__builtin_trap();
	for (size_t i = 0; i < len; i++)
		if ((uint8_t)out[i] < 0x20 || out[i] == 0x7f)
			__builtin_trap();
	return 0;
}
