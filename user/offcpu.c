#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/uio.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "sample.skel.h"
#include "user/features.h"
#include "user/offcpu.h"
#include "user/proc.h"
#include "user/symbols.h"
#include "user/util.h"

/* The stack of the command of `--` before its exec (our own fork, held):
 * its waits are not recorded. */
#define OSTACK_DROPPED (UINT32_MAX - 1)

/* A BPF stack id, as the process's stack. */
struct ostack {
	uint32_t id, stack;
	int32_t pid;
	const char *what; /* the wait's frame name, for the timelines */
};

/* A sum drained from BPF: stack is the process's stack once its record was
 * seen (resolved), else the BPF stack id. */
struct acc {
	int32_t pid;
	uint32_t tid, stack, kind;
	bool resolved, taken; /* taken: moved to sums (an exited process under -a) */
	uint64_t ns, count;
};

/* The state of --off-cpu (struct recorder holds it; run_info lends it to
 * the writers). */
struct offcpu {
	bool on, timelines, sleepers, system_wide;
	VEC(struct offcpu_sleeper) pending; /* sleepers whose stacks are still to unwind */
	size_t npending;		    /* ... the first not done */
	int sigs_fd;			    /* offcpu_sigs, once loaded; -1 before */
	uint64_t sigs;			    /* places given one */
	uint32_t copy;			    /* user stack bytes copied of a sleeper */
	uint64_t min_ns, stop_ns, flush_ns;
	/* Every wait that ended before complete_ns is drained from BPF;
	 * settled_ns: complete_ns at the last offcpu_take_exited, so an
	 * exited process's waits are all taken when it exited before. */
	uint64_t complete_ns, settled_ns;
	struct bpf_link *link;
	VEC(struct ostack) stacks;
	struct idtab stack_tab;
	VEC(struct acc) acc; /* every sum drained, merged by (thread, stack, kind) */
	struct idtab acc_tab;
	VEC(struct offcpu_sum) sums;   /* sorted by pid at the stop */
	VEC(struct offcpu_wait) waits; /* sorted by pid at the stop */
	VEC(char *) names;	       /* owned "[off-cpu] ..." strings */
	struct offcpu_totals tot;
	uint32_t sums_entries, threads_entries; /* the maps' sizes */
};

/* How often the sums are drained from BPF: each sums map holds what one
 * period adds (distinct thread, stack and kind). */
#define OFFCPU_FLUSH_NS 200000000ULL

