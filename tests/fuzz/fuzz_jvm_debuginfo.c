/* libFuzzer target: formats/jvm_debuginfo.c on debug data from another
 * process. The first 4 bytes are a query: a bci or pc offset (int16, little
 * endian) and a scope decode offset (uint16); the rest is read as a
 * compressed line number table (every pair, then the line of the query,
 * of -1 and of each pair's bci), as a PcDesc array in JDK 17's layout (the
 * query pc, exact and not, and the scope chain of what is found, the rest
 * being the scopes data too) and as scopes data from the decode offset.
 * The corpus (tests/fuzz/corpus/jvm_debuginfo) holds a query and real
 * data of tests/unit/jvm_vectors.txt: line tables, six()'s PcDescs and
 * its scopes. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include "formats/jvm_debuginfo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct jvm_pcdesc_layout l = {16, 0, 4, 8, 12};
	struct jvm_scope sc[16];
	struct jvm_lnt_iter it;
	struct jvm_pcdesc d;
	const uint8_t *b = data + 4;
	size_t n = size - 4;
	int q, off, bci, line, r;

	if (size < 4)
		return 0;
	q = (int16_t)(data[0] | data[1] << 8);
	off = data[2] | data[3] << 8;
	jvm_lnt_init(&it, b, n);
	while ((r = jvm_lnt_next(&it, &bci, &line)) == 1) {
		if (bci < 0 || line < 0)
			__builtin_trap(); /* pairs are never negative */
		jvm_line_for_bci(b, n, bci, &line);
	}
	jvm_line_for_bci(b, n, q, &line);
	jvm_line_for_bci(b, n, -1, &line);
	for (int exact = 0; exact < 2; exact++) {
		r = jvm_pcdesc_find(b, n - n % 16, &l, q, exact, &d);
		if (!r && (d.index >= n / 16 || (exact && d.pc_offset != q) || d.pc_offset < q))
			__builtin_trap(); /* the record is in the array and at or after q */
		if (!r)
			jvm_scopes_chain(b, n, d.scope_decode_offset, sc, 16);
	}
	r = jvm_scopes_chain(b, n, off, sc, 16);
	if (r > 16)
		__builtin_trap();
	return 0;
}
