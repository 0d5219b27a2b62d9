// SPDX-License-Identifier: GPL-2.0
/* The Python frame walk in BPF, a compilation unit of its own, linked into
 * the sampler (bpf/sample.bpf.c) and into the unit test's program
 * (tests/unit/python_test.bpf.c) by libbpf's static linker (the Makefile).
 *
 * py_walk_frames, at a perf_event sample of a process in py_procs: the
 * sampled thread's PyThreadState is found in _PyRuntime's first
 * interpreter (by its native thread id on 3.11 on, before by its
 * pthread_t, which is the thread's fs base on x86-64 glibc), then its
 * frames are read innermost first into this CPU's py_scratch: a code
 * object address and the instruction word per frame, as user/runtime/python.c's
 * python_walk reads them (py_frame_decode), which names them. The walk
 * finds a thread by its thread state, so threads started after the
 * recording began, and threads waiting for the GIL, are walked alike.
 *
 * A global function (not static, not inlined): the verifier checks it once,
 * on its own, with a ctx argument and a scalar result, so its loops do not
 * add to the sampler's own verification; a frame per bpf_loop callback
 * where the kernel has bpf_loop (5.17), as many as the caller's max
 * (--max-stack), a bounded loop of PY_COMPAT_FRAMES before (the compat
 * sampler's py_walk_frames_compat: global functions exist since 5.6). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#define PY_EXTERN /* the definitions */
#include "bpf/runtime/python_maps.bpf.h"

static __always_inline void py_count(__u32 what)
{
	__u64 *v = bpf_map_lookup_elem(&py_stats, &what);

	if (v)
		*v += 1;
}

static __always_inline int rd_ptr(__u64 addr, __u32 off, __u64 *v)
{
	if (off == PY_OFF_NONE)
		return -1;
	return bpf_probe_read_user(v, sizeof(*v), (void *)(addr + off));
}

/* The sampled thread's PyThreadState, or 0. */
static __always_inline __u64 find_tstate(const struct py_bpf_proc *p, __u32 tid)
{
	const struct py_layout *l = &p->layout;
	__u64 interp = 0, ts = 0, want = tid, id = 0;
	bool native = l->tstate_native_thread_id != PY_OFF_NONE;

	if (!native) { /* pthread_self(): the thread's fs base */
		struct task_struct *task = (void *)bpf_get_current_task();

		want = BPF_CORE_READ(task, thread.fsbase);
	}
	if (rd_ptr(p->runtime, l->runtime_interp_head, &interp) || !interp ||
	    rd_ptr(interp, l->interp_tstate_head, &ts))
		return 0;
	for (int i = 0; i < PY_BPF_THREADS && ts; i++) {
		if (rd_ptr(ts, native ? l->tstate_native_thread_id : l->tstate_thread_id, &id))
			return 0;
		if (id == want)
			return ts;
		if (rd_ptr(ts, l->tstate_next, &ts))
			return 0;
	}
	return 0;
}

/* One walk's state, shared by its frames' steps (py_step): the frames'
 * fields are read in one span a frame, [lo, lo + span), each at its offset
 * (oc, ol, oo, ob, oe) from lo. */
struct py_walk {
	struct py_bpf_stack *s;
	const struct py_layout *l;
	__u64 frame; /* the next frame to read, 0: none */
	__u32 n, span, lo, oc, ol, oo, ob, oe;
	__u8 emask;
	__u64 hash; /* py_bpf_stack's */
	/* The last frame's code object and its tag: a recursion's frames
	 * share one, whose two reads a frame were two thirds of a deep walk's. */
	__u64 tag_code;
	__u32 tag;
	/* 3.11, 3.12 (py_walk, PY_WALK_CHECK): the first frame that began
	 * an evaluation call (3.11 is_entry, 3.12 the shim: owner cstack) is
	 * to link to the previous cframe's current frame. */
	__u8 cstack;
};

/* One frame: 0 to go on, 1 at the end (no frame) or a fault (s->fault).
 * compat: the bounded loop's step, which leaves out the frames' hash (only
 * the switch walk, a bpf_loop kernel's, uses it): its instructions, times
 * the loop's PY_BPF_FRAMES iterations, took on_sample_compat past the
 * verifier's million on 6.18. */