int offcpu_new(struct offcpu **out)
{
	*out = calloc(1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	(*out)->sigs_fd = -1;
	return 0;
}

bool offcpu_on(const struct offcpu *oc)
{
	return oc && oc->on;
}

const char *offcpu_kind_name(uint32_t kind)
{
	return kind == OFFCPU_PREEMPTED ? "preempted" : "blocked";
}

/* 16384 kernel stacks of MAX_FRAMES: 16 MiB at most, as the ids' LRU. */
#define OFFCPU_KSTACKS 16384

/* The system's threads now (/proc/loadavg's 4th field, "running/total"),
 * or 0. */
static unsigned threads_now(void)
{
	char *buf = NULL, *slash;
	size_t len;
	unsigned n = 0;

	if (!read_path_all("/proc/loadavg", 0, 4096, &buf, &len)) {
		slash = strchr(buf, '/');
		if (slash)
			n = (unsigned)strtoul(slash + 1, NULL, 10);
	}
	free(buf);
	return n;
}

int offcpu_prepare(struct offcpu *oc, struct sample_bpf *skel, const struct offcpu_cfg *cfg,
		   struct degraded *d)
{
	unsigned threads;
	int err;

	bpf_program__set_autoload(skel->progs.on_switch, false);
	bpf_program__set_autoload(skel->progs.on_switch_compat, false);
	/* Attached with the sampler (offcpu_attach), not with the process
	 * tracepoints: the command of `--` is held before its exec then. */
	bpf_program__set_autoattach(skel->progs.on_switch, false);
	bpf_program__set_autoattach(skel->progs.on_switch_compat, false);
	if (!cfg->on)
		return 0;
	/* The floor (features.c) has BTF-typed tracepoints: the raw
	 * tracepoint would be no better off on a kernel without this one. */
	if (!cfg->has_tp) {
		degraded_add(d, "--off-cpu",
			     "no BTF-typed sched_switch tracepoint: off-CPU time is not recorded");
		return 0;
	}
	oc->on = true;
	oc->min_ns = cfg->min_ns;
	oc->timelines = cfg->timelines;
	oc->system_wide = cfg->system_wide;
	skel->rodata->offcpu_min_ns = cfg->min_ns;
	skel->rodata->offcpu_events = cfg->timelines;
	skel->rodata->offcpu_copy = cfg->copy;
	skel->rodata->nr_cpus = cfg->nr_cpus;
	bpf_program__set_autoload(
	    cfg->compat ? skel->progs.on_switch_compat : skel->progs.on_switch, true);
	/* Task iterators are 5.8's, bpf_get_task_stack 5.9's, but
	 * bpf_task_pt_regs (the user registers of another task) is 5.15's:
	 * the compat sampler's kernels go without. */
	oc->sleepers = !cfg->compat;
	bpf_program__set_autoload(skel->progs.offcpu_sleepers, oc->sleepers);
	if (!oc->sleepers)
		degraded_add(d, "--off-cpu sleepers",
			     "no bpf_task_pt_regs (5.15): a thread asleep since before the start "
			     "has no wait until it wakes, and none if it sleeps to the stop");
	/* The switch program walks Python frames with bpf_loop only
	 * (py_walk_frames_switch): the compat sampler's kernels lack it. */
	if (cfg->compat)
		degraded_add(d, "--off-cpu Python frames",
			     "no bpf_loop (5.17): a Python thread's waits have the "
			     "interpreter's native frames only");
	oc->copy = cfg->copy ? cfg->copy : 8192;
	/* A thread waits in one place at a time: the waits in progress and the
	 * sums by thread hold every thread there may be, four times those of
	 * now (a server forks more under load). The sums by stack hold one
	 * flush period's distinct (thread, stack, kind): a thread blocks in a
	 * few places a period, each CPU switches to some thousands of threads
	 * a second at most. */
	threads = threads_now();
	oc->threads_entries =
	    threads > 16384 ? (threads > (1u << 20) ? 1u << 22 : threads * 4) : 65536;
	oc->sums_entries = cfg->entries	      ? cfg->entries
			   : cfg->nr_cpus > 8 ? 8192 * cfg->nr_cpus
					      : 65536;
	/* Its own scratch slots after the sampler's: a sample's NMI may come
	 * in the middle of a switch's walk. */
	err = bpf_map__set_max_entries(skel->maps.scratch_map, 2 * cfg->nr_cpus);
	if (!err && cfg->kernel_stacks)
		err = bpf_map__set_max_entries(skel->maps.offcpu_kstacks, OFFCPU_KSTACKS);
	if (!err)
		err = bpf_map__set_max_entries(skel->maps.offcpu_start, oc->threads_entries);
	if (!err)
		err = bpf_map__set_max_entries(skel->maps.offcpu_tsums0, oc->threads_entries);
	if (!err)
		err = bpf_map__set_max_entries(skel->maps.offcpu_tsums1, oc->threads_entries);
	if (!err)
		err = bpf_map__set_max_entries(skel->maps.offcpu_sums0, oc->sums_entries);
	if (!err)
		err = bpf_map__set_max_entries(skel->maps.offcpu_sums1, oc->sums_entries);
	if (err) {
		err("--off-cpu maps: %s", strerror(-err));
		return err;
	}
	return 0;
}

/* One line naming each kind of loss there was, and what it cost. */
static void offcpu_warn_losses(const struct offcpu_totals *t)
{
	char buf[1024];
	size_t n = 0;

#define ADD(...)                                                                                   \
	do {                                                                                       \
		if (n < sizeof(buf))                                                               \
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, __VA_ARGS__);              \
	} while (0)
	buf[0] = 0;
	if (t->lost)
		ADD("%s%llu waits (%.3f s) lost: the sums' maps (%u entries a flush) and the "
		    "threads' (%u) were full",
		    n ? "; " : "", (unsigned long long)t->lost, t->lost_ns / 1e9, t->sums_entries,
		    t->threads_entries);
	if (t->thread_only)
		ADD("%s%llu waits (%.3f s) counted under their thread without their stack: the "
		    "sums' map (%u entries a flush, --off-cpu-entries) was full",
		    n ? "; " : "", (unsigned long long)t->thread_only, t->thread_only_ns / 1e9,
		    t->sums_entries);
	if (t->lost_stacks)
		ADD("%s%llu stacks lost (their waits counted without them): the ring buffer was "
		    "full",
		    n ? "; " : "", (unsigned long long)t->lost_stacks);
	if (t->lost_events)
		ADD("%s%llu waits missing from the XRay timelines (counted in the profile): the "
		    "ring buffer was full",
		    n ? "; " : "", (unsigned long long)t->lost_events);
	if (t->lost_starts)
		ADD("%s%llu waits not measured: the map of waits in progress (%u threads) was full",
		    n ? "; " : "", (unsigned long long)t->lost_starts, t->threads_entries);
	if (t->stale)
		ADD("%s%llu waits dropped: switches of their thread went unseen by the switch "
		    "program, so their time and stacks are not known",
		    n ? "; " : "", (unsigned long long)t->stale);
#undef ADD
	if (n)
		warn("--off-cpu: %s", buf);
	/* Not lost: counted on their stack (bpf/offcpu.bpf.c offcpu_unseen). */
	if (t->unseen)
		debug("--off-cpu: %llu waits (%.3f s) whose return to the CPU the switch program "
		      "did not see, counted at their thread's next leave or exit",
		      (unsigned long long)t->unseen, t->unseen_ns / 1e9);
}

