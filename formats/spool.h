/* A spooled request (--push's spool, user/spool.c): what one destination is
 * sent for one window, kept on disk until it is sent, across restarts. The
 * file says what to send and nothing of the destination's kind, so that it
 * serves any (OTLP, Pyroscope):
 *
 *	bpftrace-rec spool 1\n
 *	content-type: application/x-protobuf\n
 *	path: /v1development/profiles\n
 *	length: 1234\n
 *	\n
 *	<length bytes of body>
 *
 * The path (with its query) goes after the destination's scheme and host.
 * The file is read back by a later run, and is refused unless it is exactly
 * this: a header of printable ASCII, a body of exactly its length. */
#ifndef FORMATS_SPOOL_H
#define FORMATS_SPOOL_H

#include <stddef.h>
#include <stdint.h>
#include "formats/util.h"

#define SPOOL_FIELD_MAX 2048 /* a content type's or path's bytes at most */

struct spool_req {
	const char *content_type; /* "application/x-protobuf" */
	const char *path;	  /* "/v1development/profiles", "/ingest?name=..." */
	const uint8_t *body;
	size_t len;
};

/* Appends the file's bytes to out. 0, -EINVAL (a field empty, too long or
 * not printable), or -ENOMEM. */
int spool_encode(const struct spool_req *r, struct fmt_buf *out);
/* Parses a file: r's strings are copied into fields (2 * (SPOOL_FIELD_MAX +
 * 1) bytes), its body points into buf. 0 or -EINVAL. */
int spool_decode(const uint8_t *buf, size_t len, struct spool_req *r,
		 char fields[2][SPOOL_FIELD_MAX + 1]);

#endif
