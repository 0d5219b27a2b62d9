/* libFuzzer target: formats/pyline.c on a line table from another
 * process. The first byte picks the format (mod 3) and the first line
 * (signed, scaled to reach INT_MIN/INT_MAX); the rest is the table: every
 * range, then lookups at and around each range's bounds. The corpus
 * (tests/fuzz/corpus/pyline) holds real tables of 3.8, 3.10 and 3.12 with
 * that first byte. */
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include "formats/pyline.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum pyline_format fmts[] = {PYLINE_LNOTAB, PYLINE_LINETABLE,
						  PYLINE_LOCATIONS};
	struct pyline_iter it;
	struct pyline_range r;
	enum pyline_format fmt;
	int first, line, n = 0;

	if (size < 1)
		return 0;
	fmt = fmts[data[0] % 3];
	first = data[0] < 0xf0 ? 1 + data[0] / 3 : data[0] & 1 ? INT_MAX - 100 : INT_MIN + 100;
	pyline_iter_init(&it, fmt, data + 1, size - 1, first);
	while (pyline_next(&it, &r) == 1 && n++ < 100000) {
		if (r.end <= r.start || (r.line < 0 && r.line != -1))
			__builtin_trap(); /* ranges are never empty; lines -1 or real */
		pyline_lookup(fmt, data + 1, size - 1, first, (int64_t)r.start, &line);
		if (r.end != UINT64_MAX)
			pyline_lookup(fmt, data + 1, size - 1, first, (int64_t)r.end - 1, &line);
	}
	pyline_lookup(fmt, data + 1, size - 1, first, -1, &line);
	pyline_lookup(fmt, data + 1, size - 1, first, INT64_MAX, &line);
	return 0;
}
