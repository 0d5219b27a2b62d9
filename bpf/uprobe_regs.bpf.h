/* A user stack taken while a uprobe's machinery runs the thread instead of
 * its code: the registers the walks start from, and the return addresses
 * uretprobes hijacked. Three places show the thread elsewhere than its
 * program:
 *
 * - the int3 path: the probed instruction's first byte is an int3, and
 *   from the trap until handle_swbp sets ip back to the probed address for
 *   the handlers (asm_exc_int3, uprobe_notify_resume) the kernel holds the
 *   user ip one byte past it; the instruction has not run, and a walk from
 *   ip must look up the probed address itself, not the row one byte on
 *   (after a 1-byte `push %rbp` that row already has the push). After the
 *   handlers the kernel hijacks the return address for the uretprobe and
 *   lists its return_instance a moment later: uprobe_entry_ra covers that;
 * - the out-of-line slot: the displaced instruction runs single-stepped in
 *   a slot of the "[uprobes]" page (utask->xol_vaddr), as does the #DB that
 *   follows (asm_exc_debug, then the fix-up on the way back to user mode);
 *   the real pc is the probed address plus the same offset (utask->vaddr);
 * - the return trampoline, the area's first slot: a return of a function
 *   under a uretprobe lands there, and the innermost return_instance holds
 *   where it returns to (orig_ret_vaddr) and the slot it was taken from
 *   (stack: the caller's sp is one word above). Since 6.11 the trampoline
 *   pushes rax, rcx and r11 and calls the uretprobe system call, which puts
 *   the real address on the stack and returns through two pops and a ret.
 *
 * The sampler, the CFI walk and the off-CPU stacks all take their registers
 * from uprobe_regs, and the walks their callers' return addresses from
 * cfi_uretprobe. A header of inline functions, not a unit: no programs or
 * maps, and functions that take task_struct and pt_regs pointers and a
 * compile-time compat, which 5.10's global functions cannot (scalars and
 * ctx only). Included by bpf/sampler.bpf.h after struct scratch, whose
 * slot it patches, before the helpers that call it. */
#ifndef BPF_UPROBE_REGS_BPF_H
#define BPF_UPROBE_REGS_BPF_H

/* mm->flags' bit for "has uprobes" (5.10 .. 6.18: 19). */
#define MMF_HAS_UPROBES_BIT 19
/* The out-of-line slots' size (UPROBE_XOL_SLOT_BYTES), an upper bound of
 * the displaced instruction's pcs, and the trampoline's code's. */
#define UPROBE_XOL_SLOT 128
/* From the innermost return_instance's slot to sp in the trampoline: the
 * caller's sp (slot + 8) as the return landed, up to three pushes below. */
#define UPROBE_TRAMP_PUSHES 24

/* mm->flags before 6.18 (mm_flags_t, a bitmap, since). */
struct mm_struct___long {
	unsigned long flags;
} __attribute__((preserve_access_index));

static __always_inline __u64 mm_flags_word(struct mm_struct *mm)
{
	__u64 w = 0;

	if (bpf_core_field_exists(((struct mm_struct___long *)mm)->flags))
		bpf_core_read(&w, sizeof(w), &((struct mm_struct___long *)mm)->flags);
	else
		bpf_core_read(&w, sizeof(w), &mm->flags);
	return w;
}

/* The task as an untrusted pointer (bpf_rdonly_cast, 6.2+; free at run
 * time, the verifier inlines it), for the loads below: through a trusted
 * pointer, each load of a pointer field (task->mm, task->utask) had the
 * verifier look its result's trust up by name in the kernel's BTF, four
 * linear scans of it, at every visit of the load (74 in on_sample: ~25 ms
 * of the start-up's CPU on 6.18, a tenth of it). The loads are the same
 * (a fault reads 0). Kernels without the kfunc keep the trusted pointer. */
#ifndef BPF_NO_RDONLY_CAST
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __weak __ksym;

static __always_inline void *rdonly(void *ptr, __u32 btf_id)
{
	return bpf_rdonly_cast ? bpf_rdonly_cast(ptr, btf_id) : ptr;
}
#define UNTRUSTED(ptr, type) ((type *)rdonly((ptr), bpf_core_type_id_kernel(type)))
#else
/* A unit joined after sample.bpf.c (bpf/offcpu.bpf.c): libbpf 1.1's static
 * linker cannot join the same kfunc's extern from two units ("failed to
 * resolve size of underlying type"), so it keeps the trusted pointer. */
