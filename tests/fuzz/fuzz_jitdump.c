/* libFuzzer target: formats/jitdump.c's parser, with and without a time
 * conversion, then lookups of the symbols and lines it built. */
#include <stddef.h>
#include <stdint.h>
#include "formats/jitdump.h"

static uint64_t conv(void *ctx, uint64_t raw)
{
	(void)ctx;
	return raw / 3; /* any TSC-to-ns mapping; the parser must not care */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jitdump d;
	const char *err;
	size_t i;

	if (jitdump_parse(data, size, size & 1 ? conv : NULL, NULL, &d, &err))
		return 0;
	for (i = 0; i < d.nsyms && i < 64; i++) {
		const struct jit_sym *s = &d.syms[i];

		jitdump_lookup(&d, s->start, s->t_start);
		jitdump_lookup(&d, s->start + s->size / 2, s->t_end);
		if (jitdump_lookup(&d, s->start, UINT64_MAX / 2) == s)
			jitdump_line(s, s->start + s->size - 1);
		jitdump_line(s, s->start);
	}
	jitdump_lookup(&d, 0, 0);
	jitdump_lookup(&d, UINT64_MAX, UINT64_MAX);
	jitdump_free(&d);
	return 0;
}
