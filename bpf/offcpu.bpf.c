// SPDX-License-Identifier: GPL-2.0
/* Off-CPU waits (--off-cpu): a program on the scheduler's switch. As a
 * recorded thread leaves the CPU (prev, which is still `current` there: its
 * user memory and registers are readable), the time, its kind and its
 * stack's id go into offcpu_start; as it comes back (next), the wait is
 * added to the sums (offcpu_sums0/1), and with timelines sent as an
 * EV_OFFCPU. Nothing is sent per switch otherwise.
 *
 * A stack is walked and sent (EV_OFFCPU_STACK, an ev_sample that user space
 * unwinds as a sample's) only the first time its offcpu_stack_key is seen:
 * a thread that blocks in the same place again costs a stack id and two
 * hash lookups. The user part is walked here by the CFI tables where the
 * sampler's walk is on and the kernel has bpf_loop, else copied for DWARF
 * unwinding (offcpu_copy bytes: the sampler's --call-graph dwarf path, which
 * unwinds code without frame pointers such as libc's wrappers), or walked
 * by the kernel's frame pointers (bpf_get_stack) with offcpu_copy 0:
 * offcpu_user_stack is the one place that chooses.
 *
 * A unit of the sampler (the Makefile's sample.linked.o), after
 * sample.bpf.c, which defines the maps and rodata shared with it
 * (bpf/sampler.bpf.h, bpf/cfi_walk.bpf.h); its own are defined here. */
#define BPF_SHARED_EXTERN  /* sample.bpf.c defines them */
#define BPF_NO_RDONLY_CAST /* bpf/uprobe_regs.bpf.h says why */
#include "bpf/sampler.bpf.h"
#include "bpf/cfi_walk.bpf.h"

const volatile __u64 offcpu_min_ns = 0;	   /* --off-cpu-min */
const volatile bool offcpu_events = false; /* EV_OFFCPU per wait (XRay timelines) */
const volatile __u32 offcpu_copy = 0;	   /* user stack bytes copied for DWARF */
const volatile __u32 nr_cpus = 1;	   /* the off-CPU scratch slots follow the sampler's */

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 1); /* resized by the loader with --off-cpu */
	__uint(key_size, sizeof(__u32));
	__uint(value_size, MAX_FRAMES * sizeof(__u64));
} offcpu_kstacks SEC(".maps");

/* A place's stack id. A stack whose walk met a mapping without its table
 * (the first waits of a process, before its libraries' tables load) is
 * walked again at a later wait there once the tables have changed (cfi_gen's
 * user-space entry): else every wait of the place would keep the stack cut
 * where the DWARF copy ended, for the whole recording. */
struct offcpu_stack_ref {
	__u32 id;
	__u32 notable; /* its walk met a mapping without a table */
	__u64 gen;     /* cfi_gen's user-space entry then */
};
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct offcpu_stack_key);
	__type(value, struct offcpu_stack_ref);
} offcpu_stack_ids SEC(".maps");

/* Filled by user space (offcpu_on_stack): see struct offcpu_sig. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct offcpu_sig_key);
	__type(value, struct offcpu_sig);
} offcpu_sigs SEC(".maps");

/* Sized by the loader (offcpu_prepare): the threads that may wait at once. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32); /* tid */
	__type(value, struct offcpu_start);
} offcpu_start SEC(".maps");

/* The sums, double-buffered: waits end into offcpu_sums<offcpu_gen & 1>;
 * user space flips offcpu_gen and empties the other map a drain pass later
 * (a switch's program has long returned by then), so the maps only hold
 * what one pass adds, and nothing is read while BPF adds to it. Sized by
 * the loader. */
struct offcpu_sums_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct offcpu_key);
	__type(value, struct offcpu_val);
};
struct offcpu_sums_map offcpu_sums0 SEC(".maps");
struct offcpu_sums_map offcpu_sums1 SEC(".maps");
/* Where a sums map is full: the wait under its thread and kind only
 * (offcpu_key with stack 0), one entry per thread, so that its time is
 * still counted (STAT_OFFCPU_THREAD_ONLY). Double-buffered the same way. */
struct offcpu_sums_map offcpu_tsums0 SEC(".maps");
struct offcpu_sums_map offcpu_tsums1 SEC(".maps");

volatile __u32 offcpu_gen = 0; /* written by user space (offcpu_flush) */

