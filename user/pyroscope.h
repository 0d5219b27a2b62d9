/* --push pyroscope=URL: a window sent to a Pyroscope server's ingest API
 * (POST /ingest, pprof in a multipart form: formats/pyroscope.c), one
 * request per process, named by --service-name (else the process's
 * program) with the host, pid, executable and container as labels. The
 * credentials are push.c's (--push-headers or the environment): Pyroscope
 * has no authentication of its own, and a proxy's basic auth or bearer
 * token (Authorization) and the tenant (X-Scope-OrgID) are headers. */
#ifndef USER_PYROSCOPE_H
#define USER_PYROSCOPE_H

#include <curl/curl.h>
#include "user/push.h"

struct sink;

/* The sink of spec ("pyroscope=URL"; a URL with no path gets /ingest),
 * with a copy of creds; NULL after a one-line error naming spec. */
struct sink *pyroscope_sink_new(const char *spec, const struct push_config *c,
				const struct curl_slist *creds);

#endif