#define UNTRUSTED(ptr, type) ((type *)(ptr))
#endif

/* The uprobe view of the current task: the "[uprobes]" page's address (the
 * trampoline) and the innermost return_instance. */
struct uprobe_view {
	__u64 tramp, ri;
};

/* The task's uprobe state. compat: through probe reads (kernels without
 * bpf_get_current_task_btf); else loads through the BTF pointer (a fault
 * reads 0), not probe reads at every sample (docs/benchmarks.md). Kernels
 * without CONFIG_UPROBES have no utask: nothing. */
static __always_inline struct uprobe_task *uprobe_view(struct task_struct *task,
						       struct uprobe_view *v, const bool compat)
{
	struct uprobe_task *ut = NULL;

	v->tramp = v->ri = 0;
	if (!bpf_core_field_exists(((struct task_struct *)0)->utask))
		return NULL;
	if (!compat) {
		struct task_struct *t = UNTRUSTED(task, struct task_struct);
		struct xol_area *xa = t->mm ? t->mm->uprobes_state.xol_area : NULL;

		v->tramp = xa ? xa->vaddr : 0;
		ut = t->utask;
		if (v->tramp && ut)
			v->ri = (__u64)ut->return_instances;
	} else {
		v->tramp = BPF_CORE_READ(task, mm, uprobes_state.xol_area, vaddr);
		ut = BPF_CORE_READ(task, utask);
		if (v->tramp && ut)
			v->ri = (__u64)BPF_CORE_READ(ut, return_instances);
	}
	return ut;
}

/* The return_instance the uretprobe system call consumed last, which the
 * kernel keeps for reuse at the head of utask->ri_pool (6.13+); NULL
 * before 6.13 or when there is none. */
static __always_inline struct return_instance *uprobe_ri_done(struct uprobe_task *ut,
							      const bool compat)
{
	if (!ut || !bpf_core_field_exists(ut->ri_pool))
		return NULL;
	return compat ? BPF_CORE_READ(ut, ri_pool) : (struct return_instance *)ut->ri_pool;
}

/* In the trampoline after the uretprobe system call put the real return
 * address on the stack (6.11+): its last instructions, `pop %r11; pop %rcx;
 * ret`, done here. The address is taken from the return_instance just
 * consumed when the kernel keeps it (6.13+: the head of utask->ri_pool,
 * whose slot is the ret's), else from the stack, which the system call may
 * still be writing. 0 when done, else the code is not that. */
static __always_inline int uprobe_tramp_tail(__u64 *regs, struct uprobe_task *ut, const bool compat)
{
	__u64 ip = regs[UREG_IP], sp = regs[UREG_SP], ra = 0, st = 0;
	__u8 c[2];
	int i;

	for (i = 0; i < 3; i++) {
		if (bpf_probe_read_user(c, sizeof(c), (void *)ip))
			return -1;
		if (c[0] == 0x41 && c[1] == 0x5b) { /* pop %r11 */
			ip += 2;
			sp += 8;
		} else if (c[0] == 0x59) { /* pop %rcx */
			ip += 1;
			sp += 8;
		} else if (c[0] == 0xc3) { /* ret */
			break;
		} else {
			return -1;
		}
	}
	if (i == 3)
		return -1;
	{
		struct return_instance *ri = uprobe_ri_done(ut, compat);

		if (ri) {
			bpf_core_read(&st, sizeof(st), &ri->stack);
			if (st == sp)
				bpf_core_read(&ra, sizeof(ra), &ri->orig_ret_vaddr);
		}
	}
	if (!ra && bpf_probe_read_user(&ra, sizeof(ra), (void *)sp))
		return -1;
	if (!ra)
		return -1;
	regs[UREG_IP] = ra;
	regs[UREG_SP] = sp + 8;
	return 0;
}

/* regs (UREG_*), read from the task's user registers ur, become those of
 * the frame the thread runs in its own code; v gets the task's uprobe view.
 * in_kernel: the sample interrupted kernel code (ur's orig_ax -1: an
 * exception or interrupt, not a system call). */