/* Stack ids: a per-CPU counter times the CPU count plus the CPU (5.10 has
 * no fetching atomic add for a global one). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} offcpu_next_id SEC(".maps");

static __always_inline void count_add(__u32 idx, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &idx);

	if (v)
		*v += n;
}

/* The task's state as it leaves the CPU: 0 (TASK_RUNNING) when preempted.
 * `state` became `__state` in 5.14. */
struct task_struct___o {
	volatile long state;
} __attribute__((preserve_access_index));

#define OFFCPU_TASK_DEAD 0x80 /* TASK_DEAD, the same since 4.14 */

static __always_inline long task_state(struct task_struct *t)
{
	if (bpf_core_field_exists(t->__state))
		return BPF_CORE_READ(t, __state);
	return BPF_CORE_READ((struct task_struct___o *)t, state);
}

static __always_inline bool offcpu_recorded(__u32 tgid, __u32 tid)
{
	if (filter_pids)
		return is_target(tgid);
	return tid != 0 && !(tgid == self_tgid && tgid);
}

/* A 64-bit task (__USER_CS), as the sampler's CFI walk asks: a compat
 * task's stack is left to the copy or the kernel's walk. */
static __always_inline bool offcpu_user64(struct task_struct *t, const bool compat)
{
	struct pt_regs *ur = user_regs(t, compat);
	__u64 cs = 0;

	bpf_core_read(&cs, bpf_core_field_size(ur->cs), &ur->cs);
	return (cs & 0xffff) == 0x33;
}

/* The user part of a new stack, into the record after its nk kernel ips;
 * returns the number of user ips.
 *
 * Where the CFI walk is on and the kernel has bpf_loop (not the compat
 * program's kernels), the stack is walked here by its tables, a frame per
 * bpf_loop callback (this tp_btf program cannot tail-call the perf_event
 * walkers), up to --max-stack frames: user space then unwinds nothing, and
 * needs no libdwfl unwinder for the process (docs/benchmarks.md: what that
 * saves under a server).
 * Where the walk meets a mapping without a table, it keeps the frames
 * walked and copies the stack for DWARF from that frame on
 * (SAMPLE_DWARF_AT), as the sampler does. Else the copy or the kernel's
 * frame-pointer walk, as before. */
static __always_inline __u64 offcpu_user_stack(void *ctx, struct task_struct *prev,
					       struct scratch *sc, __u64 nk, const bool compat)
{
	struct ev_sample *s = (struct ev_sample *)sc->head;
	__u64 sp = s->uregs[UREG_SP];
	__u32 copied;
	long n;

	if (nk >= MAX_FRAMES)
		return 0;
	if (cfi_walk && !compat && offcpu_user64(prev, compat)) {
		/* The walk's first window, also sent (without SAMPLE_DWARF):
		 * user space finds the place's return addresses in it
		 * (user/offcpu.c install_sig). cfi_end replaces it with the
		 * DWARF copy where a table was missing. */
		copied = copy_stack(sc, sp, OFFCPU_SIGWIN, compat);
		cfi_begin(sc, s->hdr.pid, nk, copied);
		sc->cfi.jvm_slot = JVM_SLOT_SWITCH;
		sc->cfi.r13 = 0; /* a switch's leaf is never in Java code */
		s->stack_len = copied;
		count(STAT_OFFCPU_CFI);
		cfi_end(sc, cfi_walk_loop(sc), false, compat);
		if (s->flags & SAMPLE_CFI_NOTABLE)
			count(STAT_OFFCPU_CFI_NOTABLE);
		return sc->cfi.n;
	}
	if (offcpu_copy) {
		s->ips[nk] = s->uregs[UREG_IP];
		s->stack_len = copy_stack(sc, sp, offcpu_copy, compat);
		if (sc->cfi.tramp) { /* uretprobes' return addresses, back */
			uprobe_patch_copy(sc, sp, s->stack_len, sc->cfi.ri0, compat);
			uprobe_patch_entry(sc, sp, s->stack_len, sc->cfi.tramp);
		}
		s->flags |= SAMPLE_DWARF;
		return 1;
	}
	n = bpf_get_stack(ctx, &s->ips[nk], MAX_FRAMES * sizeof(__u64), BPF_F_USER_STACK);
	if (n < 0)
		return 0;
	return (__u64)n / sizeof(__u64);
}

