/* libFuzzer target: formats/gopclntab.c on a .gopclntab section: the
 * header, then lookups at and around the first functions' entries. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "formats/gopclntab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gopcln g;
	const char *fn, *file;
	uint64_t i;
	int line;

	/* Where runtime.text usually is, for Go 1.26's header, which has 0. */
	if (gopcln_open(&g, data, size, 0x401000))
		return 0;
	for (i = 0; i <= g.nfunc && i < 64; i++) {
		uint32_t entry;

		memcpy(&entry, data + g.functab + 8 * i, 4); /* open checked the table */
		gopcln_lookup(&g, g.text_start + entry, &fn, &file, &line);
		gopcln_lookup(&g, g.text_start + entry + 1, &fn, &file, &line);
		gopcln_lookup(&g, g.text_start + entry + 37, &fn, &file, &line);
	}
	gopcln_lookup(&g, 0, &fn, &file, &line);
	gopcln_lookup(&g, UINT64_MAX, &fn, &file, &line);
	return 0;
}
