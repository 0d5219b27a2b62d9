#include <argp.h>
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <linux/capability.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "bpf/events.h"
#include "sample.skel.h"
#include "trace.skel.h"
#include "user/features.h"
#include "user/heap.h"
#include "user/jit.h"
#include "user/offcpu.h"
#include "user/output.h"
#include "user/proc.h"
#include "user/runtime/jvm.h"
#include "user/runtime/jvm_names.h"
#include "user/runtime/v8.h"
#include "user/runtime/v8_names.h"
#include "user/runtime/python.h"
#include "user/runtime/python_names.h"
#include "user/record.h"
#include "bpf/cfi.h"
#include "user/cfi_maps.h"
#include "user/continuous.h"
#include "user/push.h"
#include "user/sink.h"
#include "user/symbols.h"
#include "user/target.h"
#include "user/trace.h"
#include "user/unwind.h"
#include "user/usdt.h"
#include "user/util.h"
#include "user/writers.h"
#include "user/xray.h"

struct env env = {
    .freq = 99,
    .outdir = "bpftrace-rec.out",
    .ringbuf_mb = 0, /* auto: ringbuf_size_mb() */
    .stack_copy = 8192,
    .unwind_mib = 64,
    .max_stack = MAX_STACK_DEFAULT,
    .heap_rate = 0, /* --heap-rate; 0: HEAP_RATE_DEFAULT */
    .xray_version = 5,
};

/* --heap's mean bytes between samples, as tcmalloc's and Go's. */
#define HEAP_RATE_DEFAULT (512 * 1024)
/* Sampled blocks followed to their free at most: 256 Ki of them, 128 GiB
 * in use at the default rate; one more is counted and dropped. */
#define HEAP_LIVE_MAX (1u << 18)

/* Set by the signal handler only: the signal that stops the recording, and
 * SIGUSR1's snapshot request. */
static volatile sig_atomic_t stop_sig, stop_from_kernel, snapshot_req;
/* An eventfd the signal handler writes: it wakes the drain's wait at once,
 * whichever moment the signal comes (a signal between the check of stop_sig
 * and the wait would otherwise wait the whole timeout). */
static int wake_fd = -1;

static void wake_drain(void)
{
	uint64_t one = 1;
	int e = errno;
	/* A failure is a full count (2^64 - 2): it is readable anyway. */
	ssize_t n = wake_fd >= 0 ? write(wake_fd, &one, sizeof(one)) : 0;

	(void)n;
	errno = e;
}

/* Why the drain loop ended. */
enum stop_reason { STOP_NONE, STOP_SIGNAL, STOP_DURATION, STOP_TARGETS, STOP_ERROR };

/* One recording, from load to write: each phase of record_run fills in its
 * part. */
#define SIZE_HIST_N 8192 /* record sizes up to 64 KiB: any stack copy */

struct recorder {
	size_t ndescendants; /* -p: the targets' processes found at the start */
	struct features feat;
	struct degraded degraded;
	char depth_why[200]; /* its "stack depth" entry's text */
	struct target target;
	struct sample_bpf *skel;
	struct trace_bpf *tracer;
	struct trace_links tlinks;
	/* --call-graph cfi: the unwind tables of the processes' binaries in
	 * the BPF walker's maps (user/cfi_maps.c), added as each process's
	 * maps are read (first sight, exec, a library that appeared) and
	 * removed at its exit, by a worker thread off the drain. Until a
	 * process is added, its samples are copied for DWARF unwinding. */
	struct cfi_maps *cfi;
	struct cfi_worker *cfi_worker;
	/* /proc/kallsyms read by a thread (kallsyms_start) while the BPF
	 * objects load; its result. */
	pthread_t ksyms_thread;
	bool ksyms_loading;
	int ksyms_err;
	/* Its niceness while the programs load (kallsyms_thread), and the
	 * hand-over after: its thread id once niced, and whether the load is
	 * done (each side looks at the other's). */
	int ksyms_prio;
	_Atomic pid_t ksyms_tid;
	atomic_bool ksyms_loaded;
	struct usdt *usdt; /* -t usdt:..., or NULL */
	struct xray *xray; /* the XRay function ids, for -t, usdt and the timelines */
	/* The CPython interpreters among the processes (user/runtime/python.c), found
	 * as their maps are read, and their Python frames in the stacks: a
	 * source of names (user/runtime/python_names.c). */
	struct python *python;
	struct py_names *pynames;
	/* The HotSpot JVMs among them (user/runtime/jvm.c), and their source of names
	 * (user/runtime/jvm_names.c). */
	struct jvm *jvm;
	struct jvm_names *jvmnames;
	/* The V8 processes (user/runtime/v8.c), and their source of names
	 * (user/runtime/v8_names.c). */
	struct v8 *v8;
	struct v8_names *v8names;
	/* --off-cpu (user/offcpu.c): its maps' sizes, the stacks and sums
	 * drained, the waits; off without it. */
	struct offcpu *offcpu;
	struct heap *heap; /* --heap (user/heap.c), or NULL */
	/* The files the DWARF unwinders read, mapped once for all of them
	 * (procs.elves borrows it). */
	struct unwind_elves *elves;
	struct ring_buffer *rb;
	struct bpf_link **links; /* the sampler's, one per CPU */
	int nlinks;
	const char *event;
	struct run_info ri;
	struct procs procs; /* the model: every process seen (user/proc.c) */
	uint64_t stats[STAT_NR];
	uint64_t start_ns, stop_ns; /* CLOCK_MONOTONIC; stop: sampling and tracing ended */
	/* -d's end (0: none): the recording's stop even when the drain gets to
	 * it late (after_stop). */
	uint64_t until_ns;
	uint64_t yield_ns; /* handle_event returns to the loop after this; 0: unset */
	uint64_t samples, sample_bytes, last_status_ns;
	/* Sample records by size in 8-byte steps (the last: all larger), for
	 * the median of summary.json: a few DWARF copies of 8 KB move the mean,
	 * not the median. */
	uint32_t size_hist[SIZE_HIST_N];
	uint64_t drain_cpu_ns; /* the drain's thread CPU time, from the first poll to the stop */
	/* The same and the samples from 1 s into the recording: what first
	 * sights cost (kallsyms, symbols, maps) falls mostly before. */
	uint64_t steady_cpu0, steady_samples0;
	/* The sampler program's run_time_ns and run_cnt (kernel.bpf_stats_enabled,
	 * else 0) at the stop: for the benchmark, with no poll of its own. */
	uint64_t bpf_run_ns, bpf_run_cnt;
	uint64_t last_fold_ns, fold_live_ns; /* output_fold_live: the last, the period */
	uint64_t last_trim_ns;		     /* symfiles_trim: the last */
	uint64_t last_offcpu_ns;	     /* offcpu_take_exited: the last */
	bool exits_untaken;		     /* an exit drained since then */
	uint64_t samples_seen;		     /* records handled, for the time slice */
	uint64_t unresolved_calls;	     /* -t by address: no mapping known there */
	/* Where the recording goes (user/sink.h): the files, then --push's
	 * destinations. */
	struct sinks sinks;
	/* --window (user/continuous.h): the windows' directories and
	 * rotation, or NULL; the window being recorded: its number, where it
	 * started (CLOCK_MONOTONIC and wall clock), the counts at its start,
	 * and when it closes. */
	struct continuous *cont;
	struct window_info win;
	uint64_t win_start_ns, win_start_realtime, win_close_ns;
	uint64_t win_samples0, win_bytes0, win_lost0, win_lost_tasks0;
	uint64_t windows_lost; /* windows whose directory could not be made */
	enum stop_reason stop;
	unsigned nsnapshots;
	/* Start-up, for -v and scripts/bench-startup.sh (CLOCK_MONOTONIC):
	 * record_run's entry, each phase's end, the BPF load's own span
	 * and the targets' maps' inside rec_load, and the
	 * first sample's BPF timestamp; the CPU (CLOCK_PROCESS_CPUTIME_ID, every
	 * thread) at the entry and the attach, and the loading thread's over
	 * the BPF load (the verifier's, mostly): figures the host's load moves
	 * less than the clock's. */
	struct {
		uint64_t begin, kallsyms, prepared, bpf_load0, bpf_load1, loaded, attached;
		uint64_t targets, first_sample;
		uint64_t cpu_begin, cpu_attached, bpf_cpu;
	} t;
	bool tty, started;
	bool cmd_stopped; /* the command was still running at -d: signalled */
	bool child_execd; /* the command has exec'd: its samples are its own */
	int exec_status;  /* the command could not exec: 127 or 126, as a shell */
	struct outdir out;
};

/* The drain hands control back to the loop this often, however fast records
 * arrive: stop conditions are checked between. */
#define DRAIN_SLICE_NS 50000000ULL

/* The drain's wait when nothing wakes it. Records come without wakeups
 * until the ring buffer is a quarter full (a quarter second of samples at
 * the rate asked, at the largest records), so at low rates this is the
 * drain's pace; each pass has a fixed cost (the wait's wakeup, the loop's
 * checks) that a sample's handling does not, so fewer passes cost less per
 * sample. A stop does not wait for it: a signal, an exit of a target and -d
 * each end the wait (wake_fd, target_pollfds, the timeout). The terminal's
 * status line is redrawn at this pace too. */
#define DRAIN_WAIT_MS 250
/* The same when a stop cannot wake the wait (no eventfd, a target without
 * a pidfd): target_done is polled at this pace. */
#define DRAIN_POLL_MS 50

/* Exited processes are written into the files as they go, for at most this
 * long per turn of the drain: the ring buffer fills meanwhile. */
#define RETIRE_BUDGET_NS (10 * 1000000ULL)

/* Under -a, the samples of running processes are written out this often
 * (output_fold_live): a long-lived process's stacks grow otherwise. */
#define FOLD_LIVE_NS (60 * 1000000000ULL)

/* The debug info of a program not named for this long is freed (read again
 * when needed): what stays is that of the programs that run. */
#define SYMFILE_IDLE_NS (10 * 1000000000ULL)

/* A process's DWARF unwinder not used for this long is freed
 * (procs_trim_unwinders): its tables are loaded by then, as a rule. */
#define UNWINDER_IDLE_NS (5 * 1000000000ULL)

/* User frames the sampler walks at most on this kernel: --max-stack, or
 * without bpf_loop the CFI walker's tail-call budget (bpf/cfi_walk.bpf.h)
 * or bpf_get_stack's sysctl default. */
static unsigned max_stack_walked(const struct recorder *r)
{
	unsigned lim = env.call_graph == CG_CFI ? CFI_COMPAT_FRAMES : MAX_FRAMES;

	return r->feat.compat_sampler && lim < env.max_stack ? lim : env.max_stack;
}

/* What this kernel's missing features cost this recording (features.h);
 * said once at the start, and listed in the summary. */
