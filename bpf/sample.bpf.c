// SPDX-License-Identifier: GPL-2.0
/* Stack sampler: a perf_event program on every CPU pushes one ev_sample per
 * sample of a recorded process into a ring buffer; tracepoints keep the set of
 * recorded processes (followed across fork) and report exec and exit.
 *
 * The first of the sampler's units (the Makefile's sample.linked.o: after
 * the runtimes' walks, before bpf/cfi_walk.bpf.c and bpf/offcpu.bpf.c): it
 * defines the rodata and maps they share (bpf/sampler.bpf.h). */
#include "bpf/sampler.bpf.h"
#include "bpf/cfi_walk.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* The user frame-pointer walk, done here instead of by bpf_get_stack: that
 * costs ~0.7 us of fixed overhead per call on these machines (3.5 us on
 * some), even for a one-frame stack, while reading a frame record costs a
 * few ns. Records come from the stack copy when it holds them, else from a
 * window of stack read at the frame (one read most often covers the next
 * frames too); a chain that needs more than WALK_READS reads is left to
 * bpf_get_stack (WALK_DEEP). */
const volatile bool bpf_fp_walk = true;
/* Reads of the walk beyond the copy: 8, and one more per 8 frames of
 * --max-stack (the loader sets it). */
const volatile __u32 walk_reads = 8 + MAX_STACK_DEFAULT / 8;

enum { WALK_ON, WALK_DONE, WALK_DEEP, WALK_LIMIT };

struct walk_ctx {
	struct scratch *sc;
	__u64 sp, fp, lo;      /* lo: the lowest address the next frame may have */
	__u32 copied, base, n; /* base: index of the first user ip */
	int state;
};

/* Points to the 16-byte frame record at fp, or NULL (state says why). */
static __always_inline __u64 *frame_at(struct walk_ctx *w, __u64 fp)
{
	struct scratch *sc = w->sc;
	__u64 off = fp - w->sp, len;

	if (off + 16 <= w->copied) {
		if (off > MAX_STACK_COPY)
			return NULL;
		return (__u64 *)&sc->stack[off];
	}
	off = fp - sc->win_lo;
	if (fp < sc->win_lo || off + 16 > sc->win_len) {
		if (sc->win_reads++ >= walk_reads) {
			w->state = WALK_DEEP;
			return NULL;
		}
		/* To the end of the page: a read is all-or-nothing, and the
		 * next page may be unmapped. */
		len = PAGE_SZ - (fp & (PAGE_SZ - 1));
		if (sc->win_reads == 1 && len > WIN_FIRST)
			len = WIN_FIRST;
		if (len < 16)
			len = 16;
		/* Unreadable: the kernel's walk would stop there too. */
		if (bpf_probe_read_user(sc->win, len, (void *)fp)) {
			w->state = WALK_DONE;
			return NULL;
		}
		sc->win_lo = fp;
		sc->win_len = len;
		off = 0;
	}
	if (off > WIN_SZ - 16)
		return NULL;
	return (__u64 *)&sc->win[off];
}

static long walk_step(__u32 i, struct walk_ctx *w)
{
	__u64 fp = w->fp, *rec, *ips = w->sc->head + sizeof(struct ev_sample) / 8;
	__u32 idx;

	/* A chain ends at a zero or misaligned fp, or one not above the last
	 * frame: the stack grows down, so a caller's frame is always above. */
	if (!fp || (fp & 7) || fp < w->lo) {
		w->state = WALK_DONE;
		return 1;
	}
	if (w->n >= max_stack) {
		w->state = WALK_LIMIT;
		return 1;
	}
	rec = frame_at(w, fp);
	idx = w->base + w->n;
	if (!rec || idx >= IPS_N)
		return 1;
	ips[idx] = rec[1];
	/* A caller's return address that a uretprobe took. */
	if (rec[1] == w->sc->cfi.tramp && rec[1])
		ips[idx] = cfi_uretprobe(&w->sc->cfi, fp + 8);
	w->n++;
	w->fp = rec[0];
	w->lo = fp + 16;
	return 0;
}

/* Offset of cs in the perf_event context's registers: bpf_user_pt_regs_t
 * is uapi's struct pt_regs on x86_64, whose layout is fixed (cs the 18th
 * u64). Not a CO-RE access: since 6.9 the kernel's own pt_regs makes cs a
 * u16 in a union, and the context allows only 8-byte loads of regs. */
