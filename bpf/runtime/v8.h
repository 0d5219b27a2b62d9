/* The V8 (Node.js) frame walk: what user space (user/runtime/v8.c) tells the BPF
 * step (bpf/runtime/v8.bpf.c) of a process running V8, and what the step records
 * of each JavaScript frame. Every offset comes from the binary's own
 * postmortem metadata (its v8dbg_* constants, read by user/runtime/v8.c through
 * formats/v8_meta.c), none is compiled in.
 *
 * V8 keeps rbp frames for JavaScript (interpreted, baseline and optimized
 * code alike), so the CFI walk's frame-pointer step already walks through
 * them; the step only reads what each frame holds: the JSFunction and, for
 * an interpreted frame, its BytecodeArray and bytecode offset, at fixed
 * slots below rbp. A frame is looked at when its pc is in no mapping with
 * an unwind table (V8's code space, anonymous memory) or in the embedded
 * builtins (the interpreter's trampoline and handlers, in node's text). */
#ifndef BPF_V8_H
#define BPF_V8_H

#ifndef __bpf__
#include <linux/types.h>
#endif

struct v8_bpf_proc {
	__u64 emb_lo, emb_hi; /* the embedded builtins' code: [lo, hi) */
	/* The frame's slots, in bytes from rbp (v8dbg_off_fp_*): each in
	 * [-V8_FP_WORDS * 8, -8], a multiple of 8. */
	__s16 fp_function, fp_context, fp_bc_array, fp_bc_offset;
	__u16 jsf_shared; /* JSFunction::shared */
	__u16 sfi_data;	  /* SharedFunctionInfo::function_data */
	__u8 heap_tag, heap_tag_mask, smi_shift, pad;
};

/* A JavaScript frame as recorded, two words, after the sample's Java
 * frames (bpf/events.h's nv8); the encoding of struct jvm_bpf_frame. */
struct v8_bpf_frame {
	/* V8_FRAME_ADDR: the frame's SharedFunctionInfo (tagged);
	 * V8_FRAME_INDEX: the user ip it names (0: the leaf). */
	__u64 addr;
	/* V8_FRAME_KIND; V8_FRAME_COOKIE: the SharedFunctionInfo's
	 * function_data (>> 3) as the step read it, for user space to check
	 * that the object is still the one sampled; V8_FRAME_OFF: the
	 * frame's bytecode offset slot (its Smi's value) for V8_KIND_INTERP. */
	__u64 info;
};
#define V8_FRAME_ADDR(w)	 ((w) & ((1ULL << 48) - 1))
#define V8_FRAME_INDEX(w)	 ((__u32)((w) >> 48))
#define V8_FRAME_KIND(w)	 ((__u32)((w) >> 56))
#define V8_FRAME_COOKIE(w)	 ((__u32)((w) >> 32) & 0xffffff)
#define V8_FRAME_OFF(w)		 ((__u32)(w))
#define V8_FRAME_INFO(k, c, o)	 ((__u64)(k) << 56 | ((__u64)(c)&0xffffff) << 32 | (__u32)(o))
#define V8_COOKIE(function_data) ((__u32)((function_data) >> 3) & 0xffffff)

enum v8_frame_kind {
	V8_KIND_JS = 1,	    /* optimized or baseline code, or a JavaScript builtin */
	V8_KIND_INTERP = 2, /* the frame's BytecodeArray is its function's: off is meaningful */
};

/* Frames a sample records at most: a power of 2 (the index is masked). */
#define V8_BPF_FRAMES 512
/* Words below rbp read at each frame: the slots' range. */
#define V8_FP_WORDS 8

/* One step's state (a v8_scratch slot), as struct jvm_bpf_step. */
#define V8_FN_CACHE 4 /* a power of 2 */
struct v8_bpf_step {
	__u64 pc, bp;
	__u32 tid;
	__u32 index; /* the frame's user ip index */
	__u32 n;     /* frames recorded */
	__u32 truncated;
	struct v8_bpf_frame frames[V8_BPF_FRAMES];
	/* Words read: here, not on the BPF stack, which the walkers that call
	 * the step (and their bpf_loop callbacks) share. */
	__u64 w[V8_FP_WORDS];
	__u64 fn, sfi, data;
	/* The walk's functions seen: their SharedFunctionInfo and its
	 * function_data, by the function's address (V8_FN_CACHE ways, direct
	 * mapped; emptied at the walk's start). A recursion's frames, direct
	 * or through a few functions, are read once: the two reads a frame
	 * would cost again give the same words within one walk. */
	__u64 c_fn[V8_FN_CACHE], c_sfi[V8_FN_CACHE], c_data[V8_FN_CACHE];
	/* The process's v8_procs entry, copied at the walk's start: a hash
	 * lookup at each frame was a third of the step's time. */
	struct v8_bpf_proc proc;
};

enum v8_bpf_stat {
	V8_STAT_FRAMES,	    /* JavaScript frames recorded */
	V8_STAT_NOT_JS,	    /* a frame in V8's code not a JavaScript one (a stub's, an entry's) */
	V8_STAT_READ_FAULT, /* a read failed */
	V8_STAT_TRUNCATED,  /* more than V8_BPF_FRAMES JavaScript frames */
	V8_STAT_NR,
};

#endif
