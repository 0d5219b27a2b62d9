#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "bpf/events.h"
#include "sample.skel.h"
#include "trace.skel.h"
#include "user/jit.h"
#include "user/output.h"
#include "user/proc.h"
#include "user/record.h"
#include "user/symbols.h"
#include "user/target.h"
#include "user/trace.h"
#include "user/util.h"
#include "user/xray.h"

struct env env = {
    .freq = 99,
    .outdir = "bpftrace-rec.out",
    .ringbuf_mb = 0, /* auto: ringbuf_size_mb() */
    .stack_copy = 8192,
    .xray_version = 5,
};

static volatile sig_atomic_t exiting, snapshot_req;
static struct target target = {.go_fd = -1, .err_fd = -1};
static uint64_t drained_samples, drained_sample_bytes;

static void on_signal(int sig)
{
	if (sig == SIGUSR1) {
		snapshot_req = 1;
		return;
	}
	/* A second Ctrl-C means now: the file being written is removed, and
	 * the files not yet written are not. */
	if (sig == SIGINT && exiting) {
		output_abort();
		_exit(130);
	}
	exiting = sig;
	if (sig == SIGTERM)
		target_signal(&target, SIGTERM);
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG && env.verbose < 2)
		return 0;
	if (level == LIBBPF_INFO && env.verbose < 1)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

