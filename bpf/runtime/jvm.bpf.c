// SPDX-License-Identifier: GPL-2.0
/* The HotSpot frame walk in BPF (bpf/runtime/jvm.h says what it does), a compilation
 * unit of its own, linked into the sampler by libbpf's static linker as the
 * Python walk is (the Makefile).
 *
 * jvm_unwind, from the CFI walk (bpf/cfi_walk.bpf.h) at each frame whose pc
 * lies in the code cache of a process in jvm_procs: one frame, its record
 * appended to the slot, its caller's registers put back for the CFI walk to
 * go on with. A global function: the verifier checks it once, on its own,
 * whatever the walkers that call it. Only bounded loops: it loads on 5.10,
 * as the compat walker that calls it. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#define JVM_EXTERN /* the definitions */
#include "bpf/runtime/jvm_maps.bpf.h"
#include "bpf/runtime/jvm_code.h"

/* The counter's key in the slot, not on the stack (jvm_unwind's below). */
static __always_inline void jvm_count_n(struct jvm_bpf_step *st, __u32 what, __u32 n)
{
	__u64 *v;

	st->stat = what;
	v = bpf_map_lookup_elem(&jvm_stats, &st->stat);

	if (v)
		*v += n;
}

static __always_inline void jvm_count(struct jvm_bpf_step *st, __u32 what)
{
	jvm_count_n(st, what, 1);
}

/* A field of the blob read into the slot; 0 when off is past the read. */
static __always_inline __u64 blob_u64(const struct jvm_bpf_step *st, __u32 off)
{
	if (off > JVM_BLOB_READ - 8)
		return 0;
	return *(const __u64 *)&st->blob_buf[off];
}

static __always_inline __s32 blob_s32(const struct jvm_bpf_step *st, __u32 off)
{
	if (off > JVM_BLOB_READ - 4)
		return 0;
	return *(const __s32 *)&st->blob_buf[off];
}

/* The CodeBlob holding pc, by its heap's segment map (HotSpot's
 * CodeHeap::find_blob): each segment's byte says how many segments back
 * the block's first one is, in hops of at most 0xfe; 0xff marks a free
 * segment. 0: none. */
static __always_inline __u64 find_blob(const struct jvm_bpf_step *st, __u64 pc)
{
	__u64 lo = 0, segmap = 0, seg;
	__u8 tag = 0xff;
	__u32 i;

	for (i = 0; i < JVM_HEAPS; i++)
		if (i < st->pr.nheaps && pc >= st->pr.heap[i].lo && pc < st->pr.heap[i].hi) {
			lo = st->pr.heap[i].lo;
			segmap = st->pr.heap[i].segmap;
			break;
		}
	if (!lo || !segmap || st->pr.seg_shift > 16)
		return 0;
	seg = (pc - lo) >> st->pr.seg_shift;
	for (i = 0; i < JVM_SEGMAP_HOPS; i++) {
		if (bpf_probe_read_user(&tag, 1, (void *)(segmap + seg)))
			return 0;
		if (tag == 0 || tag == 0xff || tag > seg)
			break;
		seg -= tag;
	}
	if (tag != 0)
		return 0;
	return lo + (seg << st->pr.seg_shift) + st->pr.block_size;
}

/* len bytes of stack at addr into st->w, through the window (struct
 * jvm_bpf_step's win): 0, or -1 when not readable. len is a constant of
 * the caller's, at most 128. */
static __always_inline int stack_rd(struct jvm_bpf_step *st, __u64 addr, __u32 len)
{
	__u64 off = addr - st->win_lo, n;

	if (addr < st->win_lo || off + len > st->win_len) {
		n = 4096 - (addr & 4095);
		if (n < len) /* across a page: alone (the next may be unmapped) */
			return bpf_probe_read_user(st->w, len, (void *)addr) ? -1 : 0;
		barrier_var(n);
		n = ((n - 1) & 4095) + 1;
		if (bpf_probe_read_user(st->win, n, (void *)addr)) {
			st->win_len = 0;
			return -1;
		}
		st->win_lo = addr;
		st->win_len = (__u32)n;
		off = 0;
	}
	barrier_var(off);
	if (off > 4096 - len)
		return -1;
	/* Loads, not a helper call: len is the caller's constant. */
	__builtin_memcpy(st->w, &st->win[off], len);
	return 0;
}