#define CTX_CS_OFF (17 * 8)
/* x86-64's clone3 system call, and struct clone_args' stack field
 * (include/uapi/linux/sched.h: flags, pidfd, child_tid, parent_tid,
 * exit_signal, then stack, each 8 bytes). */
#define SYS_CLONE3	 435
#define CLONE_ARGS_STACK 40

/* The sample's body. compat: for kernels before 5.19, without bpf_loop,
 * ring-buffer dynptrs, bpf_get_current_task_btf or bpf_task_pt_regs (the
 * loader picks on_sample or on_sample_compat by probing the helpers). */
static __always_inline int sample(struct bpf_perf_event_data *ctx, const bool compat)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	__u32 cpu = bpf_get_smp_processor_id();
	struct ev_sample *s;
	struct scratch *sc;
	long n;
	__u64 nk = 0, nu = 0;

	if (filter_pids) {
		if (!is_target(tgid))
			return 0;
	} else if ((tid == 0 && !include_idle) || (tgid == self_tgid && tgid)) {
		return 0;
	}
	if (sample_until_ns && bpf_ktime_get_ns() > sample_until_ns)
		return 0;

	exit_name(tgid);
	sc = bpf_map_lookup_elem(&scratch_map, &cpu);
	if (!sc)
		return 0;
	s = (struct ev_sample *)sc->head;
	s->hdr.type = EV_SAMPLE;
	s->hdr.pid = tgid;
	s->hdr.tid = tid;
	s->hdr.cpu = cpu;
	s->hdr.time_ns = bpf_ktime_get_ns();
	bpf_get_current_comm(s->comm, sizeof(s->comm));
	/* x86_64: kernel addresses are in the upper half. */
	s->flags = (PT_REGS_IP(&ctx->regs) >= 0xffff800000000000ULL) ? SAMPLE_IN_KERNEL : 0;
	s->stack_len = 0;
	s->stack_id = 0;
	sc->wake = 0;
	sc->npy = 0;
	sc->cfi.jvm = 0;
	sc->cfi.v8 = 0;
	s->uregs[UREG_IP] = s->uregs[UREG_SP] = s->uregs[UREG_BP] = 0;

	if (kernel_stacks && (s->flags & SAMPLE_IN_KERNEL)) {
		n = bpf_get_stack(ctx, s->ips, MAX_FRAMES * sizeof(__u64), 0);
		if (n < 0)
			count(STAT_KSTACK_ERR);
		else
			nk = (__u64)n / sizeof(__u64);
	}
	if (nk > MAX_FRAMES)
		nk = MAX_FRAMES;
	s->nkernel = nk;

	/* The thread's Python frames, when its process runs a CPython
	 * (py_procs): before the walks, as the CFI walk sends the record from
	 * its own program (send_sample appends them). */
	if (user_stacks && tgid != 0) {
		int npy = compat ? py_walk_frames_compat(ctx) : py_walk_frames(ctx, max_stack);

		if (npy > 0)
			sc->npy = npy;
		if (npy >= 0) {
			__u32 slot = py_slot_key(PY_SLOT_SAMPLE);
			struct py_bpf_stack *ps = bpf_map_lookup_elem(&py_scratch, &slot);

			if (ps && ps->truncated)
				s->flags |= SAMPLE_PY_TRUNC;
		}
	}

	if (user_stacks && tgid != 0) {
		struct task_struct *task = compat ? (struct task_struct *)bpf_get_current_task()
						  : bpf_get_current_task_btf();
		struct pt_regs *ur = user_regs(task, compat);
		__u64 sp, cs, want = stack_copy_walk, top;
		__u32 copied = 0;
		bool walked = false;

		if (stack_copy_dwarf && dwarf_all) {
			want = stack_copy_dwarf;
			s->flags |= SAMPLE_DWARF;
		}

		/* In user mode the sample's own registers are the user's; they are
		 * read straight from the context (the verifier rewrites those
		 * loads; a probe read of ctx would read the kernel's wrapper). */
		if (!(s->flags & SAMPLE_IN_KERNEL)) {
			s->uregs[UREG_IP] = PT_REGS_IP(&ctx->regs);
			s->uregs[UREG_SP] = PT_REGS_SP(&ctx->regs);
			s->uregs[UREG_BP] = PT_REGS_FP(&ctx->regs);
			sc->cfi.r13 = ctx->regs.r13;
			cs = *(volatile __u64 *)((char *)ctx + CTX_CS_OFF) & 0xffff;
		} else if (BPF_CORE_READ(task, mm)) {
			s->uregs[UREG_IP] = BPF_CORE_READ(ur, ip);
			s->uregs[UREG_SP] = BPF_CORE_READ(ur, sp);
			s->uregs[UREG_BP] = BPF_CORE_READ(ur, bp);
			sc->cfi.r13 = BPF_CORE_READ(ur, r13);
			/* cs is a u64 before 6.9, a u16 since: read its real size. */
			cs = 0;
			bpf_core_read(&cs, bpf_core_field_size(ur->cs), &ur->cs);
			cs &= 0xffff;
		} else {
			goto user_done; /* a kernel thread: no user stack */
		}
		{
			struct uprobe_view v;

			/* In a uprobe's int3, slot or trampoline: the traced
			 * code's registers, for every walk and the copy. */
			uprobe_regs(task, s->uregs, ur, s->flags & SAMPLE_IN_KERNEL, &v, compat);
			sc->cfi.tramp = v.tramp;
			sc->cfi.ri0 = v.ri;
		}
		/* A thread's first return from clone3 (its child: ax 0) onto the
		 * stack clone3 was given (struct clone_args' stack, at its
		 * pointer in rdi, which the child's registers keep): glibc's
		 * clone3.S runs the child's first instructions under the
		 * parent's CFI, up to its thread_start (cfi_undefined rip), and
		 * a walk read a word of the new stack as a return address
		 * (probe_redis_unknown: __clone3 < [unknown] < [unknown] under
		 * ret_from_fork). The leaf alone is its stack, its root. */
		if ((s->flags & SAMPLE_IN_KERNEL) && BPF_CORE_READ(ur, orig_ax) == SYS_CLONE3 &&
		    !BPF_CORE_READ(ur, ax)) {
			__u64 stack = 0;

			if (!bpf_probe_read_user(
				&stack, sizeof(stack),
				(void *)(BPF_CORE_READ(ur, di) + CLONE_ARGS_STACK)) &&
			    stack) {
				s->ips[nk] = s->uregs[UREG_IP];
				nu = 1;
				goto user_done;
			}
		}
		sp = s->uregs[UREG_SP];
		/* The walks' first window: one read, across a page boundary too,
		 * since the stack above sp was all used (mapped) up to its top,
		 * as perf's stack copy assumes; near the top, where that read
		 * fails, to the end of sp's page (the walks read further as they
		 * need). */
		if (!(s->flags & SAMPLE_DWARF) && want && sp) {
			barrier_var(want);
			want = ((want - 1) & (PAGE_SZ - 1)) + 1; /* 1..PAGE_SZ, for the verifier */
			if (!bpf_probe_read_user(sc->stack, want, (void *)sp)) {
				copied = want;
				want = 0; /* done */
			} else if (want > PAGE_SZ - (sp & (PAGE_SZ - 1))) {
				want = PAGE_SZ - (sp & (PAGE_SZ - 1));
			}
		}
		/* The main thread's stack ends at start_stack; no need to copy past
		 * it. */
		if (want > PAGE_SZ) {
			top = BPF_CORE_READ(task, mm, start_stack);
			if (sp < top && top - sp < want)
				want = (top - sp + 4095) & ~4095ULL;
		}
		if (want > MAX_STACK_COPY)
			want = MAX_STACK_COPY;
		if (want && sp)
			copied = copy_stack(sc, sp, want, compat);
		/* Sent only for DWARF unwinding; the walks read it (and further). */
		s->stack_len = s->flags & SAMPLE_DWARF ? copied : 0;
		if (s->stack_len && sc->cfi.tramp) {
			uprobe_patch_copy(sc, sp, copied, sc->cfi.ri0, compat);
			uprobe_patch_entry(sc, sp, copied, sc->cfi.tramp);
		}

		/* The CFI walk, when on, takes over from here (a tail call that
		 * sends the record itself); back here only if it could not. */
		if (cfi_walk && sp && cs == 0x33)
			cfi_start(ctx, sc, tgid, nk, copied, compat);

		/* 0x33: a 64-bit task (__USER_CS); leave compat tasks to the kernel.
		 * Kernels without bpf_loop walk by bpf_get_stack: a bounded loop
		 * of MAX_FRAMES steps is more than 5.10's verifier can follow
		 * (a million instructions). */
		if (bpf_fp_walk && !compat && sp && cs == 0x33) {
			struct walk_ctx w = {
			    .sc = sc,
			    .sp = sp,
			    .lo = sp,
			    .fp = s->uregs[UREG_BP],
			    .copied = copied,
			    .base = nk,
			    .n = 1,
			};

			s->ips[nk] = s->uregs[UREG_IP];
			sc->win_len = sc->win_reads = 0;
			sc->cfi.ri = sc->cfi.ri0;
			bpf_loop(max_stack, walk_step, &w, 0);
			if (w.state != WALK_DEEP) {
				nu = w.n;
				walked = true;
			}
			if (w.state == WALK_LIMIT)
				s->flags |= SAMPLE_MAX_STACK;
		}
		if (!walked) {
			count(STAT_KERNEL_WALKS);
			n = bpf_get_stack(ctx, &s->ips[nk], MAX_FRAMES * sizeof(__u64),
					  BPF_F_USER_STACK);
			if (n < 0) {
				count(STAT_USTACK_ERR);
			} else {
				nu = (__u64)n / sizeof(__u64);
				/* The kernel's walk stops at its sysctl's 127. */
				if (nu >= MAX_FRAMES && max_stack > MAX_FRAMES)
					s->flags |= SAMPLE_MAX_STACK;
			}
		}
	}
