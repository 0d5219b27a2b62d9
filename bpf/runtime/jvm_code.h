/* What of a compiled frame (an nmethod's, a native wrapper's, a stub's with a
 * frame size) is on the stack at a sampled pc that is not a call's return:
 * the instructions around the pc say it (x86-64, HotSpot's own sequences,
 * as async-profiler's StackFrame::unwindCompiled reads them). Pure: the
 * BPF walk (bpf/runtime/jvm.bpf.c) and its unit test
 * (tests/unit/test_jvm_code.c) run the same code on the same bytes.
 *
 * The sequences, JDK 11 to 21:
 * - the prologue (MacroAssembler::verified_entry, C1's build_frame, the
 *   native wrapper's), before the blob's frame complete offset: with a stack
 *   bang, `mov [rsp - N], eax; push rbp; [mov rbp, rsp;] sub rsp, F`;
 *   without one (C2's small leaf methods), `sub rsp, F; mov [rsp + F - 8],
 *   rbp`; JDK 21's nmethod entry barrier (`cmp dword [r15 + o], imm32`)
 *   after the frame is made;
 * - the epilogue: `add rsp, F; pop rbp`, then the return's safepoint poll
 *   (`cmp rsp, [r15 + o]; ja stub`, C1 and C2 since JDK 16) and `ret`;
 * - the return poll's out-of-line stub (C1SafepointPollStub,
 *   C2SafepointPollStub), past the method's last PcDesc, reached from that
 *   `ja` with the frame already popped: `movabs r10, poll_pc; mov [r15 +
 *   saved_exception_pc], r10; jmp polling_page_return_handler_blob`;
 * - C1's OSR entry: a prologue of its own (bang; push rbp; sub rsp, F)
 *   after the method's body, past the frame complete offset of its entry,
 *   jumped to by the interpreter with its own frame popped.
 * Before this reader, a pc at that OSR entry's bang or push, or in the
 * poll stub, was read as a whole frame: its frame size stepped from the
 * caller's sp, the return address search found the caller's own return
 * address and saved rbp, and the caller was named by the frame above it
 * (CI's jvm_churn: Worker.oddSpin at line 0 directly under JChurn.main,
 * Worker.run lost; reproduced and caught at the C1 OSR entry's push rbp).
 * A pc after a bang-less prologue's sub was read as the return address
 * alone (a stale word of the new frame taken for it), and one after push
 * rbp before a 7-byte sub as nothing pushed. */
#ifndef BPF_JVM_CODE_H
#define BPF_JVM_CODE_H

#ifndef __bpf__
#include <linux/types.h>
#include <stdbool.h>
#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif
#endif

/* The code bytes the decoder reads: [pc - JVM_CODE_AT, pc + JVM_CODE_LEN -
 * JVM_CODE_AT), c[JVM_CODE_AT] the byte at pc. */
#define JVM_CODE_AT  24
#define JVM_CODE_LEN 48

/* jvm_code_partial's result: the bytes of the frame on the stack from sp
 * up to and with the return address (8: the return address alone), with
 * JVM_PARTIAL_BP when the caller's rbp is saved at sp (16 | JVM_PARTIAL_BP:
 * rbp pushed); 0 when the frame is whole (sp + frame size). */
#define JVM_PARTIAL_BP	 0x10000u
#define JVM_PARTIAL_SIZE 0xffffu

/* The bytes are read through a volatile pointer, each where it is tested,
 * and the immediates are put together a byte at a time into one register:
 * else the compiler loads the bytes ahead and keeps them, and jvm_unwind
 * (bpf/runtime/jvm.bpf.c), into which this is inlined, has too few
 * registers: they were spilled to its stack, which took the CFI walk's
 * deepest call chain to 544 bytes, past the 512 of Debian's 6.1 and of 5.10
 * (tests/unit/test_bpf_stack.c measures it). */
typedef const volatile __u8 *jvm_code_t;

/* The little-endian immediate of n bytes at c[i]. */
static __always_inline __u64 jvm_code_imm(jvm_code_t c, int i, int n)
{
	__u64 v = 0;
	int k;

	for (k = n - 1; k >= 0; k--)
		v = v << 8 | c[i + k];
	return v;
}

/* Whether c[i] starts `movabs r10, imm64` whose imm64 is in [lo, hi), followed by
 * `mov [r15 + disp32], r10`: a return poll stub's first two instructions,
 * naming a poll pc of this blob before the stub. */
