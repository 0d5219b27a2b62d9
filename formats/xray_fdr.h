/* LLVM XRay Flight Data Recorder traces (../shared/specs/xray-fdr-format.txt,
 * and what llvm-xray 14 actually reads): a writer that keeps events per
 * thread and encodes them at write time, and a reader/validator for tests.
 *
 * Events are kept in a compact form, not as encoded buffers, so that writing
 * can start every thread at the file's first timestamp and reopen the calls
 * still on a thread's stack where a flight-recorder ring dropped older
 * events; llvm-xray's account and stack fail on an exit with no entry. */
#ifndef FORMATS_XRAY_FDR_H
#define FORMATS_XRAY_FDR_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum fdr_action {
	FDR_ENTRY = 0,
	FDR_EXIT = 1,
	FDR_TAIL_EXIT = 2,
	FDR_ENTRY_ARGS = 3, /* written for an entry with nargs > 0 */
};

#define FDR_MAX_ARGS	6
#define FDR_MAX_FUNC_ID ((1u << 28) - 1)

struct fdr_opts {
	int version; /* 1 or 5 (compiler-rt's current format); 0 means 5 */
	int32_t pid; /* the Pid record of version 5 */
	uint64_t
	    buffer_size; /* bytes per buffer; 0 means 64 KiB in v1, one buffer per thread in v5 */
	uint64_t cycle_frequency;	/* ticks per second of the timestamps; 0 means 1e9 (ns) */
	uint64_t flight_recorder_bytes; /* per thread; 0: keep everything */
	uint64_t wall_sec, wall_usec;	/* wall-clock time of the first buffers */
};

struct fdr_stats {
	uint64_t events;     /* appended */
	uint64_t dropped;    /* events the flight recorder let go */
	uint64_t bytes_held; /* memory holding events */
	uint64_t threads;
};

struct fdr;

struct fdr *fdr_new(const struct fdr_opts *o);
void fdr_free(struct fdr *w);

/* Appends a function entry (with up to FDR_MAX_ARGS integer arguments) or
 * exit of thread tid, which ran on cpu at time ts. A thread's events must
 * come in non-decreasing ts (an earlier one is stamped with the latest);
 * threads may interleave. func_id is 1..FDR_MAX_FUNC_ID; for an exit, 0
 * means the thread's innermost open call (none: nothing is written). An exit
 * of a function with no open call is not written; one of a call with calls
 * open inside it exits those first, at ts. 0 or -errno. */
int fdr_func(struct fdr *w, int32_t tid, uint16_t cpu, uint64_t ts, enum fdr_action a,
	     uint32_t func_id, const uint64_t *args, unsigned nargs);
/* Exits, at ts, every call still open on every thread, innermost first: a
 * trace that ends while calls run still pairs each entry with an exit. 0 or
 * -errno. */
int fdr_close_open(struct fdr *w, uint64_t ts);
/* The thread moved to cpu at ts (a NewCPUId record). */
int fdr_cpu(struct fdr *w, int32_t tid, uint16_t cpu, uint64_t ts);

/* Writes the header and every thread's buffers. Leaves the writer as it was,
 * so it also serves snapshots while recording goes on. Returns 0, -ENODATA
 * when no thread has an event (llvm-xray rejects a file with only a header:
 * nothing is written then), or -errno. */
int fdr_write(struct fdr *w, FILE *f);
void fdr_get_stats(const struct fdr *w, struct fdr_stats *s);

/* Reader/validator. Calls fn for every function record, with its absolute
 * timestamp; returns 0, or -EINVAL with *err and *err_off set to the first
 * problem. Checks what llvm-xray checks: the header, each buffer starting
 * NewBuffer, WallClockTime, [Pid,] NewCPUId, argument records following an
 * Entry_Args, extents and padding. */
struct fdr_record {
	int32_t tid;
	int32_t pid; /* 0 in version 1 */
	uint16_t cpu;
	uint64_t ts;
	enum fdr_action action;
	uint32_t func_id;
	unsigned nargs;
	uint64_t args[FDR_MAX_ARGS];
};
struct fdr_file_info {
	int version;
	uint64_t cycle_frequency;
	uint64_t buffers, custom_events, records;
};
typedef int (*fdr_record_fn)(void *ctx, const struct fdr_record *r);
int fdr_read(const void *buf, size_t len, struct fdr_file_info *info, fdr_record_fn fn, void *ctx,
	     const char **err, size_t *err_off);

#endif