int offcpu_attach(struct offcpu *oc, struct sample_bpf *skel)
{
	struct bpf_program *prog = bpf_program__autoload(skel->progs.on_switch)
				       ? skel->progs.on_switch
				       : skel->progs.on_switch_compat;

	if (!oc->on)
		return 0;
	oc->sigs_fd = bpf_map__fd(skel->maps.offcpu_sigs);
	oc->link = bpf_program__attach(prog);
	if (!oc->link) {
		int err = -errno;

		err("--off-cpu: attach to sched_switch: %s", strerror(-err));
		return err;
	}
	return 0;
}

/* One thread found off the CPU at the start, as an EV_OFFCPU_STACK of its
 * id: its user stack read from its memory now (it is asleep, so it is
 * what it was as it left the CPU), unwound as any off-CPU stack's. */
static int sleeper_stack(struct offcpu *oc, struct procs *procs, const struct offcpu_sleeper *r,
			 size_t nk)
{
	size_t ips = nk + (r->uregs[UREG_SP] != 0), size;
	struct ev_sample *s;
	struct iovec local, remote;
	ssize_t got = 0;
	int err;

	size = sizeof(*s) + ips * sizeof(__u64) + (r->uregs[UREG_SP] ? oc->copy : 0);
	s = calloc(1, size);
	if (!s)
		return -ENOMEM;
	s->hdr = (struct ev_hdr){.type = EV_OFFCPU_STACK, .pid = r->tgid, .tid = r->tid};
	memcpy(s->comm, r->comm, COMM_LEN);
	s->comm[COMM_LEN - 1] = 0;
	s->nkernel = (__u16)nk;
	s->flags = SAMPLE_IN_KERNEL;
	s->stack_id = r->id;
	memcpy(s->uregs, r->uregs, sizeof(s->uregs));
	memcpy(s->ips, r->ips, nk * sizeof(__u64));
	if (r->uregs[UREG_SP]) {
		s->ips[nk] = r->uregs[UREG_IP];
		s->nuser = 1;
		s->flags |= SAMPLE_DWARF;
		local = (struct iovec){s->ips + ips, oc->copy};
		remote = (struct iovec){(void *)(uintptr_t)r->uregs[UREG_SP], oc->copy};
		/* Up to the first page that cannot be read (the stack's top). */
		got = process_vm_readv((pid_t)r->tid, &local, 1, &remote, 1, 0);
		if (got < 0)
			got = 0;
		s->stack_len = (__u32)got;
	}
	err = offcpu_on_stack(oc, procs, s, sizeof(*s) + ips * sizeof(__u64) + (size_t)got);
	free(s);
	return err;
}

int offcpu_sleepers_read(struct offcpu *oc, struct sample_bpf *skel, struct procs *procs,
			 pid_t held, uint64_t since_ns)
{
	struct bpf_link *link;
	char *buf = NULL;
	size_t len = 0, cap = 0, at, hdr = offsetof(struct offcpu_sleeper, ips);
	ssize_t n;
	int fd, err = 0;

	if (!oc->on || !oc->sleepers)
		return 0;
	skel->bss->offcpu_sleep_from = since_ns;
	link = bpf_program__attach_iter(skel->progs.offcpu_sleepers, NULL);
	fd = link ? bpf_iter_create(bpf_link__fd(link)) : -1;
	if (fd < 0) {
		warn("--off-cpu: the task iterator: %s; threads asleep since before the start "
		     "have no wait until they wake",
		     strerror(errno));
		bpf_link__destroy(link);
		return 0;
	}
	for (;;) {
		if (fmt_grow((void **)&buf, &cap, len + 65536, 1)) {
			err = -ENOMEM;
			break;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n < 0)
				warn("--off-cpu: reading the task iterator: %s", strerror(errno));
			break;
		}
		len += (size_t)n;
	}
	close(fd);
	bpf_link__destroy(link);
	/* Kept, and unwound a few at a time by the drain (offcpu_sleepers_step):
	 * under -a there are hundreds, each a process's first unwinding, and
	 * the ring buffer must be drained meanwhile. */
	for (at = 0; !err && at + hdr <= len;) {
		struct offcpu_sleeper r;
		size_t nk;

		memcpy(&r, buf + at, hdr);
		nk = r.nkernel < MAX_FRAMES ? r.nkernel : MAX_FRAMES;
		if (at + hdr + nk * sizeof(__u64) > len)
			break;
		r.nkernel = (__u32)nk;
		memcpy(r.ips, buf + at + hdr, nk * sizeof(__u64));
		at += hdr + nk * sizeof(__u64);
		/* Under -a, kernel stacks only: unwinding the user stacks of
		 * every sleeping thread of the system at the start (a libdwfl
		 * unwinder for each of hundreds of processes) made processes
		 * started later lose their samples and waits (test_offcpu's
		 * offcpu_all_exited), a cause not found yet. */
		if (oc->system_wide)
			r.uregs[UREG_IP] = r.uregs[UREG_SP] = r.uregs[UREG_BP] = 0;
		if (held > 0 && r.tgid == (__u32)held)
			err = offcpu_drop_stack(oc, r.id);
		else
			err = VEC_PUSH(oc->pending, r);
	}
	free(buf);
	(void)procs;
	return err;
}