/* Walks and sends the stack of prev (current) as stack id, with the npy
 * Python frames offcpu_out's walk left in py_scratch; 0 or -1 when the
 * ring buffer could not take it. *notable: the walk met a mapping without a
 * table. */
static __always_inline int offcpu_send_stack(void *ctx, struct task_struct *prev, __u32 id,
					     const struct offcpu_stack_key *k, bool *notable,
					     int npy, const bool compat)
{
	__u32 slot = nr_cpus + bpf_get_smp_processor_id();
	struct scratch *sc = bpf_map_lookup_elem(&scratch_map, &slot);
	struct ev_sample *s;
	__u64 nk = 0, nu = 0, ips_len;
	long n;
	int err;

	if (!sc)
		return -1;
	exit_name(k->tgid);
	s = (struct ev_sample *)sc->head;
	fill_hdr(&s->hdr, EV_OFFCPU_STACK, k->tgid, prev->pid);
	bpf_get_current_comm(s->comm, sizeof(s->comm));
	s->flags = SAMPLE_IN_KERNEL;
	s->stack_len = 0;
	s->stack_id = id;
	s->npython = 0;
	s->njvm = 0;
	s->nv8 = 0;
	sc->cfi.jvm = 0;
	sc->cfi.v8 = 0;
	sc->wake = 0;
	s->uregs[UREG_IP] = k->ip;
	s->uregs[UREG_SP] = k->sp;
	s->uregs[UREG_BP] = k->bp;
	{
		struct uprobe_view v;

		uprobe_view(prev, &v, compat);
		sc->cfi.tramp = v.tramp;
		sc->cfi.ri0 = v.ri;
	}
	if (kernel_stacks) {
		n = bpf_get_stack(ctx, s->ips, MAX_FRAMES * sizeof(__u64), 0);
		if (n >= 0)
			nk = (__u64)n / sizeof(__u64);
	}
	if (nk > MAX_FRAMES)
		nk = MAX_FRAMES;
	s->nkernel = nk;
	if (user_stacks && k->sp)
		nu = offcpu_user_stack(ctx, prev, sc, nk, compat);
	*notable = s->flags & SAMPLE_CFI_NOTABLE;
	if (nu > MAX_USER_STACK)
		nu = MAX_USER_STACK;
	s->nuser = nu;
	ips_len = (nk + nu) * sizeof(__u64);
	if (ips_len > IPS_MAX)
		return -1;
	if (npy > 0)
		ips_len = py_append(s, ips_len, npy, PY_SLOT_SWITCH, compat);
	ips_len = jvm_append(sc, s, ips_len, compat);
	ips_len = v8_append(sc, s, ips_len, compat);
	err = compat ? emit_compat(sc, ips_len, s->stack_len & 0xffff)
		     : emit(sc, ips_len, s->stack_len & 0xffff);
	return err ? -1 : 0;
}

static __always_inline __u64 offcpu_mix(__u64 h, __u64 v)
{
	h = (h ^ v) * 0x9e3779b97f4a7c15ULL;
	return h ^ (h >> 31);
}

/* a < b, unsigned, as 0 or 1 computed without a branch: the borrow of
 * a - b (clang keeps it arithmetic: a compare would be a branch in BPF). */
static __always_inline __u64 offcpu_lt(__u64 a, __u64 b)
{
	__u64 d = a - b;

	return ((~a & b) | (~(a ^ b) & d)) >> 63;
}

/* The task's context switches: as the switch's tracepoint runs, prev's
 * already counts this one. */
static __always_inline __u64 task_switches(struct task_struct *t)
{
	return BPF_CORE_READ(t, nvcsw) + BPF_CORE_READ(t, nivcsw);
}

/* uhash of a user task's key (events.h), ~0.9 us. Reads use the slot's
 * stack area, free until offcpu_send_stack. */
