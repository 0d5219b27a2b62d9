/* --push pyroscope=URL: a window for a Pyroscope server's ingest API
 * (POST /ingest, pprof in a multipart form: formats/pyroscope.c), one
 * request per process, named by --service-name (else the process's
 * program) with the host, pid, executable and container as labels. The
 * requests go into the destination's spool (user/spool.h) and are sent
 * as OTLP's are, with push.c's credentials (--push-headers or the
 * environment): Pyroscope has no authentication of its own, and a proxy's
 * basic auth or bearer token (Authorization) and the tenant
 * (X-Scope-OrgID) are headers. */
#ifndef USER_PYROSCOPE_H
#define USER_PYROSCOPE_H

#include <stddef.h>
#include "formats/pyroscope.h"
#include "user/spool.h"

/* The window's profile (pb, n bytes, uncompressed, read from outdir) as
 * requests to path ("/ingest" or the URL's own) into sp, a process each.
 * 0, or -errno said naming url (a request the spool dropped: its error,
 * the others put). */
int pyroscope_put(struct spool *sp, const char *path, const char *url, const char *outdir,
		  const void *pb, size_t n, const struct pyro_meta *m);

#endif