static __always_inline int py_step(struct py_walk *w, const bool compat)
{
	struct py_bpf_stack *s = w->s;
	const struct py_layout *l = w->l;
	__u32 k = w->n & (PY_BPF_FRAMES - 1), len = w->span;
	__u64 code, c;
	__u8 owner, entry;

	if (!w->frame)
		return 1;
	barrier_var(len);
	len &= 2 * PY_BPF_SPAN - 1;
	if (!len || bpf_probe_read_user(s->span, len, (void *)(w->frame + w->lo))) {
		s->fault = 1;
		return 1;
	}
	code = *(__u64 *)&s->span[w->oc & (PY_BPF_SPAN - 1)];
	s->frames[k].lasti = *(__u64 *)&s->span[w->ol & (PY_BPF_SPAN - 1)];
	owner = s->span[w->oo & (PY_BPF_SPAN - 1)];
	entry = s->span[w->oe & (PY_BPF_SPAN - 1)] & w->emask;
	/* The tag, without a branch (each would double the verifier's states
	 * at every frame of the bounded loop): a read that fails leaves
	 * zeros, and user space names no frame whose object it cannot read. */
	{
		__u64 fn[2] = {0, 0}, head = 0; /* co_filename, co_name */
		__u32 tag;

		if (!compat && w->tag && PY_FRAME_CODE(code) == w->tag_code) {
			tag = w->tag; /* the same object, at the same moment */
		} else {
			bpf_probe_read_user(fn, 16,
					    (void *)(PY_FRAME_CODE(code) + l->code_filename));
			bpf_probe_read_user(&head, 8, (void *)(fn[1] + l->unicode_ascii));
			tag = py_code_tag(fn[0], fn[1], head);
			w->tag_code = PY_FRAME_CODE(code);
			w->tag = tag;
		}
		s->frames[k].lasti = PY_LASTI(s->frames[k].lasti) | PY_TAG_LASTI(tag);
		code = PY_FRAME_CODE(code) | PY_TAG_CODE(tag);
	}
	c = code | (__u64)owner << PY_FRAME_OWNER_SHIFT | (__u64) !!entry << 48;
	s->frames[k].code = c;
	if (!compat) {
		w->hash = (w->hash ^ c ^ (s->frames[k].lasti << 1)) * 0x9e3779b97f4a7c15ULL;
		w->hash ^= w->hash >> 31;
	}
	w->n++;
	if (!compat && !s->tframe && owner == PY_OWNER_THREAD) /* py_pending's */
		s->tframe = w->frame;
	w->frame = *(__u64 *)&s->span[w->ob & (PY_BPF_SPAN - 1)];
	if (!compat && (s->wflags & (PY_WALK_CHECK | PY_WALK_SEEN)) == PY_WALK_CHECK &&
	    (entry || owner == w->cstack)) {
		s->wflags |= PY_WALK_SEEN;
		s->entry_back = w->frame;
	}
	return 0;
}

/* A frame per bpf_loop callback: the verifier follows the callback once,
 * where the bounded loop's PY_BPF_FRAMES iterations took on_sample's load
 * from 0.25 to 1.1-4 s on 6.18 (strace -T of BPF_PROG_LOAD), delaying
 * every recording's start. */
static long py_loop_step(__u32 i, struct py_walk *w)
{
	struct py_bpf_stack *s = w->s;
	int end = py_step(w, false);
	__u32 f = s->wflags;

	(void)i;
	/* The first evaluation call's first frame not linked to the previous
	 * cframe's current frame, as soon as it is read; or the walk's end, or
	 * a fault (a stale frame's pointers), without such a frame: again from
	 * that one, in the same loop (a second bpf_loop took the verifier's
	 * states past its limit). Not at the end only: the stale frames can
	 * form a cycle, the call's own frame (pushed where the last call's
	 * caller was, its previous not set yet) leading back to the stale shim,
	 * and such a walk never ends (1 sample in ~5,000 of json.tool's under
	 * -X perf: 1,024 frames of the cycle, then the walk's max). */
	if ((f & PY_WALK_CHECK) && ((f & PY_WALK_SEEN) ? s->entry_back != s->prev : end)) {
		s->wflags = PY_WALK_AGAIN;
		s->fault = 0;
		s->tframe = 0;
		w->frame = s->prev;
		w->n = 0;
		w->hash = 0;
		w->tag = 0;
		return w->frame ? 0 : 1;
	}
	return end;
}