user_done:
	return compat ? send_sample(sc, nk, nu, true) : sample_send(nk, nu);
}

__noinline int sample_send(__u32 nk, __u32 nu)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct scratch *sc = bpf_map_lookup_elem(&scratch_map, &cpu);

	return sc ? send_sample(sc, nk, nu, false) : 0;
}

SEC("perf_event")
int on_sample(struct bpf_perf_event_data *ctx)
{
	return sample(ctx, false);
}

SEC("perf_event")
int on_sample_compat(struct bpf_perf_event_data *ctx)
{
	return sample(ctx, true);
}

/* A task event's common part, and its submission: for targets, rare and
 * time-critical (the reader reads /proc/PID/maps now), so the reader is
 * woken. Under -a every exec in the system comes here, and a wakeup costs
 * tens of us: the timer drain will do. */
static __always_inline void task_fill(struct ev_task *e, __u32 type, __u32 pid, __u32 child)
{
	fill_hdr(&e->hdr, type, pid, (__u32)bpf_get_current_pid_tgid());
	e->child_pid = child;
	e->pad = 0;
	bpf_get_current_comm(e->comm, sizeof(e->comm));
}

static __always_inline __u64 task_wake(void)
{
	return filter_pids ? BPF_RB_FORCE_WAKEUP : rb_flags();
}

