/* Writes the recording's files from the per-process state: profile.pb.gz,
 * summary.json, and with per-process files cpu-PID.prof, jit-PID.so and
 * the XRay traces, each to a temporary name then renamed (outdir.h). */
#ifndef USER_OUTPUT_H
#define USER_OUTPUT_H

#include <stdbool.h>
#include <stdint.h>
#include "user/features.h"
#include "user/outdir.h"

struct procs;
struct trace_links;

/* The readers the commands printed at the end name, each the command to
 * run (its name when it is on PATH) or NULL when there is none: a file with
 * no reader is then listed by its path alone, so that every line printed
 * works as printed. */
struct readers {
	char *pprof;	    /* pprof, else tools/pprof next to this binary (make deps) */
	char *google_pprof; /* google-pprof (Debian's google-perftools) */
	char *llvm_xray;
	char *flamegraph; /* flamegraph.pl */
	char *xdg_open;
	char *nm;
};
void output_readers_find(struct readers *rd);
void output_readers_free(struct readers *rd);

struct run_info {
	uint64_t start_realtime_ns; /* wall clock at the start */
	uint64_t duration_ns;
	int freq;
	unsigned ringbuf_mb;			/* the BPF ring buffer's size */
	const char *event;			/* "cycles" or "cpu-clock" */
	uint64_t samples;			/* pushed by BPF and drained */
	uint64_t sample_bytes;			/* their ring-buffer records */
	uint64_t sample_bytes_median;		/* a record's, to 8 bytes below */
	uint64_t drain_cpu_ns;			/* the drain thread's CPU while recording */
	uint64_t steady_cpu_ns, steady_samples; /* ... and its samples, from 1 s in */
	uint64_t cfi_worker_cpu_ns;		/* the CFI tables' worker thread's */
	uint64_t bpf_run_ns, bpf_run_cnt;	/* the sampler's, with kernel.bpf_stats_enabled */
	uint64_t lost;				/* samples the ring buffer could not take */
	uint64_t lost_tasks;			/* exec/fork/exit events lost */
	uint64_t kstack_err, ustack_err, kernel_walks;
	/* -t: entries and returns, BPF's count, and those the ring buffer
	 * could not take; each function's calls (its entries drained). */
	uint64_t traced_events, lost_traced_events;
	const struct trace_links *trace;
	/* -t usdt: the probes (user/usdt.h), firings the ring buffer could
	 * not take, string arguments that could not be read. */
	const struct usdt *usdt;
	uint64_t usdt_lost, usdt_str_fault;
	/* --call-graph cfi: the walk's counts (BPF), and its tables. */
	bool cfi;
	uint64_t cfi_walks, cfi_root, cfi_trunc, cfi_to_dwarf, cfi_fp_nomap, cfi_fp_nocfi,
	    cfi_read_err, cfi_uretprobe_miss;
	uint64_t cfi_tables, cfi_table_bytes; /* built over the run; their peak bytes */
	uint64_t cfi_budget_bytes, cfi_out_of_budget;
	const char *kernel;		 /* uname release */
	const struct degraded *degraded; /* features this kernel lacks, and why */
	bool system_wide;
	bool offcpu;		/* --off-cpu recorded waits (user/offcpu.c) */
	bool per_process;	/* cpu-PID.prof and the XRay files of each process */
	const char *outdir;	/* the path, for the commands that open the files */
	struct readers readers; /* ... and the readers they name */
	struct outdir *out;	/* where the files are written */
	struct fold *fold;	/* exited processes written as they go, or NULL */
	int argc;
	char **argv;
	/* Every process recorded: the recorder's model (user/proc.h). */
	struct procs *procs;
};

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
