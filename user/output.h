/* Writes the recording's files from the per-process state: profile.pb.gz,
 * summary.json, and with per-process files cpu-PID.prof, jit-PID.so and
 * the XRay traces, each to a temporary name then renamed (outdir.h). */
#ifndef USER_OUTPUT_H
#define USER_OUTPUT_H

#include <stdbool.h>
#include <stdint.h>
#include "user/features.h"
#include "user/outdir.h"
#include "user/run_info.h"

/* The readers (run_info.h) found on this machine. */
void output_readers_find(struct readers *rd);
void output_readers_free(struct readers *rd);

/* Under -a without per-process files: the profile and the summary take in
 * each exited process as it is done with (output_fold, a proc_done_fn for
 * procs_retire), set aside in nameless files in the output directory, so
 * that memory stays flat however many processes come and go. NULL after a
 * warning when those files cannot be made: processes then stay in memory. */
struct fold *output_fold_new(const struct run_info *ri);
struct proc;
bool output_fold(struct fold *fo, struct proc *p);
/* The same for the samples of the processes still running, which then
 * forget them (proc_drop_samples): called every minute or so. */
void output_fold_live(struct fold *fo);
void output_fold_free(struct fold *fo);

/* 0, or -errno after reporting; files already written stay. */
int output_write(const struct run_info *ri);
/* SIGUSR1: the exact XRay traces so far, as xray-trace-PID.snapshot-N.fdr,
 * with their maps; recording goes on. Listed in the final summary. */
int output_snapshot(const struct run_info *ri, unsigned n);

#endif
