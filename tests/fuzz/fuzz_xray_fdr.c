/* libFuzzer target: formats/xray_fdr.c's reader (fdr_read), what decodes an
 * FDR trace; the rest of that file is the writer. */
#include <stddef.h>
#include <stdint.h>
#include "formats/xray_fdr.h"

static int on_record(void *ctx, const struct fdr_record *r)
{
	uint64_t *sum = ctx;
	unsigned i;

	*sum += r->ts + r->func_id + r->cpu;
	for (i = 0; i < r->nargs; i++)
		*sum += r->args[i];
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fdr_file_info info;
	const char *err = NULL;
	size_t off = 0;
	uint64_t sum = 0;

	fdr_read(data, size, &info, on_record, &sum, &err, &off);
	return 0;
}
