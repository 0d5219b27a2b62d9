/* The recording: options (filled by main.c), the BPF skeleton's lifecycle,
 * the ring-buffer drain loop and the stop conditions. */
#ifndef USER_RECORD_H
#define USER_RECORD_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define MAX_PIDS 256

struct env {
	pid_t pids[MAX_PIDS];
	int npids;
	bool all;	    /* -a */
	char **cmd;	    /* -- CMD ARGS */
	int freq;	    /* -F */
	const char *event;  /* --event: NULL = cycles, else cpu-clock */
	double duration;    /* -d; 0 = until stopped */
	const char *outdir; /* -o */
	bool idle;	    /* --idle */
	bool per_process;   /* -P: with -a, per-process files (cpu-PID.prof, XRay) too */
	char *traces[64];   /* -t SPEC */
	int ntraces;
	char *usdts[16]; /* -t usdt:BIN:PROBES (user/usdt.c) */
	int nusdts;
	unsigned trace_args;	  /* --trace-args N */
	const char *jitdump;	  /* --jitdump PATH */
	int xray_version;	  /* --xray-version: 1 or 5 */
	uint64_t fdr_buffer_size; /* --fdr-buffer-size */
	uint64_t flight_recorder; /* --flight-recorder: bytes kept per thread */
	bool no_inherit;	  /* don't follow forked children */
	bool no_kernel, no_user;
	bool include_self; /* --include-self: sample the recorder too */
	unsigned ringbuf_mb;
	/* CG_CFI (the default): the CFI walk in BPF (bpf/cfi_walk.bpf.h) */
	enum { CG_CFI, CG_FP, CG_DWARF } call_graph;
	unsigned unwind_mib;	  /* --unwind-mib: the CFI tables' budget */
	unsigned max_stack;	  /* --max-stack: user frames walked at most */
	unsigned stack_copy;	  /* bytes of user stack copied for DWARF unwinding */
	bool off_cpu;		  /* --off-cpu (user/offcpu.c) */
	long off_cpu_min_us;	  /* --off-cpu-min */
	uint32_t off_cpu_entries; /* --off-cpu-entries */
	bool heap;		  /* --heap (user/heap.c) */
	uint64_t heap_rate;	  /* --heap-rate: mean bytes between samples */
	/* --push DEST (user/push.h: PUSH_MAX of them), --push-headers FILE,
	 * --service-name NAME */
	const char *push[8];
	int npush;
	const char *push_headers;
	const char *service_name;
	/* --window SECONDS (user/continuous.h): continuous mode; 0 off.
	 * --retain's rotation of the windows on disk, --spool-max's bound of
	 * each destination's spool (user/spool.h). */
	double window_s;
	uint64_t retain_count, retain_age_s, retain_bytes;
	uint64_t spool_max;
	int verbose;
	bool quiet; /* no live status line */
	int argc;   /* the whole command line, for summary.json */
	char **argv;
};

extern struct env env;

/* Runs the whole recording and writes the files. Returns the process exit
 * status: the command's for `-- CMD`, else 0, or 1 on error. */
int record_run(void);

#endif