/* Whether a word is a pc in the code cache: a return address into Java
 * code, a stub or the call stub. */
static __always_inline bool in_cache(const struct jvm_bpf_step *st, __u64 pc)
{
	return pc >= st->pr.cc_lo && pc < st->pr.cc_hi;
}

/* The mcache entry of st->addr (a Method*). */
static __always_inline struct jvm_mcache_ent *jvm_mcache(struct jvm_bpf_step *st)
{
	return &st->mcache[((st->addr * 0x9e3779b97f4a7c15ULL) >> (64 - JVM_MCACHE_BITS)) &
			   ((1 << JVM_MCACHE_BITS) - 1)];
}

/* A Symbol's hash (the high 16 bits of _hash_and_refcount) through the
 * pool slot at cp's index i, into *h: 0, or -1 where it cannot be read. */
static __always_inline int slot_hash(struct jvm_bpf_step *st, __u64 cp, __u16 i, __u32 *h)
{
	/* One destination for every read: one pointer the compiler keeps. */
	if (bpf_probe_read_user(&st->w[14], 8, (void *)(cp + st->pr.cp_size + 8 * (__u64)i)) ||
	    bpf_probe_read_user(&st->w[14], 4, (void *)(st->w[14] + st->pr.sym_hash)))
		return -1;
	*h = (__u32)st->w[14] >> 16;
	return 0;
}

/* The token (bpf/runtime/jvm.h's jvm_token) of the method whose
 * ConstMethod is st->tk_cm, read while the frame runs, so its class is alive.
 * User space names the frame only where its own later read finds the
 * same: a class unloaded since has its memory taken by the next class
 * loaded at the very same addresses, and its Symbols' by the next names
 * made (JChurn: B's oddSpin read later as A's "evenSpin", B's run with
 * A's lines); the ConstMethod's address, the cookie, is the same for
 * both. 0 where it cannot be read (a frame user space then names only by
 * chance, 1 in 65,536). Reads into w[12..15], past the frame's words, and
 * cp_head: on an mcache miss only, 4 to 7 of them. */
static __always_inline __u32 method_token(struct jvm_bpf_step *st)
{
	__u8 *cmw = (__u8 *)&st->w[12];
	__u32 o;

	if (st->pr.sym_hash == JVM_NO_TOKEN ||
	    bpf_probe_read_user(cmw, 32, (void *)(st->tk_cm + st->pr.cm_constants)))
		return 0;
	/* Each offset bounded in the 32 bytes read (user space checked them;
	 * the verifier is shown). */
	o = (__u32)(st->pr.cm_name_index - st->pr.cm_constants) & 31;
	if (o > 30)
		return 0;
	st->tk_ni = *(__u16 *)(cmw + o);
	o = (__u32)(st->pr.cm_code_size - st->pr.cm_constants) & 31;
	if (o > 30)
		return 0;
	st->tk_code_size = *(__u16 *)(cmw + o);
	o = (__u32)(st->pr.cm_flags - st->pr.cm_constants) & 31;
	if (o > 30)
		return 0;
	st->tk_flags = *(__u16 *)(cmw + o);
	o = (__u32)(st->pr.cm_words - st->pr.cm_constants) & 31;
	if (o > 28)
		return 0;
	st->tk_words = *(__u32 *)(cmw + o);
	/* w[12], the pool, is kept: slot_hash reads into w[14..15]. */
	if (bpf_probe_read_user(st->cp_head, 64, (void *)st->w[12]))
		return 0;
	o = st->pr.cp_source_file & 63;
	if (o > 62)
		return 0;
	st->tk_sfi = *(__u16 *)&st->cp_head[o];
	st->tk_hs = 0;
	if (slot_hash(st, st->w[12], st->tk_ni, &st->tk_hn) ||
	    (st->tk_sfi && slot_hash(st, st->w[12], st->tk_sfi, &st->tk_hs)))
		return 0;
	st->tk_lines = 0;
	if (st->tk_flags & st->pr.lines_flag) {
		/* The table's bytes in the ConstMethod (what follows it may be
		 * a live object's, which changes). */
		__u64 at = st->tk_cm + st->pr.cm_size + st->tk_code_size,
		      end = st->tk_cm + 8 * (__u64)st->tk_words;

		if (at < end) {
			st->tk_lines = end - at; /* its bytes there, until read */
			if (bpf_probe_read_user(&st->w[14], 8, (void *)at))
				return 0;
			st->tk_lines = jvm_token_bytes(st->w[14], st->tk_lines);
		}
	}
	return jvm_token(st->tk_hn, st->tk_hs, st->tk_code_size, st->tk_lines);
}

