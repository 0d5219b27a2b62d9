/* The text report of a pprof profile (bpftrace-rec report): per sample
 * type, the top functions flat and cumulative in pprof -top's columns,
 * then the same per process (the samples' pid label). Read from a profile
 * formats/pprof_in.c vouched for, so every index is in its table; names
 * are made safe for a terminal (fmt_sanitize). Plain C, no BPF: see
 * tests/unit/test_report.c. */
#ifndef FORMATS_REPORT_H
#define FORMATS_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "formats/pprof_in.h"

struct report_opts {
	size_t rows;		 /* functions a top shows (and processes); 0: 20 */
	const char *sample_type; /* a type's name ("offcpu"); NULL: report_types' */
	bool has_pid;		 /* only this process's samples */
	int64_t pid;
	size_t procs; /* processes given a top of their own; 0: 5 */
	/* What the headers call the file ("out/profile.pb.gz"); NULL: none. */
	const char *source;
};

/* The sample types a report shows without --sample-type: cpu, offcpu and
 * wall where the profile has them (formats/pprof.c's names: samples/count
 * and offcpu_waits/count count what the others time), else pprof's default
 * (default_sample_type, else the last type). Their indices into idx (room
 * for in->types.n); how many, 0 when the profile has no type. */
size_t report_types(const struct pprof_in *in, size_t *idx);
/* The index of the type named name, or -ENOENT. */
int report_type_index(const struct pprof_in *in, const char *name);

/* Writes the report to f. 0; -ENOENT when o->sample_type names no type of
 * the profile, or o->pid has no sample; -ENOMEM. */
int report_write(FILE *f, const struct pprof_in *in, const struct report_opts *o);

/* A value as pprof's -top writes it ("1.20s", "601.20ms", "42"), in unit
 * (a type's unit: nanoseconds, bytes, count...) scaled to out_unit's
 * (report_unit's choice); into buf. */
void report_value(char *buf, size_t len, int64_t v, const char *unit, const char *out_unit);
/* pprof's choice of a unit for a listing whose smallest value shown is min
 * and whose total is max: a static string ("ms"), or unit itself when it
 * is not one of time or memory. */
const char *report_unit(int64_t min, int64_t max, const char *unit);
/* A share as pprof writes it ("60.00%", "  100%", " 0.5%"). */
void report_pct(char *buf, size_t len, int64_t v, int64_t total);

#endif