static __always_inline void task_event(__u32 type, __u32 pid, __u32 child)
{
	struct ev_task *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	if (!e) {
		count(STAT_LOST_TASK);
		return;
	}
	task_fill(e, type, pid, child);
	bpf_ringbuf_submit(e, task_wake());
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = BPF_CORE_READ(parent, tgid);
	__u32 cpid = BPF_CORE_READ(child, pid);
	__u8 one = 1;

	/* Threads share the tgid and are recorded already. A kernel thread
	 * (kthreadd's child, when -p names kthreadd) is a thread of its own,
	 * not a descendant to follow. */
	if (!filter_pids || !follow_forks || cpid != (__u32)BPF_CORE_READ(child, tgid) ||
	    (BPF_CORE_READ(child, flags) & PF_KTHREAD))
		return 0;
	if (!is_target(ptgid))
		return 0;
	bpf_map_update_elem(&targets, &cpid, &one, BPF_ANY);
	task_event(EV_FORK, ptgid, cpid);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct ev_exec *e;
	dev_t dev;

	/* The mappings found for the old image are not the new one's, nor
	 * are the rows the walk kept for its pcs. */
	if (cfi_walk) {
		__u32 k = CFI_GEN_BPF;
		__u64 *g = bpf_map_lookup_elem(&cfi_gen, &k);

		bpf_map_delete_elem(&cfi_pcache, &tgid);
		if (g)
			__sync_fetch_and_add(g, 1);
	}
	if (filter_pids && !is_target(tgid))
		return 0;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count(STAT_LOST_TASK);
		return 0;
	}
	task_fill(&e->task, EV_EXEC, tgid, 0);
	e->ino = BPF_CORE_READ(bprm, file, f_inode, i_ino);
	dev = BPF_CORE_READ(bprm, file, f_inode, i_sb, s_dev);
	e->dev_major = dev >> 20; /* the kernel's dev_t: MINORBITS 20 */
	e->dev_minor = dev & 0xfffff;
	if (bpf_probe_read_kernel_str(e->path, sizeof(e->path), BPF_CORE_READ(bprm, filename)) < 0)
		e->path[0] = 0;
	bpf_ringbuf_submit(e, task_wake());
	return 0;
}