/* The interpreter's frame at rbp: its Method* and bytecode index (and the
 * method's token), and its caller's registers. */
static __always_inline int step_interp(struct jvm_bpf_step *st)
{
	/* fp[-10] .. fp[1]: the slots (frame_x86.hpp's, -8 .. -1), the saved
	 * rbp and the return address. */
	__u64 *w = st->w, fp = st->bp, cm = 0, bcp;
	struct jvm_mcache_ent *mc;
	__u32 token;
	int im, ib, is;

	if (fp < st->sp || fp - st->sp > (1u << 20) || (fp & 7))
		return -1;
	if (stack_rd(st, fp - 80, 12 * 8))
		return -2;
	/* The slots' indices after the read, not kept across it (registers
	 * the stack would hold: jvm_unwind's frame). */
	im = st->pr.if_method + 10;
	ib = st->pr.if_bcp + 10;
	is = st->pr.if_sender_sp + 10;
	if (im < 0 || im > 9 || ib < 0 || ib > 9 || is < 0 || is > 9)
		return -1;
	/* Indices from 0 for the verifier (not w + 80 + 8 * slot). */
	barrier_var(im);
	barrier_var(ib);
	barrier_var(is);
	st->addr = w[im];
	bcp = st->leaf ? st->r13 : w[ib];
	mc = jvm_mcache(st);
	if (mc->method == st->addr && mc->tgid == st->tgid && st->now - mc->t < JVM_BCACHE_NS) {
		cm = mc->cm;
		token = mc->token;
	} else {
		/* In the slot, not a register kept across the reads (the
		 * stack the walkers share). */
		if (bpf_probe_read_user(&st->tk_cm, 8, (void *)(st->addr + st->pr.m_const)))
			return -2;
		token = method_token(st);
		cm = st->tk_cm;
		mc = jvm_mcache(st); /* not kept across the call: a register less */
		mc->method = st->addr;
		mc->cm = cm;
		mc->t = st->now;
		mc->tgid = st->tgid;
		mc->token = token;
	}
	cm += st->pr.cm_size; /* the bytecodes follow the ConstMethod */
	if (st->leaf && (bcp < cm || bcp - cm >= 0xffff))
		bcp = w[ib]; /* r13 not the bytecode pointer here: the slot's */
	st->off = (bcp >= cm && bcp - cm < 0xffff ? (__u32)(bcp - cm) : 0xffff) | token << 16;
	st->cookie = JVM_CM_COOKIE(cm - st->pr.cm_size);
	/* The caller: its sp is this frame's sender sp (the unextended one,
	 * from which a compiled caller's frame size counts). */
	st->sp = w[is];
	st->bp = w[10];
	st->pc = w[11];
	return 0;
}

/* A compiled frame whose pc is the sample's: what of it is on the stack,
 * from the code around the pc (bpf/runtime/jvm_code.h): its result, 0 when
 * the frame is whole or the code cannot be read. */
static __always_inline __u32 leaf_partial(struct jvm_bpf_step *st)
{
	if (bpf_probe_read_user(st->w, JVM_CODE_LEN, (void *)(st->pc - JVM_CODE_AT)))
		return 0;
	return jvm_code_partial((jvm_code_t)st->w, st->pc, st->begin, st->complete);
}

/* The blob at st's pc and the fields the step takes of it, into st: 0, or
 * a jvm_unwind result. */
