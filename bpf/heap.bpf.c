// SPDX-License-Identifier: GPL-2.0
/* --heap: the allocator's functions of the recorded processes, sampled by
 * bytes as tcmalloc and Go sample theirs. Each thread counts down the bytes
 * to its next sample, an exponential draw of mean heap_rate: an allocation
 * that reaches it is taken (one larger than the draw always is), and only
 * then is a stack copied and sent, so a stack's cost is paid once per
 * interval, not per call. The decision is made at the call's entry, where
 * the size is; the stack is taken at its return, where the address is and
 * the registers are the caller's own (its ip just past the call, no
 * allocator frame to unwind). A sampled block is kept in heap_live by its
 * address until it is freed; what is left there at the stop is in use.
 * One program for every entry and one for every return (uprobe_multi, the
 * function in the cookie); the _single pair where the kernel has no
 * uprobe_multi (one uprobe each); where it has no BPF cookies either
 * (before 5.15), an entry program per function, which names it, and the
 * single return (the function is the thread's call, set at its entry). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "bpf/events.h"
#include "bpf/maps.bpf.h"
#include "bpf/heap_sample.h"

char LICENSE[] SEC("license") = "GPL";

#define PAGE_SZ 4096
/* Bytes of stack copied at most for a sample's DWARF unwinding. */
#define HEAP_COPY_MAX 32768

const volatile bool filter_pids = true;
const volatile __u32 self_tgid = 0;
const volatile __u64 heap_rate = 512 * 1024;
const volatile __u32 stack_copy = 8192;

/* A thread's countdown to its next sample, and its allocator call in
 * progress (entry to return). depth: calls open, an allocator function
 * called by another (reallocarray's realloc) being the second; sp: the
 * outer call's entry sp, lower in a nested call, so that a return that
 * never came (a longjmp out of a callback, probes detached mid-call) is
 * seen at the next call and not taken for nesting. */
struct heap_thread {
	__s64 left;
	__u64 size, old, memptr, sp;
	__u32 func, depth;
	__u32 sampled, pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32); /* tid */
	__type(value, struct heap_thread);
} heap_threads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1 << 18); /* resized by the loader */
	__type(key, struct heap_live_key);
	__type(value, struct heap_live_val);
} heap_live SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, HEAP_STAT_NR);
	__type(key, __u32);
	__type(value, __u64);
} heap_stats SEC(".maps");

/* The record is built here and copied into the ring buffer at its true
 * length; a slot per CPU (an array indexed by CPU: a per-CPU array's
 * values are limited to 32 KiB), with the CPU's sequence of samples. */
struct heap_scratch {
	__u64 seq;
	__u8 rec[sizeof(struct ev_heap) + HEAP_COPY_MAX]; /* the ev_heap, then its stack */
};
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* the CPUs, set by the loader */
	__type(key, __u32);
	__type(value, struct heap_scratch);
} heap_scratch SEC(".maps");

static __always_inline void hcount(__u32 idx, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&heap_stats, &idx);

	if (v)
		*v += n;
}

static __always_inline bool recorded(__u32 tgid)
{
	if (filter_pids)
		return is_target(tgid);
	return tgid != self_tgid;
}

static __always_inline __u64 mul_size(__u64 n, __u64 size)
{
	/* An overflowing calloc fails without allocating. Both under 2^32
	 * cannot overflow; a division here would be compiled into a 128-bit
	 * multiply, which BPF does not have. */
	if ((n >> 32 || size >> 32) && n > 1 && size > 1)
		return 0;
	return n * size;
}