static __always_inline void uprobe_regs_at(struct task_struct *task, __u64 *regs,
					   struct pt_regs *ur, bool in_kernel,
					   struct uprobe_view *v, const bool compat)
{
	struct uprobe_task *ut = uprobe_view(task, v, compat);
	__u64 ip = regs[UREG_IP], sp = regs[UREG_SP], xol = 0, vaddr = 0, st = 0, ra = 0, w = 0;
	__u64 wa[2];
	struct mm_struct *mm;
	__u8 c = 0;
	bool int3_tramp = false;

	if (v->tramp && ip - v->tramp < PAGE_SZ) {
		if (ut) {
			if (!compat) {
				xol = ut->xol_vaddr;
				vaddr = ut->vaddr;
			} else {
				xol = BPF_CORE_READ(ut, xol_vaddr);
				vaddr = BPF_CORE_READ(ut, vaddr);
			}
		}
		/* In the displaced instruction's slot: single-stepping it
		 * (UTASK_SSTEP and its _ACK, _TRAPPED), or about to, from
		 * arch_uprobe_pre_xol, which moves ip there, until pre_ssout
		 * sets UTASK_SSTEP (still UTASK_RUNNING: 0.2 % of the samples
		 * under a traced qsort comparator ended at [uprobes] when the
		 * state was asked for too). xol_vaddr is set for the slot's
		 * use only (xol_free_insn_slot clears it). */
		if (xol && vaddr && ip - xol < UPROBE_XOL_SLOT) {
			regs[UREG_IP] = vaddr + (ip - xol);
			return;
		}
		if (ip - v->tramp >= UPROBE_XOL_SLOT)
			return;
		/* Before 6.11 the trampoline is one int3, and the trap leaves ip
		 * one past it, where the page holds no code, nor zeros where the
		 * kernel allocates it without __GFP_ZERO (as before that fix):
		 * a stray 0x59 or 0xc3 there read as the tail below, and
		 * 0.2-0.9 % of the 6.1 guest's samples ended at [uprobes]. */
		if (ip == v->tramp + 1 && !bpf_probe_read_user(&c, 1, (void *)v->tramp) &&
		    c == 0xcc)
			int3_tramp = true;
		/* The trampoline's tail (pop %rcx, ret) is told by its code:
		 * the return_instance is gone by then, and an outer one's slot
		 * may lie as close above sp. */
		else if (bpf_probe_read_user(&c, 1, (void *)ip) || c == 0x59 || c == 0xc3) {
			uprobe_tramp_tail(regs, ut, compat);
			return;
		}
		if (v->ri) {
			struct return_instance *ri = (struct return_instance *)v->ri;

			bpf_core_read(&st, sizeof(st), &ri->stack);
			bpf_core_read(&ra, sizeof(ra), &ri->orig_ret_vaddr);
			if (ra && st + 8 >= sp && st + 8 - sp <= UPROBE_TRAMP_PUSHES) {
				regs[UREG_IP] = ra;
				regs[UREG_SP] = st + 8;
				return;
			}
		}
		if (!int3_tramp)
			uprobe_tramp_tail(regs, ut, compat);
		return;
	}
	/* The int3 path: an exception (orig_ax -1) of a process with uprobes,
	 * its ip one past an int3. */
	if (!in_kernel || !ip || (__s64)BPF_CORE_READ(ur, orig_ax) != -1)
		return;
	/* Inside the uretprobe system call (which sets orig_ax -1), after its
	 * handlers set ip to the real return address and it moved sp back
	 * down over the trampoline's three pushes, before it puts ip back in
	 * the trampoline: ip is the caller's and sp 24 bytes below the
	 * caller's (probe_redis_unknown: `call < [unknown]` under
	 * __x64_sys_uretprobe, the walk taking a pushed register for the
	 * return address). Told by the return_instance just consumed: its
	 * return address is ip and its slot sp + 16. An ordinary return to
	 * that address has sp one word above the slot. */
	if (v->tramp) {
		struct return_instance *ri = uprobe_ri_done(ut, compat);

		if (ri) {
			bpf_core_read(&st, sizeof(st), &ri->stack);
			bpf_core_read(&ra, sizeof(ra), &ri->orig_ret_vaddr);
			if (ra == ip && st + 8 == sp + UPROBE_TRAMP_PUSHES) {
				regs[UREG_SP] = st + 8;
				return;
			}
		}
	}
	mm = compat ? BPF_CORE_READ(task, mm) : UNTRUSTED(task, struct task_struct)->mm;
	if (!mm || !(mm_flags_word(mm) & (1ULL << MMF_HAS_UPROBES_BIT)))
		return;
	/* The probed instruction emulated (arch_uprobe_skip_sstep), caught
	 * between its push and its new ip: push_emulate_op's `push %rbp`
	 * (or another register) has moved sp down a word and written it,
	 * ip still at the probed address (its int3); branch_emulate_op's
	 * call has pushed its return address, ip one past the call. Taken
	 * as they are, the walk read the pushed word as the return address
	 * (setCommand <- [unknown]). Told by the entry's return slot, one
	 * word above sp, which the uretprobe hijacked before the emulation
	 * (the trampoline there, not at sp): the entry's registers are those
	 * with sp back on that slot. */
	if (v->tramp && !bpf_probe_read_user(wa, sizeof(wa), (void *)sp) && wa[0] != v->tramp &&
	    wa[1] == v->tramp &&
	    (wa[0] == ip || (!bpf_probe_read_user(&c, 1, (void *)ip) && c == 0xcc))) {
		regs[UREG_SP] = sp + 8;
		return;
	}
	if (bpf_probe_read_user(&c, 1, (void *)(ip - 1)) || c != 0xcc)
		return;
	/* One past the int3 also after the kernel emulated a one-byte push
	 * there (handle_swbp sets ip to the probed address for the handlers,
	 * then arch_uprobe_skip_sstep moves it on): the instruction ran, and
	 * the word at sp is the register it pushed. Before, it is the return
	 * address (the probe is at a function's entry) or a local. */
	if (!bpf_probe_read_user(&w, sizeof(w), (void *)sp) &&
	    (w == sp + 8 || w == regs[UREG_BP] || w == BPF_CORE_READ(ur, ax) ||
	     w == BPF_CORE_READ(ur, cx) || w == BPF_CORE_READ(ur, dx) ||
	     w == BPF_CORE_READ(ur, bx) || w == BPF_CORE_READ(ur, si) ||
	     w == BPF_CORE_READ(ur, di)))
		return;
	regs[UREG_IP] = ip - 1;
}