/* CAP_BPF + CAP_PERFMON, or CAP_SYS_ADMIN, in the effective set. */
static int check_privileges(void)
{
	struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct data[2] = {{0}};
	uint64_t eff;

	if (syscall(SYS_capget, &hdr, data))
		return 0; /* let the kernel decide */
	eff = data[0].effective | (uint64_t)data[1].effective << 32;
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
	unsigned mb = env.ntraces ? 16 : 1;

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
static int attach_sampler(struct sample_bpf *skel, struct bpf_link ***links, int *nlinks,
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
		(*links)[cpu] = bpf_program__attach_perf_event(skel->progs.on_sample, fd);
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

static int leaf_need_fd = -1;

static void send_leaf_hint(pid_t pid, uint64_t ip, uint32_t need)
{
	struct leaf_key k = {.tgid = (__u32)pid, .ip = ip};

	/* A failure only costs bytes: BPF then sends the full copy. */
	bpf_map_update_elem(leaf_need_fd, &k, &need, BPF_ANY);
}

static int handle_event(void *ctx, void *data, size_t size)
{
	const struct ev_hdr *h = data;

	(void)ctx;
	if (size < sizeof(*h))
		return 0;
	switch (h->type) {
	case EV_SAMPLE: {
		const struct ev_sample *s = data;

		if (size < sizeof(*s) ||
		    size <
			sizeof(*s) + ((size_t)s->nkernel + s->nuser) * sizeof(__u64) + s->stack_len)
			return 0;
		drained_samples++;
		drained_sample_bytes += size;
		if (proc_add_sample(s))
			return -ENOMEM; /* stops the drain; what we have is written */
		break;
	}
	case EV_EXEC:
		if (size >= sizeof(struct ev_task) && (!env.all || proc_find(h->pid)))
			proc_on_exec(h->pid, ((const struct ev_task *)data)->comm);
		break;
	case EV_FORK:
		if (size >= sizeof(struct ev_task))
			proc_get(((const struct ev_task *)data)->child_pid, NULL);
		break;
	case EV_EXIT:
		proc_on_exit(h->pid);
		break;
	case EV_VMA:
		if (size >= sizeof(struct ev_vma))
			proc_on_vma(h->pid, data);
		break;
	case EV_CALL: {
		const struct ev_call *c = data;
		size_t fixed = sizeof(*c) - sizeof(__u64) * MAX_TRACE_ARGS;

		if (size >= fixed && c->nargs <= MAX_TRACE_ARGS &&
		    size >= fixed + c->nargs * sizeof(__u64)) {
			struct proc *p = proc_get(h->pid, NULL);

			if (!p || xray_on_call(p, c))
				return -ENOMEM;
		}
		break;
	}
	case EV_MIGRATE: {
		struct proc *p = proc_find(h->pid);

		if (p && xray_on_migrate(p, h))
			return -ENOMEM;
		break;
	}
	}
	return 0;
}

static int dwarf_pids_fd = -1;

/* --call-graph default: frame pointers, and DWARF unwinding for a process
 * whose program sets up no frame pointers (frame-pointer walks of those
 * stop after a frame or two). Decided from the program's code. */
/* Percentage of the file's functions that keep frame pointers; -1: unknown. */
static int fp_percent(const char *path)
{
	struct symfile *sf;
	int fd, pct;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -1;
	sf = symfile_get(fd, path);
	pct = sf ? symfile_fp_percent(sf, fd) : -1;
	close(fd);
	return pct;
}

static void set_dwarf(pid_t pid, bool dwarf, const char *why)
{
	__u32 key = pid;
	__u8 one = 1;

	if (dwarf)
		bpf_map_update_elem(dwarf_pids_fd, &key, &one, BPF_ANY);
	else
		bpf_map_delete_elem(dwarf_pids_fd, &key);
	debug("pid %d: %s: %s", pid, why, dwarf ? "DWARF unwinding" : "frame pointers");
}

/* Libraries that lack frame pointers everywhere and whose leaves the
 * leaf-caller fix covers; they alone do not make a process DWARF-unwound. */
static bool common_runtime(const char *path)
{
	static const char *const names[] = {"ld-linux",	  "libc.so",   "libm.so",
					    "libpthread", "libdl.so",  "librt.so",
					    "libgcc_s",	  "libstdc++", NULL};
	const char *base = strrchr(path, '/');
	int i;

	base = base ? base + 1 : path;
	for (i = 0; names[i]; i++)
		if (!strncmp(base, names[i], strlen(names[i])))
			return true;
	return false;
}

/* --call-graph default: frame pointers, and DWARF unwinding for a process
 * whose program, or a library of its own, sets up no frame pointers
 * (frame-pointer walks of those stop after a frame or two). Decided from the
 * code, when the process is first seen, after exec, and as libraries appear. */
static void decide_unwinding(struct proc *p)
{
	char path[PATH_MAX + 64], why[PATH_MAX + 96];
	size_t i;
	int pct;

	if (env.call_graph != CG_AUTO || dwarf_pids_fd < 0 || p->pid <= 0 || p->dwarf)
		return;
	for (i = 0; i < p->maps.n; i++) {
		struct mapping *m = p->maps.v[i];

		if (m->fp_checked || !m->exec || m->path[0] != '/' || common_runtime(m->path))
			continue;
		m->fp_checked = true;
		snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", p->pid,
			 (unsigned long long)m->start, (unsigned long long)m->end);
		pct = fp_percent(path);
		if (pct >= 0 && pct < 30) {
			p->dwarf = true;
			snprintf(why, sizeof(why), "%s: %d%% of functions keep frame pointers",
				 m->path, pct);
			set_dwarf(p->pid, true, why);
			return;
		}
	}
}

static void decide_after_exec(struct proc *p)
{
	if (env.call_graph != CG_AUTO || dwarf_pids_fd < 0)
		return;
	size_t i;

	for (i = 0; i < p->maps.n; i++)
		p->maps.v[i]->fp_checked = false;
	p->dwarf = false;
	decide_unwinding(p);
	if (!p->dwarf)
		set_dwarf(p->pid, false, "exec: its program keeps frame pointers");
}

static void read_stats(struct sample_bpf *skel, uint64_t out[STAT_NR])
{
	int ncpu = libbpf_num_possible_cpus(), fd = bpf_map__fd(skel->maps.stats);
	uint64_t *vals = calloc(ncpu > 0 ? ncpu : 1, sizeof(*vals));
	__u32 i;
	int c;

	memset(out, 0, STAT_NR * sizeof(*out));
	if (!vals)
		return;
	for (i = 0; i < STAT_NR; i++)
		if (!bpf_map_lookup_elem(fd, &i, vals))
			for (c = 0; c < ncpu; c++)
				out[i] += vals[c];
	free(vals);
}

static void read_lost_by_pid(struct sample_bpf *skel)
{
	int fd = bpf_map__fd(skel->maps.lost_by_pid);
	__u32 key, next, *prev = NULL;
	__u64 v;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		if (!bpf_map_lookup_elem(fd, &key, &v)) {
			struct proc *p = proc_get(key, NULL);

			if (p)
				p->lost = v;
		}
	}
}