static __always_inline void offcpu_user_hash(struct scratch *sc, struct offcpu_stack_key *k)
{
	__u64 *w = (__u64 *)sc->stack, h = 0, v, fp, next;
	int i;

	if (!user_stacks || !k->sp)
		return;
	/* Words that could be user code addresses: not small numbers, not
	 * stack addresses near sp, canonical user addresses. A local that
	 * changes from call to call only costs a walk more. */
	if (!bpf_probe_read_user(w, OFFCPU_UWIN, (void *)k->sp))
		for (i = 0; i < OFFCPU_UWIN / 8; i++) {
			__u64 keep, m;

			v = w[i];
			/* Without a branch (offcpu_lt): the verifier followed
			 * each word's 4 tests' paths (on_switch's load: 24k of
			 * its 100k insns processed on 6.18). */
			keep =
			    offcpu_lt(v - 0x400000, 0x800000000000ULL - 0x400000) &
			    (offcpu_lt(v, k->sp - 65536) | (1 - offcpu_lt(v, k->sp + (8 << 20))));
			m = -keep;
			h = (offcpu_mix(h, v) & m) | (h & ~m);
		}
	/* Frame records from bp while they go up the stack: the callers of
	 * code with frame pointers beyond the window. */
	fp = k->bp;
	for (i = 0; i < OFFCPU_FP; i++) {
		if (fp < k->sp || fp >= k->sp + (8 << 20) || (fp & 7) ||
		    bpf_probe_read_user(w, 16, (void *)fp))
			break;
		next = w[0];
		h = offcpu_mix(h, w[1]);
		if (next <= fp)
			break;
		fp = next;
	}
	k->uhash = h;
}

/* The hash of a place's return addresses, where user space found them
 * (struct offcpu_sig): true when it has them. */
static __always_inline bool offcpu_sig_hash(struct scratch *sc, struct offcpu_stack_key *k)
{
	struct offcpu_sig_key sk = {.tgid = k->tgid, .ip = k->ip, .sp = k->sp, .bp = k->bp};
	struct offcpu_sig *sig;
	__u64 *w = (__u64 *)sc->stack, h = 0x51a7;
	__u32 len, i, o;

	if (!user_stacks || !k->sp)
		return false;
	sig = bpf_map_lookup_elem(&offcpu_sigs, &sk);
	if (!sig)
		return false;
	len = sig->len;
	if (len > OFFCPU_SIGWIN)
		len = OFFCPU_SIGWIN;
	if (len < 8)
		len = 8;
	/* What the first stack there had: readable as long as sp is. */
	if (bpf_probe_read_user(w, len, (void *)k->sp))
		return false;
	for (i = 0; i < OFFCPU_SIG_MAX; i++) {
		if (i >= sig->n)
			break;
		o = sig->off[i] & (OFFCPU_SIGWIN / 8 - 1);
		h = offcpu_mix(h, w[o]);
	}
	k->uhash = h;
	k->pad = 1;
	return true;
}

/* Adds a wait to a sums map; -1 when it is full. */
static __always_inline int sum_add(void *map, struct offcpu_key *k, __u64 delta)
{
	struct offcpu_val *v = bpf_map_lookup_elem(map, k), one;

	if (!v) {
		one.ns = delta;
		one.count = 1;
		if (!bpf_map_update_elem(map, k, &one, BPF_NOEXIST))
			return 0;
		/* Another CPU may have added the key since: then add to it. */
		v = bpf_map_lookup_elem(map, k);
		if (!v)
			return -1;
	}
	__sync_fetch_and_add(&v->ns, delta);
	__sync_fetch_and_add(&v->count, 1);
	return 0;
}

/* A wait of thread tid that ended at now after delta, st its start (read
 * in place, in the map): into the sums, and with timelines sent as an
 * EV_OFFCPU. Not inlined, so that its locals take a frame of their own
 * while it runs rather than a place on the switch program's (offcpu_out's
 * locals and the frames of its callees come near the verifier's 512 bytes:
 * a copy of the start and a second inlined copy of these locals took it to
 * 528, and 6.1 and 6.12 refused it). An int for the verifier's r0. */