static void note_degraded(struct recorder *r)
{
	struct degraded *d = &r->degraded;
	size_t i;

	if (r->feat.compat_sampler)
		degraded_add(d, "sampler",
			     env.call_graph == CG_CFI
				 ? "no bpf_loop (5.17), ring-buffer dynptrs (5.19) or "
				   "bpf_task_pt_regs (5.15): the compat sampler, whose CFI walk "
				   "runs in tail calls and whose records are copied once more"
				 : "no bpf_loop (5.17), ring-buffer dynptrs (5.19) or "
				   "bpf_task_pt_regs (5.15): the compat sampler, whose user stacks "
				   "the kernel walks (bpf_get_stack, slower) and whose records "
				   "are copied once more");
	if (!r->feat.iter_task_vma && !env.no_user)
		degraded_add(d, "exit-time mappings",
			     "no bpf_iter_task_vma kfuncs (6.7): frames of processes that exit "
			     "before their maps are read stay unnamed");
	if (env.ntraces && r->tlinks.by_ip)
		degraded_add(d, "-t function ids",
			     "no bpf_get_attach_cookie (5.15): functions are found by address in "
			     "the process's maps (calls of a process gone before its maps are "
			     "read are [unknown]) and returns matched to the innermost call (a "
			     "longjmp out of a traced call misattributes)");
	if (env.ntraces && !r->tlinks.by_ip && r->tlinks.multi == 0)
		degraded_add(d, "-t attach",
			     "no uprobe_multi links (6.6): one uprobe per function, slower to "
			     "attach and detach");
	if (r->heap && heap_attach_mode(r->heap) == HEAP_BY_FUNC)
		degraded_add(d, "--heap attach",
			     "no bpf_get_attach_cookie (5.15) or uprobe_multi links (6.6): a BPF "
			     "program per allocation function, two uprobes each (entry and "
			     "return), slower to attach and detach");
	else if (r->heap && heap_attach_mode(r->heap) == HEAP_SINGLE)
		degraded_add(d, "--heap attach",
			     "no uprobe_multi links (6.6): two uprobes per allocation function "
			     "(entry and return), slower to attach and detach");
	/* --call-graph dwarf unwinds its copies in user space, to --max-stack. */
	if (r->feat.compat_sampler && !env.no_user && env.call_graph != CG_DWARF &&
	    max_stack_walked(r) < env.max_stack) {
		char *why = r->depth_why;

		snprintf(
		    why, sizeof(r->depth_why),
		    "no bpf_loop (5.17): user stacks walked to %u frames (--max-stack %u; %s), "
		    "deeper ones end in [truncated]",
		    max_stack_walked(r), env.max_stack,
		    env.call_graph == CG_CFI ? "the CFI walk's tail-call budget"
					     : "the kernel's bpf_get_stack");
		degraded_add(d, "stack depth", why);
	}
	for (i = 0; i < d->n; i++)
		warn("kernel %s: %s: %s", r->feat.kernel, d->what[i], d->why[i]);
}

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (sig == SIGUSR1) {
		snapshot_req = 1;
		wake_drain();
		return;
	}
	/* A second Ctrl-C means now: the file being written is removed, and
	 * the files not yet written are not. */
	if (sig == SIGINT && stop_sig) {
		outdir_abort();
		_exit(130);
	}
	stop_sig = sig;
	/* From the terminal (not kill(2)): the command, in our process group,
	 * got it too. */
	stop_from_kernel = si && si->si_code == SI_KERNEL;
	wake_drain();
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG && env.verbose < 2)
		return 0;
	if (level == LIBBPF_INFO && env.verbose < 1)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

/* The effective capabilities: 0, or -errno where they cannot be read. */
static int effective_caps(uint64_t *eff)
{
	struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct data[2] = {{0}};

	if (syscall(SYS_capget, &hdr, data))
		return -errno;
	*eff = data[0].effective | (uint64_t)data[1].effective << 32;
	return 0;
}

/* CAP_BPF + CAP_PERFMON, or CAP_SYS_ADMIN, in the effective set. */
static int check_privileges(void)
{
	uint64_t eff;

	if (effective_caps(&eff))
		return 0; /* let the kernel decide */
	if (eff & (1ULL << CAP_SYS_ADMIN))
		return 0;
	if ((eff & (1ULL << CAP_BPF)) && (eff & (1ULL << CAP_PERFMON)))
		return 0;
	err("not privileged: needs %s%s%s (or CAP_SYS_ADMIN); run as root",
	    eff & (1ULL << CAP_BPF) ? "" : "CAP_BPF",
	    !(eff & (1ULL << CAP_BPF)) && !(eff & (1ULL << CAP_PERFMON)) ? " and " : "",
	    eff & (1ULL << CAP_PERFMON) ? "" : "CAP_PERFMON");
	return -EPERM;
}

static int read_sysctl_int(const char *path, long *v)
{
	char *buf;
	int err = read_path_all(path, 0, 64, &buf, NULL);

	if (err)
		return err;
	*v = strtol(buf, NULL, 10);
	free(buf);
	return 0;
}

/* A quarter second of samples at the rate and stack copy asked for, at least
 * 1 MiB, 16 with -t (a million traced calls a second). No larger: the BPF
 * program writes each record into memory the CPU has not touched since the
 * ring last wrapped, and that costs. Measured here (dwarf, 2 CPUs): 2.8 us per
 * sample with 2 MiB, 3.8 with 4, 6.1 with 16. The reader wakes at a quarter
 * full, so it may stall ~0.19 s before samples are lost (and counted). */
static unsigned ringbuf_size_mb(void)
{
	uint64_t rec = env.call_graph == CG_FP || env.no_user ? 256 : env.stack_copy * 3 / 4 + 512;
	uint64_t bytes = (uint64_t)libbpf_num_possible_cpus() * env.freq * rec / 4;
	/* --off-cpu with timelines sends a 40-byte record per wait: 8 MiB
	 * holds a quarter second of a million. (16 MiB under -a held more of
	 * the stacks sent at the start, but its pages, mapped twice, cost up
	 * to 32 MiB of RSS: docs/benchmarks.md, bench-offcpu.sh server.)
	 * --heap's samples carry an 8 KiB stack copy each, as many as an
	 * allocating program's bytes make (8,293 in test_heap's 1.6 s): 1 MiB
	 * held 23 ms of them, and on a loaded machine the estimate lost ~9 %. */
	unsigned mb = env.ntraces || env.nusdts || env.heap ? 16 : env.off_cpu ? 8 : 1;

	while (((uint64_t)mb << 20) < bytes && mb < 1024)
		mb <<= 1;
	return mb;
}

static int check_freq(void)
{
	long max = 0;

	if (env.freq < 1) {
		err("-F %d: frequency must be at least 1 Hz", env.freq);
		return -EINVAL;
	}
	if (!read_sysctl_int("/proc/sys/kernel/perf_event_max_sample_rate", &max) && max > 0 &&
	    env.freq > max) {
		err("-F %d: above kernel.perf_event_max_sample_rate (%ld Hz); "
		    "lower -F or raise the sysctl",
		    env.freq, max);
		return -ERANGE;
	}
	return 0;
}