static __always_inline int blob_read(struct jvm_bpf_step *st)
{
	st->blob = find_blob(st, st->pc);
	if (!st->blob) {
		jvm_count(st, JVM_STAT_NO_BLOB);
		return JVM_STEP_NOT_JAVA;
	}
	/* The header, read past its end where the blob is smaller (its code
	 * follows it, in the same heap); near the heap's end, the fields of a
	 * plain CodeBlob only. */
	if (bpf_probe_read_user(st->blob_buf, JVM_BLOB_READ, (void *)st->blob) &&
	    bpf_probe_read_user(st->blob_buf, 128, (void *)st->blob)) {
		jvm_count(st, JVM_STAT_READ_FAULT);
		return JVM_STEP_FAIL;
	}
	st->begin = blob_u64(st, st->pr.cb_code_begin);
	st->end = blob_u64(st, st->pr.cb_code_end);
	st->fsize = blob_s32(st, st->pr.cb_frame_size);
	st->complete = blob_s32(st, st->pr.cb_frame_complete);
	st->name = 0;
	if (st->pc < st->blob || st->pc >= st->end || st->begin > st->end || st->fsize < 0 ||
	    st->fsize > (1 << 16) ||
	    bpf_probe_read_user(&st->name, 4, (void *)blob_u64(st, st->pr.cb_name))) {
		jvm_count(st, JVM_STAT_NO_BLOB);
		return JVM_STEP_NOT_JAVA;
	}
	/* An nmethod's: a native wrapper's or a stub's are not read. */
	st->deopt = st->compile_id = st->orig_pc = 0;
	if (st->name == JVM_NAME_NMETHOD || st->name == JVM_NAME_NATIVE) {
		st->deopt = blob_u64(st, st->pr.nm_deopt);
		st->orig_pc = blob_s32(st, st->pr.nm_orig_pc);
		st->compile_id = blob_s32(st, st->pr.nm_compile_id);
	}
	return 0;
}

/* st's pc's entry in bcache. */
static __always_inline struct jvm_bcache_ent *jvm_bcache_slot(struct jvm_bpf_step *st)
{
	return &st->bcache[((st->pc * 0x9e3779b97f4a7c15ULL) >> (64 - JVM_BCACHE_BITS)) &
			   ((1 << JVM_BCACHE_BITS) - 1)];
}

/* c's blob into st, the time it was read in st->bt. */
static __always_inline void jvm_bcache_get(struct jvm_bpf_step *st, const struct jvm_bcache_ent *c)
{
	st->blob = c->blob;
	st->begin = c->begin;
	st->end = c->end;
	st->deopt = c->deopt;
	st->name = c->name;
	st->fsize = c->fsize;
	st->complete = c->complete;
	st->orig_pc = c->orig_pc;
	st->compile_id = c->cookie;
	st->bt = c->t;
}

/* st's blob, found for its pc at st->bt, into c. */
static __always_inline void jvm_bcache_put(struct jvm_bpf_step *st, struct jvm_bcache_ent *c)
{
	c->pc = st->pc;
	c->t = st->bt;
	c->tgid = st->tgid;
	c->blob = st->blob;
	c->begin = st->begin;
	c->end = st->end;
	c->deopt = st->deopt;
	c->name = st->name;
	c->fsize = st->fsize;
	c->complete = st->complete;
	c->orig_pc = st->orig_pc;
	c->cookie = st->compile_id;
}

/* Whether c, a blast entry, holds st's pc. */
static __always_inline bool jvm_blast_has(const struct jvm_bpf_step *st,
					  const struct jvm_bcache_ent *c)
{
	return c->tgid == st->tgid && st->pc >= c->blob && st->pc < c->end &&
	       (__s64)(st->now - c->t) < (__s64)JVM_BCACHE_NS;
}

/* The blob of st's pc from the caches into st: 0, or -1 when it must be
 * read. An entry is taken for JVM_BCACHE_NS after its blob was read (its t,
 * signed: a permanent blob's is later, jvm_unwind). */
static __always_inline int jvm_bcache_find(struct jvm_bpf_step *st)
{
	const struct jvm_bcache_ent *c = jvm_bcache_slot(st);

	if (c->pc == st->pc && c->tgid == st->tgid &&
	    (__s64)(st->now - c->t) < (__s64)JVM_BCACHE_NS) {
		jvm_bcache_get(st, c);
		return 0;
	}
	/* Unrolled by hand, an entry at a time: a loop's index and entry
	 * were spilled (jvm_unwind's stack, tests/unit/test_bpf_stack.c). */
	if (jvm_blast_has(st, &st->blast[0]))
		c = &st->blast[0];
	else if (jvm_blast_has(st, &st->blast[1]))
		c = &st->blast[1];
	else
		return -1;
	jvm_bcache_get(st, c);
	asm volatile("" ::: "memory"); /* put loads from st: no registers kept */
	jvm_bcache_put(st, jvm_bcache_slot(st));
	return 0;
}

/* The frame stepped, recorded at st->n with its ip index: whether the
 * record was full (JVM_BPF_FRAMES: the frame not recorded, the walk marked
 * truncated). */