/* Open-coded VMA iterator (kernel 6.7+); weak, so that older kernels load
 * the rest and only lose the exit-time mappings. */
extern int bpf_iter_task_vma_new(struct bpf_iter_task_vma *it, struct task_struct *task,
				 __u64 addr) __weak __ksym;
extern struct vm_area_struct *bpf_iter_task_vma_next(struct bpf_iter_task_vma *it) __weak __ksym;
extern void bpf_iter_task_vma_destroy(struct bpf_iter_task_vma *it) __weak __ksym;

#define VM_EXEC 0x4

/* The process's executable file mappings, one EV_VMA each. No count of them:
 * the verifier would then follow the loop once per value (0.65 s to load);
 * the iterator ends, and a full ring buffer stops it sooner. */
static __always_inline void exit_vmas(struct task_struct *p, __u32 tgid)
{
	struct bpf_iter_task_vma it;
	struct vm_area_struct *vma;

	if (!bpf_iter_task_vma_new)
		return;
	/* -EBUSY where this CPU's mmap-unlock irq_work is still pending (a
	 * bpf_find_vma of the CFI walk a moment before) or the lock is taken:
	 * counted, the process's frames in libraries mapped since its maps
	 * were read are then unnamed. */
	if (bpf_iter_task_vma_new(&it, p, 0))
		count(STAT_EXIT_VMA_BUSY);
	while ((vma = bpf_iter_task_vma_next(&it))) {
		/* Untrusted: no BTF look-up of each load's trust (rdonly). */
		vma = UNTRUSTED(vma, struct vm_area_struct);
		struct file *f = vma->vm_file;
		struct ev_vma *e;
		dev_t dev;

		if (!(vma->vm_flags & VM_EXEC) || !f)
			continue;
		e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
		if (!e) {
			count(STAT_LOST_TASK);
			break;
		}
		fill_hdr(&e->hdr, EV_VMA, tgid, p->pid);
		e->start = vma->vm_start;
		e->end = vma->vm_end;
		e->offset = vma->vm_pgoff << 12;
		e->ino = f->f_inode->i_ino;
		dev = f->f_inode->i_sb->s_dev;
		e->dev_major = dev >> 20; /* the kernel's dev_t: MINORBITS 20 */
		e->dev_minor = dev & 0xfffff;
		if (bpf_probe_read_kernel_str(e->name, sizeof(e->name),
					      f->f_path.dentry->d_name.name) < 0)
			e->name[0] = 0;
		bpf_ringbuf_submit(e, rb_flags());
	}
	bpf_iter_task_vma_destroy(&it);
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *p)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;

	/* Nor those of a process gone for the next to take its pid. */
	if (cfi_walk && !BPF_CORE_READ(p, signal, live.counter))
		bpf_map_delete_elem(&cfi_pcache, &tgid);
	if (filter_pids && !is_target(tgid))
		return 0;
	/* The last thread: the tracepoint fires before the mm is released
	 * (kernel 6.16+; before that the mm is gone, nothing can be sent, and
	 * the loader says so). */
	if (user_stacks && tgid && !BPF_CORE_READ(p, signal, live.counter) &&
	    (exit_maps_all || bpf_map_lookup_elem(&exit_named, &tgid))) {
		if (!exit_maps_all)
			bpf_map_delete_elem(&exit_named, &tgid);
		if (BPF_CORE_READ(p, mm))
			exit_vmas(p, tgid);
		else
			count(STAT_EXIT_NO_MM);
	}
	if ((__u32)id == tgid && filter_pids) {
		task_event(EV_EXIT, tgid, 0);
	} else if (!filter_pids && tgid && !BPF_CORE_READ(p, signal, live.counter)) {
		/* Under -a, at the last thread (the leader may exit first): the
		 * loader then frees what it kept for the process (the unwinder
		 * and its fds). task_event sends it without a wakeup. */
		task_event(EV_EXIT, tgid, 0);
	}
	return 0;
}
