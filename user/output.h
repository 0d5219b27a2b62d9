/* Writes the recording's files from the per-process state: profile.pb.gz,
 * cpu-<pid>.prof and summary.json, each to a temporary name then renamed. */
#ifndef USER_OUTPUT_H
#define USER_OUTPUT_H

#include <signal.h>
#include "user/features.h"
#include <stdbool.h>
#include <stdint.h>

/* The writer state: the output directory, opened once before recording
 * (O_DIRECTORY|O_NOFOLLOW) and checked by writing a probe file in it; every
 * file is then created relative to fd, never by path, so that nothing
 * swapped in under the path later (a symlink in /tmp) is followed. */
struct outdir {
	const char *path; /* as given: for messages */
	int fd;		  /* -1: not open */
	/* The temporary file being written, for output_abort() in a signal
	 * handler: tmp is complete before writing is set, and writing is
	 * cleared once the file is renamed or removed. */
	volatile sig_atomic_t writing;
	char tmp[256];
};

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
	/* --call-graph cfi: the walk's counts (BPF), and its tables. */
	bool cfi;
	uint64_t cfi_walks, cfi_root, cfi_trunc, cfi_to_dwarf, cfi_fp_nomap, cfi_fp_nocfi,
	    cfi_read_err, cfi_uretprobe_miss;
	uint64_t cfi_tables, cfi_table_bytes; /* built over the run; their peak bytes */
	uint64_t cfi_budget_bytes, cfi_out_of_budget;
	const char *kernel;		 /* uname release */
	const struct degraded *degraded; /* features this kernel lacks, and why */
	bool system_wide;
	bool offcpu;	    /* --off-cpu recorded waits (user/offcpu.c) */
	bool per_process;   /* cpu-PID.prof and the XRay files of each process */
	const char *outdir; /* the path, for the commands that open the files */
	struct outdir *out; /* where the files are written */
	struct fold *fold;  /* exited processes written as they go, or NULL */
	int argc;
	char **argv;
};

/* Creates the directory if missing (the last component only), opens it,
 * refuses a symlink or a directory owned by anyone but root or the invoking
 * user (SUDO_UID), and creates, writes, renames and removes a probe file in
 * it. 0, or -errno after a one-line error naming the directory. */
int outdir_open(struct outdir *od, const char *path);
/* Async-signal-safe: removes the temporary file being written, if any. For
 * a signal handler about to _exit, so that no temporary file is left. */
void output_abort(void);

/* Under -a without per-process files: the profile and the summary take in
 * each exited process as it is done with (output_fold, a proc_done_fn for
 * procs_retire), set aside in nameless files in the output directory, so
 * that memory stays flat however many processes come and go. NULL after a
 * warning when those files cannot be made: processes then stay in memory. */
struct fold *output_fold_new(const struct run_info *ri);
struct proc;
bool output_fold(void *fold, struct proc *p);
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
