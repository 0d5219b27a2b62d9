/* What the sampler's units share (bpf/sample.bpf.c, bpf/cfi_walk.bpf.c,
 * bpf/offcpu.bpf.c, joined into one object by libbpf's static linker, the
 * Makefile's sample.linked.o): its rodata and maps, defined by sample.bpf.c
 * and declared extern in the others (SHARED, bpf/maps.bpf.h), the per-CPU
 * scratch slot (struct scratch) and the helpers that fill and send a record
 * (copy_stack, emit, send_sample, user_regs). Static and inlined, as they
 * were in the one unit: global functions would take only scalars and ctx
 * on 5.10, and each unit's programs keep the verifier's stack figures they
 * had (tests/unit/test_bpf_stack.c). Included at the top of each unit,
 * before bpf/cfi_walk.bpf.h. */
#ifndef BPF_SAMPLER_BPF_H
#define BPF_SAMPLER_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "bpf/events.h"
#include "bpf/maps.bpf.h"
#include "bpf/cfi.h"
#include "bpf/runtime/python_maps.bpf.h"
#include "bpf/runtime/jvm_maps.bpf.h"
#include "bpf/runtime/v8_maps.bpf.h"

/* Only tgids in `targets`. */
SHARED const volatile bool filter_pids SHARED_INIT(false);
/* Children of targets become targets. */
SHARED const volatile bool follow_forks SHARED_INIT(true);
/* With !filter_pids: the idle task too. */
SHARED const volatile bool include_idle SHARED_INIT(false);
SHARED const volatile bool kernel_stacks SHARED_INIT(true);
SHARED const volatile bool user_stacks SHARED_INIT(true);
SHARED const volatile __u32 self_tgid SHARED_INIT(0); /* never sampled: the recorder itself */

#define PF_KTHREAD 0x00200000 /* include/linux/sched.h: a kernel thread */

/* Per-process count of samples the ring buffer could not take. */
SHARED struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct lost_val);
} lost_by_pid SEC(".maps");

/* Under -a, the processes that had a sample or an off-CPU stack sent:
 * only their exit-time mappings are sent (exit_vmas), as user space names
 * no other process's frames. A churning host's short processes are mostly
 * never sampled, and walking each one's VMAs at its exit cost 11 us (0.18 %
 * of a core at 160 exits a second). With a target list (or USDT under -a,
 * whose probes fire in processes never sampled) every recorded process's
 * are sent. An entry evicted (more than this many processes sampled and
 * alive) costs only the libraries its process mapped after its maps were
 * read. */
SHARED const volatile bool exit_maps_all SHARED_INIT(true);
SHARED struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32); /* tgid */
	__type(value, __u8);
} exit_named SEC(".maps");

static __always_inline void exit_name(__u32 tgid)
{
	__u8 one = 1;

	if (!exit_maps_all && tgid && !bpf_map_lookup_elem(&exit_named, &tgid))
		bpf_map_update_elem(&exit_named, &tgid, &one, BPF_ANY);
}

/* User frames walked at most (--max-stack, <= MAX_USER_STACK): the CFI and
 * frame-pointer walks end a deeper stack there with SAMPLE_MAX_STACK. */
SHARED const volatile __u32 max_stack SHARED_INIT(MAX_STACK_DEFAULT);

#define IPS_N	(MAX_FRAMES + MAX_USER_STACK)
#define IPS_MAX (IPS_N * sizeof(__u64))
#define PAGE_SZ 4096
#define COPY_AREA                                                                                  \
	(MAX_STACK_COPY + PAGE_SZ) /* a page of slack keeps the verifier's bounds simple */

/* Bytes of user stack copied from sp at each sample: stack_copy_walk for
 * the walks' first window (not sent; WALK_COPY or CFI_WALK_COPY),
 * stack_copy_dwarf for samples unwound with DWARF: every one under
 * --call-graph dwarf (dwarf_all), else those the CFI walk cannot go on
 * with (bpf/cfi_walk.bpf.h). */
