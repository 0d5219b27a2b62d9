/* libFuzzer target: formats/v8_srcpos.c on a source position table and a
 * script's text from another process. The first 4 bytes are a query (a
 * code offset, little endian); the rest is read as a table (the query,
 * 0 and the largest offset) and as a script's text (its line ends, and the
 * line of each position found), and as InliningPositions each found
 * position is expanded through. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include "formats/v8_srcpos.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int32_t ends[4096];
	struct v8_inline_frame fr[64];
	size_t nf;
	const uint8_t *b = data + 4;
	uint32_t q;
	int64_t p;
	size_t n;
	int line;

	if (size < 4)
		return 0;
	q = (uint32_t)data[0] | (uint32_t)data[1] << 8 | (uint32_t)data[2] << 16 |
	    (uint32_t)data[3] << 24;
	n = v8_line_ends((const char *)b, size - 4, ends, 4096);
	if (n > 4096 || !n)
		__builtin_trap();
	for (int k = 0; k < 3; k++) {
		uint32_t off = k == 0 ? q : k == 1 ? 0 : UINT32_MAX;
		int r = v8_srcpos_find(b, size - 4, off, &p);

		if (r && r != -ENOENT && r != -EINVAL)
			__builtin_trap();
		if (r)
			continue;
		if (p < 0 || p >= (1LL << 47) || v8_srcpos_inlining_id(p) < -1)
			__builtin_trap();
		if (!v8_line_of(ends, n, v8_srcpos_script_offset(p), &line) &&
		    (line < 1 || (size_t)line > n))
			__builtin_trap();
		r = v8_inline_expand(b, size - 4, p, fr, 64, &nf);
		if (r && r != -EINVAL && r != -E2BIG)
			__builtin_trap();
		if (!r && (!nf || nf > 64 || fr[nf - 1].literal != -1))
			__builtin_trap();
		for (size_t i = 0; !r && i + 1 < nf; i++)
			if (fr[i].literal < 0 || fr[i].script_offset < 0)
				__builtin_trap();
	}
	return 0;
}