static int perf_open(struct perf_event_attr *a, int cpu)
{
	return syscall(SYS_perf_event_open, a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

/* One sampling event per online CPU, each running the BPF program. cycles
 * needs a hardware PMU; without one (VMs) cpu-clock samples the same way. */
static int attach_sampler(struct bpf_program *prog, struct bpf_link ***links, int *nlinks,
			  const char **event)
{
	struct perf_event_attr a = {
	    .size = sizeof(a),
	    .freq = 1,
	    .sample_freq = env.freq,
	};
	bool want_cycles = !env.event || !strcmp(env.event, "cycles");
	int ncpu = libbpf_num_possible_cpus(), cpu, fd, attached = 0;

	if (ncpu <= 0)
		return ncpu ? ncpu : -ENODEV;
	*links = calloc(ncpu, sizeof(**links));
	if (!*links)
		return -ENOMEM;
	if (want_cycles) {
		a.type = PERF_TYPE_HARDWARE;
		a.config = PERF_COUNT_HW_CPU_CYCLES;
		*event = "cycles";
	} else {
		a.type = PERF_TYPE_SOFTWARE;
		a.config = PERF_COUNT_SW_CPU_CLOCK;
		*event = "cpu-clock";
	}
	for (cpu = 0; cpu < ncpu; cpu++) {
		fd = perf_open(&a, cpu);
		if (fd < 0 && a.type == PERF_TYPE_HARDWARE && !env.event &&
		    (errno == ENOENT || errno == EOPNOTSUPP || errno == ENODEV) && !attached) {
			debug("cycles: %s; falling back to cpu-clock", strerror(errno));
			a.type = PERF_TYPE_SOFTWARE;
			a.config = PERF_COUNT_SW_CPU_CLOCK;
			*event = "cpu-clock";
			fd = perf_open(&a, cpu);
		}
		if (fd < 0) {
			if (errno == ENODEV) /* offline CPU */
				continue;
			err("perf_event_open %s on cpu %d: %s", *event, cpu, strerror(errno));
			return -errno;
		}
		(*links)[cpu] = bpf_program__attach_perf_event(prog, fd);
		if (!(*links)[cpu]) {
			int err = -errno;

			err("attach BPF to %s on cpu %d: %s", *event, cpu, strerror(-err));
			close(fd);
			return err;
		}
		attached++;
	}
	*nlinks = ncpu;
	if (!attached) {
		err("no online CPU to sample");
		return -ENODEV;
	}
	return 0;
}

static void detach_sampler(struct bpf_link **links, int n)
{
	int i;

	for (i = 0; links && i < n; i++)
		bpf_link__destroy(links[i]);
}

/* Without BPF cookies: the function probed at addr, from the process's
 * mapping there. 0 when it is not one of ours. */
static uint32_t traced_func(const struct trace_links *tl, struct proc *p, uint64_t addr)
{
	struct mapping *m = proc_mapping_at(p, addr);

	if (!m)
		return 0;
	return trace_func_at(tl, makedev(m->dev_major, m->dev_minor), m->inode,
			     addr - m->start + m->offset);
}

/* A process whose maps were read (first sight, exec, a new library): its
 * unwind tables are built and loaded. */
static void maps_read(void *ctx, pid_t pid)
{
	struct recorder *r = ctx;

	if (r->cfi_worker && pid > 0)
		cfi_worker_queue(r->cfi_worker, pid, true);
}

/* The processes whose maps were read since the last call, to the tables'
 * worker, with one wakeup. */
static void tables_sync(struct recorder *r)
{
	procs_take_maps_read(&r->procs, maps_read, r);
	cfi_worker_kick(r->cfi_worker);
}

/* The recording's stop as the records see it: its time once rec_stop has
 * run, else -d's end. The drain can get to a stop seconds late (one record
 * can cost that: a large binary's symbols read on a loaded machine); what
 * came after -d's end is not the recording's, as the sampler's BPF program
 * also knows (sample_until_ns). 0: none yet. */
static uint64_t stop_time(const struct recorder *r)
{
	return r->stop_ns ? r->stop_ns : r->until_ns;
}

static bool after_stop(const struct recorder *r, uint64_t t)
{
	return stop_time(r) && t > stop_time(r);
}

static int handle_record(struct recorder *r, const struct ev_hdr *h, size_t size)
{
	const void *data = h;

	if (size < sizeof(*h))
		return 0;
	switch (h->type) {
	case EV_SAMPLE: {
		const struct ev_sample *s = data;

		if (size < sizeof(*s) ||
		    size < sizeof(*s) + ev_sample_ips(s) * sizeof(__u64) + s->stack_len)
			return 0;
		/* The command of `--` before its exec is our own fork, waiting
		 * to be let go: not what was asked for. */
		if (r->target.child > 0 && s->hdr.pid == (__u32)r->target.child && !r->child_execd)
			return 0;
		if (after_stop(r, h->time_ns))
			return 0;
		if (!r->t.first_sample) {
			r->t.first_sample = s->hdr.time_ns;
			debug("first sample: %.1f ms after the start (CLOCK_MONOTONIC %llu ns)",
			      ((int64_t)(s->hdr.time_ns - r->t.begin)) / 1e6,
			      (unsigned long long)s->hdr.time_ns);
		}
		r->samples++;
		r->sample_bytes += size;
		r->size_hist[size / 8 < SIZE_HIST_N ? size / 8 : SIZE_HIST_N - 1]++;
		if (proc_add_sample(&r->procs, s))
			return -ENOMEM; /* stops the drain; what we have is written */
		break;
	}
	case EV_OFFCPU_STACK:
		if (size < sizeof(struct ev_sample))
			return 0;
		if (r->target.child > 0 && h->pid == (__u32)r->target.child && !r->child_execd)
			return offcpu_drop_stack(r->offcpu,
						 ((const struct ev_sample *)data)->stack_id);
		if (offcpu_on_stack(r->offcpu, &r->procs, data, size))
			return -ENOMEM;
		break;
	case EV_OFFCPU:
		if (size >= sizeof(struct ev_offcpu) && offcpu_on_wait(r->offcpu, data))
			return -ENOMEM;
		break;
	case EV_HEAP_ALLOC:
		if (!r->heap ||
		    (r->target.child > 0 && h->pid == (__u32)r->target.child && !r->child_execd))
			return 0;
		if (heap_on_record(r->heap, &r->procs, data, size))
			return -ENOMEM;
		break;
	case EV_EXEC:
		if (r->target.child > 0 && h->pid == (__u32)r->target.child)
			r->child_execd = true;
		/* Before its new maps are read (they may be now): found again
		 * in them. */
		py_names_forget(r->pynames, h->pid);
		jvm_names_forget(r->jvmnames, h->pid);
		v8_names_forget(r->v8names, h->pid);
		if (size >= sizeof(struct ev_task) && (!env.all || proc_find(&r->procs, h->pid)))
			proc_on_exec(&r->procs, h->pid, ((const struct ev_task *)data)->comm);
		if (size >= sizeof(struct ev_exec)) {
			const struct ev_exec *e = data;

			procs_exec_file(&r->procs, e->dev_major, e->dev_minor, e->ino, e->path,
					sizeof(e->path));
		}
		break;
	case EV_FORK:
		if (size >= sizeof(struct ev_task))
			proc_get(&r->procs, ((const struct ev_task *)data)->child_pid, NULL);
		break;
	case EV_EXIT: {
		struct proc *p = proc_find(&r->procs, h->pid);

		proc_on_exit(&r->procs, h->pid, h->time_ns);
		r->exits_untaken = true;
		py_names_forget(r->pynames, h->pid);
		jvm_names_forget(r->jvmnames, h->pid);
		v8_names_forget(r->v8names, h->pid);
		if (r->cfi_worker)
			cfi_worker_queue(r->cfi_worker, h->pid, false);
		if (p)
			jit_on_exit(p);
		break;
	}
	case EV_VMA:
		if (size >= sizeof(struct ev_vma))
			proc_on_vma(&r->procs, h->pid, data);
		break;
	case EV_CALL: {
		const struct ev_call *c = data;
		size_t fixed = sizeof(*c) - sizeof(__u64) * MAX_TRACE_ARGS;
		size_t extra = c->kind & CALL_IP ? sizeof(__u64) : 0;

		/* After the stop: entries no longer come, and an exit that
		 * does is dropped; the calls still open are closed at the stop. */
		if (after_stop(r, h->time_ns))
			break;
		if (size >= fixed && c->nargs <= MAX_TRACE_ARGS &&
		    size >= fixed + c->nargs * sizeof(__u64) + extra) {
			struct proc *p = proc_get(&r->procs, h->pid, NULL);
			uint32_t id = c->func_id;

			if (!p)
				return -ENOMEM;
			/* An entry found by address: one whose mapping is not
			 * known (yet) still enters a call, for its exit. */
			if (c->kind & CALL_IP) {
				id = traced_func(&r->tlinks, p, c->args[c->nargs]);
				if (!id) {
					r->unresolved_calls++;
					id = xray_func_id(r->xray, "[unknown]");
				}
			}
			if (xray_on_call(r->xray, p, c, id, c->kind & CALL_KIND_MASK))
				return -ENOMEM;
			if ((c->kind & CALL_KIND_MASK) == CALL_ENTRY)
				trace_count_call(&r->tlinks, id);
		}
		break;
	}
	case EV_USDT:
	case EV_USDT_STR:
		if (usdt_on_event(r->usdt, &r->procs, h, size, stop_time(r)))
			return -ENOMEM;
		break;
	case EV_MIGRATE: {
		struct proc *p = proc_find(&r->procs, h->pid);

		if (p && xray_on_migrate(p, h))
			return -ENOMEM;
		break;
	}
	}
	return 0;
}

/* Handles one record. Returns -EAGAIN past the drain's time slice (libbpf
 * then stops consuming, after this record), -ENOMEM when the model cannot
 * grow. */
static int handle_event(void *ctx, void *data, size_t size)
{
	struct recorder *r = ctx;
	const struct ev_hdr *h = data;
	int err = handle_record(r, h, size);

	if (err)
		return err;
	procs_take_maps_read(&r->procs, maps_read, r);
	/* The slice starts at the first record the drain handles, not when it
	 * began to wait; a clock read per record would cost more than some
	 * records. */
	if (!r->yield_ns)
		r->yield_ns = now_ns(CLOCK_MONOTONIC) + DRAIN_SLICE_NS;
	else if (!(++r->samples_seen & 63) && now_ns(CLOCK_MONOTONIC) > r->yield_ns)
		return -EAGAIN;
	return 0;
}

/* A per-CPU array of n counters, summed. */
static void read_counters(int fd, uint64_t *out, __u32 n)
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t *vals = calloc(ncpu > 0 ? ncpu : 1, sizeof(*vals));
	__u32 i;
	int c;

	memset(out, 0, n * sizeof(*out));
	if (!vals)
		return;
	for (i = 0; i < n; i++)
		if (!bpf_map_lookup_elem(fd, &i, vals))
			for (c = 0; c < ncpu; c++)
				out[i] += vals[c];
	free(vals);
}

static void read_stats(struct sample_bpf *skel, uint64_t out[STAT_NR])
{
	read_counters(bpf_map__fd(skel->maps.stats), out, STAT_NR);
}

/* The samples each process lost. clear (--window): the map is emptied, so
 * that the next read has the next window's only. */
static void read_lost_by_pid(struct procs *procs, struct sample_bpf *skel, bool clear)
{
	int fd = bpf_map__fd(skel->maps.lost_by_pid);
	__u32 key, next, *prev = NULL;
	struct lost_val v;
	VEC(__u32) keys = {0};

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		struct proc *p;

		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &v) || !(p = proc_get(procs, key, NULL)))
			continue;
		/* Deleted after the walk: a deleted key would restart it. A
		 * loss counted between the read and the delete is not in any
		 * window (BPF's total, summary.json's lost_samples, has it). */
		if (clear && VEC_PUSH(keys, key))
			clear = false;
		p->lost = v.count;
		/* A process that only lost samples has no comm from a sample:
		 * BPF's, else /proc/PID/comm's (proc_get read it if it lives). */
		if (!p->nsamples && v.comm[0])
			proc_set_comm(p->comm, v.comm, sizeof(v.comm));
		if (!p->comm[0])
			snprintf(p->comm, sizeof(p->comm), "[unknown]");
	}
	for (size_t i = 0; clear && i < keys.n; i++)
		bpf_map_delete_elem(fd, &keys.v[i]);
	VEC_FREE(keys);
}

static void status_line(struct recorder *r, bool final)
{
	double secs = (now_ns(CLOCK_MONOTONIC) - r->start_ns) / 1e9;

	/* A terminal's live line, not a message: stays out of msg(). */
	fprintf(stderr, "\r\033[K[%6.1fs] %llu samples, %llu lost, %.0f samples/s%s", secs,
		(unsigned long long)r->samples, (unsigned long long)r->stats[STAT_LOST],
		secs > 0 ? r->samples / secs : 0.0, final ? "\n" : "");
}

/* The second object (uprobes, migrations) shares the sampler's maps. */
static struct trace_bpf *open_tracer(struct recorder *r)
{
	struct trace_bpf *t = trace_bpf__open();
	struct sample_bpf *sk = r->skel;
	int err;

	if (!t) {
		err("open BPF tracer: %s", strerror(errno));
		return NULL;
	}
	t->rodata->trace_args = env.trace_args;
	t->rodata->wakeup_bytes = sk->rodata->wakeup_bytes;
	trace_prepare(t, env.ntraces > 0, r->feat.attach_cookie, &r->tlinks);
	err = bpf_map__reuse_fd(t->maps.events, bpf_map__fd(sk->maps.events));
	if (!err)
		err = bpf_map__reuse_fd(t->maps.targets, bpf_map__fd(sk->maps.targets));
	if (!err)
		err = bpf_map__reuse_fd(t->maps.stats, bpf_map__fd(sk->maps.stats));
	if (!err)
		err = bpf_map__reuse_fd(t->maps.entry_ra, bpf_map__fd(sk->maps.entry_ra));
	if (!err)
		err = trace_bpf__load(t);
	if (!err)
		err = trace_bpf__attach(t);
	if (err) {
		err("load BPF tracer: %s", strerror(-err));
		trace_bpf__destroy(t);
		return NULL;
	}
	return t;
}

static int add_targets(struct sample_bpf *skel, const pid_t *pids, int n)
{
	int fd = bpf_map__fd(skel->maps.targets), i;
	__u8 one = 1;

	for (i = 0; i < n; i++) {
		__u32 k = pids[i];

		if (bpf_map_update_elem(fd, &k, &one, BPF_ANY)) {
			err("add target %d: %s", pids[i], strerror(errno));
			return -errno;
		}
	}
	return 0;
}

/* -p: the processes descended from the targets at the start, followed as
 * those they fork (unless --no-inherit): added to the BPF targets after the
 * fork tracepoint is attached, which takes the ones forked since from the
 * processes already targets. Looked for twice: a child forked by one found
 * in the first look, before it was added, is in the second. */
static void follow_descendants(struct recorder *r)
{
	int fd = bpf_map__fd(r->skel->maps.targets), pass, err;
	pid_t *d;
	size_t n, i;
	__u8 one = 1;

	for (pass = 0; pass < 2; pass++) {
		err = target_descendants(env.pids, env.npids, &d, &n);
		if (err) {
			warn("-p: the targets' child processes: /proc: %s; only those forked from "
			     "now on are followed",
			     strerror(-err));
			return;
		}
		for (i = 0; i < n; i++) {
			__u32 k = (__u32)d[i];

			if (proc_find(&r->procs, d[i]))
				continue;
			/* -p of its shell (-p $$): the recorder, a descendant, would
			 * record its own work, most of the samples. Left out, as
			 * under -a (the fork program follows only the targets'
			 * children, and it is none of them). */
			if (d[i] == getpid() && !env.include_self) {
				if (!pass)
					info("-p: bpftrace-rec itself (pid %d) descends from the "
					     "targets: left out, as under -a (--include-self "
					     "keeps it)",
					     (int)d[i]);
				continue;
			}
			r->ndescendants++;
			if (env.no_inherit)
				continue;
			if (bpf_map_update_elem(fd, &k, &one, BPF_ANY))
				warn("-p: child process %d not followed: %s", d[i],
				     strerror(errno));
			else
				proc_get(&r->procs, d[i], NULL);
		}
		free(d);
		if (env.no_inherit)
			break; /* counted, for the warning at the end */
	}
	if (r->ndescendants && !env.no_inherit)
		info("-p: following %zu processes the targets started before the recording",
		     r->ndescendants);
}