SHARED const volatile __u32 stack_copy_walk SHARED_INIT(0);
SHARED const volatile __u32 stack_copy_dwarf SHARED_INIT(0);
SHARED const volatile bool dwarf_all SHARED_INIT(false);

/* The record is built here, then copied once into the ring buffer at its
 * true length: the BPF stack is only 512 bytes. One slot per CPU (an array,
 * not a per-CPU array, whose values are limited to 32 KiB). */
/* Reads of the walk beyond the copy: the first takes WIN_FIRST bytes (most
 * chains end within them), later ones the rest of a page (a deep chain). */
#define WIN_FIRST 512
#define WIN_SZ	  PAGE_SZ

/* A record's Python frames (bpf/runtime/python.bpf.c), after its ips; the
 * compat walk's fewer. */
#define PY_MAX	      (PY_BPF_FRAMES * sizeof(struct py_bpf_frame))
#define PY_COMPAT_MAX (PY_COMPAT_FRAMES * sizeof(struct py_bpf_frame))
/* ... and its Java frames (bpf/runtime/jvm.bpf.c), after those. */
#define JVM_MAX (JVM_BPF_FRAMES * sizeof(struct jvm_bpf_frame))
/* ... and its JavaScript frames (bpf/runtime/v8.bpf.c), after those. */
#define V8_MAX	 (V8_BPF_FRAMES * sizeof(struct v8_bpf_frame))
#define HEAD_MAX (sizeof(struct ev_sample) + IPS_MAX + PY_MAX + JVM_MAX + V8_MAX)
/* The compat sampler's user stacks: bpf_get_stack's MAX_FRAMES, or the CFI
 * walk's tail-call budget (bpf/cfi_walk.bpf.h: CFI_COMPAT_FRAMES). */
#define COMPAT_USER_MAX 256
/* The compat walker's Java frames: one a user frame of its 248
 * (CFI_COMPAT_FRAMES). */
#define JVM_COMPAT_FRAMES 248
#define JVM_COMPAT_MAX	  (JVM_COMPAT_FRAMES * sizeof(struct jvm_bpf_frame))
/* Its JavaScript frames: the same (a process runs a JVM or V8, not both,
 * but the bounds hold for both areas). */
#define V8_COMPAT_FRAMES 248
#define V8_COMPAT_MAX	 (V8_COMPAT_FRAMES * sizeof(struct v8_bpf_frame))
#define PRE_MAX                                                                                    \
	(sizeof(struct ev_sample) + (MAX_FRAMES + COMPAT_USER_MAX) * sizeof(__u64) +               \
	 PY_COMPAT_MAX + JVM_COMPAT_MAX + V8_COMPAT_MAX)

/* The CFI walk's state between its tail calls (bpf/cfi_walk.bpf.h). */
struct cfi_state {
	__u64 pc, sp, bp;	     /* the current frame's registers */
	__u64 addr;		     /* its lookup address: pc, or pc - 1 after a call */
	__u64 sp0;		     /* the sample's sp, where the stack copy starts */
	__u32 copied;		     /* bytes of stack copied from sp0 */
	__u32 tgid, nk, n;	     /* n: user ips so far, after the nk kernel ones */
	__u32 calls;		     /* tail calls so far */
	__u64 tramp;		     /* the uretprobe trampoline's address, or 0 */
	__u64 ri;		     /* the next struct return_instance to match against it */
	__u64 ri0;		     /* the first (innermost) one */
	__u32 notable;		     /* a pc of a process or binary with no table: copy for DWARF */
	__u32 nt_n;		     /* n when the walk met the first such pc (0: none) */
	__u64 nt_addr, nt_sp, nt_bp; /* ... and that frame's lookup address, sp and rbp */
	__u32 m_table;		     /* the last mapping found (struct cfi_mapping), while */
	__s32 done;		     /* the last step's CFI_GO or CFI_DONE_* (cfi_block) */
	__u64 m_start, m_end, m_bias; /* ... pcs stay in [m_start, m_end) */
	__u64 gen;		      /* cfi_gen's at the walk's start: the caches' tag */
	__u32 vma_done;		      /* bpf_find_vma was called (it works once) */
	__u32 py;		      /* a CPython of py_procs: 0 not looked up, 1 no, 2 yes */
	__u32 jvm;		      /* a JVM of jvm_procs: the same */
	__u32 jvm_slot;		      /* the walk's jvm_scratch slot (JVM_SLOT_*) */
	__u64 jvm_lo, jvm_hi;	      /* its code cache */
	__u64 jvm_ra, jvm_cfa;	      /* the HotSpot step's caller (cfi_jvm) */
	__u32 v8;		      /* a V8 of v8_procs: as py and jvm */
	__u32 v8_anon;		      /* the frame's pc is in no mapping with a table */
	__u64 v8_lo, v8_hi;	      /* its embedded builtins */
	__u64 r13;		      /* the sample's (the interpreter's bytecode pointer) */
	struct cfi_pcache pcache;     /* a new cfi_pcache value, built here */
};