static __always_inline int heap_entry(struct pt_regs *ctx, __u32 func)
{
	__u64 id = bpf_get_current_pid_tgid(), sp = PT_REGS_SP(ctx), size = 0, old = 0, memptr = 0;
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct heap_thread *t, fresh = {};

	if (!recorded(tgid))
		return 0;
	if (func == HEAP_FREE) {
		struct heap_live_key k = {.tgid = tgid, .addr = PT_REGS_PARM1(ctx)};

		hcount(HEAP_STAT_FREES, 1);
		if (k.addr && !bpf_map_delete_elem(&heap_live, &k))
			hcount(HEAP_STAT_FREED, 1);
		return 0;
	}
	t = bpf_map_lookup_elem(&heap_threads, &tid);
	if (!t) {
		fresh.left = heap_next_interval(heap_rate, bpf_get_prandom_u32());
		bpf_map_update_elem(&heap_threads, &tid, &fresh, BPF_ANY);
		t = bpf_map_lookup_elem(&heap_threads, &tid);
		if (!t)
			return 0;
	}
	if (t->depth && sp < t->sp) {
		t->depth++;
		hcount(HEAP_STAT_NESTED, 1);
		return 0;
	}
	switch (func) {
	case HEAP_MALLOC:
	case HEAP_VALLOC:
		size = PT_REGS_PARM1(ctx);
		break;
	case HEAP_CALLOC:
		size = mul_size(PT_REGS_PARM1(ctx), PT_REGS_PARM2(ctx));
		break;
	case HEAP_REALLOC:
		old = PT_REGS_PARM1(ctx);
		size = PT_REGS_PARM2(ctx);
		break;
	case HEAP_REALLOCARRAY:
		old = PT_REGS_PARM1(ctx);
		size = mul_size(PT_REGS_PARM2(ctx), PT_REGS_PARM3(ctx));
		break;
	case HEAP_POSIX_MEMALIGN:
		memptr = PT_REGS_PARM1(ctx);
		size = PT_REGS_PARM3(ctx);
		break;
	case HEAP_ALIGNED_ALLOC:
	case HEAP_MEMALIGN:
		size = PT_REGS_PARM2(ctx);
		break;
	default:
		return 0;
	}
	t->depth = 1;
	t->sp = sp;
	t->func = func;
	t->size = size;
	t->old = old;
	t->memptr = memptr;
	hcount(HEAP_STAT_CALLS, 1);
	hcount(HEAP_STAT_BYTES, size);
	/* The interval restarts at each sample (memoryless: the same
	 * process), so an allocation is taken at most once, with the
	 * probability 1 - exp(-size / rate) that user space divides by. */
	t->left -= (__s64)size;
	t->sampled = t->left <= 0 && size;
	if (t->left <= 0)
		t->left = heap_next_interval(heap_rate, bpf_get_prandom_u32());
	return 0;
}

/* Copies the caller's stack from sp: one read of want bytes (the stack
 * above sp was all used, so mapped, up to its top), clamped to the main
 * thread's start_stack; else to the end of sp's page. The bytes copied. */
static __always_inline __u32 copy_stack(__u8 *dst, __u64 sp)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	__u64 top = BPF_CORE_READ(task, mm, start_stack);
	__u32 want = stack_copy;

	if (sp < top && top - sp < want)
		want = top - sp;
	if (want > HEAP_COPY_MAX)
		want = HEAP_COPY_MAX;
	if (want && !bpf_probe_read_user(dst, want, (void *)sp))
		return want;
	want = PAGE_SZ - (sp & (PAGE_SZ - 1));
	want = ((want - 1) & (PAGE_SZ - 1)) + 1;
	return bpf_probe_read_user(dst, want, (void *)sp) ? 0 : want;
}

