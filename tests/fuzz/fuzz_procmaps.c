/* libFuzzer target: formats/procmaps.c, the /proc/PID/maps parser. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "formats/procmaps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct procmaps_entry *e;
	size_t n, i, sum = 0;

	if (procmaps_parse((const char *)data, size, &e, &n))
		return 0;
	for (i = 0; i < n; i++)
		sum += strlen(e[i].path); /* each path is a C string */
	procmaps_free(e, n);
	return sum == SIZE_MAX;
}