struct uprobe_regs_ctx {
	struct task_struct *task;
	__u64 *regs;
	struct pt_regs *ur;
	struct uprobe_view *v;
	bool in_kernel;
};

static long uprobe_regs_cb(__u32 i, struct uprobe_regs_ctx *c)
{
	uprobe_regs_at(c->task, c->regs, c->ur, c->in_kernel, c->v, false);
	return 1;
}

/* In a one-round bpf_loop where the kernel has it: inlined, the many ways
 * out of uprobe_regs_at each went on through the rest of the sampler, and
 * the verifier followed them all (on_sample's load 0.025 s before them). */
static __always_inline void uprobe_regs(struct task_struct *task, __u64 *regs, struct pt_regs *ur,
					bool in_kernel, struct uprobe_view *v, const bool compat)
{
	struct uprobe_regs_ctx c = {
	    .task = task, .regs = regs, .ur = ur, .v = v, .in_kernel = in_kernel};

	if (compat)
		uprobe_regs_at(task, regs, ur, in_kernel, v, true);
	else
		bpf_loop(1, uprobe_regs_cb, &c, 0);
}

/* The real return address of the trampoline found in slot, for a slot no
 * return_instance has: the one a traced call's entry program saw there,
 * when the kernel hijacked it since and has not yet listed it; else 0. */
static __always_inline __u64 uprobe_entry_ra(__u64 slot)
{
	__u32 zero = 0;
	struct entry_ra *e = bpf_map_lookup_elem(&entry_ra, &zero);

	if (e && e->sp == slot && e->tid == (__u32)bpf_get_current_pid_tgid())
		return e->ra;
	return 0;
}

