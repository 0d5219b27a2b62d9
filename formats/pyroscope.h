/* Pyroscope's ingest API (POST /ingest?name=APP{k=v,...}&from=&until=, a
 * multipart form with the profile and its sample_type_config, and no
 * format=pprof, which would make the server read the whole body as a raw
 * pprof: see pyro_query), from a pprof profile (formats/pprof.c's,
 * uncompressed). A window is sent as one profile per process, its samples
 * only and their tables pruned to what they use, without sample labels:
 * Pyroscope's distributor makes a series of each distinct set of sample
 * labels, and the recorder's tid and cpu labels would make one per thread
 * and CPU. What names the process goes in the name's labels, as
 * OpenTelemetry's resource attributes do for OTLP (formats/otlp.c), with
 * the dots of their names as underscores (the label names Pyroscope lists
 * without an opt-in). Names and values come from process names other users
 * control: they are sanitized to what Pyroscope's key parser takes. Plain
 * C, no BPF: see tests/unit/test_pyroscope.c. */
#ifndef FORMATS_PYROSCOPE_H
#define FORMATS_PYROSCOPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "formats/otlp.h"
#include "formats/util.h"

struct pyro_meta {
	const char *host_name;		  /* NULL: left out */
	const char *service_name;	  /* the application name; NULL: each process's program */
	const struct otlp_process *procs; /* by pid: what the samples' comm is not */
	size_t nprocs;
};

/* One process's part of a window: what one /ingest request carries. */
struct pyro_part {
	int64_t pid;
	bool has_pid;
	const char *name;    /* "APP{host_name=...,process_pid=...}", sanitized */
	const void *profile; /* a pprof Profile message, uncompressed */
	size_t len;
	const char *type_config; /* the sample_type_config form field's JSON */
	int64_t from, until;	 /* Unix seconds: the window, rounded out */
	int64_t sample_rate;	 /* Hz, from the period; 0: none */
	int64_t samples;	 /* the sum of the first sample type's values */
};
/* 0 to go on; anything else stops pyro_split, which returns it. */
typedef int (*pyro_part_fn)(void *ctx, const struct pyro_part *p);

/* Calls fn for each process of the profile (n bytes at pb), by pid, those
 * without a pid last as one. 0, -EINVAL when pb is not a well-formed
 * profile, -ENOMEM, or what fn returned. */
int pyro_split(const void *pb, size_t n, const struct pyro_meta *m, pyro_part_fn fn, void *ctx);

/* The /ingest query of a part (no leading '?'), percent-encoded, appended
 * to out; spy: spyName (Pyroscope's pyroscope_spy label). */
void pyro_query(struct fmt_buf *out, const struct pyro_part *p, const char *spy);

/* The multipart/form-data body of a part's request (RFC 7578), appended to
 * out: the profile (gz, len bytes: the pprof gzipped) and the part's
 * sample_type_config; its Content-Type, with the boundary, into ctype
 * (cap bytes). The boundary is one that gz does not hold. */
void pyro_form(struct fmt_buf *out, char *ctype, size_t cap, const struct pyro_part *p,
	       const void *gz, size_t len);

/* Sanitizing, into out (cap > 0 bytes, always terminated). An application
 * name keeps what Pyroscope's ValidateAppName takes (letters, digits, _ . -
 * /), a label value printable ASCII but the key syntax's , { } = and
 * quotes, backslash and space; the rest, and bytes of a multi-byte
 * character, become '_'. An empty result is "unknown". */
void pyro_app_name(char *out, size_t cap, const char *s, size_t n);
void pyro_label_value(char *out, size_t cap, const char *s, size_t n);

#endif
