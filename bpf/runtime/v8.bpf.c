// SPDX-License-Identifier: GPL-2.0
/* The V8 frame step in BPF (bpf/runtime/v8.h says what it does), a compilation unit
 * of its own, linked into the sampler by libbpf's static linker as the
 * HotSpot walk is (the Makefile).
 *
 * v8_record, from the CFI walk (bpf/cfi_walk.bpf.h) at each frame-pointer
 * step of a process in v8_procs whose pc is in anonymous code or the
 * embedded builtins. A global function: the verifier checks it once, on
 * its own. No loops: it loads on 5.10, as the compat walker that calls it. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#define V8_EXTERN /* the definitions */
#include "bpf/runtime/v8_maps.bpf.h"

static __always_inline void v8_count(__u32 what)
{
	__u64 *v = bpf_map_lookup_elem(&v8_stats, &what);

	if (v)
		*v += 1;
}

/* A slot's word: off in bytes from rbp, checked by user space to be in
 * [-V8_FP_WORDS * 8, -8]; w[0] is the word at rbp - V8_FP_WORDS * 8. */
static __always_inline __u64 slot(const struct v8_bpf_step *st, __s16 off)
{
	__s32 i = V8_FP_WORDS + off / 8;

	if (i < 0 || i >= V8_FP_WORDS)
		return 0;
	return st->w[i & (V8_FP_WORDS - 1)];
}

__noinline int v8_record(__u32 slot_id)
{
	struct v8_bpf_step *st = bpf_map_lookup_elem(&v8_scratch, &slot_id);
	const struct v8_bpf_proc *p;
	__u64 ctxw, bc, off;
	__u32 kind = V8_KIND_JS, o = 0, c, i;

	if (!st)
		return -1;
	p = &st->proc; /* the walk's process's, copied at its start */
	if (!st->bp || (st->bp & 7) || st->bp < V8_FP_WORDS * 8)
		return 0;
	if (bpf_probe_read_user(st->w, sizeof(st->w), (void *)(st->bp - V8_FP_WORDS * 8))) {
		v8_count(V8_STAT_READ_FAULT);
		return 0;
	}
	/* A typed frame (an entry, exit, stub or internal frame) keeps a Smi
	 * marker where a JavaScript frame keeps its context: not named. */
	ctxw = slot(st, p->fp_context);
	st->fn = slot(st, p->fp_function);
	if ((ctxw & p->heap_tag_mask) != p->heap_tag ||
	    (st->fn & p->heap_tag_mask) != p->heap_tag) {
		v8_count(V8_STAT_NOT_JS);
		return 0;
	}
	c = (__u32)(st->fn >> 3) & (V8_FN_CACHE - 1);
	if (st->c_fn[c] == st->fn) {
		st->sfi = st->c_sfi[c];
		st->data = st->c_data[c];
	} else if (bpf_probe_read_user(&st->sfi, 8,
				       (void *)(st->fn - p->heap_tag + p->jsf_shared)) ||
		   (st->sfi & p->heap_tag_mask) != p->heap_tag ||
		   bpf_probe_read_user(&st->data, 8,
				       (void *)(st->sfi - p->heap_tag + p->sfi_data))) {
		v8_count(V8_STAT_READ_FAULT);
		return 0;
	} else {
		st->c_fn[c] = st->fn;
		st->c_sfi[c] = st->sfi;
		st->c_data[c] = st->data;
	}
	/* An interpreted frame holds its function's BytecodeArray (the
	 * function_data of one not compiled further) and the offset of the
	 * bytecode it runs, a Smi. */
	bc = slot(st, p->fp_bc_array);
	off = slot(st, p->fp_bc_offset);
	if (bc == st->data && !(off & 1)) {
		kind = V8_KIND_INTERP;
		o = (__u32)((__s64)off >> (p->smi_shift & 63));
	}
	v8_count(V8_STAT_FRAMES);
	i = st->n;
	if (i >= V8_BPF_FRAMES) {
		st->truncated = 1;
		v8_count(V8_STAT_TRUNCATED);
		return 0;
	}
	st->frames[i & (V8_BPF_FRAMES - 1)].addr =
	    (st->sfi & ((1ULL << 48) - 1)) | (__u64)(st->index & 0xffff) << 48;
	st->frames[i & (V8_BPF_FRAMES - 1)].info = V8_FRAME_INFO(kind, V8_COOKIE(st->data), o);
	st->n = i + 1;
	return 0;
}