/* A -p target that recorded nothing (no sample, no wait) while others of
 * its tree did, or that has children --no-inherit leaves out: one line
 * each, since the profile alone would only look empty. */
static void warn_idle_targets(struct recorder *r)
{
	uint64_t others = 0;
	size_t i;
	int k;

	for (i = 0; i < r->procs.v.n; i++)
		others += r->procs.v.v[i]->nsamples;
	for (k = 0; k < env.npids; k++) {
		struct proc *p = proc_find(&r->procs, env.pids[k]);

		if (!p || p->nsamples || offcpu_proc_ns(r->ri.offcpu, p))
			continue;
		if (env.no_inherit && r->ndescendants)
			warn("-p %d (%s) recorded nothing: its work may be in its %zu child "
			     "processes, which --no-inherit leaves out",
			     p->pid, p->comm, r->ndescendants);
		else if (others)
			warn("-p %d (%s) recorded nothing itself; the processes it started did "
			     "(%" PRIu64 " samples): see each process's row in summary.json",
			     p->pid, p->comm, others);
	}
}

#define KSYMS_NICE 10 /* the kallsyms thread's, above the recorder's, while the programs load */

/* /proc/kallsyms's 200 k lines take 0.3 to 1.3 s to read and sort on a
 * loaded 2-core host, a sixth to a third of the start-up: read by a thread
 * while the BPF programs load and verify, and waited for (kallsyms_join)
 * once sampling has started, before any kernel frame is named. */
static void *kallsyms_thread(void *arg)
{
	struct recorder *r = arg;
	uint64_t t0 = now_ns(CLOCK_MONOTONIC);

	/* Behind the load while it runs (kallsyms_loaded gives it back its
	 * niceness): on 2 CPUs whose target spins two threads, the read took
	 * half the CPU the verifier had, and the first sample came at 230 ms,
	 * not 140 (scripts/bench-startup.sh). */
	if (r->ksyms_prio != INT_MIN &&
	    !setpriority(PRIO_PROCESS, 0,
			 r->ksyms_prio + KSYMS_NICE > 19 ? 19 : r->ksyms_prio + KSYMS_NICE)) {
		atomic_store(&r->ksyms_tid, (pid_t)syscall(SYS_gettid));
		if (atomic_load(&r->ksyms_loaded))
			setpriority(PRIO_PROCESS, 0, r->ksyms_prio);
	}
	r->ksyms_err = kallsyms_load();
	r->t.kallsyms = now_ns(CLOCK_MONOTONIC) - t0;
	return NULL;
}

static void kallsyms_start(struct recorder *r)
{
	uint64_t eff = 0;

	/* Niced only where it can be given its niceness back (raising a
	 * thread's priority takes CAP_SYS_NICE). */
	errno = 0;
	r->ksyms_prio = getpriority(PRIO_PROCESS, 0);
	if (errno || effective_caps(&eff) || !(eff & (1ULL << CAP_SYS_NICE)))
		r->ksyms_prio = INT_MIN;
	r->ksyms_loading = !pthread_create(&r->ksyms_thread, NULL, kallsyms_thread, r);
	if (r->ksyms_loading)
		return;
	r->ksyms_prio = INT_MIN; /* the recorder's own thread: never niced */
	kallsyms_thread(r);	 /* no thread: read on the way, as before */
	if (r->ksyms_err)
		warn("/proc/kallsyms: %s; kernel frames stay unnamed", strerror(-r->ksyms_err));
}

/* The programs are loaded: the kallsyms thread gets its niceness back. */
static void kallsyms_loaded(struct recorder *r)
{
	pid_t tid;

	atomic_store(&r->ksyms_loaded, true);
	if (r->ksyms_loading && (tid = atomic_load(&r->ksyms_tid)))
		setpriority(PRIO_PROCESS, (id_t)tid, r->ksyms_prio);
}

static void kallsyms_join(struct recorder *r)
{
	if (!r->ksyms_loading)
		return;
	pthread_join(r->ksyms_thread, NULL);
	r->ksyms_loading = false;
	if (r->ksyms_err)
		warn("/proc/kallsyms: %s; kernel frames stay unnamed", strerror(-r->ksyms_err));
}

/* Phase 1: the checks that need no BPF, the signals, and the command started
 * (held before its exec until sampling runs). 0 or -1 after a message. */
static int rec_prepare(struct recorder *r)
{
	static const int stop_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1};
	struct sigaction sa = {.sa_sigaction = on_signal, .sa_flags = SA_SIGINFO};
	size_t i;
	int err;

	/* First: a stop asked for during the set-up (reading kallsyms, the
	 * feature probes: a second or more on a busy host) stops the recording
	 * as soon as it starts. A shell starts background jobs with SIGINT
	 * ignored, and an ignored signal is discarded: one that came before
	 * the handler was lost, and the recording ran until its targets
	 * exited. */
	/* Without it the drain polls at DRAIN_POLL_MS. Never closed: the
	 * handler may run until exit, and would write to whatever file took
	 * its number. */
	wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	for (i = 0; i < sizeof(stop_signals) / sizeof(stop_signals[0]); i++)
		sigaction(stop_signals[i], &sa, NULL);
	libbpf_set_print(libbpf_print);
	/* A directory another run holds is refused before the probes. */
	if (check_privileges() || check_freq() || outdir_check_free(env.outdir) ||
	    features_probe(&r->feat))
		return -1;
	if (env.npids && target_check_pids(env.pids, env.npids))
		return -1;
	/* Before anything is recorded: a directory that cannot take the
	 * files would cost the whole capture at the end. */
	if (outdir_open(&r->out, env.outdir))
		return -1;
	/* Now, so that an exit during the set-up still stops the recording. */
	target_watch_pids(&r->target, env.pids, env.npids);
	if (!env.no_kernel)
		kallsyms_start(r);
	/* stderr may be a pipe whose reader went away (| head): its messages
	 * are lost, the recording and its files are not. */
	signal(SIGPIPE, SIG_IGN);
	if (env.cmd && (err = target_spawn(&r->target, env.cmd))) {
		err("start %s: %s", env.cmd[0], strerror(-err));
		return -1;
	}
	return 0;
}

/* The CFI walker in the sampler's tail-call slot (bpf/cfi_walk.bpf.h: 0,
 * or 1 for the compat variant), and the tables' maps. */
static int rec_load_cfi(struct recorder *r)
{
	struct sample_bpf *skel = r->skel;
	__u32 key = r->feat.compat_sampler ? 1 : 0;
	int fd = bpf_program__fd(r->feat.compat_sampler ? skel->progs.on_cfi_walk_compat
							: skel->progs.on_cfi_walk),
	    err;

	if (bpf_map_update_elem(bpf_map__fd(skel->maps.cfi_progs), &key, &fd, BPF_ANY)) {
		err("the CFI walker's tail call: %s", strerror(errno));
		return -1;
	}
	err = cfi_maps_new(bpf_map__fd(skel->maps.cfi_rows), bpf_map__fd(skel->maps.cfi_tables),
			   bpf_map__fd(skel->maps.cfi_mappings),
			   bpf_map__max_entries(skel->maps.cfi_rows),
			   bpf_map__max_entries(skel->maps.cfi_tables), &r->cfi);
	if (!err) {
		cfi_maps_set_files(r->cfi, bpf_map__fd(skel->maps.cfi_files));
		cfi_maps_set_gen(r->cfi, bpf_map__fd(skel->maps.cfi_gen));
		cfi_maps_set_woken(r->cfi, bpf_map__fd(skel->maps.cfi_woken));
	}
	if (!err)
		err = cfi_worker_start(r->cfi, &r->cfi_worker);
	/* Under -a, a process's tables wait a drain pass: most of a churning
	 * host's processes are gone by then, and their add is dropped. */
	if (!err && env.all)
		cfi_worker_hold(r->cfi_worker, 1);
	if (err) {
		err("unwind tables: %s", strerror(-err));
		return -1;
	}
	return 0;
}

/* The sinks: the files first (the push sends them as written), then
 * --push's destinations, checked with their credentials before anything
 * is recorded. */
static int rec_load_sinks(struct recorder *r)
{
	const char *version = strchr(argp_program_version, ' ');
	struct push_config c = {.ndests = env.npush,
				.headers_file = env.push_headers,
				.service_name = env.service_name,
				.version = version ? version + 1 : argp_program_version,
				.out = &r->out,
				.spool_max = env.spool_max};

	_Static_assert(sizeof(env.push) / sizeof(env.push[0]) == PUSH_MAX, "--push's bound");
	memcpy(c.dests, env.push, sizeof(*env.push) * env.npush);
	if (sinks_add(&r->sinks, files_sink_new()))
		return -1;
	return push_sinks_add(&c, &r->sinks);
}

/* -v: the verifier's own statistics of each program loaded (log level 4,
 * BPF_LOG_STATS, 5.2+: a few lines at the end of the verification, nothing
 * per instruction), so that -v says which program the load's time went to.
 * Buffers of 4 KiB: the statistics take a few hundred bytes, and a kernel
 * before 6.4 fails a load whose log does not fit. */
#define VLOG_SZ 4096

static char *verifier_stats_ask(struct bpf_object *obj)
{
	struct bpf_program *p;
	char *bufs;
	size_t n = 0;

	bpf_object__for_each_program(p, obj) n++;
	if (!env.verbose || !(bufs = calloc(n, VLOG_SZ)))
		return NULL;
	n = 0;
	bpf_object__for_each_program(p, obj)
	{
		if (bpf_program__autoload(p)) {
			bpf_program__set_log_buf(p, bufs + n * VLOG_SZ, VLOG_SZ);
			bpf_program__set_log_level(p, 4);
		}
		n++;
	}
	return bufs;
}

static long vlog_field(const char *log, const char *name)
{
	const char *f = strstr(log, name);

	return f ? strtol(f + strlen(name), NULL, 10) : -1;
}

static void verifier_stats_say(struct bpf_object *obj, char *bufs)
{
	struct bpf_program *p;
	size_t n = 0;

	if (!bufs)
		return;
	bpf_object__for_each_program(p, obj)
	{
		const char *log = bufs + n++ * VLOG_SZ;
		struct bpf_prog_info info = {0};
		__u32 len = sizeof(info);

		if (!bpf_program__autoload(p) || !*log)
			continue;
		/* verified_insns: 5.16+, 0 before. */
		bpf_obj_get_info_by_fd(bpf_program__fd(p), &info, &len);
		const char *depth = strstr(log, "stack depth ");

		debug("verifier: %s %.1f ms, %ld insns processed (%u verified), %ld states, "
		      "peak %ld, stack depth %.*s",
		      bpf_program__name(p), vlog_field(log, "verification time ") / 1e3,
		      vlog_field(log, "processed "), info.verified_insns,
		      vlog_field(log, "total_states "), vlog_field(log, "peak_states "),
		      depth ? (int)strcspn(depth + 12, "\n") : 1, depth ? depth + 12 : "?");
	}
	free(bufs);
}

