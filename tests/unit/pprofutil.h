/* The unit tests' pprof profile as the push reads it: written by
 * formats/pprof.c, gzip and all, into dir, and read back gunzipped. */
#ifndef TESTS_UNIT_PPROFUTIL_H
#define TESTS_UNIT_PPROFUTIL_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <zlib.h>
#include "check.h"
#include "formats/pprof.h"

static unsigned char *pprof_bytes(struct pprof *p, const char *dir, size_t *n)
{
	char path[256];
	unsigned char *buf = NULL;
	size_t cap = 0;
	gzFile z;
	int fd, r;

	snprintf(path, sizeof(path), "%s/p.pb.gz", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0 && pprof_write_fd(p, fd) == 0);
	close(fd);
	*n = 0;
	z = gzopen(path, "rb");
	CHECK(z);
	do {
		if (*n + 65536 > cap)
			buf = realloc(buf, cap = (*n + 65536) * 2);
		r = gzread(z, buf + *n, 65536);
		if (r > 0)
			*n += r;
	} while (r > 0);
	gzclose(z);
	return buf;
}

#endif
