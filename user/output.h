/* Writes the recording's files from the per-process state: profile.pb.gz,
 * cpu-<pid>.prof and summary.json, each to a temporary name then renamed. */
#ifndef USER_OUTPUT_H
#define USER_OUTPUT_H

#include "user/features.h"
#include <stdbool.h>
#include <stdint.h>

struct run_info {
	uint64_t start_realtime_ns; /* wall clock at the start */
	uint64_t duration_ns;
	int freq;
	unsigned ringbuf_mb;   /* the BPF ring buffer's size */
	const char *event;     /* "cycles" or "cpu-clock" */
	uint64_t samples;      /* pushed by BPF and drained */
	uint64_t sample_bytes; /* their ring-buffer records */
	uint64_t lost;	       /* samples the ring buffer could not take */
	uint64_t lost_tasks;   /* exec/fork/exit events lost */
	uint64_t kstack_err, ustack_err, kernel_walks;
	uint64_t traced_calls, lost_calls; /* -t entries and returns */
	const char *kernel;		   /* uname release */
	const struct degraded *degraded;   /* features this kernel lacks, and why */
	bool system_wide;
	bool per_process; /* cpu-PID.prof and the XRay files of each process */
	const char *outdir;
	int argc;
	char **argv;
};

/* 0, or -errno after reporting; files already written stay. */
int output_write(const struct run_info *ri);
/* SIGUSR1: the exact XRay traces so far, as xray-trace-PID.snapshot-N.fdr,
 * with their maps; recording goes on. Listed in the final summary. */
int output_snapshot(const struct run_info *ri, unsigned n);

#endif