/* Phase 2: the BPF objects, set for this run and this kernel, loaded; the
 * ring buffer and the process tracepoints ready. */
static int rec_load(struct recorder *r)
{
	struct sample_bpf *skel;
	char *vlogs;
	int err, i;

	if (rec_load_sinks(r))
		return -1;
	if (env.window_s &&
	    cont_new((uint64_t)(env.window_s * 1e9),
		     &(struct retain){env.retain_count, env.retain_age_s, env.retain_bytes},
		     &r->out, &r->cont)) {
		err("out of memory");
		return -1;
	}
	if (xray_new(&r->xray) || flame_views_new(&r->ri.flame) || offcpu_new(&r->offcpu)) {
		err("out of memory");
		return -1;
	}
	r->ri.xray = r->tlinks.xray = r->xray;
	skel = r->skel = sample_bpf__open();
	if (!skel) {
		err("open BPF object: %s", strerror(errno));
		return -1;
	}
	skel->rodata->filter_pids = !env.all;
	skel->rodata->follow_forks = !env.no_inherit;
	skel->rodata->include_idle = env.idle;
	/* USDT probes under -a fire in processes never sampled. */
	skel->rodata->exit_maps_all = !env.all || env.nusdts;
	skel->rodata->kernel_stacks = !env.no_kernel;
	skel->rodata->user_stacks = !env.no_user;
	/* As perf does: our own samples would feed back into our load. */
	skel->rodata->self_tgid = env.include_self ? 0 : getpid();
	if (!env.ringbuf_mb)
		env.ringbuf_mb = ringbuf_size_mb();
	skel->rodata->wakeup_bytes = (uint64_t)env.ringbuf_mb << 18; /* a quarter full */
	skel->rodata->stack_copy_walk = env.no_user		   ? 0
					: env.call_graph == CG_CFI ? CFI_WALK_COPY
								   : WALK_COPY;
	skel->rodata->stack_copy_dwarf =
	    env.call_graph == CG_FP || env.no_user ? 0 : env.stack_copy;
	skel->rodata->dwarf_all = env.call_graph == CG_DWARF;
	skel->rodata->max_stack = env.max_stack;
	skel->rodata->walk_reads = 8 + env.max_stack / 8;
	r->procs.max_stack = env.max_stack;
	if (!(r->elves = r->procs.elves = unwind_elves_new())) {
		err("out of memory");
		return -1;
	}
	{
		struct name_source jit_names;

		jit_name_source(&jit_names);
		procs_add_names(&r->procs, &jit_names); /* the first: cannot be full */
	}
	err = bpf_map__set_max_entries(skel->maps.scratch_map, libbpf_num_possible_cpus());
	if (!err) /* two slots a CPU (bpf/runtime/python_maps.bpf.h) */
		err =
		    bpf_map__set_max_entries(skel->maps.py_scratch, 2 * libbpf_num_possible_cpus());
	if (!err)
		err = bpf_map__set_max_entries(skel->maps.events, env.ringbuf_mb << 20);
	if (err) {
		err("ring buffer of %u MiB: %s", env.ringbuf_mb, strerror(-err));
		return -1;
	}
	/* The sampler's variant for this kernel (features.h), and the CFI
	 * walker it tail-calls, of the same variant. */
	bpf_program__set_autoload(skel->progs.on_sample, !r->feat.compat_sampler);
	bpf_program__set_autoload(skel->progs.on_sample_compat, r->feat.compat_sampler);
	if (env.call_graph == CG_CFI && !env.no_user) {
		skel->rodata->cfi_walk = true;
		/* The sampler's own frame-pointer walk is then only the way
		 * after a failed tail call into the CFI walker, which the slot
		 * filled before the attach (rec_load_cfi) rules out: the kernel's
		 * walk (bpf_get_stack) takes that case, and the verifier no
		 * longer follows a walk no sample takes (its bpf_loop callback
		 * was 18,938 of on_sample's 74,376 instructions processed on
		 * 6.18). */
		skel->rodata->bpf_fp_walk = false;
		bpf_program__set_autoload(skel->progs.on_cfi_walk, !r->feat.compat_sampler);
		bpf_program__set_autoload(skel->progs.on_cfi_walk_compat, r->feat.compat_sampler);
		bpf_map__set_max_entries(skel->maps.cfi_files,
					 bpf_map__max_entries(skel->maps.cfi_tables));
		bpf_map__set_max_entries(skel->maps.cfi_pcache, 4096);
		err = bpf_map__set_max_entries(
		    skel->maps.cfi_rows, cfi_maps_rows_for_budget((size_t)env.unwind_mib << 20));
		if (err) {
			err("--unwind-mib %u: %s", env.unwind_mib, strerror(-err));
			return -1;
		}
	}
	err = offcpu_prepare(r->offcpu, skel,
			     &(struct offcpu_cfg){
				 .on = env.off_cpu,
				 .min_ns = (uint64_t)env.off_cpu_min_us * 1000,
				 .timelines = (!env.all || env.per_process) && !env.window_s,
				 .system_wide = env.all,
				 .compat = r->feat.compat_sampler,
				 .copy = env.call_graph == CG_FP ? 0 : env.stack_copy,
				 .nr_cpus = libbpf_num_possible_cpus(),
				 .kernel_stacks = !env.no_kernel,
				 .has_tp = r->feat.sched_switch_btf,
				 .entries = env.off_cpu_entries,
			     },
			     &r->degraded);
	if (err)
		return -1;
	vlogs = verifier_stats_ask(skel->obj);
	r->t.bpf_cpu = now_ns(CLOCK_THREAD_CPUTIME_ID);
	r->t.bpf_load0 = now_ns(CLOCK_MONOTONIC);
	err = sample_bpf__load(skel);
	r->t.bpf_load1 = now_ns(CLOCK_MONOTONIC);
	kallsyms_loaded(r);
	r->t.bpf_cpu = now_ns(CLOCK_THREAD_CPUTIME_ID) - r->t.bpf_cpu;
	verifier_stats_say(skel->obj, vlogs);
	if (err) {
		err("load BPF programs on kernel %s: %s (run with -vv for the verifier's log)",
		    r->feat.kernel, strerror(-err));
		return -1;
	}
	if (env.npids && add_targets(skel, env.pids, env.npids))
		return -1;
	/* No per-sample timeline and no per-process file: samples are
	 * counted as they come, and exited processes compacted. */
	r->procs.aggregate = (env.all && !env.per_process) || r->cont;
	if (skel->rodata->cfi_walk && rec_load_cfi(r))
		return -1;
	if (r->target.child > 0 && add_targets(skel, &r->target.child, 1))
		return -1;
	err = jvm_new(&r->jvm);
	if (!err)
		err = jvm_names_new(&r->jvmnames, r->jvm, bpf_map__fd(skel->maps.jvm_procs));
	if (err) {
		err("JVM detection: %s", strerror(-err));
		return -1;
	}
	/* Before Python's: a rewrite that expands a frame moves the frames
	 * after it, and Python's finds its frames by address, the JVM's by
	 * their index in the record. BPFTRACE_REC_NO_FEATURES=jvm: native
	 * frames only (the benchmark's peer). */
	if (!list_has(getenv("BPFTRACE_REC_NO_FEATURES"), "jvm")) {
		struct name_source jvm_names;

		jvm_names_source(r->jvmnames, &jvm_names);
		procs_add_names(&r->procs, &jvm_names);
	}
	err = v8_new(&r->v8);
	if (!err)
		err = v8_names_new(&r->v8names, r->v8, bpf_map__fd(skel->maps.v8_procs));
	if (err) {
		err("V8 detection: %s", strerror(-err));
		return -1;
	}
	/* As the JVM's, by index, before Python's. BPFTRACE_REC_NO_FEATURES=v8:
	 * native frames only. */
	if (!list_has(getenv("BPFTRACE_REC_NO_FEATURES"), "v8")) {
		struct name_source v8_names;

		v8_names_source(r->v8names, &v8_names);
		procs_add_names(&r->procs, &v8_names);
	}
	err = python_new(&r->python);
	if (!err)
		err = py_names_new(&r->pynames, r->python, bpf_map__fd(skel->maps.py_procs));
	if (err) {
		err("CPython detection: %s", strerror(-err));
		return -1;
	}
	/* BPFTRACE_REC_NO_FEATURES=python: native frames only (the benchmark's
	 * peer, scripts/bench-python.sh). */
	if (!list_has(getenv("BPFTRACE_REC_NO_FEATURES"), "python")) {
		struct name_source py_names;

		py_names_source(r->pynames, &py_names);
		procs_add_names(&r->procs, &py_names); /* the third of PROCS_MAX_NAMES */
	}
	r->rb = ring_buffer__new(bpf_map__fd(skel->maps.events), handle_event, r, NULL);
	if (!r->rb) {
		err("ring buffer: %s", strerror(errno));
		return -1;
	}
	err = sample_bpf__attach(skel); /* the fork/exec/exit tracepoints */
	if (err) {
		err("attach tracepoints: %s", strerror(-err));
		return -1;
	}
	/* -p: the targets' maps, and their followed children's
	 * (follow_descendants), as they are now, before any sample: with them
	 * the runtimes' detection (a CPython's, a JVM's walk in BPF) and the
	 * unwind tables' builds. Read after the attach instead, the samples of
	 * the first milliseconds of a Python target had no Python frames
	 * (test_python's python_deep at 97-98 % under load, 99 wanted): a
	 * start-up cost the runtimes' frames need. */
	r->t.targets = now_ns(CLOCK_MONOTONIC);
	for (i = 0; i < env.npids; i++)
		proc_get(&r->procs, env.pids[i], NULL);
	if (env.npids)
		follow_descendants(r);
	tables_sync(r);
	r->t.targets = now_ns(CLOCK_MONOTONIC) - r->t.targets;
	/* -t's uprobes, attached before the sampler. Without -t only the CPU
	 * migrations of the XRay timelines: loaded once sampling runs
	 * (rec_attach), a second object's open, BTF and load that the first
	 * sample does not wait for. */
	if (env.ntraces && !(r->tracer = open_tracer(r)))
		return -1;
	if (env.heap &&
	    heap_new(&(struct heap_cfg){.rate = env.heap_rate ? env.heap_rate : HEAP_RATE_DEFAULT,
					.stack_copy = env.stack_copy,
					.live_max = HEAP_LIVE_MAX,
					.all = env.all,
					.cookies = r->feat.attach_cookie,
					.events_fd = bpf_map__fd(skel->maps.events),
					.targets_fd = bpf_map__fd(skel->maps.targets),
					.ncpus = libbpf_num_possible_cpus()},
		     &r->heap))
		return -1;
	if (env.nusdts && usdt_new(&(struct usdt_cfg){.specs = env.usdts,
						      .nspecs = env.nusdts,
						      .trace_args = env.trace_args,
						      .all = env.all,
						      .ref_ctr = r->feat.uprobe_ref_ctr,
						      .cookies = r->feat.attach_cookie,
						      .events_fd = bpf_map__fd(skel->maps.events),
						      .targets_fd = bpf_map__fd(skel->maps.targets),
						      .stats_fd = bpf_map__fd(skel->maps.stats),
						      .xray = r->xray,
						      .wakeup_bytes = skel->rodata->wakeup_bytes},
				   &r->usdt))
		return -1;
	return 0;
}