int offcpu_sleepers_step(struct offcpu *oc, struct procs *procs, uint64_t until_ns)
{
	int err = 0;

	while (!err && oc->npending < oc->pending.n) {
		const struct offcpu_sleeper *r = &oc->pending.v[oc->npending++];

		err = sleeper_stack(oc, procs, r, r->nkernel);
		if (now_ns(CLOCK_MONOTONIC) >= until_ns)
			break;
	}
	if (oc->npending == oc->pending.n && oc->pending.n) {
		VEC_FREE(oc->pending);
		oc->npending = 0;
	}
	return err;
}

void offcpu_detach(struct offcpu *oc, uint64_t stop_ns)
{
	if (!oc) /* rec_load failed before it was made */
		return;
	if (oc->link)
		oc->stop_ns = stop_ns;
	bpf_link__destroy(oc->link);
	oc->link = NULL;
}

static bool ostack_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct offcpu *oc = ctx;

	return oc->stacks.v[id].id == *(const uint32_t *)key;
}

static const struct ostack *ostack_find(const struct offcpu *oc, uint32_t id)
{
	uint32_t i = idtab_find(&oc->stack_tab, hash_u64(id), ostack_eq, oc, &id);

	return i == UINT32_MAX ? NULL : &oc->stacks.v[i];
}

/* The scheduler's own frames, which say nothing of what the thread waits
 * for: __schedule, schedule, schedule_timeout, schedule_hrtimeout_range,
 * io_schedule, preempt_schedule_irq, __cond_resched... */
static bool sched_frame(const char *name)
{
	static const char *const prefix[] = {"__schedule",	 "schedule",	   "io_schedule",
					     "preempt_schedule", "__cond_resched", "_cond_resched"};
	size_t i;

	for (i = 0; i < sizeof(prefix) / sizeof(prefix[0]); i++)
		if (!strncmp(name, prefix[i], strlen(prefix[i])))
			return true;
	return false;
}

/* The frame that names the wait: the first kernel frame under the
 * scheduler's (do_nanosleep, pipe_read, futex_wait_queue...). */
static const char *wait_name(struct offcpu *oc, const struct ev_sample *s, uint32_t kind)
{
	char buf[160], *d;
	const char *name = NULL, *mod;
	uint32_t i;

	if (kind == OFFCPU_PREEMPTED)
		return "[off-cpu] preempted";
	for (i = 0; i < s->nkernel; i++) {
		const char *n = kallsyms_lookup(s->ips[i], &mod);

		if (n && !sched_frame(n)) {
			name = n;
			break;
		}
	}
	if (!name)
		return "[off-cpu]";
	snprintf(buf, sizeof(buf), "[off-cpu] %s", name);
	d = xstrdup(buf);
	if (VEC_PUSH(oc->names, d)) {
		free(d);
		return "[off-cpu]";
	}
	return d;
}

/* The place's return addresses in the stack unwound from its first wait
 * there (struct offcpu_sig): each caller frame's return address looked for
 * in the copy, going up from the last one found, within OFFCPU_SIGWIN
 * bytes of sp. The sig then hashes the frames' own words, which stay the
 * same while the thread waits there again through the same calls. Only
 * for a stack sent with its words (a copy for DWARF, or the CFI walk's
 * first window): a place keeps the heuristic key otherwise. */
static void install_sig(struct offcpu *oc, const struct proc *p, const struct ev_sample *s,
			uint32_t stack)
{
	struct offcpu_sig_key k = {.tgid = s->hdr.pid,
				   .ip = s->uregs[UREG_IP],
				   .sp = s->uregs[UREG_SP],
				   .bp = s->uregs[UREG_BP]};
	struct offcpu_sig sig = {0};
	const unsigned char *bytes = (const unsigned char *)&s->ips[ev_sample_ips(s)];
	size_t words = (s->stack_len < OFFCPU_SIGWIN ? s->stack_len : OFFCPU_SIGWIN) / 8, at = 0;
	const uint32_t *ids;
	uint32_t nk, nu, i;

	/* The copy or the CFI walk's window, from the place's sp: not a copy
	 * from a frame further up (SAMPLE_DWARF_AT, whose uregs are that
	 * frame's). */
	if (oc->sigs_fd < 0 || (s->flags & SAMPLE_DWARF_AT) || !s->stack_len || !k.sp)
		return;
	ids = proc_stack(p, stack, &nk, &nu);
	if (!ids)
		return;
	/* ids: the kernel frames, then the user frames leaf first; a caller
	 * frame's pc is its return address - 1. A name source's frames (a
	 * Python function's) have none. */
	for (i = 1; i < nu && sig.n < OFFCPU_SIG_MAX; i++) {
		uint64_t ra = p->frames.v[ids[nk + i]].pc + 1, w;

		if (ra > SOURCE_PC_BASE)
			continue;

		for (; at < words; at++) {
			memcpy(&w, bytes + at * 8, 8);
			if (w == ra)
				break;
		}
		if (at >= words)
			break;
		sig.off[sig.n++] = (uint16_t)at++;
	}
	if (!sig.n)
		return;
	sig.len = (uint32_t)(sig.off[sig.n - 1] + 1) * 8;
	/* The first stack's: a place's sig does not change. */
	bpf_map_update_elem(oc->sigs_fd, &k, &sig, BPF_NOEXIST);
	oc->sigs++;
}

