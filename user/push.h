/* --push: the recording sent, once its files are written, to receivers
 * over HTTP(S) with libcurl: OTLP profiles (formats/otlp.c) to an
 * OpenTelemetry Collector's /v1development/profiles, or pprof to a
 * Pyroscope's /ingest (user/pyroscope.h), each destination's requests
 * through its spool (user/spool.h). The profile sent is
 * profile.pb.gz as written, read back from the output directory: what is
 * pushed is what is on disk. Credentials (HTTP headers) come from a file
 * (--push-headers) or the environment (OTEL_EXPORTER_OTLP_PROFILES_HEADERS,
 * OTEL_EXPORTER_OTLP_HEADERS), never from the command line, which any user
 * can read in /proc. HTTPS verifies the certificate and the host name; no
 * redirect is followed (it would carry the credentials elsewhere). */
#ifndef USER_PUSH_H
#define USER_PUSH_H

#include <stdint.h>

#define PUSH_MAX 8

struct push_config {
	const char *dests[PUSH_MAX]; /* "otlp=URL", "pyroscope=URL" */
	int ndests;
	const char *headers_file; /* --push-headers; NULL: the environment's */
	const char *service_name; /* --service-name; NULL: each process's program */
	const char *version;	  /* the scope's: bpftrace-rec's version */
	/* The output directory (open), where each destination's spool is
	 * (user/spool.h: OUTDIR/spool/DEST/), and --spool-max (0: default). */
	const struct outdir *out;
	uint64_t spool_max;
};

struct sinks;
struct outdir;

/* Checks the destinations and reads the credentials, before recording, and
 * adds a sink (user/sink.h) for each destination to sinks, with its spool
 * (user/spool.h), whose sender starts at once with what an earlier run
 * left: 0, or -errno after a one-line error naming the destination or file
 * and the reason (the sinks added are the caller's to free). A sink turns a
 * window's profile.pb.gz into OTLP and puts it in the spool; the sender
 * sends it: a 2xx is reported with what the receiver rejected of it, if
 * anything; a 4xx other than 408 and 429 with the server's own message (a
 * 401's reason, a 400's), the window dropped; anything else is retried. */
int push_sinks_add(const struct push_config *c, struct sinks *sinks);

#endif