/* Phase 3: -t's uprobes and the sampler attached, the command let go. From
 * here on a capture exists and is written whatever happens. */
static int rec_attach(struct recorder *r)
{
	struct run_info *ri = &r->ri;
	int err;

	if (env.ntraces) {
		/* The very file the command runs (target_spawn resolved it). */
		const char *exe = r->target.child > 0 ? r->target.path : NULL;

		/* The command's pid is a target too: its fork maps our libraries. */
		err = trace_attach(r->tracer, env.traces, env.ntraces,
				   exe ? &r->target.child : env.pids, exe ? 1 : env.npids, exe,
				   &r->tlinks);
		if (err)
			return -1;
		info("tracing %d function%s (%s)", r->tlinks.nfuncs,
		     r->tlinks.nfuncs == 1 ? "" : "s",
		     r->tlinks.multi == 1 ? "uprobe_multi" : "one uprobe each");
	}
	if (r->heap) {
		/* The command's libc as its program will map it. */
		const char *exe = r->target.child > 0 ? r->target.path : NULL;

		if (heap_attach(r->heap, exe ? &r->target.child : env.pids, exe ? 1 : env.npids,
				exe))
			return -1;
		ri->heap = r->heap;
	}
	if (r->usdt) {
		/* The very file the command runs, as for -t above. */
		err = usdt_attach(r->usdt, env.pids, env.npids,
				  r->target.child > 0 ? r->target.path : NULL);
		if (err)
			return -1;
	}
	if (attach_sampler(r->feat.compat_sampler ? r->skel->progs.on_sample_compat
						  : r->skel->progs.on_sample,
			   &r->links, &r->nlinks, &r->event) ||
	    offcpu_attach(r->offcpu, r->skel))
		return -1;
	r->start_ns = r->t.attached = now_ns(CLOCK_MONOTONIC);
	r->t.cpu_attached = now_ns(CLOCK_PROCESS_CPUTIME_ID);
	ri->start_realtime_ns = now_ns(CLOCK_REALTIME);
	if (env.duration > 0) {
		r->until_ns = r->start_ns + (uint64_t)(env.duration * 1e9);
		r->skel->bss->sample_until_ns = r->until_ns;
	}
	/* The timelines' migrations from here (a sample says its CPU too). */
	if (!r->tracer && (!env.all || env.per_process) && !r->cont &&
	    !(r->tracer = open_tracer(r)))
		return -1;
	kallsyms_join(r); /* before the sleepers' stacks are named */
	/* After the start: their waits count from it, within the duration. */
	if (offcpu_sleepers_read(r->offcpu, r->skel, &r->procs, r->target.child, r->start_ns)) {
		err("--off-cpu: out of memory");
		return -1;
	}
	ri->freq = env.freq;
	ri->ringbuf_mb = env.ringbuf_mb;
	ri->event = r->event;
	ri->system_wide = env.all;
	ri->per_process = (!env.all || env.per_process) && !r->cont;
	ri->outdir = env.outdir;
	output_readers_find(&ri->readers);
	ri->out = &r->out;
	ri->argc = env.argc;
	ri->argv = env.argv;
	ri->kernel = r->feat.kernel;
	ri->degraded = &r->degraded;
	ri->offcpu = offcpu_on(r->offcpu) ? r->offcpu : NULL;
	ri->procs = &r->procs;
	ri->sinks = &r->sinks;
	/* --window writes every window whole and then forgets it: nothing is
	 * set aside. */
	if (r->procs.aggregate && !r->cont) {
		const char *s = getenv("BPFTRACE_REC_FOLD_LIVE_S"); /* the tests' */

		ri->fold = output_fold_new(ri);
		r->fold_live_ns = s && atoi(s) > 0 ? atoi(s) * 1000000000ULL : FOLD_LIVE_NS;
		r->last_fold_ns = now_ns(CLOCK_MONOTONIC);
	}
	xray_configure(r->xray, &(struct xray_cfg){
				    .version = env.xray_version,
				    .buffer_size = env.fdr_buffer_size,
				    .flight_recorder = env.flight_recorder,
				    .start_realtime_ns = ri->start_realtime_ns,
				    .period_ns = 1000000000ULL / env.freq,
				});
	if (r->cont) {
		r->win_start_ns = r->start_ns;
		r->win_start_realtime = ri->start_realtime_ns;
		r->win_close_ns = r->start_ns + cont_period_ns(r->cont);
		r->win.period_ns = cont_period_ns(r->cont);
	}
	jit_start(env.jitdump);
	r->started = true;
	if (r->target.child > 0) {
		/* An exec that fails even so (a script's missing interpreter):
		 * nothing was recorded, so nothing is written; a shell's status. */
		if ((err = target_release(&r->target, env.cmd[0]))) {
			r->started = false;
			r->exec_status = err == -ENOENT ? 127 : 126;
			return -1;
		}
	}
	note_degraded(r);
	/* The first sample waits for the attach, no more: the rest of this
	 * phase (the migrations' tracer, kallsyms) runs while it samples. */
	debug("start-up %.1f ms to sampling, %.1f ms of CPU: prepare %.1f (kallsyms, in a thread: "
	      "%.1f), load %.1f (BPF load and verify %.1f, its CPU %.1f; the targets' maps %.1f), "
	      "attach %.1f; then, sampling, to this line %.1f",
	      (r->t.attached - r->t.begin) / 1e6, (r->t.cpu_attached - r->t.cpu_begin) / 1e6,
	      (r->t.prepared - r->t.begin) / 1e6, r->t.kallsyms / 1e6,
	      (r->t.loaded - r->t.prepared) / 1e6, (r->t.bpf_load1 - r->t.bpf_load0) / 1e6,
	      r->t.bpf_cpu / 1e6, r->t.targets / 1e6, (r->t.attached - r->t.loaded) / 1e6,
	      (now_ns(CLOCK_MONOTONIC) - r->t.attached) / 1e6);
	if (!env.quiet)
		info("recording %s at %d Hz (%s)%s", env.all ? "all CPUs" : "targets", env.freq,
		     r->event, r->tty ? "; Ctrl-C to stop" : "");
	return 0;
}

/* Phase 4: drains the ring buffer until a signal, -d, or the targets' exit.
 * Each pass hands back within DRAIN_SLICE_NS however fast records come, so a
 * stop is seen within about twice that; what the drain cannot keep up with
 * fills the ring buffer, and BPF drops and counts it. */
/* An exited process, done with (procs_retire): into the files as it goes,
 * then what the recorder keeps of it is freed with it. */
static bool retire_proc(void *ctx, struct proc *p)
{
	struct recorder *r = ctx;

	proc_name_again(p);
	if (!output_fold(r->ri.fold, p))
		return false;
	xray_proc_free(p);
	jit_proc_free(p);
	return true;
}

/* --window: a process whose last window is written (it exited before that
 * window's close) is freed. */
static bool window_retire(void *ctx, struct proc *p)
{
	(void)ctx;
	xray_proc_free(p);
	jit_proc_free(p);
	return true;
}

/* --window: the window ending at now (CLOCK_MONOTONIC) closed, a step of
 * the drain (and the last one at the stop, last): its samples, waits and
 * counts, as a run_info of the window, handed to the sinks, which write
 * OUTDIR/window-<UTC start>/ and push it; then forgotten, and the processes
 * that exited before it freed. 0, or the first sink's -errno. */
static int rec_window(struct recorder *r, uint64_t now, bool last)
{
	struct run_info *ri = &r->ri;
	uint64_t st[STAT_NR];
	struct outdir *od;
	const char *path;
	int e;

	uint64_t t0 = now_ns(CLOCK_MONOTONIC);

	r->win.index++;
	r->win.last = last;
	if (last) {
		memcpy(st, r->stats, sizeof(st)); /* rec_stop read them, and the losses */
	} else {
		read_stats(r->skel, st);
		read_lost_by_pid(&r->procs, r->skel, true);
	}
	ri->window = &r->win;
	ri->start_realtime_ns = r->win_start_realtime;
	ri->duration_ns = now - r->win_start_ns;
	ri->samples = r->samples - r->win_samples0;
	ri->sample_bytes = r->sample_bytes - r->win_bytes0;
	ri->lost = st[STAT_LOST] - r->win_lost0;
	ri->lost_tasks = st[STAT_LOST_TASK] - r->win_lost_tasks0;
	if (offcpu_window_take(r->offcpu, &r->procs))
		warn("--off-cpu: out of memory: window %" PRIu64 "'s waits are incomplete",
		     r->win.index);
	/* In use at the close (at the last, rec_stop read it). */
	if (r->heap && !last && heap_collect(r->heap))
		warn("--heap: out of memory: window %" PRIu64 "'s in-use view is incomplete",
		     r->win.index);
	jit_load_all(&r->procs);
	for (size_t i = 0; i < r->procs.v.n; i++)
		proc_name_again(r->procs.v.v[i]);
	od = cont_window_dir(r->cont, ri->start_realtime_ns, &path);
	if (od) {
		ri->out = od;
		ri->outdir = path;
		e = sinks_emit(&r->sinks, &(struct window){ri});
		cont_window_done(r->cont);
	} else {
		e = -EIO;
		r->windows_lost++;
		warn("window %" PRIu64 ": its %" PRIu64 " samples are lost (%" PRIu64
		     " windows lost so far)",
		     r->win.index, ri->samples, r->windows_lost);
	}
	ri->out = &r->out;
	ri->outdir = env.outdir;
	debug("window %" PRIu64 " closed in %.3f s", r->win.index,
	      (now_ns(CLOCK_MONOTONIC) - t0) / 1e9);
	/* The next window starts empty. */
	offcpu_window_end(r->offcpu);
	if (r->heap)
		heap_window_end(r->heap);
	/* Stacks kept for the waits' sums and the blocks still in use, which
	 * name them by index. */
	for (size_t i = 0; i < r->procs.v.n; i++)
		proc_window_reset(r->procs.v.v[i], offcpu_on(r->offcpu) || r->heap);
	r->procs.max_stack_cut = 0;
	/* Taken as exited now: freed at the next close, as if its exit came. */
	procs_sweep_gone(&r->procs, now);
	procs_files_trim(&r->procs);
	procs_retire(&r->procs, now, UINT64_MAX, window_retire, r);
	flame_views_free(ri->flame);
	ri->flame = NULL;
	if (flame_views_new(&ri->flame)) {
		err("out of memory");
		r->stop = STOP_ERROR;
	}
	r->win_samples0 = r->samples;
	r->win_bytes0 = r->sample_bytes;
	r->win_lost0 = st[STAT_LOST];
	r->win_lost_tasks0 = st[STAT_LOST_TASK];
	/* Windows are contiguous: the next starts where this one ended,
	 * however long this one took to write. */
	r->win_start_realtime += now - r->win_start_ns;
	r->win_start_ns = now;
	r->win_close_ns += cont_period_ns(r->cont);
	if (r->win_close_ns <= now) /* a window that took longer than its period */
		r->win_close_ns = now + cont_period_ns(r->cont);
	return e;
}