int offcpu_on_stack(struct offcpu *oc, struct procs *procs, const struct ev_sample *s, size_t size)
{
	size_t ips = ev_sample_ips(s), skip = 0, i, len;
	struct ev_sample *c;
	struct ostack o = {.id = s->stack_id, .pid = (int32_t)s->hdr.pid};
	struct thread *t;
	struct proc *p;
	int err;

	if (size < sizeof(*s) + ips * sizeof(__u64) + s->stack_len || !s->stack_id ||
	    ostack_find(oc, s->stack_id))
		return 0;
	/* The kernel stack starts in the tracepoint's BPF trampoline, then
	 * the scheduler's frames: it is cut to start at the frame that waits
	 * (do_nanosleep, pipe_read, futex_wait_queue, ep_poll...), which
	 * pprof's flat column then names, as offcputime's stacks read. */
	for (i = 0; i < s->nkernel; i++) {
		const char *mod, *n = kallsyms_lookup(s->ips[i], &mod);

		if (n && !strcmp(n, "__schedule")) {
			while (i + 1 < s->nkernel && (n = kallsyms_lookup(s->ips[i], &mod)) &&
			       sched_frame(n))
				i++;
			skip = i;
			break;
		}
	}
	len = size - skip * sizeof(__u64);
	c = malloc(len);
	if (!c)
		return -ENOMEM;
	memcpy(c, s, sizeof(*s));
	memcpy(c->ips, s->ips + skip, len - sizeof(*s));
	c->nkernel -= skip;
	err = proc_intern_record(procs, c, &p, &o.stack);
	o.what = wait_name(oc, c, OFFCPU_BLOCKED);
	if (!err)
		install_sig(oc, p, c, o.stack);
	free(c);
	if (err)
		return err;
	t = proc_thread(p, s->hdr.tid);
	if (!t)
		return -ENOMEM;
	proc_set_comm(t->comm, s->comm, COMM_LEN);
	if (VEC_PUSH(oc->stacks, o) ||
	    idtab_insert(&oc->stack_tab, hash_u64(o.id), (uint32_t)oc->stacks.n - 1))
		return -ENOMEM;
	return 0;
}

int offcpu_drop_stack(struct offcpu *oc, uint32_t id)
{
	struct ostack o = {.id = id, .stack = OSTACK_DROPPED, .pid = -1};

	if (!id || ostack_find(oc, id))
		return 0;
	if (VEC_PUSH(oc->stacks, o) ||
	    idtab_insert(&oc->stack_tab, hash_u64(o.id), (uint32_t)oc->stacks.n - 1))
		return -ENOMEM;
	return 0;
}

int offcpu_on_wait(struct offcpu *oc, const struct ev_offcpu *e)
{
	const struct ostack *o = ostack_find(oc, e->stack);
	struct offcpu_wait w = {
	    .pid = (int32_t)e->hdr.pid,
	    .tid = e->hdr.tid,
	    .cpu = e->hdr.cpu,
	    .stack = o && o->pid == (int32_t)e->hdr.pid ? o->stack : UINT32_MAX,
	    .kind = e->kind,
	    .start_ns = e->start_ns,
	    .end_ns = e->hdr.time_ns,
	};

	if (o && o->stack == OSTACK_DROPPED)
		return 0;
	w.what = e->kind == OFFCPU_PREEMPTED ? "[off-cpu] preempted" : o ? o->what : "[off-cpu]";
	return VEC_PUSH(oc->waits, w);
}