static __noinline int offcpu_end(const struct offcpu_start *st, __u32 tid, __u64 now, __u64 delta)
{
	struct offcpu_key k = {.tgid = st->tgid, .tid = tid, .stack = st->stack, .kind = st->kind};
	struct ev_offcpu *e;
	__u32 gen;

	/* Up to -d's end only, as the waits open at the stop (offcpu_detach). */
	if (sample_until_ns && now > sample_until_ns) {
		if (now - delta >= sample_until_ns)
			return 0;
		delta -= now - sample_until_ns;
		now = sample_until_ns;
	}
	if (delta < offcpu_min_ns) {
		count(STAT_OFFCPU_SHORT);
		count_add(STAT_OFFCPU_SHORT_NS, delta);
		return 0;
	}
	gen = offcpu_gen & 1;
	if (sum_add(gen ? (void *)&offcpu_sums1 : (void *)&offcpu_sums0, &k, delta)) {
		k.stack = 0;
		if (!sum_add(gen ? (void *)&offcpu_tsums1 : (void *)&offcpu_tsums0, &k, delta)) {
			count(STAT_OFFCPU_THREAD_ONLY);
			count_add(STAT_OFFCPU_THREAD_ONLY_NS, delta);
		} else {
			count(STAT_OFFCPU_LOST);
			count_add(STAT_OFFCPU_LOST_NS, delta);
		}
	}
	if (!offcpu_events)
		return 0;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count(STAT_OFFCPU_LOST_EVENTS); /* its time is in the sums */
		return 0;
	}
	fill_hdr(&e->hdr, EV_OFFCPU, k.tgid, tid);
	e->hdr.time_ns = now;
	e->start_ns = now - delta;
	e->stack = k.stack;
	e->kind = k.kind;
	bpf_ringbuf_submit(e, rb_flags());
	return 0;
}

/* prev leaves the CPU with a wait still in offcpu_start: no switch program
 * saw the switch that ended it (with bpf_printk in the program, hundreds a
 * minute: the program ran for the thread's leave but not for its return,
 * with its recursion misses at 0). Left there, the start would be
 * overwritten now, or deleted at the thread's exit, and the wait lost
 * unnamed: a process's last wait before its exit went missing that way
 * (offcpu_all_last_wait). Where this leave is the thread's only switch
 * since, the thread ran since for its CPU time's growth and waited the
 * rest (both in ns; sum_exec_runtime is brought up to date before the
 * tracepoint): the wait is counted on the stack it left from. Where more
 * switches went unseen, the waits between cannot be told apart: dropped
 * and counted, as offcpu_in's stale starts. */
static __always_inline void offcpu_unseen(struct task_struct *prev, __u32 tid)
{
	struct offcpu_start *st = bpf_map_lookup_elem(&offcpu_start, &tid);
	__u64 now, ran, delta;

	if (!st)
		return;
	if (st->switches + 1 != task_switches(prev)) {
		count(STAT_OFFCPU_STALE);
		return;
	}
	now = bpf_ktime_get_ns();
	ran = BPF_CORE_READ(prev, se.sum_exec_runtime) - st->runtime;
	delta = now - st->ts;
	delta = delta > ran ? delta - ran : 0;
	count(STAT_OFFCPU_WAITS);
	count(STAT_OFFCPU_UNSEEN);
	count_add(STAT_OFFCPU_UNSEEN_NS, delta);
	offcpu_end(st, tid, st->ts + delta, delta);
}