/* What the CFI walk found, kept across samples on this CPU (the slot
 * outlives the sample): the next samples of a process mostly return
 * through the same call sites, whose rows are then had without a trie
 * lookup or a table search (those were most of a shallow walk's cost).
 * Entries are tagged with the process and cfi_gen (bpf/cfi_walk.bpf.h),
 * which changes whenever user space changes a mapping or frees a table
 * id, and at each exec. */
#define CFI_RC_BITS 7 /* rows: 128 entries, direct-mapped by lookup address */
#define CFI_MC_N    4 /* mappings, replaced in turn */
struct cfi_cache {
	/* 32 bytes, aligned: one cache line per lookup (the slot is cold at
	 * each sample: docs/benchmarks.md). */
	struct {
		__u64 lo; /* the row's first pc in the process */
		__u64 gen;
		__u32 len; /* its pcs: [lo, lo + len) */
		__u32 tgid;
		struct cfi_row row;
	} rc[1 << CFI_RC_BITS] __attribute__((aligned(64)));
	struct {
		__u64 start, end, bias, gen;
		__u32 tgid, table;
	} mc[CFI_MC_N];
	__u32 mc_next, pad;
};

struct scratch {
	__u64 head[HEAD_MAX / sizeof(__u64)]; /* ev_sample + ips */
	/* Kernels without ring-buffer dynptrs (before 5.19) take a record in
	 * one piece (bpf_ringbuf_output): the header and ips are copied here,
	 * to end where the stack copy starts. */
	__u8 pre[PRE_MAX];
	__u8 stack[COPY_AREA];
	__u8 win[WIN_SZ]; /* stack the walk read beyond the copy */
	/* What win holds, and the reads so far. Here, not in walk_ctx: the
	 * verifier tracks exact values on the stack, and each would multiply
	 * the states it visits in the walk's loop past its limit. */
	__u64 win_lo, win_len, win_reads;
	struct cfi_state cfi;
	struct cfi_cache cc;
	__u64 wake; /* send the record with a wakeup (the drain's attention now) */
	__u64 npy;  /* Python frames this sample's walk left in py_scratch */
	/* Room for emit_compat's bounds on 5.10's verifier, which takes the
	 * record's start in pre at its lowest and its length at its highest:
	 * pre's Java frames count twice there. Never written. */
	__u8 compat_slack[JVM_COMPAT_MAX + V8_COMPAT_MAX];
} __attribute__((aligned(64))); /* each CPU's slot starts a cache line */

/* Mmapable only for the layout: such an array's values start page-aligned,
 * so that the slots and their row caches are cache-line aligned. */
SHARED struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1); /* set to the number of CPUs by the loader */
	__type(key, __u32);
	__type(value, struct scratch);
} scratch_map SEC(".maps");

#include "bpf/uprobe_regs.bpf.h"

struct copy_ctx {
	struct scratch *sc;
	__u64 sp, want;
	__u32 copied;
};