static __always_inline bool jvm_record(struct jvm_bpf_step *st)
{
	__u32 i = st->n;

	if (i >= JVM_BPF_FRAMES) {
		st->truncated = 1;
		jvm_count(st, JVM_STAT_TRUNCATED);
		return true;
	}
	st->frames[i & (JVM_BPF_FRAMES - 1)].addr =
	    (st->addr & ((1ULL << 48) - 1)) | (__u64)(st->index & 0xffff) << 48;
	st->frames[i & (JVM_BPF_FRAMES - 1)].info = JVM_FRAME_INFO(st->kind, st->cookie, st->off);
	st->n = i + 1;
	return false;
}

/* One frame of st's registers; see bpf/runtime/jvm_maps.bpf.h. Its values live in
 * the slot (st->blob and on), not on the stack: it runs as the third frame
 * of the sampler's walker, its bpf_loop callback and itself, which share
 * the BPF stack's 512 bytes. */
__noinline int jvm_unwind(__u32 slot)
{
	struct jvm_bpf_step *st = bpf_map_lookup_elem(&jvm_scratch, &slot);
	const struct jvm_bpf_proc *p;
	__u32 i;

	if (!st)
		return JVM_STEP_NOT_JAVA;
	/* The process's layout, copied into the slot at the walk's first
	 * Java frame (cfi_jvm), and its key there: one pointer (st) stays live
	 * across the helpers' calls, where two spilled past the stack's
	 * room. st->tgid: the walk's (cfi_jvm's), not a helper's call a
	 * frame. */
	if (st->pr_tgid != st->tgid) {
		p = bpf_map_lookup_elem(&jvm_procs, &st->tgid);
		if (!p)
			return JVM_STEP_NOT_JAVA;
		st->pr = *p;
		st->pr_tgid = st->tgid;
	}
	if (!in_cache(st, st->pc))
		return JVM_STEP_NOT_JAVA;
	if (jvm_bcache_find(st)) {
		int r = blob_read(st);

		if (r)
			return r;
		/* The fields are loaded again from st below, not kept in
		 * registers from the read: those were spilled to the stack
		 * (tests/unit/test_bpf_stack.c). */
		asm volatile("" ::: "memory");
		/* The interpreter and StubRoutines' blobs (the call stub) live
		 * as long as the JVM: kept JVM_BCACHE_PERM_NS, as if read
		 * later. The interpreter is the largest blob, its segment map
		 * the longest walk (~1.5 us a read), and it was read again at
		 * every JVM_BCACHE_NS, a third of the samples at 999 Hz. */
		st->bt = st->now;
		if (st->name == JVM_NAME_INTERP || st->name == JVM_NAME_STUBS)
			st->bt += JVM_BCACHE_PERM_NS - JVM_BCACHE_NS;
		jvm_bcache_put(st, &st->blast[st->blast_next++ & (JVM_BLAST - 1)]);
		asm volatile("" ::: "memory");
		jvm_bcache_put(st, jvm_bcache_slot(st));
	}
	/* Found or read, the fields are loaded from st again below (as
	 * above): kept from the copies, they were spilled. */
	asm volatile("" ::: "memory");
	st->addr = st->blob;
	st->cookie = st->off = 0;
	if (st->name == JVM_NAME_INTERP) {
		/* A run of interpreted frames, each one's caller in the
		 * interpreter too (a recursion, a call chain not yet compiled),
		 * stepped here in one call, their records all at this frame's
		 * ip index (user space names that ip with each in turn): not a
		 * CFI step, a call of this function and its lookups a frame
		 * (docs/benchmarks.md's bench-jvm.sh). */
#pragma clang loop unroll(disable)
		for (i = 0; i < JVM_INTERP_RUN; i++) {
			int r;

			/* st opaque at each turn: the compiler would keep each
			 * field's address from the last, spilled (the stack). */
			barrier_var(st);
			r = step_interp(st);

			if (r) {
				jvm_count_n(st, JVM_STAT_FRAMES, i);
				jvm_count(st, r == -2 ? JVM_STAT_READ_FAULT : JVM_STAT_BAD_FRAME);
				return JVM_STEP_FAIL;
			}
			st->kind = JVM_KIND_INTERP;
			if (jvm_record(st) || st->pc < st->begin || st->pc >= st->end)
				break;
			st->leaf = 0;
			st->addr = st->blob;
			st->cookie = st->off = 0;
		}
		/* The run's frames counted once: a map look-up a frame was a
		 * part of its cost. */
		jvm_count_n(st, JVM_STAT_FRAMES, i + 1 > JVM_INTERP_RUN ? JVM_INTERP_RUN : i + 1);
		return JVM_STEP_OK;
	}
	if (st->name == JVM_NAME_NMETHOD || st->name == JVM_NAME_NATIVE) {
		st->kind = st->name == JVM_NAME_NATIVE ? JVM_KIND_NATIVE
			   : st->leaf		       ? JVM_KIND_LEAF
						       : JVM_KIND_COMPILED;
		st->cookie = (__u32)st->compile_id;
		st->off = (__u32)(st->pc - st->begin);
		/* A frame deoptimized under us returns to the deopt handler;
		 * its own pc is kept at orig_pc_offset from its sp
		 * (nmethod::get_original_pc). */
		if (st->pc == st->deopt &&
		    !bpf_probe_read_user(st->w, 8, (void *)(st->sp + st->orig_pc)) &&
		    st->w[0] >= st->begin && st->w[0] < st->end)
			st->off = (__u32)(st->w[0] - st->begin);
		st->partial = 0;
	} else {
		st->kind = JVM_KIND_STUB;
		/* vtable and itable stubs push nothing: the return address
		 * is at sp. Others with no frame size keep rbp frames (the
		 * call stub, StubRoutines' enter/leave). */
		if (st->name == JVM_NAME_VTABLE || st->name == JVM_NAME_ITABLE)
			st->partial = 8;
		else if (!st->fsize)
			st->partial = JVM_PARTIAL_SIZE; /* by rbp, below */
		else
			st->partial = 0;
	}
	/* A compiled frame's, or a stub's with a frame size: its code read
	 * here, one inlined copy of the decoder rather than two (jvm_unwind's
	 * registers and stack: tests/unit/test_bpf_stack.c). */
	if (!st->partial && st->leaf)
		st->partial = leaf_partial(st);
	if (st->partial == JVM_PARTIAL_SIZE) {
		if (st->bp < st->sp || (st->bp & 7) || st->bp - st->sp > (1u << 20) ||
		    stack_rd(st, st->bp, 16)) {
			if (!st->leaf) {
				jvm_count(st, JVM_STAT_BAD_FRAME);
				return JVM_STEP_FAIL;
			}
			st->partial = 8; /* a leaf stub with no frame of its own */
		} else {
			st->sp = st->bp + 16;
			st->bp = st->w[0];
			st->pc = st->w[1];
			goto record;
		}
	}
	if (st->partial) {
		/* The return address ends the partial frame; the saved rbp
		 * at sp where it was pushed (else rbp is still the caller's). */
		if (st->partial & JVM_PARTIAL_BP) {
			if (stack_rd(st, st->sp, 16))
				goto fault;
			st->bp = st->w[0];
			st->pc = st->w[1];
			st->sp += 16;
			goto record;
		}
		if (stack_rd(st, st->sp + (st->partial & JVM_PARTIAL_SIZE) - 8, 16))
			goto fault;
		st->pc = st->w[0];
		st->sp += st->partial & JVM_PARTIAL_SIZE;
		goto record;
	}
	/* A whole frame: frame_size words, the return address last and the
	 * saved rbp below it; a return address not into the code cache is
	 * looked for a few words on (code that pushed words past the frame
	 * size, as async-profiler and the OpenTelemetry profiler search). */
	st->sp += (__u64)st->fsize * 8;
	if (stack_rd(st, st->sp - 16, (JVM_RA_SEARCH + 2) * 8)) {
		jvm_count(st, JVM_STAT_READ_FAULT);
		return JVM_STEP_FAIL;
	}
	for (i = 0; i <= JVM_RA_SEARCH; i++) {
		if (in_cache(st, st->w[(i + 1) & 15]))
			break;
	}
	if (i > JVM_RA_SEARCH) {
		jvm_count(st, JVM_STAT_BAD_FRAME);
		return JVM_STEP_FAIL;
	}
	st->pc = st->w[(i + 1) & 15];
	st->bp = st->w[i & 15];
	st->sp += (__u64)i * 8;
	goto record;
fault:
	jvm_count(st, JVM_STAT_READ_FAULT);
	return JVM_STEP_FAIL;
record:
	jvm_count(st, JVM_STAT_FRAMES);
	jvm_record(st);
	return JVM_STEP_OK;
}