/* The walk into py_scratch's slot, max frames at most: the thread's
 * frames' number; 0: none (not a Python thread, or its first read failed);
 * -1: the process is not one walked. compat: kernels without bpf_loop
 * (before 5.17), a bounded loop of PY_COMPAT_FRAMES. */
static __always_inline int py_walk(const bool compat, __u32 slot, __u32 max)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid(), ts, frame = 0, cframe = 0, prev = 0;
	__u32 tgid = pid_tgid >> 32;
	const struct py_bpf_proc *p = bpf_map_lookup_elem(&py_procs, &tgid);
	const struct py_layout *l;
	struct py_bpf_stack *s;
	struct py_walk w = {};

	if (!p)
		return -1;
	slot = py_slot_key(slot);
	s = bpf_map_lookup_elem(&py_scratch, &slot);
	if (!s)
		return 0;
	l = &p->layout;
	s->tgid = tgid;
	s->tid = (__u32)pid_tgid;
	s->truncated = 0;
	s->nframes = 0;
	s->hash = 0;
	s->fault = 0;
	s->wflags = 0;
	ts = find_tstate(p, (__u32)pid_tgid);
	if (!ts) {
		py_count(PY_STAT_NO_TSTATE);
		return 0;
	}
	if (rd_ptr(ts, l->tstate_frame, &frame) ||
	    (l->cframe_current_frame != PY_OFF_NONE && frame && (cframe = frame) &&
	     rd_ptr(frame, l->cframe_current_frame, &frame)) ||
	    l->frame_code == PY_OFF_NONE || l->frame_lasti == PY_OFF_NONE ||
	    l->frame_back == PY_OFF_NONE || l->frame_owner == PY_OFF_NONE) {
		py_count(PY_STAT_FAULT);
		s->truncated = 1;
		return 0;
	}
	/* The frame's fields in one read: [lo, lo + span), each field at its
	 * offset from lo (one read a frame, not four: docs/benchmarks.md). */
	__u32 lo = l->frame_code, hi = l->frame_code + 8;

#define SPAN_ADD(off, size)                                                                        \
	do {                                                                                       \
		if ((off) < lo)                                                                    \
			lo = (off);                                                                \
		if ((off) + (size) > hi)                                                           \
			hi = (off) + (size);                                                       \
	} while (0)
	SPAN_ADD(l->frame_lasti, 8);
	SPAN_ADD(l->frame_owner, 1);
	SPAN_ADD(l->frame_back, 8);
	if (l->frame_is_entry != PY_OFF_NONE)
		SPAN_ADD(l->frame_is_entry, 1);
#undef SPAN_ADD
	if (hi - lo > PY_BPF_SPAN) {
		py_count(PY_STAT_FAULT);
		s->truncated = 1;
		return 0;
	}
	w.s = s;
	w.l = l;
	w.frame = frame;
	s->first = frame;
	s->tframe = 0;
	s->tstate = ts;
	s->max = max;
	w.span = hi - lo;
	w.lo = lo;
	w.oc = l->frame_code - lo;
	w.ol = l->frame_lasti - lo;
	w.oo = l->frame_owner - lo;
	w.ob = l->frame_back - lo;
	/* No is_entry (all but 3.11): a byte read and masked off, no branch
	 * in the step (the verifier's states). */
	w.oe = l->frame_is_entry != PY_OFF_NONE ? l->frame_is_entry - lo : w.oo;
	w.emask = l->frame_is_entry != PY_OFF_NONE ? 0xff : 0;
	w.cstack = l->owner_cstack;
	/* 3.11, 3.12: an evaluation call sets tstate->cframe to its own
	 * cframe a few instructions before that cframe's current frame, which
	 * until then is whatever the C stack held there (the last call's, at
	 * the same depth). Such a frame does not link to the previous cframe's
	 * current frame (_PyCFrame: current_frame, then previous), and the
	 * walk starts again from that one: the state before the call. */
	if (!compat && cframe && !rd_ptr(cframe, l->cframe_current_frame + 8, &prev) && prev &&
	    !rd_ptr(prev, l->cframe_current_frame, &prev)) {
		s->wflags = PY_WALK_CHECK;
		s->prev = prev;
	}
	/* Each frame as it is in memory: its code object, the word at its
	 * instruction field, its owner byte and is_entry flag (where the
	 * version has them: user space fills frame_owner with a valid offset
	 * either way), and its code object's tag (py_code_tag: co_filename and
	 * co_name follow each other in every version, 3.8-3.13). What they
	 * mean is user space's (py_frame_decode): one path through the step
	 * keeps the verifier's work linear in the frames. */
	if (compat) {
		for (int i = 0; i < PY_COMPAT_FRAMES; i++)
			if (py_step(&w, true))
				break;
	} else {
		bpf_loop(max < PY_BPF_FRAMES ? max : PY_BPF_FRAMES, py_loop_step, &w, 0);
		if (s->wflags & PY_WALK_AGAIN)
			py_count(PY_STAT_RESTARTED);
	}
	s->nframes = w.n;
	s->hash = w.hash;
	if (s->fault) {
		s->truncated = 1;
		py_count(PY_STAT_FAULT);
		return w.n;
	}
	if (w.frame) {
		s->truncated = 1;
		py_count(PY_STAT_TRUNCATED);
	}
	py_count(PY_STAT_WALKED);
	return w.n;
}

