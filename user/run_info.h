/* What a recording was, for every writer and sink: struct run_info, filled
 * by the recorder (user/record.c) as it runs and read by the writers
 * (user/writers.h, user/xray.h) and sinks (user/sink.h) at the end. A header
 * of its own: the writers need the facts, not output.c's driver. */
#ifndef USER_RUN_INFO_H
#define USER_RUN_INFO_H

#include <stdbool.h>
#include <stdint.h>

struct procs;
struct trace_links;
struct usdt;
struct xray;
struct flame_views;
struct degraded;
struct outdir;
struct fold;
struct offcpu;
struct heap;
struct sinks;

/* The readers the commands printed at the end name, each the command to
 * run (its name when it is on PATH) or NULL when there is none: a file with
 * no reader is then listed by its path alone, so that every line printed
 * works as printed. */
struct readers {
	char *pprof;	    /* pprof, else tools/pprof next to this binary (make deps) */
	char *self;	    /* this binary, for "bpftrace-rec report DIR" where no pprof is */
	char *google_pprof; /* google-pprof (Debian's google-perftools) */
	char *llvm_xray;
	char *flamegraph; /* flamegraph.pl */
	char *xdg_open;
	char *nm;
};
/* --window: which window a run_info describes (user/continuous.h); its
 * start and duration are run_info's own. */
struct window_info {
	uint64_t index;	    /* from 1 */
	uint64_t period_ns; /* --window's */
	bool last;	    /* closed by the stop, not by the period */
};
struct run_info {
	/* --window: this window, NULL for a recording written once; the
	 * counts below and every process's row are then the window's. */
	const struct window_info *window;
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
	uint64_t exit_maps_busy; /* processes whose exit-time mappings could not be read */
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
	/* The Python walk (bpf/runtime/python.bpf.c, its py_stats) and what became of
	 * its frames (user/runtime/python_names.h); none: no CPython seen. */
	uint64_t py_walked, py_no_tstate, py_fault, py_truncated;
	uint64_t py_samples, py_merged, py_frames, py_unnamed, py_leftover, py_edge, py_restarted;
	/* The HotSpot walk (bpf/runtime/jvm.bpf.c, its jvm_stats) and what became of
	 * its frames (user/runtime/jvm_names.c). */
	uint64_t jvm_frames_walked, jvm_no_blob, jvm_bad_frame, jvm_read_fault, jvm_truncated;
	uint64_t jvm_samples, jvm_named, jvm_inlined, jvm_unnamed, jvm_inline_cut, jvm_gone;
	/* The V8 step (bpf/runtime/v8.bpf.c, its v8_stats) and what became of its
	 * frames (user/runtime/v8_names.c). */
	uint64_t v8_frames_recorded, v8_not_js, v8_read_fault, v8_truncated;
	uint64_t v8_samples, v8_named, v8_inlined, v8_unnamed;
	const char *kernel;		 /* uname release */
	const struct degraded *degraded; /* features this kernel lacks, and why */
	bool system_wide;
	/* --off-cpu's waits (user/offcpu.h), or NULL when none were recorded. */
	const struct offcpu *offcpu;
	/* --heap's allocations (user/heap.h), or NULL without it. */
	const struct heap *heap;
	bool per_process;	/* cpu-PID.prof and the XRay files of each process */
	const char *outdir;	/* the path, for the commands that open the files */
	struct readers readers; /* ... and the readers they name */
	struct outdir *out;	/* where the files are written */
	struct fold *fold;	/* exited processes written as they go, or NULL */
	int argc;
	char **argv;
	/* Every process recorded: the recorder's model (user/proc.h). */
	struct procs *procs;
	/* The XRay function ids every process's trace and map share. */
	struct xray *xray;
	/* Where the recording goes (user/sink.h): summary.json says what the
	 * push destinations sent, spooled and dropped so far. */
	const struct sinks *sinks;
	/* The flame graphs' trees (user/write_flame.c), filled as processes
	 * are folded away and at the end. */
	struct flame_views *flame;
};

#endif
