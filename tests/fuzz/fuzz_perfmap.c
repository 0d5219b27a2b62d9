/* libFuzzer target: formats/perfmap.c's parser and lookups of what it built. */
#include <stddef.h>
#include <stdint.h>
#include "formats/perfmap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct perfmap m;
	size_t i;

	if (perfmap_parse((const char *)data, size, &m))
		return 0;
	for (i = 0; i < m.nsyms && i < 64; i++) {
		perfmap_lookup(&m, m.syms[i].start);
		perfmap_lookup(&m, m.syms[i].start + m.syms[i].size - 1);
	}
	perfmap_lookup(&m, 0);
	perfmap_lookup(&m, UINT64_MAX);
	perfmap_free(&m);
	return 0;
}