static int cmp_sum(const void *a, const void *b)
{
	const struct offcpu_sum *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static int cmp_wait(const void *a, const void *b)
{
	const struct offcpu_wait *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

/* The waits still open at the stop (their thread is still off CPU): up to
 * the stop, as sums and, with timelines, as waits. 0 or -ENOMEM. */
static int collect_open(struct offcpu *oc, struct sample_bpf *skel)
{
	int fd = bpf_map__fd(skel->maps.offcpu_start);
	__u32 tid, next, *prev = NULL;
	struct offcpu_start st;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		const struct ostack *o;
		uint32_t stack;

		tid = next;
		prev = &tid;
		if (bpf_map_lookup_elem(fd, &tid, &st) || st.ts >= oc->stop_ns ||
		    oc->stop_ns - st.ts < oc->min_ns)
			continue;
		o = st.stack ? ostack_find(oc, st.stack) : NULL;
		if (o && o->stack == OSTACK_DROPPED)
			continue;
		stack = o && o->pid == (int32_t)st.tgid ? o->stack : UINT32_MAX;
		if (VEC_PUSH(oc->sums, ((struct offcpu_sum){(int32_t)st.tgid, tid, stack, st.kind,
							    oc->stop_ns - st.ts, 1})))
			return -ENOMEM;
		oc->tot.open++;
		if (oc->timelines &&
		    VEC_PUSH(oc->waits, ((struct offcpu_wait){(int32_t)st.tgid, tid, 0, stack,
							      st.kind, st.ts, oc->stop_ns,
							      st.kind == OFFCPU_PREEMPTED
								  ? "[off-cpu] preempted"
							      : o ? o->what
								  : "[off-cpu]"})))
			return -ENOMEM;
	}
	return 0;
}

static bool acc_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct offcpu *oc = ctx;
	const struct acc *x = &oc->acc.v[id], *y = key;

	/* A taken acc is in oc->sums already: a later sum of the same key
	 * (a wait that ended just before its process's exit, drained after
	 * its take) starts an acc of its own, for the next take. */
	return x->pid == y->pid && x->tid == y->tid && x->stack == y->stack && x->kind == y->kind &&
	       x->resolved == y->resolved && !x->taken;
}

static uint64_t acc_hash(const struct acc *a)
{
	return hash_u64(((uint64_t)(uint32_t)a->pid << 32 | a->tid) ^
			hash_u64((uint64_t)a->stack << 2 | a->kind << 1 | a->resolved));
}

/* One sum from BPF, into oc->acc: its stack made the process's where its
 * record was seen, so that the waits of one stack are one entry however
 * many BPF stack ids (keys) it had. 0 or -ENOMEM. */
static int acc_add(struct offcpu *oc, const struct offcpu_key *key, const struct offcpu_val *v)
{
	const struct ostack *o = key->stack ? ostack_find(oc, key->stack) : NULL;
	struct acc a = {.pid = (int32_t)key->tgid, .tid = key->tid, .kind = key->kind};
	uint64_t h;
	uint32_t i;

	if (o && o->stack == OSTACK_DROPPED)
		return 0;
	if (o && o->pid == a.pid) {
		a.stack = o->stack;
		a.resolved = true;
	} else {
		a.stack = key->stack; /* 0: no stack; else its record may come later */
	}
	h = acc_hash(&a);
	i = idtab_find(&oc->acc_tab, h, acc_eq, oc, &a);
	if (i == UINT32_MAX) {
		if (VEC_PUSH(oc->acc, a) || idtab_insert(&oc->acc_tab, h, (uint32_t)oc->acc.n - 1))
			return -ENOMEM;
		i = (uint32_t)oc->acc.n - 1;
	}
	oc->acc.v[i].ns += v->ns;
	oc->acc.v[i].count += v->count;
	return 0;
}

/* Reads and empties a sums map no program adds to any more. */
static int drain_map(struct offcpu *oc, struct bpf_map *map)
{
	int fd = bpf_map__fd(map), err = 0;
	struct offcpu_key key, next, *prev = NULL;
	VEC(struct offcpu_key) keys = {0};
	struct offcpu_val v;
	size_t i;

	/* Deleted after the walk: a deleted key would restart it. */
	while (!err && !bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &v))
			continue;
		err = acc_add(oc, &key, &v) || VEC_PUSH(keys, key) ? -ENOMEM : 0;
	}
	for (i = 0; i < keys.n; i++)
		bpf_map_delete_elem(fd, &keys.v[i]);
	VEC_FREE(keys);
	return err;
}

static int drain_gen(struct offcpu *oc, struct sample_bpf *skel, uint32_t gen)
{
	int err = drain_map(oc, gen ? skel->maps.offcpu_sums1 : skel->maps.offcpu_sums0);

	return err ? err : drain_map(oc, gen ? skel->maps.offcpu_tsums1 : skel->maps.offcpu_tsums0);
}

int offcpu_flush(struct offcpu *oc, struct sample_bpf *skel, uint64_t now)
{
	uint32_t gen;

	if (!oc->on || !oc->link || now - oc->flush_ns < OFFCPU_FLUSH_NS)
		return 0;
	/* The map drained now was left at the last flip: the waits that
	 * ended before it are all in. A program that read the clock just
	 * before the flip may read the generation after it: 1 ms spare. */
	oc->complete_ns = oc->flush_ns > 1000000 ? oc->flush_ns - 1000000 : 0;
	oc->flush_ns = now;
	/* The map BPF left at the last flip, one period ago, then the flip:
	 * the one it adds to now is drained at the next. */
	gen = skel->bss->offcpu_gen & 1;
	if (drain_gen(oc, skel, !gen))
		return -ENOMEM;
	skel->bss->offcpu_gen = !gen;
	return 0;
}

