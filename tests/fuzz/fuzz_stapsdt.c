/* libFuzzer target: formats/stapsdt.c's probe-note parser (a binary's
 * .note.stapsdt, which -t usdt: reads from files others may control). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "formats/stapsdt.h"

static int touch(void *ctx, const struct stapsdt_probe *p)
{
	size_t *n = ctx;

	*n += strlen(p->provider) + strlen(p->name) + strlen(p->args) + p->nargs;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t n = 0;

	stapsdt_parse(data, size, touch, &n);
	return 0;
}