static void status_line(uint64_t start_ns, const uint64_t *st, bool final)
{
	double secs = (now_ns(CLOCK_MONOTONIC) - start_ns) / 1e9;

	fprintf(stderr, "\r\033[K[%6.1fs] %llu samples, %llu lost, %.0f samples/s%s", secs,
		(unsigned long long)drained_samples, (unsigned long long)st[STAT_LOST],
		secs > 0 ? drained_samples / secs : 0.0, final ? "\n" : "");
}

/* The second object (uprobes, migrations) shares the sampler's maps. */
static struct trace_bpf *open_tracer(struct sample_bpf *sk)
{
	struct trace_bpf *t = trace_bpf__open();
	int err;

	if (!t) {
		err("open BPF tracer: %s", strerror(errno));
		return NULL;
	}
	t->rodata->trace_args = env.trace_args;
	t->rodata->wakeup_bytes = sk->rodata->wakeup_bytes;
	trace_prepare(t, env.ntraces > 0);
	err = bpf_map__reuse_fd(t->maps.events, bpf_map__fd(sk->maps.events));
	if (!err)
		err = bpf_map__reuse_fd(t->maps.targets, bpf_map__fd(sk->maps.targets));
	if (!err)
		err = bpf_map__reuse_fd(t->maps.stats, bpf_map__fd(sk->maps.stats));
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

int record_run(void)
{
	struct sample_bpf *skel = NULL;
	struct trace_bpf *tracer = NULL;
	struct trace_links tlinks = {0};
	struct ring_buffer *rb = NULL;
	struct bpf_link **links = NULL;
	struct run_info ri = {0};
	struct outdir out = {.fd = -1};
	struct sigaction sa = {0};
	uint64_t st[STAT_NR] = {0}, start, last_status = 0;
	bool tty = isatty(STDERR_FILENO) && !env.quiet;
	bool capture_started = false;
	int nlinks = 0, err, i, exit_code = 1;
	unsigned nsnapshots = 0;
	const char *event = "cpu-clock";

	libbpf_set_print(libbpf_print);
	if (check_privileges() || check_freq())
		return 1;
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		err("no BTF: /sys/kernel/btf/vmlinux: %s (the kernel needs "
		    "CONFIG_DEBUG_INFO_BTF)",
		    strerror(errno));
		return 1;
	}
	if (env.npids && target_check_pids(env.pids, env.npids))
		return 1;
	/* Before anything is recorded: a directory that cannot take the
	 * files would cost the whole capture at the end. */
	if (outdir_open(&out, env.outdir))
		return 1;
	/* Now, so that an exit during the set-up still stops the recording. */
	target_watch_pids(&target, env.pids, env.npids);
	if (!env.no_kernel && (err = kallsyms_load()))
		warn("/proc/kallsyms: %s; kernel frames stay unnamed", strerror(-err));

	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);

	if (env.cmd && (err = target_spawn(&target, env.cmd))) {
		err("start %s: %s", env.cmd[0], strerror(-err));
		return 1;
	}

	skel = sample_bpf__open();
	if (!skel) {
		err("open BPF object: %s", strerror(errno));
		goto cleanup;
	}
	skel->rodata->filter_pids = !env.all;
	skel->rodata->follow_forks = !env.no_inherit;
	skel->rodata->include_idle = env.idle;
	skel->rodata->kernel_stacks = !env.no_kernel;
	skel->rodata->user_stacks = !env.no_user;
	if (!env.ringbuf_mb)
		env.ringbuf_mb = ringbuf_size_mb();
	skel->rodata->wakeup_bytes = (uint64_t)env.ringbuf_mb << 18; /* a quarter full */
	skel->rodata->stack_copy_fp = env.no_user ? 0 : FP_LEAF_COPY;
	skel->rodata->stack_copy_dwarf =
	    env.call_graph == CG_FP || env.no_user ? 0 : env.stack_copy;
	skel->rodata->dwarf_all = env.call_graph == CG_DWARF;
	/* Under uretprobes a stack holds trampoline addresses that only the
	 * kernel's walk replaces with the real return addresses. */
	skel->rodata->bpf_fp_walk = env.ntraces == 0;
	err = bpf_map__set_max_entries(skel->maps.scratch_map, libbpf_num_possible_cpus());
	if (!err)
		err = bpf_map__set_max_entries(skel->maps.events, env.ringbuf_mb << 20);
	if (err) {
		err("ring buffer of %u MiB: %s", env.ringbuf_mb, strerror(-err));
		goto cleanup;
	}
	err = sample_bpf__load(skel);
	if (err) {
		err("load BPF programs: %s", strerror(-err));
		goto cleanup;
	}
	if (env.npids && add_targets(skel, env.pids, env.npids))
		goto cleanup;
	dwarf_pids_fd = bpf_map__fd(skel->maps.dwarf_pids);
	proc_maps_hook = decide_unwinding;
	proc_exec_hook = decide_after_exec;
	leaf_need_fd = bpf_map__fd(skel->maps.leaf_need);
	proc_leaf_hint_hook = send_leaf_hint;
	if (target.child > 0 && add_targets(skel, &target.child, 1))
		goto cleanup;
	/* Maps of the targets as they are now, before any sample. */
	for (i = 0; i < env.npids; i++)
		proc_get(env.pids[i], NULL);

	rb = ring_buffer__new(bpf_map__fd(skel->maps.events), handle_event, NULL, NULL);
	if (!rb) {
		err("ring buffer: %s", strerror(errno));
		goto cleanup;
	}
	err = sample_bpf__attach(skel); /* the fork/exec/exit tracepoints */
	if (err) {
		err("attach tracepoints: %s", strerror(-err));
		goto cleanup;
	}
	if (!env.all || env.per_process) {
		tracer = open_tracer(skel);
		if (!tracer)
			goto cleanup;
	}
	if (env.ntraces) {
		char *exe = target.child > 0 ? find_in_path(env.cmd[0]) : NULL;

		if (target.child > 0 && !exe) {
			err("%s: command not found", env.cmd[0]);
			goto cleanup;
		}
		err = trace_attach(tracer, env.traces, env.ntraces, env.pids, env.npids, exe,
				   &tlinks);
		free(exe);
		if (err)
			goto cleanup;
		if (!env.quiet)
			info("tracing %d functions (%s)", tlinks.nfuncs,
			     tlinks.multi == 1 ? "uprobe_multi" : "one uprobe each");
	}
	if (attach_sampler(skel, &links, &nlinks, &event))
		goto cleanup;

	start = now_ns(CLOCK_MONOTONIC);
	ri.start_realtime_ns = now_ns(CLOCK_REALTIME);
	ri.freq = env.freq;
	ri.ringbuf_mb = env.ringbuf_mb;
	ri.event = event;
	ri.system_wide = env.all;
	ri.per_process = !env.all || env.per_process;
	ri.outdir = env.outdir;
	ri.out = &out;
	ri.argc = env.argc;
	ri.argv = env.argv;
	xray_configure(&(struct xray_cfg){
	    .version = env.xray_version,
	    .buffer_size = env.fdr_buffer_size,
	    .flight_recorder = env.flight_recorder,
	    .start_realtime_ns = ri.start_realtime_ns,
	    .period_ns = 1000000000ULL / env.freq,
	});
	jit_start(env.jitdump);
	capture_started = true;
	if (target.child > 0) {
		char *exe = find_in_path(env.cmd[0]);
		int pct = exe && env.call_graph == CG_AUTO ? fp_percent(exe) : -1;

		/* Decided before exec, so that its first samples unwind too. */
		if (pct >= 0 && pct < 30)
			set_dwarf(target.child, true, exe);
		free(exe);
		/* An exec that fails even so (a script's missing interpreter):
		 * nothing was recorded, so nothing is written; a shell's status. */
		if ((err = target_release(&target, env.cmd[0]))) {
			capture_started = false;
			exit_code = err == -ENOENT ? 127 : 126;
			goto cleanup;
		}
	}
	if (!env.quiet)
		info("recording %s at %d Hz (%s)%s", env.all ? "all CPUs" : "targets", env.freq,
		     event, tty ? "; Ctrl-C to stop" : "");

	while (!exiting) {
		/* Records are submitted without wakeup, except when the buffer
		 * fills past a quarter: drain on this short timer. */
		err = ring_buffer__poll(rb, 50);
		if (err >= 0)
			err = ring_buffer__consume(rb);
		if (err < 0 && err != -EINTR) {
			err("draining the ring buffer: %s", strerror(-err));
			break;
		}
		if (env.duration > 0 && now_ns(CLOCK_MONOTONIC) - start >= env.duration * 1e9)
			break;
		if ((target.child > 0 || target.npidfds) && target_done(&target))
			break;
		if (snapshot_req) {
			snapshot_req = 0;
			if (output_snapshot(&ri, ++nsnapshots) == 0)
				info("snapshot %u of the XRay traces written", nsnapshots);
		}
		if (tty && now_ns(CLOCK_MONOTONIC) - last_status > 250000000ULL) {
			last_status = now_ns(CLOCK_MONOTONIC);
			read_stats(skel, st);
			status_line(start, st, false);
		}
	}
	ri.duration_ns = now_ns(CLOCK_MONOTONIC) - start;