/* prev leaves the CPU: the wait starts. */
static __always_inline void offcpu_out(void *ctx, struct task_struct *prev, const bool compat)
{
	struct offcpu_stack_key k = {};
	struct offcpu_start st;
	struct pt_regs *ur;
	struct scratch *sc;
	__u32 tid = prev->pid, zero = 0, slot, *next;
	struct offcpu_stack_ref *ref;
	int npy = 0;

	k.tgid = prev->tgid;
	if (!offcpu_recorded(k.tgid, tid))
		return;
	/* An exiting thread's last switch: it never comes back (and its tid
	 * may be another thread's next). */
	offcpu_unseen(prev, tid);
	if (task_state(prev) & OFFCPU_TASK_DEAD) {
		bpf_map_delete_elem(&offcpu_start, &tid);
		return;
	}
	count(STAT_OFFCPU_SWITCHES);
	st.ts = bpf_ktime_get_ns();
	st.tgid = k.tgid;
	st.pad = 0;
	st.switches = task_switches(prev);
	st.runtime = BPF_CORE_READ(prev, se.sum_exec_runtime);
	st.kind = task_state(prev) == 0 ? OFFCPU_PREEMPTED : OFFCPU_BLOCKED;
	k.kind = st.kind;
	/* A kernel stack id costs a walk of the kernel stack at every switch
	 * (~1 us here; its first 16 frames ~2.5 us from this tracepoint):
	 * user tasks are told apart by their registers, system call and
	 * stack words instead, and walked only at a new one. */
	if (prev->mm) {
		slot = nr_cpus + bpf_get_smp_processor_id();
		sc = bpf_map_lookup_elem(&scratch_map, &slot);
		if (!sc)
			return;
		ur = user_regs(prev, compat);
		k.kstack = BPF_CORE_READ(ur, orig_ax);
		if (user_stacks) {
			__u64 regs[UREG_NR] = {BPF_CORE_READ(ur, ip), BPF_CORE_READ(ur, sp),
					       BPF_CORE_READ(ur, bp)};
			struct uprobe_view v;

			/* Waiting in a uprobe's path: the traced code's. */
			uprobe_regs(prev, regs, ur, true, &v, compat);
			k.ip = regs[UREG_IP];
			k.sp = regs[UREG_SP];
			k.bp = regs[UREG_BP];
		}
		if (!offcpu_sig_hash(sc, &k))
			offcpu_user_hash(sc, &k);
		/* A Python thread's native stack is the same wherever in its
		 * code it waits: its Python frames (read at every switch of a
		 * process in py_procs, ~1 us) tell the places apart, and go
		 * with the stack. bpf_loop's kernels (the walk's). */
		if (!compat && user_stacks && (npy = py_walk_frames_switch(max_stack)) > 0) {
			__u32 ps_slot = py_slot_key(PY_SLOT_SWITCH);
			struct py_bpf_stack *ps;

			npy += py_pending(PY_SLOT_SWITCH);
			ps = bpf_map_lookup_elem(&py_scratch, &ps_slot);

			if (ps)
				k.uhash = offcpu_mix(k.uhash, ps->hash);
		}
	} else {
		k.kstack = kernel_stacks ? bpf_get_stackid(ctx, &offcpu_kstacks, 0) : -1;
	}
	ref = bpf_map_lookup_elem(&offcpu_stack_ids, &k);
	if (ref && ref->notable) {
		__u32 ku = CFI_GEN_USER;
		__u64 *gu = bpf_map_lookup_elem(&cfi_gen, &ku);

		if (gu && *gu != ref->gen)
			ref = NULL; /* tables loaded since: walked again */
	}
	if (ref) {
		st.stack = ref->id;
	} else {
		struct offcpu_stack_ref nref = {};
		__u32 ku = CFI_GEN_USER;
		__u64 *gu = bpf_map_lookup_elem(&cfi_gen, &ku);
		bool notable = false;

		/* The generation before the walk: a table loaded meanwhile
		 * makes the next wait walk again. */
		nref.gen = gu ? *gu : 0;
		next = bpf_map_lookup_elem(&offcpu_next_id, &zero);
		if (!next)
			return;
		*next += 1;
		st.stack = *next * nr_cpus + bpf_get_smp_processor_id();
		count(STAT_OFFCPU_STACKS);
		if (offcpu_send_stack(ctx, prev, st.stack, &k, &notable, npy, compat)) {
			/* Sent again at the next wait there; this one has no stack. */
			count(STAT_OFFCPU_LOST_STACKS);
			st.stack = 0;
		} else {
			nref.id = st.stack;
			nref.notable = notable;
			bpf_map_update_elem(&offcpu_stack_ids, &k, &nref, BPF_ANY);
		}
	}
	/* Full: this wait cannot be measured; counted, and the map is sized
	 * from the system's threads (offcpu_prepare). */
	if (bpf_map_update_elem(&offcpu_start, &tid, &st, BPF_ANY))
		count(STAT_OFFCPU_LOST_STARTS);
}

/* next comes back: the wait ends. */
static __always_inline void offcpu_in(struct task_struct *next_task)
{
	__u32 tid = next_task->pid;
	struct offcpu_start *st = bpf_map_lookup_elem(&offcpu_start, &tid);
	__u64 now;

	if (!st)
		return;
	if (st->switches != task_switches(next_task)) {
		bpf_map_delete_elem(&offcpu_start, &tid);
		count(STAT_OFFCPU_STALE);
		return;
	}
	now = bpf_ktime_get_ns();
	count(STAT_OFFCPU_WAITS);
	/* Read in place, then deleted: the thread is this CPU's. */
	offcpu_end(st, tid, now, now - st->ts);
	bpf_map_delete_elem(&offcpu_start, &tid);
}

static __always_inline int offcpu_switch(void *ctx, struct task_struct *prev,
					 struct task_struct *next_task, const bool compat)
{
	offcpu_out(ctx, prev, compat);
	offcpu_in(next_task);
	return 0;
}