static __always_inline int heap_return(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), ret = PT_REGS_RC(ctx), addr = ret;
	__u32 tgid = id >> 32, tid = (__u32)id, cpu = bpf_get_smp_processor_id(), len;
	struct heap_thread *t;
	struct heap_scratch *sc;
	struct ev_heap *e;
	struct heap_live_val v;
	struct heap_live_key k = {.tgid = tgid};

	if (!recorded(tgid))
		return 0;
	t = bpf_map_lookup_elem(&heap_threads, &tid);
	if (!t || !t->depth) {
		hcount(HEAP_STAT_NO_ENTRY, 1);
		return 0;
	}
	if (--t->depth)
		return 0; /* the inner call of a nested pair */
	/* realloc: the old block is gone when a new one came back, and when
	 * it was freed by a size of 0. */
	if (t->old && (ret || !t->size)) {
		k.addr = t->old;
		hcount(HEAP_STAT_FREES, 1);
		if (!bpf_map_delete_elem(&heap_live, &k))
			hcount(HEAP_STAT_FREED, 1);
	}
	if (t->func == HEAP_POSIX_MEMALIGN) {
		addr = 0;
		if (!ret && t->memptr)
			bpf_probe_read_user(&addr, sizeof(addr), (void *)t->memptr);
	}
	if (!addr) {
		if (t->size)
			hcount(HEAP_STAT_FAILED, 1);
		return 0;
	}
	if (!t->sampled)
		return 0;
	hcount(HEAP_STAT_SAMPLED, 1);
	sc = bpf_map_lookup_elem(&heap_scratch, &cpu);
	if (!sc)
		return 0;
	e = (struct ev_heap *)sc->rec;
	fill_hdr(&e->hdr, EV_HEAP_ALLOC, tgid, tid);
	e->addr = addr;
	e->size = t->size;
	e->func = t->func;
	e->pad = 0;
	e->seq = (sc->seq++ << 12) | (e->hdr.cpu & 0xfff);
	fill_hdr(&e->s.hdr, EV_SAMPLE, tgid, tid);
	bpf_get_current_comm(e->s.comm, sizeof(e->s.comm));
	e->s.nkernel = e->s.nuser = 0;
	e->s.flags = SAMPLE_DWARF;
	e->s.dwarf_at = 0;
	e->s.stack_id = 0;
	e->s.npython = e->s.njvm = 0;
	e->s.nv8 = e->s.pad = 0;
	/* After the return: the caller's registers, its ip just past the
	 * call (the kernel put the real return address back before the
	 * return programs run). */
	e->s.uregs[UREG_IP] = PT_REGS_IP(ctx);
	e->s.uregs[UREG_SP] = PT_REGS_SP(ctx);
	e->s.uregs[UREG_BP] = PT_REGS_FP(ctx);
	len = copy_stack(sc->rec + sizeof(*e), e->s.uregs[UREG_SP]);
	e->s.stack_len = len;
	len += sizeof(*e);
	if (len > sizeof(*e) + HEAP_COPY_MAX)
		return 0;
	if (bpf_ringbuf_output(&events, e, len, rb_flags())) {
		hcount(HEAP_STAT_LOST, 1);
		return 0;
	}
	hcount(HEAP_STAT_SENT, 1);
	/* Followed to its free only once its stack is sent: every block in
	 * heap_live has its record. */
	k.addr = addr;
	v.seq = e->seq;
	v.size = t->size;
	if (bpf_map_update_elem(&heap_live, &k, &v, BPF_ANY))
		hcount(HEAP_STAT_LIVE_FULL, 1);
	return 0;
}

/* Loaded with expected_attach_type BPF_TRACE_UPROBE_MULTI by the loader. */
SEC("uprobe")
int heap_entry_multi(struct pt_regs *ctx)
{
	return heap_entry(ctx, bpf_get_attach_cookie(ctx));
}

SEC("uprobe")
int heap_return_multi(struct pt_regs *ctx)
{
	return heap_return(ctx);
}

SEC("uprobe")
int heap_entry_single(struct pt_regs *ctx)
{
	return heap_entry(ctx, bpf_get_attach_cookie(ctx));
}

SEC("uretprobe")
int heap_return_single(struct pt_regs *ctx)
{
	return heap_return(ctx);
}

/* Without BPF cookies: the function named by its program (the loader
 * loads these only then, and the cookie programs only otherwise, which a
 * kernel without bpf_get_attach_cookie would refuse). */
#define HEAP_ENTRY_FN(name, func)                                                                  \
	SEC("uprobe")                                                                              \
	int heap_entry_##name(struct pt_regs *ctx)                                                 \
	{                                                                                          \
		return heap_entry(ctx, func);                                                      \
	}
HEAP_ENTRY_FN(malloc, HEAP_MALLOC)
HEAP_ENTRY_FN(calloc, HEAP_CALLOC)
HEAP_ENTRY_FN(realloc, HEAP_REALLOC)
HEAP_ENTRY_FN(reallocarray, HEAP_REALLOCARRAY)
HEAP_ENTRY_FN(free, HEAP_FREE)
HEAP_ENTRY_FN(posix_memalign, HEAP_POSIX_MEMALIGN)
HEAP_ENTRY_FN(aligned_alloc, HEAP_ALIGNED_ALLOC)
HEAP_ENTRY_FN(memalign, HEAP_MEMALIGN)
HEAP_ENTRY_FN(valloc, HEAP_VALLOC)
