/* LD_PRELOAD shim for allocation-failure tests: fails the FAILREALLOC_NTH-th
 * realloc (from 1) called from the main program's code at offsets
 * [FAILREALLOC_FROM, FAILREALLOC_FROM + FAILREALLOC_SIZE) (hex, as nm -S
 * gives a function's), and every one after it from there; the others go
 * to libc's. It writes "failed N" to FAILREALLOC_LOG (a path) at each
 * failure, so that a test knows the failure happened. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *(*real_realloc)(void *, size_t);
static uintptr_t lo, hi;
static long nth, seen;

static int main_base(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	*(uintptr_t *)data = info->dlpi_addr; /* the first one is the program */
	return 1;
}

__attribute__((constructor)) static void init(void)
{
	const char *from = getenv("FAILREALLOC_FROM"), *size = getenv("FAILREALLOC_SIZE");
	const char *n = getenv("FAILREALLOC_NTH");
	uintptr_t base = 0;

	real_realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
	if (!from || !size || !n)
		return;
	dl_iterate_phdr(main_base, &base);
	lo = base + strtoull(from, NULL, 16);
	hi = lo + strtoull(size, NULL, 16);
	nth = atol(n);
}

void *realloc(void *p, size_t n)
{
	uintptr_t ra = (uintptr_t)__builtin_return_address(0);

	if (lo && ra >= lo && ra < hi && ++seen >= nth) {
		const char *log = getenv("FAILREALLOC_LOG");
		int fd = log ? open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644) : -1;

		if (fd >= 0) {
			char line[32];
			int len = snprintf(line, sizeof(line), "failed %ld\n", seen);

			/* Unwritten, the test sees no failure and says so. */
			if (write(fd, line, len) < 0)
				errno = 0;
			close(fd);
		}
		errno = ENOMEM;
		return NULL;
	}
	return real_realloc(p, n);
}
