/* libFuzzer target: user/symbols.c's /proc/kallsyms parser and lookups. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "user/symbols.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	const char *mod;
	uint64_t a = 0;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = 0;
	if (!kallsyms_parse(text, size)) {
		if (size >= 8)
			memcpy(&a, data, 8);
		kallsyms_lookup(a, &mod);
		kallsyms_lookup(0, &mod);
		kallsyms_lookup(UINT64_MAX, NULL);
	}
	kallsyms_free();
	return 0;
}