/* Copies the next piece of user stack, up to the end of its page:
 * bpf_probe_read_user is all-or-nothing, and a stack often ends (or has a
 * never-touched page) closer than the size asked for. Returns 0 on success. */
static __always_inline int copy_more(struct scratch *sc, __u64 sp, __u32 *copied, __u64 want)
{
	__u64 addr = sp + *copied, chunk;
	__u32 off = *copied;

	chunk = PAGE_SZ - (addr & (PAGE_SZ - 1));
	if (chunk > want - off)
		chunk = want - off;
	if (off > MAX_STACK_COPY || chunk > PAGE_SZ || !chunk)
		return -1;
	/* Restated for the verifier, which on some kernels (5.10, 6.12) loses
	 * the bounds just checked across clang's register copies: 1..PAGE_SZ
	 * by construction. The barrier keeps clang from dropping it. */
	barrier_var(chunk);
	chunk = ((chunk - 1) & (PAGE_SZ - 1)) + 1;
	if (bpf_probe_read_user(&sc->stack[off], chunk, (void *)addr))
		return -1;
	*copied += chunk;
	return 0;
}

static long copy_page(__u32 i, struct copy_ctx *c)
{
	if (c->copied >= c->want)
		return 1;
	return copy_more(c->sc, c->sp, &c->copied, c->want) ? 1 : 0;
}

/* Copies user stack from sp page by page, keeping what was read before the
 * first failure. bpf_loop, not an unrolled loop: the verifier then checks one
 * page's copy instead of every iteration, which took it most of a second.
 * Kernels before 5.17 (compat) have no bpf_loop: a bounded loop there. */
static __always_inline __u32 copy_stack(struct scratch *sc, __u64 sp, __u64 want, const bool compat)
{
	struct copy_ctx c = {.sc = sc, .sp = sp, .want = want};
	__u32 i;

	/* Most often (the walks' first window) it is one read within one page. */
	if (want <= PAGE_SZ - (sp & (PAGE_SZ - 1)))
		return copy_more(sc, sp, &c.copied, want) ? 0 : c.copied;
	if (!compat) {
		bpf_loop(MAX_STACK_COPY / PAGE_SZ + 2, copy_page, &c, 0);
		return c.copied;
	}
	for (i = 0; i < MAX_STACK_COPY / PAGE_SZ + 2; i++)
		if (copy_page(i, &c))
			break;
	return c.copied;
}

/* The record: header and ips from the scratch slot's head, then slen bytes
 * of stack. Non-zero when the ring buffer is full. */
static __always_inline int emit(struct scratch *sc, __u64 ips_len, __u32 slen)
{
	struct bpf_dynptr rec;
	__u64 hlen = sizeof(struct ev_sample) + ips_len;

	if (bpf_ringbuf_reserve_dynptr(&events, hlen + slen, 0, &rec)) {
		bpf_ringbuf_discard_dynptr(&rec, 0);
		return -1;
	}
	if (hlen <= HEAD_MAX)
		bpf_dynptr_write(&rec, 0, sc->head, hlen, 0);
	if (slen)
		bpf_dynptr_write(&rec, hlen, sc->stack, slen, 0);
	bpf_ringbuf_submit_dynptr(&rec, sc->wake ? BPF_RB_FORCE_WAKEUP : rb_flags());
	return 0;
}

/* The same in one piece for bpf_ringbuf_output: the header and ips are moved
 * to end where the stack copy starts (a few hundred bytes, usually). */
static __always_inline int emit_compat(struct scratch *sc, __u64 ips_len, __u32 slen)
{
	__u64 hlen = sizeof(struct ev_sample) + ips_len, off = PRE_MAX - hlen;

	/* Bounds on off itself: pre - hlen + PRE_MAX, as clang would rewrite
	 * it, is a pointer the verifier cannot bound. */
	barrier_var(off);
	if (off > PRE_MAX - sizeof(struct ev_sample) || hlen > PRE_MAX)
		return 0;
	bpf_probe_read_kernel(&sc->pre[off], hlen, sc->head);
	return bpf_ringbuf_output(&events, &sc->pre[off], hlen + slen,
				  sc->wake ? BPF_RB_FORCE_WAKEUP : rb_flags())
		   ? -1
		   : 0;
}