/* 3.12: the frame an evaluation call enters or leaves while the thread's
 * state does not link it, appended as a last frame of owner
 * PY_OWNER_PENDING (user space names the innermost evaluation frame with
 * none by it: user/runtime/python_names.c). A function's frame is on the
 * thread's data stack (thread-owned), the last pushed: datastack_top is
 * its end, its start the end of the innermost thread-owned frame linked
 * (the walk's step keeps it, tframe: every live frame of the data stack is
 * in the chain, which a stack's order makes the one below), or its
 * chunk's first word where that is in an older chunk. Taken when the code
 * object there spans it exactly: every other live frame of the data stack
 * is linked. Not by its previous: being cleared and popped
 * (_PyEvalFrameClearAndPop) it is the call's shim, where the walk began,
 * but in the prologue (its frame pushed: _PyEval_Vector, the trampolines,
 * up to where it links it) it is not set yet, whatever the slot held last,
 * and the walk may begin with the new call's shim there too (its cframe's
 * current frame not set yet: py_walk): 2 of 4,711 json.tool samples under
 * -X perf were left unnamed so when the previous was required. A
 * generator's frame (in its object) is
 * found as it is resumed, by exc_info (below); not as it yields or
 * returns, when nothing the state reaches points at it. A global
 * function, called after the walk (py_walk_frames, py_walk_frames_switch):
 * the verifier checks it on its own, where in the walk its branches took
 * the states pending past the verifier's limit. 1: a frame added. */