/* The record of offcpu_sleepers, too large for its stack: one iterator
 * runs at a time (offcpu_sleepers_read). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct offcpu_sleeper);
} offcpu_sleeper_buf SEC(".maps");

#define OFFCPU_SLEEPER_ID 0x80000000u
__u32 offcpu_sleeper_next = 0; /* one iterator runs, once */
/* The recording's start (CLOCK_MONOTONIC, bpf_ktime_get_ns's), set before
 * the iterator runs: a sleeper's wait counts from it, not from the
 * iterator's run, which comes after the kallsyms read is joined (later on
 * a busy host: offcpu_sleeper had 1,893 of its 2,000 ms in a CI run). */
__u64 offcpu_sleep_from = 0;

/* Run once as the recording starts, after on_switch is attached: each
 * recorded thread that is off the CPU now (asleep, or runnable and
 * waiting for one) starts its wait here, so that a thread asleep from
 * before the start to after the stop has its wait (up to the stop, as
 * collect_open counts it) and its stack. A start the switch program made
 * since is kept (BPF_NOEXIST). */
SEC("?iter/task")
int offcpu_sleepers(struct bpf_iter__task *ctx)
{
	struct task_struct *t = ctx->task;
	struct offcpu_start st = {};
	struct offcpu_sleeper *r;
	struct pt_regs *ur;
	__u32 zero = 0, tid;
	long state, n;

	if (!t)
		return 0;
	tid = t->pid;
	if (!offcpu_recorded(t->tgid, tid) || t->on_cpu)
		return 0;
	state = task_state(t);
	if (state & OFFCPU_TASK_DEAD)
		return 0;
	r = bpf_map_lookup_elem(&offcpu_sleeper_buf, &zero);
	if (!r)
		return 0;
	st.ts = bpf_ktime_get_ns();
	if (offcpu_sleep_from && offcpu_sleep_from < st.ts)
		st.ts = offcpu_sleep_from;
	st.switches = task_switches(t);
	st.runtime = BPF_CORE_READ(t, se.sum_exec_runtime);
	st.kind = state == 0 ? OFFCPU_PREEMPTED : OFFCPU_BLOCKED;
	st.tgid = t->tgid;
	/* Ids of their own (top bit set): the iterator may be preempted, and
	 * a switch on its CPU take the next per-CPU id between its read and
	 * its write of the counter. */
	st.stack = OFFCPU_SLEEPER_ID | ++offcpu_sleeper_next;
	if (bpf_map_update_elem(&offcpu_start, &tid, &st, BPF_NOEXIST))
		return 0;
	count(STAT_OFFCPU_SLEEPERS);
	r->tgid = st.tgid;
	r->tid = tid;
	r->id = st.stack;
	r->kind = st.kind;
	r->uregs[UREG_IP] = r->uregs[UREG_SP] = r->uregs[UREG_BP] = 0;
	if (t->mm && user_stacks) {
		ur = (struct pt_regs *)bpf_task_pt_regs(t);
		r->uregs[UREG_IP] = BPF_CORE_READ(ur, ip);
		r->uregs[UREG_SP] = BPF_CORE_READ(ur, sp);
		r->uregs[UREG_BP] = BPF_CORE_READ(ur, bp);
	}
	BPF_CORE_READ_STR_INTO(&r->comm, t, comm);
	r->nkernel = 0;
	if (kernel_stacks) {
		n = bpf_get_task_stack(t, r->ips, sizeof(r->ips), 0);
		if (n > 0)
			r->nkernel = (__u32)n / sizeof(__u64);
	}
	n = r->nkernel;
	/* Bounded for the verifier: at most MAX_FRAMES ips. */
	n &= 127;
	bpf_seq_write(ctx->meta->seq, r, offsetof(struct offcpu_sleeper, ips) + n * sizeof(__u64));
	return 0;
}

/* Loaded with --off-cpu only; on_switch_compat for the compat sampler's
 * kernels (no ring-buffer dynptrs, no bpf_task_pt_regs). */
SEC("?tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next_task)
{
	return offcpu_switch(ctx, prev, next_task, false);
}

SEC("?tp_btf/sched_switch")
int BPF_PROG(on_switch_compat, bool preempt, struct task_struct *prev,
	     struct task_struct *next_task)
{
	return offcpu_switch(ctx, prev, next_task, true);
}