cleanup:
	/* Stop sampling, then take what is still in the ring buffer. */
	detach_sampler(links, nlinks);
	free(links);
	trace_detach(&tlinks);
	trace_bpf__destroy(tracer);
	tracer = NULL;
	if (rb) {
		ring_buffer__consume(rb);
		ring_buffer__free(rb);
	}
	if (skel && capture_started) {
		read_stats(skel, st);
		read_lost_by_pid(skel);
		if (tty)
			status_line(start, st, true);
		ri.samples = drained_samples;
		ri.sample_bytes = drained_sample_bytes;
		ri.lost = st[STAT_LOST];
		ri.lost_tasks = st[STAT_LOST_TASK];
		ri.kstack_err = st[STAT_KSTACK_ERR];
		ri.ustack_err = st[STAT_USTACK_ERR];
		ri.kernel_walks = st[STAT_KERNEL_WALKS];
		ri.traced_calls = st[STAT_CALLS];
		ri.lost_calls = st[STAT_LOST_CALLS];
		if (st[STAT_LOST_CALLS])
			warn("%llu traced calls lost: the ring buffer was full (raise "
			     "--ringbuf-size)",
			     (unsigned long long)st[STAT_LOST_CALLS]);
		if (st[STAT_LOST])
			warn("%llu samples lost: the ring buffer was full (raise --ringbuf-size)",
			     (unsigned long long)st[STAT_LOST]);
		jit_load_all();
		exit_code = output_write(&ri) ? 1 : 0;
	}
	sample_bpf__destroy(skel);
	if (target.child > 0) {
		if (!capture_started)
			kill(target.child, SIGKILL);
		i = target_wait(&target);
		if (capture_started && exit_code == 0)
			exit_code = i;
	}
	target_close(&target);
	procs_free();
	xray_free();
	symfiles_free();
	kallsyms_free();
	return exit_code;
}