/* How long the drain may wait: DRAIN_WAIT_MS, DRAIN_POLL_MS when a stop
 * cannot wake it or under -a, 0 when the last pass left records, and no later
 * than -d. Under -a exec, fork and exit events come without a wakeup (every
 * exec of the system: a wakeup each would cost more than the pass), and a
 * short-lived process's maps and files must be read before it is gone
 * (kernels without exit-time mappings, containers whose root goes with
 * their last process): the pass keeps the 50 ms pace there. */
static int drain_timeout(const struct recorder *r, uint64_t now, bool woken, bool more)
{
	/* A re-read of maps put off: soon, not at the next record. */
	int ms = more			 ? 0
		 : r->procs.maps_stale.n ? MAPS_REREAD_MS + 1
		 : woken && !env.all	 ? DRAIN_WAIT_MS
					 : DRAIN_POLL_MS;

	if (env.duration > 0) {
		double left = r->start_ns + env.duration * 1e9 - now;

		if (left < ms * 1e6)
			ms = left > 0 ? (int)(left / 1e6) + 1 : 0;
	}
	if (r->cont && r->win_close_ns < now + (uint64_t)ms * 1000000)
		ms = r->win_close_ns > now ? (int)((r->win_close_ns - now) / 1000000) + 1 : 0;
	return ms;
}

static void rec_drain(struct recorder *r)
{
	uint64_t now, settled, cpu0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
	struct pollfd fds[2 + sizeof(r->target.pidfds) / sizeof(r->target.pidfds[0])];
	bool woken, more = false;
	int nfds = 2, err;

	/* The ring buffer's epoll fd (readable at a wakeup from BPF), the
	 * signals' eventfd, the targets' pidfds. */
	fds[0] = (struct pollfd){.fd = ring_buffer__epoll_fd(r->rb), .events = POLLIN};
	fds[1] = (struct pollfd){.fd = wake_fd, .events = POLLIN};
	nfds += target_pollfds(&r->target, fds + 2, sizeof(fds) / sizeof(fds[0]) - 2, &woken);
	woken = woken && wake_fd >= 0;
	now = now_ns(CLOCK_MONOTONIC);
	while (!r->stop) {
		r->yield_ns = 0;
		if (poll(fds, nfds, drain_timeout(r, now, woken, more)) > 0) {
			uint64_t v;
			int i;

			/* Emptied, for the next wait. */
			if (fds[1].revents & POLLIN) {
				ssize_t n = read(wake_fd, &v, sizeof(v));

				(void)n;
			}
			/* An exited target's pidfd stays readable: out of the set
			 * (poll skips a negative fd), or every wait would end at
			 * once while the other targets live. target_done tells. */
			for (i = 2; i < nfds; i++)
				if (fds[i].revents)
					fds[i].fd = -1;
		}
		err = ring_buffer__consume(r->rb);
		/* Past the slice with records left: no wakeup comes for them. */
		more = err == -EAGAIN;
		if (err < 0 && err != -EINTR && err != -EAGAIN) {
			err("draining the ring buffer: %s", strerror(-err));
			r->stop = STOP_ERROR;
			break;
		}
		now = now_ns(CLOCK_MONOTONIC);
		if (!r->steady_cpu0 && now - r->start_ns >= 1000000000ULL) {
			r->steady_cpu0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
			r->steady_samples0 = r->samples;
		}
		procs_reread_stale(&r->procs, now);
		tables_sync(r);
		/* Twice between a process's exit and its retirement. */
		if (offcpu_sleepers_step(r->offcpu, &r->procs, now + RETIRE_BUDGET_NS) ||
		    offcpu_flush(r->offcpu, r->skel, now)) {
			err("--off-cpu: out of memory");
			r->stop = STOP_ERROR;
			break;
		}
		if (r->ri.fold && r->ri.offcpu && now - r->last_offcpu_ns > PROC_COMPACT_NS / 2) {
			r->last_offcpu_ns = now;
			r->exits_untaken = false;
			offcpu_take_exited(r->offcpu, &r->procs, r->skel);
		}
		/* --window retires them as each window closes: a process
		 * goes once the window that holds its samples is written.
		 * Otherwise one is written out once every wait it had is
		 * taken: one that ended just before its exit may still be in
		 * BPF's sums. And none while an exit drained since the last
		 * take waits for the next: its event, seconds behind when the
		 * drain is, says it exited long before, but its waits were not
		 * taken (it had not exited then), and it would be written
		 * without them. */
		if (!r->cont) {
			settled =
			    r->ri.offcpu && r->exits_untaken ? 0 : offcpu_settled_ns(r->offcpu);
			procs_retire(&r->procs,
				     r->ri.fold && settled < now - PROC_COMPACT_NS
					 ? settled + PROC_COMPACT_NS
					 : now,
				     now + RETIRE_BUDGET_NS, r->ri.fold ? retire_proc : NULL, r);
		}
		/* It walks every cached file: once a second is enough. */
		if (now - r->last_trim_ns > 1000000000ULL) {
			r->last_trim_ns = now;
			symfiles_trim(now, SYMFILE_IDLE_NS);
			procs_trim_unwinders(&r->procs, now, UNWINDER_IDLE_NS);
			/* What they and the table worker's builds freed goes
			 * back to the system, not kept in the arenas. */
			malloc_trim(0);
		}
		if (r->ri.fold && now - r->last_fold_ns > r->fold_live_ns) {
			r->last_fold_ns = now;
			output_fold_live(r->ri.fold);
		}
		if (stop_sig)
			r->stop = STOP_SIGNAL;
		else if (env.duration > 0 && now - r->start_ns >= env.duration * 1e9)
			r->stop = STOP_DURATION;
		else if ((r->target.child > 0 || r->target.npidfds) && target_done(&r->target))
			r->stop = STOP_TARGETS;
		/* A window due at the stop is the last one, closed by rec_write. */
		if (r->cont && now >= r->win_close_ns && !r->stop)
			rec_window(r, now, false);
		if (snapshot_req) {
			snapshot_req = 0;
			if (!env.ntraces && !env.nusdts)
				warn("SIGUSR1: snapshots are of -t traces, and this recording "
				     "traces nothing; ignored");
			else if (output_snapshot(&r->ri, ++r->nsnapshots) == 0)
				info("snapshot %u of the XRay traces written", r->nsnapshots);
		}
		if (r->tty && now - r->last_status_ns > 250000000ULL) {
			r->last_status_ns = now;
			read_stats(r->skel, r->stats);
			status_line(r, false);
		}
	}
	now = now_ns(CLOCK_THREAD_CPUTIME_ID);
	r->drain_cpu_ns = now - cpu0;
	if (r->steady_cpu0) {
		r->ri.steady_cpu_ns = now - r->steady_cpu0;
		r->ri.steady_samples = r->samples - r->steady_samples0;
	}
}

/* The command of `--` is still running at a stop by -d or a signal: as
 * timeout(1), it gets SIGTERM (at -d) or the signal we got, then SIGKILL
 * after STOP_GRACE_S. A signal from the terminal reached it already. */
#define STOP_GRACE_S 2
static void stop_command(struct recorder *r)
{
	int sig = r->stop == STOP_DURATION ? SIGTERM : stop_sig;

	if (r->target.child <= 0 || !r->started || target_done(&r->target))
		return;
	r->cmd_stopped = r->stop == STOP_DURATION;
	if (sig == SIGQUIT)
		sig = SIGTERM; /* no core dump of the command for our stop */
	if (r->stop == STOP_DURATION || !stop_from_kernel)
		target_signal(&r->target, sig);
	if (target_wait_timeout(&r->target, STOP_GRACE_S * 1000) == -ETIMEDOUT) {
		warn("%s did not exit %d s after %s; killed", env.cmd[0], STOP_GRACE_S,
		     strsignal(sig));
		target_signal(&r->target, SIGKILL);
	}
}

/* Phase 5: tracing and sampling stopped, the last records drained, the
 * counters read. Calls still open at the stop are closed at its time. */
static void rec_stop(struct recorder *r)
{
	static const char *const why[] = {
	    [STOP_SIGNAL] = "a signal",
	    [STOP_DURATION] = "-d",
	    [STOP_TARGETS] = "every target has exited",
	};
	uint64_t *st = r->stats;

	r->stop_ns = now_ns(CLOCK_MONOTONIC);
	/* A drain late for -d: the records after its end were left out. */
	if (r->until_ns && r->stop_ns > r->until_ns)
		r->stop_ns = r->until_ns;
	kallsyms_join(r); /* a start-up that failed before rec_attach's */
	/* Entry probes first: no call starts after the stop. */
	trace_detach(&r->tlinks);
	usdt_detach(r->usdt);
	heap_detach(r->heap);
	detach_sampler(r->links, r->nlinks);
	if (r->skel) {
		struct bpf_prog_info pi = {0};
		__u32 len = sizeof(pi);
		struct bpf_program *prog = r->feat.compat_sampler ? r->skel->progs.on_sample_compat
								  : r->skel->progs.on_sample;

		if (!bpf_obj_get_info_by_fd(bpf_program__fd(prog), &pi, &len)) {
			r->bpf_run_ns = pi.run_time_ns;
			r->bpf_run_cnt = pi.run_cnt;
		}
	}
	offcpu_detach(r->offcpu, r->stop_ns);
	free(r->links);
	r->links = NULL;
	trace_bpf__destroy(r->tracer);
	r->tracer = NULL;
	if (r->stop > STOP_NONE && r->stop < STOP_ERROR)
		debug("stopping: %s", why[r->stop]);
	if (r->stop == STOP_TARGETS && env.npids)
		info("every -p target has exited; recording stopped");
	if (r->stop == STOP_ERROR)
		stop_sig = SIGTERM;
	/* The last samples drained while the command still runs: a runtime's
	 * frames (the JVM's methods, CPython's code objects) are named from
	 * its memory as they are drained, which is gone once it exits. */
	if (r->rb && r->started) {
		r->yield_ns = UINT64_MAX;
		ring_buffer__consume(r->rb);
	}
	stop_command(r);
	if (!r->rb || !r->started)
		return;
	ring_buffer__consume(r->rb);
	/* The drain is over: its ring buffer's mappings (twice its size in
	 * RSS) go now, and the unwinders once the sleepers' stacks are in
	 * (offcpu_collect), before the waits are sorted, the frames named
	 * again and the files made, whose memory is the recording's peak:
	 * under -a --off-cpu the 16 MiB of an 8 MiB ring buffer were still
	 * mapped at that peak. */
	ring_buffer__free(r->rb);
	r->rb = NULL;
	read_stats(r->skel, st);
	read_lost_by_pid(&r->procs, r->skel, r->cont);
	if (offcpu_collect(r->offcpu, &r->procs, r->skel))
		warn("--off-cpu: out of memory reading the waits");
	/* After the last records: every block in heap_live has its stack. */
	if (r->heap && heap_collect(r->heap))
		warn("--heap: out of memory reading the blocks in use");
	heap_report(r->heap);
	procs_trim_unwinders(&r->procs, 0, 0);
	if (env.npids)
		warn_idle_targets(r);
	if (r->tty)
		status_line(r, true);
	xray_close_calls(&r->procs, r->stop_ns);
	usdt_report(r->usdt, st);
	if (r->unresolved_calls)
		warn("%llu traced calls are [unknown]: without BPF cookies a function is found "
		     "from its process's maps, and the process exited before they were read",
		     (unsigned long long)r->unresolved_calls);
	if (st[STAT_LOST_CALLS])
		warn("%llu traced entries and returns lost: the ring buffer was full (raise "
		     "--ringbuf-size)",
		     (unsigned long long)st[STAT_LOST_CALLS]);
	if (env.ntraces)
		trace_report(&r->tlinks);
	if (st[STAT_LOST])
		warn("%llu samples lost: the ring buffer was full (raise --ringbuf-size)",
		     (unsigned long long)st[STAT_LOST]);
	if (st[STAT_LOST_TASK])
		warn("%llu exec, fork or exit events lost: the ring buffer was full, so frames of "
		     "processes that exec'd or exited then may be unnamed or named from their old "
		     "program (raise --ringbuf-size)",
		     (unsigned long long)st[STAT_LOST_TASK]);
	if (st[STAT_EXIT_VMA_BUSY])
		warn("%llu processes' mappings could not be read as they exited (the kernel's "
		     "VMA iterator was busy): their frames in libraries mapped after their maps "
		     "were read are [unknown]",
		     (unsigned long long)st[STAT_EXIT_VMA_BUSY]);
	if (st[STAT_EXIT_NO_MM] && r->feat.iter_task_vma)
		degraded_add(&r->degraded, "exit-time mappings",
			     "the kernel frees a process's memory map before its exit tracepoint "
			     "(before 6.16): frames of processes that exit before their maps are "
			     "read stay unnamed");
}