__noinline int py_pending(__u32 slot)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32, k;
	const struct py_bpf_proc *p = bpf_map_lookup_elem(&py_procs, &tgid);
	const struct py_layout *l;
	struct py_bpf_stack *s;
	__u64 top = 0, chunk = 0, cand, code = 0, back = 0, shim = 0, fn[2] = {0, 0}, head = 0,
	      lasti = 0, tframe;
	__s32 size = 0;
	__u8 owner = 0xff;
	__u32 tag;

	slot = py_slot_key(slot);
	s = bpf_map_lookup_elem(&py_scratch, &slot);
	if (!p || !s || s->truncated || !s->nframes || s->nframes >= s->max)
		return 0;
	l = &p->layout;
	k = s->nframes & (PY_BPF_FRAMES - 1);
	if (l->tstate_datastack_top == PY_OFF_NONE || l->tstate_datastack_chunk == PY_OFF_NONE ||
	    l->chunk_data == PY_OFF_NONE || l->code_framesize == PY_OFF_NONE)
		return 0;
	if (!(s->wflags & PY_WALK_AGAIN) && PY_FRAME_OWNER(s->frames[0].code) == l->owner_cstack)
		shim = s->first;
	if (rd_ptr(s->tstate, l->tstate_datastack_top, &top) ||
	    rd_ptr(s->tstate, l->tstate_datastack_chunk, &chunk) || !top || !chunk)
		return 0;
	/* The innermost thread-owned frame linked (the walk's): in the top
	 * chunk, the frame after it (none where it ends at the top: the chunk's
	 * first frame would be a linked one); else the chunk's first. */
	tframe = s->tframe;
	cand = chunk + l->chunk_data;
	if (tframe >= cand && tframe < top) {
		if (rd_ptr(tframe, l->frame_code, &code) ||
		    bpf_probe_read_user(&size, sizeof(size), (void *)(code + l->code_framesize)) ||
		    size <= 0)
			return 0;
		cand = tframe + 8 * (__u64)size;
	}
	owner = 0xff;
	if (cand >= top || rd_ptr(cand, l->frame_code, &code) ||
	    rd_ptr(cand, l->frame_back, &back) ||
	    bpf_probe_read_user(&owner, 1, (void *)(cand + l->frame_owner)) ||
	    owner != PY_OWNER_THREAD || PY_FRAME_CODE(code) != code ||
	    bpf_probe_read_user(&size, sizeof(size), (void *)(code + l->code_framesize)) ||
	    size <= 0 || cand + 8 * (__u64)size != top) {
		/* A generator's frame, in its object, as the call resuming it
		 * enters it: gen_send_ex2 made the thread's exc_info its
		 * generator's; the frame's previous is 0 (its last yield's)
		 * until the call makes it its shim, whose previous is the frame
		 * that resumes it (the walk's first, or the previous cframe's
		 * where the cframe is the new call's already); a frame running
		 * has a previous, and exc_info is another's once its frame is
		 * unlinked (below). The walk may begin
		 * with that shim: the new cframe's current frame, not set yet,
		 * is the last call's at the same depth, which left it at its
		 * shim, at the same address. Not as it leaves: exc_info is the
		 * caller's again before the frame is unlinked (YIELD_VALUE,
		 * clear_gen_frame). */
		__u64 exc = 0, caller = s->wflags & PY_WALK_AGAIN ? s->prev : s->first, b2 = 0;

		if (l->tstate_exc_info == PY_OFF_NONE || l->gen_exc_state == PY_OFF_NONE ||
		    l->gen_iframe == PY_OFF_NONE || rd_ptr(s->tstate, l->tstate_exc_info, &exc) ||
		    !exc)
			return 0;
		cand = exc - l->gen_exc_state + l->gen_iframe;
		owner = 0xff;
		if (rd_ptr(cand, l->frame_code, &code) || rd_ptr(cand, l->frame_back, &back) ||
		    bpf_probe_read_user(&owner, 1, (void *)(cand + l->frame_owner)) ||
		    owner != PY_OWNER_GENERATOR || PY_FRAME_CODE(code) != code ||
		    (shim && back && back != shim) ||
		    (!shim && back && back != caller &&
		     (rd_ptr(back, l->frame_back, &b2) || b2 != caller ||
		      bpf_probe_read_user(&owner, 1, (void *)(back + l->frame_owner)) ||
		      owner != l->owner_cstack)))
			return 0;
	}
	if (rd_ptr(cand, l->frame_lasti, &lasti))
		return 0;
	bpf_probe_read_user(fn, 16, (void *)(code + l->code_filename));
	bpf_probe_read_user(&head, 8, (void *)(fn[1] + l->unicode_ascii));
	tag = py_code_tag(fn[0], fn[1], head);
	s->frames[k].code =
	    code | PY_TAG_CODE(tag) | (__u64)PY_OWNER_PENDING << PY_FRAME_OWNER_SHIFT;
	s->frames[k].lasti = PY_LASTI(lasti) | PY_TAG_LASTI(tag);
	s->nframes++;
	return 1;
}

/* Global functions (above): on_sample calls the first, on_sample_compat the
 * second, on_switch (--off-cpu) the third, and a program holds only the one
 * it calls. */
__noinline int py_walk_frames(struct bpf_perf_event_data *ctx, __u32 max)
{
	int n = py_walk(false, PY_SLOT_SAMPLE, max);

	(void)ctx;
	return n > 0 ? n + py_pending(PY_SLOT_SAMPLE) : n;
}

__noinline int py_walk_frames_compat(struct bpf_perf_event_data *ctx)
{
	(void)ctx;
	return py_walk(true, PY_SLOT_SAMPLE, PY_COMPAT_FRAMES);
}

/* Without py_pending: on_switch calls it after this returns. Called from
 * here it was a third frame of on_switch's chain, 576 bytes as 5.10 and
 * 6.1 count them, past the 512 (tests/unit/test_bpf_stack.c). */
__noinline int py_walk_frames_switch(__u32 max)
{
	return py_walk(false, PY_SLOT_SWITCH, max);
}