/* A return address that is the uretprobe trampoline (the "[uprobes]" page)
 * stands for the one the kernel saved when the uretprobe hijacked the
 * slot: the return_instance whose stack is that slot's address. The list
 * (current->utask->return_instances) runs innermost first, as the walk
 * does, so the search goes on from the last match; a few entries per frame
 * (chained ones, of returns not on this walk) bound it. */
#define CFI_URETPROBE_SCAN 4
static __always_inline __u64 cfi_uretprobe(struct cfi_state *st, __u64 slot)
{
	struct return_instance *ri = (struct return_instance *)st->ri;
	__u64 stack = 0, ra = 0;
	__u32 i;

	for (i = 0; i < CFI_URETPROBE_SCAN && ri; i++) {
		struct return_instance *next = NULL;

		bpf_core_read(&stack, sizeof(stack), &ri->stack);
		bpf_core_read(&next, sizeof(next), &ri->next);
		if (stack == slot) {
			bpf_core_read(&ra, sizeof(ra), &ri->orig_ret_vaddr);
			st->ri = (__u64)next;
			return ra ? ra : st->tramp;
		}
		ri = next;
	}
	ra = uprobe_entry_ra(slot);
	if (ra)
		return ra;
	count(STAT_CFI_URETPROBE_MISS);
	return st->tramp; /* not found: the trampoline stays */
}

/* A stack copied for DWARF unwinding holds the trampoline where each
 * traced function's caller's return address was: the real ones are put
 * back in the copy, so that libdwfl unwinds past them as the walk does. */
#define UPROBE_PATCH_MAX 8
struct patch_ctx {
	struct scratch *sc;
	__u64 sp0, ri;
	__u32 copied;
};

/* One return_instance's slot; 1 at the list's end. */
static __always_inline long uprobe_patch_one(struct patch_ctx *p)
{
	struct return_instance *ri = (struct return_instance *)p->ri, *next = NULL;
	__u64 stack = 0, ra = 0, off;

	if (!ri)
		return 1;
	bpf_core_read(&stack, sizeof(stack), &ri->stack);
	bpf_core_read(&ra, sizeof(ra), &ri->orig_ret_vaddr);
	bpf_core_read(&next, sizeof(next), &ri->next);
	off = stack - p->sp0;
	if (ra && stack >= p->sp0 && off + 8 <= p->copied && !(stack & 7)) {
		barrier_var(off);
		if (off <= MAX_STACK_COPY - 8)
			*(__u64 *)&p->sc->stack[off] = ra;
	}
	p->ri = (__u64)next;
	return 0;
}

static long uprobe_patch_cb(__u32 i, struct patch_ctx *p)
{
	return uprobe_patch_one(p);
}

/* A bpf_loop where the kernel has it: unrolled, the 8 steps' branches
 * multiplied the states the verifier follows through the rest of the
 * sampler (on_sample's load 0.025 s before, 0.13 s with them). */
static __always_inline void uprobe_patch_copy(struct scratch *sc, __u64 sp0, __u32 copied,
					      __u64 ri0, const bool compat)
{
	struct patch_ctx p = {.sc = sc, .sp0 = sp0, .ri = ri0, .copied = copied};
	__u32 i;

	if (!compat) {
		bpf_loop(UPROBE_PATCH_MAX, uprobe_patch_cb, &p, 0);
		return;
	}
	for (i = 0; i < UPROBE_PATCH_MAX; i++)
		if (uprobe_patch_one(&p))
			break;
}

/* The same for the slot of a call being entered (uprobe_entry_ra). */
static __always_inline void uprobe_patch_entry(struct scratch *sc, __u64 sp0, __u32 copied,
					       __u64 tramp)
{
	__u32 zero = 0;
	struct entry_ra *e = bpf_map_lookup_elem(&entry_ra, &zero);
	__u64 off;

	if (!e || e->tid != (__u32)bpf_get_current_pid_tgid() || e->sp < sp0 || (e->sp & 7))
		return;
	off = e->sp - sp0;
	if (off + 8 > copied)
		return;
	barrier_var(off);
	if (off <= MAX_STACK_COPY - 8 && *(__u64 *)&sc->stack[off] == tramp)
		*(__u64 *)&sc->stack[off] = e->ra;
}

#endif
