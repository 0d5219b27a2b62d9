// SPDX-License-Identifier: GPL-2.0
/* The CFI walker's programs (bpf/cfi_walk.bpf.h says how it walks), a unit
 * of the sampler joined after sample.bpf.c (the Makefile's
 * sample.linked.o), which defines the maps and rodata they share and
 * tail-calls them through cfi_progs. */
#define BPF_SHARED_EXTERN /* sample.bpf.c defines them */
#include "bpf/sampler.bpf.h"
#include "bpf/cfi_walk.bpf.h"

/* Each invocation walks CFI_FRAMES_PER_CALL frames and tail-calls the next,
 * as many times as the kernel allows (CFI_COMPAT_FRAMES frames: a tail call
 * per 8 frames cost less than bpf_loop blocks of 8 on 20-frame stacks); the
 * last goes on up to --max-stack, where the kernel has bpf_loop. The compat
 * walker's frames are a bounded loop (clang keeps it a loop: the step is too
 * large), the other's a frame per bpf_loop callback. */
static __always_inline int cfi_walker(void *ctx, const bool compat)
{
	__u32 cpu = bpf_get_smp_processor_id(), i;
	struct scratch *sc = bpf_map_lookup_elem(&scratch_map, &cpu);
	int r = CFI_GO;

	if (!sc)
		return 0;
	if (compat) {
		for (i = 0; i < CFI_FRAMES_PER_CALL; i++) {
			r = cfi_step(sc, compat);
			if (r != CFI_GO)
				break;
		}
	} else {
		/* The last invocation the tail-call budget allows goes on to
		 * --max-stack. bpf_loop, not the loop above: the verifier
		 * followed that loop's 8 inlined steps one by one (on_cfi_walk
		 * 223,258 insns processed on 6.18; 23,518 so). */
		r = cfi_walk_frames(sc, sc->cfi.calls < CFI_MAX_CALLS ? CFI_FRAMES_PER_CALL
								      : max_stack + 1);
	}
	if (r == CFI_GO && sc->cfi.calls++ < CFI_MAX_CALLS)
		bpf_tail_call(ctx, &cfi_progs, compat ? 1 : 0);
	if (r == CFI_GO)
		r = CFI_DONE_LIMIT; /* the compat walker's tail-call budget */
	cfi_finish(sc, r, compat);
	return 0;
}

/* Not loaded unless asked for ("?"): user space enables the one that fits
 * the sampler it loads (on_cfi_walk uses ring-buffer dynptrs, 5.19+). */
SEC("?perf_event")
int on_cfi_walk(struct bpf_perf_event_data *ctx)
{
	return cfi_walker(ctx, false);
}

SEC("?perf_event")
int on_cfi_walk_compat(struct bpf_perf_event_data *ctx)
{
	return cfi_walker(ctx, true);
}