/* The sum of an acc, its stack resolved now if its record came since. */
static struct offcpu_sum acc_sum(const struct offcpu *oc, const struct acc *a)
{
	const struct ostack *o = !a->resolved && a->stack ? ostack_find(oc, a->stack) : NULL;
	uint32_t stack = a->resolved ? a->stack : o && o->pid == a->pid ? o->stack : UINT32_MAX;

	return (struct offcpu_sum){a->pid, a->tid, stack, a->kind, a->ns, a->count};
}

/* Sorted by process and thread, the same (thread, stack, kind) merged. */
static int cmp_sum_full(const void *a, const void *b)
{
	const struct offcpu_sum *x = a, *y = b;
	int c = cmp_sum(a, b);

	if (c)
		return c;
	if (x->stack != y->stack)
		return x->stack < y->stack ? -1 : 1;
	return x->kind < y->kind ? -1 : x->kind > y->kind;
}

static void sort_sums(struct offcpu *oc)
{
	size_t i, o = 0;

	if (oc->sums.n < 2)
		return;
	qsort(oc->sums.v, oc->sums.n, sizeof(*oc->sums.v), cmp_sum_full);
	for (i = 0; i < oc->sums.n; i++) {
		if (o && !cmp_sum_full(&oc->sums.v[o - 1], &oc->sums.v[i])) {
			oc->sums.v[o - 1].ns += oc->sums.v[i].ns;
			oc->sums.v[o - 1].count += oc->sums.v[i].count;
		} else {
			oc->sums.v[o++] = oc->sums.v[i];
		}
	}
	oc->sums.n = o;
}

/* The accs of processes that pass the test into oc->sums, sorted. */
static int take_accs(struct offcpu *oc, struct procs *procs, bool all)
{
	size_t i, n0 = oc->sums.n;

	for (i = 0; i < oc->acc.n; i++) {
		struct acc *a = &oc->acc.v[i];
		const struct proc *p;

		if (a->taken)
			continue;
		if (!all) {
			p = proc_find(procs, (pid_t)a->pid);
			if (!p || !p->exited)
				continue;
		}
		if (VEC_PUSH(oc->sums, acc_sum(oc, a)))
			return -ENOMEM;
		a->taken = true;
	}
	if (oc->sums.n > n0)
		sort_sums(oc);
	return 0;
}

int offcpu_take_exited(struct offcpu *oc, struct procs *procs, struct sample_bpf *skel)
{
	uint64_t complete = oc->complete_ns;
	int err;

	(void)skel;
	if (!oc->on)
		return 0;
	err = take_accs(oc, procs, false);
	if (!err)
		oc->settled_ns = complete;
	return err;
}

uint64_t offcpu_settled_ns(const struct offcpu *oc)
{
	return oc && oc->on ? oc->settled_ns : UINT64_MAX;
}

int offcpu_window_take(struct offcpu *oc, struct procs *procs)
{
	if (!oc || !oc->on)
		return 0;
	return take_accs(oc, procs, true);
}

void offcpu_window_end(struct offcpu *oc)
{
	size_t i, n = 0;

	if (!oc || !oc->on)
		return;
	oc->sums.n = 0;
	oc->waits.n = 0;
	/* The accs taken are out: the table indexes those left. */
	idtab_free(&oc->acc_tab);
	for (i = 0; i < oc->acc.n; i++) {
		if (oc->acc.v[i].taken)
			continue;
		oc->acc.v[n] = oc->acc.v[i];
		/* Room was there for these: only ENOMEM fails, and the acc is
		 * then only not merged with a later one. */
		idtab_insert(&oc->acc_tab, acc_hash(&oc->acc.v[n]), (uint32_t)n);
		n++;
	}
	oc->acc.n = n;
}

