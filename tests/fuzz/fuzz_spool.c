/* libFuzzer target: formats/spool.c's reader, on files a later run reads
 * back from the spool directory. What it accepts is encoded again and must
 * be the same bytes (the format has one way to write each request). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "formats/spool.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char fields[2][SPOOL_FIELD_MAX + 1];
	struct spool_req r;
	struct fmt_buf b = {0};

	if (spool_decode(data, size, &r, fields))
		return 0;
	if (spool_encode(&r, &b) || b.n != size || memcmp(b.p, data, size))
		abort();
	free(b.p);
	return 0;
}