static __always_inline bool jvm_code_poll_stub(jvm_code_t c, int i, __u64 lo, __u64 hi)
{
	__u64 poll;

	if (c[i] != 0x49 || c[i + 1] != 0xba || c[i + 10] != 0x4d || c[i + 11] != 0x89 ||
	    c[i + 12] != 0x97)
		return false;
	poll = jvm_code_imm(c, i + 2, 8);
	return poll >= lo && poll < hi;
}

/* Whether c[i] starts a stack bang, `mov [rsp - N], eax` (disp32, negative:
 * compiled code stores nothing below rsp but there). */
static __always_inline bool jvm_code_bang(jvm_code_t c, int i)
{
	return c[i] == 0x89 && c[i + 1] == 0x84 && c[i + 2] == 0x24 && (c[i + 6] & 0x80);
}

/* c: JVM_CODE_LEN bytes around pc (above); begin: the blob's code begin;
 * complete: its frame complete offset (<= 0: none known). */
static __always_inline __u32 jvm_code_partial(jvm_code_t c, __u64 pc, __u64 begin, __s32 complete)
{
	const int P = JVM_CODE_AT;
	__u32 d;

	if (complete > 0 && pc >= begin && pc < begin + (__u32)complete) {
		/* Without a bang: sub rsp, F done, rbp not saved yet: `mov
		 * [rsp + d], rbp` at pc (disp8, disp32, none), the return
		 * address above its slot. */
		if (c[P] == 0x48 && c[P + 1] == 0x89 && c[P + 2] == 0x6c && c[P + 3] == 0x24)
			return (__u32)c[P + 4] + 16;
		if (c[P] == 0x48 && c[P + 1] == 0x89 && c[P + 2] == 0xac && c[P + 3] == 0x24) {
			d = (__u32)jvm_code_imm(c, P + 4, 4);
			return d < JVM_PARTIAL_SIZE - 16 ? d + 16 : 0;
		}
		if (c[P] == 0x48 && c[P + 1] == 0x89 && c[P + 2] == 0x2c && c[P + 3] == 0x24)
			return 16;
		/* push rbp done, or push rbp; mov rbp, rsp. */
		if (c[P - 1] == 0x55 || (c[P - 4] == 0x55 && c[P - 3] == 0x48 &&
					 ((c[P - 2] == 0x89 && c[P - 1] == 0xe5) ||
					  (c[P - 2] == 0x8b && c[P - 1] == 0xec))))
			return 16 | JVM_PARTIAL_BP;
		/* sub rsp, F done (after push rbp; the other order is above), or
		 * at or past the entry barrier, which follows the frame: whole. */
		if ((c[P - 4] == 0x48 && c[P - 3] == 0x83 && c[P - 2] == 0xec) ||
		    (c[P - 7] == 0x48 && c[P - 6] == 0x81 && c[P - 5] == 0xec) ||
		    (c[P] == 0x41 && c[P + 1] == 0x81 && c[P + 2] == 0x7f) ||
		    (c[P - 8] == 0x41 && c[P - 7] == 0x81 && c[P - 6] == 0x7f))
			return 0;
		/* Nothing pushed yet (the entry, its nops, the bang). */
		return 8;
	}
	/* A second entry's prologue, past the first's frame complete offset:
	 * C1's OSR entry (bang; push rbp; sub rsp, F) after the method's
	 * body, where the interpreter jumps with its own frame popped. */
	if (jvm_code_bang(c, P) || (c[P] == 0x55 && jvm_code_bang(c, P - 7)))
		return 8;
	if (c[P - 1] == 0x55 && jvm_code_bang(c, P - 8))
		return 16 | JVM_PARTIAL_BP;
	if (c[P] == 0xc3) /* ret */
		return 8;
	if (c[P] == 0x5d) /* pop rbp */
		return 16 | JVM_PARTIAL_BP;
	/* Past pop rbp: at the poll, or its jump (after a 4- or 7-byte cmp
	 * of rsp with [r15 + o]). */
	if (c[P - 1] == 0x5d || (c[P - 4] == 0x49 && c[P - 3] == 0x3b && c[P - 2] == 0x67) ||
	    (c[P - 7] == 0x49 && c[P - 6] == 0x3b && c[P - 5] == 0xa7))
		return 8;
	/* In a return poll's stub: at its movabs, its mov (10 bytes on) or its
	 * jmp (7 more). */
	if (jvm_code_poll_stub(c, P, begin, pc) || jvm_code_poll_stub(c, P - 10, begin, pc) ||
	    (c[P] == 0xe9 && jvm_code_poll_stub(c, P - 17, begin, pc)))
		return 8;
	return 0;
}

#endif