int offcpu_collect(struct offcpu *oc, struct procs *procs, struct sample_bpf *skel)
{
	int sfd = bpf_map__fd(skel->maps.stats), ncpu = libbpf_num_possible_cpus();
	uint64_t *vals, st[STAT_NR] = {0};
	__u32 i;
	int c;

	if (!oc->on)
		return 0;
	/* Detached: both generations are idle now. */
	if (offcpu_sleepers_step(oc, procs, UINT64_MAX) || drain_gen(oc, skel, 0) ||
	    drain_gen(oc, skel, 1) || take_accs(oc, procs, true))
		return -ENOMEM;
	if (collect_open(oc, skel))
		return -ENOMEM;
	/* (Empty arrays are NULL, which qsort must not get: -a without
	 * timelines has no waits.) */
	sort_sums(oc);
	if (oc->waits.n > 1)
		qsort(oc->waits.v, oc->waits.n, sizeof(*oc->waits.v), cmp_wait);
	vals = calloc(ncpu > 0 ? ncpu : 1, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	for (i = STAT_OFFCPU_SWITCHES; i <= STAT_OFFCPU_UNSEEN_NS; i++)
		if (!bpf_map_lookup_elem(sfd, &i, vals))
			for (c = 0; c < ncpu; c++)
				st[i] += vals[c];
	free(vals);
	oc->tot = (struct offcpu_totals){
	    .switches = st[STAT_OFFCPU_SWITCHES],
	    .waits = st[STAT_OFFCPU_WAITS],
	    .short_waits = st[STAT_OFFCPU_SHORT],
	    .short_ns = st[STAT_OFFCPU_SHORT_NS],
	    .stacks = st[STAT_OFFCPU_STACKS],
	    .lost_stacks = st[STAT_OFFCPU_LOST_STACKS],
	    .lost = st[STAT_OFFCPU_LOST],
	    .lost_ns = st[STAT_OFFCPU_LOST_NS],
	    .thread_only = st[STAT_OFFCPU_THREAD_ONLY],
	    .thread_only_ns = st[STAT_OFFCPU_THREAD_ONLY_NS],
	    .lost_events = st[STAT_OFFCPU_LOST_EVENTS],
	    .lost_starts = st[STAT_OFFCPU_LOST_STARTS],
	    .sleepers = st[STAT_OFFCPU_SLEEPERS],
	    .cfi_walked = st[STAT_OFFCPU_CFI],
	    .cfi_to_dwarf = st[STAT_OFFCPU_CFI_NOTABLE],
	    .min_ns = oc->min_ns,
	    .open = oc->tot.open,
	    .stale = st[STAT_OFFCPU_STALE],
	    .unseen = st[STAT_OFFCPU_UNSEEN],
	    .unseen_ns = st[STAT_OFFCPU_UNSEEN_NS],
	    .sums_entries = oc->sums_entries,
	    .threads_entries = oc->threads_entries,
	};
	offcpu_warn_losses(&oc->tot);
	if (oc->tot.short_waits)
		info("--off-cpu-min: %llu shorter waits left out, %.6f s in total",
		     (unsigned long long)oc->tot.short_waits, oc->tot.short_ns / 1e9);
	return 0;
}

/* The run of a pid in an array sorted by pid (each element's first field):
 * its first index, and its length in *n. */
static size_t pid_range(const void *base, size_t count, size_t size, int32_t pid, size_t *n)
{
	size_t lo = 0, hi = count, e;
	int32_t v;

	while (lo < hi) {
		size_t m = (lo + hi) / 2;

		memcpy(&v, (const char *)base + m * size, sizeof(v));
		if (v < pid)
			lo = m + 1;
		else
			hi = m;
	}
	for (e = lo; e < count; e++) {
		memcpy(&v, (const char *)base + e * size, sizeof(v));
		if (v != pid)
			break;
	}
	*n = e - lo;
	return lo;
}

/* NULL and *n 0 when nothing was recorded (no pointer arithmetic on NULL). */
const struct offcpu_sum *offcpu_sums_of(const struct offcpu *oc, const struct proc *p, size_t *n)
{
	size_t lo;

	*n = 0;
	if (!oc)
		return NULL;
	lo = pid_range(oc->sums.v, oc->sums.n, sizeof(*oc->sums.v), p->pid, n);

	return *n ? oc->sums.v + lo : NULL;
}

const struct offcpu_wait *offcpu_waits_of(const struct offcpu *oc, const struct proc *p, size_t *n)
{
	size_t lo;

	*n = 0;
	if (!oc)
		return NULL;
	lo = pid_range(oc->waits.v, oc->waits.n, sizeof(*oc->waits.v), p->pid, n);

	return *n ? oc->waits.v + lo : NULL;
}

uint64_t offcpu_proc_ns(const struct offcpu *oc, const struct proc *p)
{
	size_t n, i;
	const struct offcpu_sum *s = offcpu_sums_of(oc, p, &n);
	uint64_t ns = 0;

	for (i = 0; i < n; i++)
		ns += s[i].ns;
	return ns;
}

void offcpu_totals(const struct offcpu *oc, struct offcpu_totals *t)
{
	*t = oc->tot;
}

void offcpu_free(struct offcpu *oc)
{
	size_t i;

	if (!oc)
		return;
	offcpu_detach(oc, now_ns(CLOCK_MONOTONIC));
	for (i = 0; i < oc->names.n; i++)
		free(oc->names.v[i]);
	VEC_FREE(oc->names);
	VEC_FREE(oc->stacks);
	VEC_FREE(oc->sums);
	VEC_FREE(oc->waits);
	VEC_FREE(oc->acc);
	VEC_FREE(oc->pending);
	idtab_free(&oc->acc_tab);
	idtab_free(&oc->stack_tab);
	free(oc);
}