/* The npy Python frames the walk left in py_scratch's slot, after the
 * record's ips (ips_len bytes of them): the new length. Only the walk of
 * this record's thread (the same CPU, the same thread). */
static __always_inline __u64 py_append(struct ev_sample *s, __u64 ips_len, __u64 npy, __u32 slot,
				       const bool compat)
{
	struct py_bpf_stack *ps;
	__u64 len;

	s->npython = 0;
	slot = py_slot_key(slot);
	if (!npy || !(ps = bpf_map_lookup_elem(&py_scratch, &slot)))
		return ips_len;
	/* The compat record is copied whole into pre (emit_compat), sized
	 * for the compat walk's frames. */
	if (npy > (compat ? PY_COMPAT_FRAMES : PY_BPF_FRAMES))
		npy = compat ? PY_COMPAT_FRAMES : PY_BPF_FRAMES;
	len = npy * sizeof(struct py_bpf_frame);
	barrier_var(len);
	if (ps->tid != s->hdr.tid || len > PY_MAX || ips_len > IPS_MAX)
		return ips_len;
	bpf_probe_read_kernel((char *)s->ips + ips_len, len, ps->frames);
	s->npython = npy;
	if (ps->truncated)
		s->flags |= SAMPLE_PY_TRUNC;
	return ips_len + len;
}

/* The Java frames the CFI walk recorded in jvm_scratch's slot (bpf/runtime/jvm.bpf.c),
 * after the record's ips and Python frames (len bytes of them): the new
 * length. Only this walk's (cfi.jvm, set at its first frame in a JVM's
 * code cache, for this thread). */
static __always_inline __u64 jvm_append(struct scratch *sc, struct ev_sample *s, __u64 len,
					const bool compat)
{
	__u32 slot = sc->cfi.jvm_slot;
	struct jvm_bpf_step *js;
	__u64 n, bytes;

	s->njvm = 0;
	if (sc->cfi.jvm != 2 || !(js = bpf_map_lookup_elem(&jvm_scratch, &slot)))
		return len;
	n = js->n;
	if (!n || js->tid != s->hdr.tid)
		return len;
	if (n > JVM_BPF_FRAMES)
		n = JVM_BPF_FRAMES;
	/* The compat record is copied whole into pre (emit_compat), sized
	 * for the compat walk's frames: its deepest stacks lose their
	 * outermost Java frames' names, flagged. */
	if (compat && n > JVM_COMPAT_FRAMES) {
		n = JVM_COMPAT_FRAMES;
		s->flags |= SAMPLE_JVM_TRUNC;
	}
	bytes = n * sizeof(struct jvm_bpf_frame);
	barrier_var(bytes);
	if (bytes > JVM_MAX || len > IPS_MAX + PY_MAX)
		return len;
	bpf_probe_read_kernel((char *)s->ips + len, bytes, js->frames);
	s->njvm = n;
	if (js->truncated)
		s->flags |= SAMPLE_JVM_TRUNC;
	return len + bytes;
}

/* The JavaScript frames the CFI walk recorded in v8_scratch's slot
 * (bpf/runtime/v8.bpf.c), after the record's Java frames (len bytes of ips and
 * frames before): the new length. As jvm_append. */