/* Phase 6: every file. 0, or 1 when one could not be written. */
static int rec_write(struct recorder *r)
{
	struct run_info *ri = &r->ri;
	const uint64_t *st = r->stats;
	int code;

	ri->duration_ns = r->stop_ns - r->start_ns;
	ri->samples = r->samples;
	ri->sample_bytes = r->sample_bytes;
	for (uint64_t i = 0, seen = 0; i < SIZE_HIST_N && r->samples; i++) {
		seen += r->size_hist[i];
		if (seen * 2 >= r->samples) {
			ri->sample_bytes_median = i * 8;
			break;
		}
	}
	ri->drain_cpu_ns = r->drain_cpu_ns;
	ri->bpf_run_ns = r->bpf_run_ns;
	ri->bpf_run_cnt = r->bpf_run_cnt;
	ri->lost = st[STAT_LOST];
	ri->lost_tasks = st[STAT_LOST_TASK];
	ri->exit_maps_busy = st[STAT_EXIT_VMA_BUSY];
	ri->kstack_err = st[STAT_KSTACK_ERR];
	ri->ustack_err = st[STAT_USTACK_ERR];
	ri->kernel_walks = st[STAT_KERNEL_WALKS];
	ri->traced_events = st[STAT_CALLS];
	ri->lost_traced_events = st[STAT_LOST_CALLS];
	ri->trace = env.ntraces ? &r->tlinks : NULL;
	ri->usdt = r->usdt;
	ri->usdt_lost = st[STAT_USDT_LOST];
	ri->usdt_str_fault = st[STAT_USDT_STR_FAULT];
	ri->cfi_worker_cpu_ns = cfi_worker_stop(r->cfi_worker); /* its stats are ours from here */
	r->cfi_worker = NULL;
	if (r->cfi) {
		struct cfi_maps_stats cs;

		cfi_maps_get_stats(r->cfi, &cs);
		ri->cfi = true;
		ri->cfi_walks = st[STAT_CFI_WALKS];
		ri->cfi_root = st[STAT_CFI_END];
		ri->cfi_trunc = st[STAT_CFI_TRUNC];
		ri->cfi_to_dwarf = st[STAT_CFI_NOTABLE];
		ri->cfi_fp_nomap = st[STAT_CFI_FP_NOMAP];
		ri->cfi_fp_nocfi = st[STAT_CFI_FP_NONE] + st[STAT_CFI_FP_FALLBACK];
		ri->cfi_read_err = st[STAT_CFI_READ_ERR];
		ri->cfi_uretprobe_miss = st[STAT_CFI_URETPROBE_MISS];
		ri->cfi_tables = cs.tables_built;
		ri->cfi_table_bytes = cs.bytes_peak;
		ri->cfi_budget_bytes = cs.rows_cap * sizeof(struct cfi_row);
		ri->cfi_out_of_budget = cs.out_of_budget;
	}
	{
		uint64_t py[PY_STAT_NR];
		struct py_names_stats ps;

		read_counters(bpf_map__fd(r->skel->maps.py_stats), py, PY_STAT_NR);
		py_names_get_stats(r->pynames, &ps);
		ri->py_walked = py[PY_STAT_WALKED];
		ri->py_no_tstate = py[PY_STAT_NO_TSTATE];
		ri->py_fault = py[PY_STAT_FAULT];
		ri->py_truncated = py[PY_STAT_TRUNCATED];
		ri->py_restarted = py[PY_STAT_RESTARTED];
		ri->py_samples = ps.samples;
		ri->py_merged = ps.merged;
		ri->py_frames = ps.frames;
		ri->py_unnamed = ps.unnamed;
		ri->py_leftover = ps.leftover;
		ri->py_edge = ps.edge;
	}
	{
		uint64_t jv[JVM_STAT_NR];
		struct jvm_names_stats js;

		read_counters(bpf_map__fd(r->skel->maps.jvm_stats), jv, JVM_STAT_NR);
		jvm_names_get_stats(r->jvmnames, &js);
		ri->jvm_frames_walked = jv[JVM_STAT_FRAMES];
		ri->jvm_no_blob = jv[JVM_STAT_NO_BLOB];
		ri->jvm_bad_frame = jv[JVM_STAT_BAD_FRAME];
		ri->jvm_read_fault = jv[JVM_STAT_READ_FAULT];
		ri->jvm_truncated = jv[JVM_STAT_TRUNCATED];
		ri->jvm_samples = js.samples;
		ri->jvm_named = js.frames;
		ri->jvm_inlined = js.inlined;
		ri->jvm_unnamed = js.unnamed;
		ri->jvm_gone = js.gone;
		ri->jvm_inline_cut = js.inline_cut;
	}
	{
		uint64_t vc[V8_STAT_NR];
		struct v8_names_stats vs;

		read_counters(bpf_map__fd(r->skel->maps.v8_stats), vc, V8_STAT_NR);
		v8_names_get_stats(r->v8names, &vs);
		ri->v8_frames_recorded = vc[V8_STAT_FRAMES];
		ri->v8_not_js = vc[V8_STAT_NOT_JS];
		ri->v8_read_fault = vc[V8_STAT_READ_FAULT];
		ri->v8_truncated = vc[V8_STAT_TRUNCATED];
		ri->v8_samples = vs.samples;
		ri->v8_named = vs.frames;
		ri->v8_unnamed = vs.unnamed;
		ri->v8_inlined = vs.inlined;
	}
	uint64_t t0 = now_ns(CLOCK_MONOTONIC), t1, t2, t3;

	jit_load_all(&r->procs);
	for (size_t i = 0; i < r->procs.v.n; i++)
		proc_name_again(r->procs.v.v[i]);
	t1 = now_ns(CLOCK_MONOTONIC);
	/* --window: the last window, up to the stop; else one window, the
	 * whole recording. Then what the push destinations still hold is
	 * sent, or kept in their spools for the next start. */
	if (r->cont)
		code = rec_window(r, r->stop_ns, true) ? 1 : 0;
	else
		code = sinks_emit(&r->sinks, &(struct window){ri}) ? 1 : 0;
	t2 = now_ns(CLOCK_MONOTONIC);
	if (sinks_finish(&r->sinks))
		code = 1;
	t3 = now_ns(CLOCK_MONOTONIC);
	/* What the user waits for after the stop (scripts/bench-stop.sh). */
	debug("stop to files %.1f ms: the last records and counters %.1f, naming again %.1f, "
	      "files %.1f, sinks' end %.1f",
	      (t3 - r->stop_ns) / 1e6, (t0 - r->stop_ns) / 1e6, (t1 - t0) / 1e6, (t2 - t1) / 1e6,
	      (t3 - t2) / 1e6);
	return code;
}

/* The exit status: the command's for `--` (124 when -d ended it, as
 * timeout(1)), else 0; 1 when the files could not be written. */
static int rec_finish(struct recorder *r, int code)
{
	int status;

	ring_buffer__free(r->rb);
	cfi_worker_stop(r->cfi_worker);
	r->cfi_worker = NULL;
	cfi_maps_free(r->cfi);
	r->cfi = NULL;
	usdt_free(r->usdt);
	r->usdt = NULL;
	heap_free(r->heap);
	r->heap = NULL;
	py_names_free(r->pynames);
	r->pynames = NULL;
	jvm_names_free(r->jvmnames);
	r->jvmnames = NULL;
	v8_names_free(r->v8names);
	r->v8names = NULL;
	v8_free(r->v8);
	r->v8 = NULL;
	jvm_free(r->jvm);
	r->jvm = NULL;
	python_free(r->python);
	r->python = NULL;
	sample_bpf__destroy(r->skel);
	if (r->target.child > 0) {
		if (!r->started)
			target_signal(&r->target, SIGKILL);
		status = target_wait(&r->target);
		if (r->started && code == 0)
			code = r->cmd_stopped ? 124 : status;
	}
	target_close(&r->target);
	if (r->out.fd >= 0)
		close(r->out.fd);
	if (r->exec_status)
		code = r->exec_status;
	output_fold_free(r->ri.fold);
	output_readers_free(&r->ri.readers);
	sinks_free(&r->sinks);
	cont_free(r->cont);
	for (size_t i = 0; i < r->procs.v.n; i++) {
		xray_proc_free(r->procs.v.v[i]);
		jit_proc_free(r->procs.v.v[i]);
	}
	offcpu_free(r->offcpu);
	trace_free(&r->tlinks);
	procs_free(&r->procs);
	unwind_elves_free(r->elves); /* after the unwinders */
	r->elves = NULL;
	xray_free(r->xray);
	flame_views_free(r->ri.flame);
	symfiles_free();
	kallsyms_free();
	return code;
}

int record_run(void)
{
	struct recorder r = {
	    .target = {.go_fd = -1, .err_fd = -1, .child_pidfd = -1},
	    .out = {.fd = -1},
	    .tty = isatty(STDERR_FILENO) && !env.quiet,
	};
	int code = 1;

	r.t.begin = now_ns(CLOCK_MONOTONIC);
	r.t.cpu_begin = now_ns(CLOCK_PROCESS_CPUTIME_ID);
	if (!rec_prepare(&r) && (r.t.prepared = now_ns(CLOCK_MONOTONIC), !rec_load(&r)) &&
	    (r.t.loaded = now_ns(CLOCK_MONOTONIC), !rec_attach(&r)))
		rec_drain(&r);
	rec_stop(&r);
	if (r.started)
		code = rec_write(&r);
	return rec_finish(&r, code);
}