static __always_inline __u64 v8_append(struct scratch *sc, struct ev_sample *s, __u64 len,
				       const bool compat)
{
	__u32 slot = sc->cfi.jvm_slot;
	struct v8_bpf_step *vs;
	__u64 n, bytes;

	s->nv8 = 0;
	if (sc->cfi.v8 != 2 || !(vs = bpf_map_lookup_elem(&v8_scratch, &slot)))
		return len;
	n = vs->n;
	if (!n || vs->tid != s->hdr.tid)
		return len;
	if (n > V8_BPF_FRAMES)
		n = V8_BPF_FRAMES;
	if (compat && n > V8_COMPAT_FRAMES) {
		n = V8_COMPAT_FRAMES;
		s->flags |= SAMPLE_V8_TRUNC;
	}
	bytes = n * sizeof(struct v8_bpf_frame);
	barrier_var(bytes);
	if (bytes > V8_MAX || len > IPS_MAX + PY_MAX + JVM_MAX)
		return len;
	bpf_probe_read_kernel((char *)s->ips + len, bytes, vs->frames);
	s->nv8 = n;
	if (vs->truncated)
		s->flags |= SAMPLE_V8_TRUNC;
	return len + bytes;
}

/* Sends the record built in the slot: nk kernel and nu user ips. */
static __always_inline int send_sample(struct scratch *sc, __u64 nk, __u64 nu, const bool compat)
{
	struct ev_sample *s = (struct ev_sample *)sc->head;
	__u32 tgid = s->hdr.pid, slen;
	__u64 ips_len;

	if (nk > MAX_FRAMES)
		nk = MAX_FRAMES;
	if (nu > (compat ? COMPAT_USER_MAX : MAX_USER_STACK))
		nu = compat ? COMPAT_USER_MAX : MAX_USER_STACK;
	s->nuser = nu;

	ips_len = (nk + nu) * sizeof(__u64);
	if (ips_len > IPS_MAX)
		return 0; /* cannot happen: nk <= MAX_FRAMES, nu <= MAX_USER_STACK */
	ips_len = py_append(s, ips_len, sc->npy, PY_SLOT_SAMPLE, compat);
	ips_len = jvm_append(sc, s, ips_len, compat);
	ips_len = v8_append(sc, s, ips_len, compat);
	/* The mask only informs the verifier: stack_len <= MAX_STACK_COPY < 64 KiB. */
	slen = s->stack_len & 0xffff;
	if (compat ? emit_compat(sc, ips_len, slen) : emit(sc, ips_len, slen)) {
		struct lost_val *v, first = {.count = 1};

		count(STAT_LOST);
		v = bpf_map_lookup_elem(&lost_by_pid, &tgid);
		if (v) {
			__sync_fetch_and_add(&v->count, 1);
		} else {
			__builtin_memcpy(first.comm, s->comm, sizeof(first.comm));
			bpf_map_update_elem(&lost_by_pid, &tgid, &first, BPF_NOEXIST);
		}
	}
	return 0;
}

/* send_sample as a global function (bpf/sample.bpf.c defines it), for the
 * programs of kernels with bpf_loop: the verifier checks it once, on its
 * own, where inlined it followed it again for each way a sample gets there
 * (the sampler's kernel and user registers, the walks that end in it, each
 * walk's ways to end): on_sample's 74,376 instructions processed on 6.18
 * became 38,527 (6,118 of them this function's). Scalars only: the CPU's
 * slot is looked up again. */
int sample_send(__u32 nk, __u32 nu);

/* x86_64's task_pt_regs(): the user registers sit at the top of the
 * task's kernel stack (THREAD_SIZE 16 KiB, no padding before FRED, 6.9);
 * for kernels without bpf_task_pt_regs (5.15), which have neither. */
#define THREAD_SIZE_X86 16384
static __always_inline struct pt_regs *user_regs(struct task_struct *task, const bool compat)
{
	if (!compat)
		return (struct pt_regs *)bpf_task_pt_regs(task);
	return (struct pt_regs *)((char *)BPF_CORE_READ(task, stack) + THREAD_SIZE_X86) - 1;
}

/* -d's end (CLOCK_MONOTONIC ns; 0: none), written by user space at the
 * start: a sample, or the part of an off-CPU wait, after it is not the
 * recording's, however late the drain gets to the stop (busy with one record
 * for seconds, such as a large binary's symbols on a loaded machine, it let
 * -a -F 50000 -d 2 sample on for 9.5 s, into a full ring buffer). */
SHARED volatile __u64 sample_until_ns SHARED_INIT(0);

#endif
