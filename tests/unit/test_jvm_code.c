/* bpf/runtime/jvm_code.h, the BPF walk's reading of a compiled frame's
 * code at a sampled pc, on HotSpot's own code: each instruction of a real
 * nmethod (OpenJDK 17's C2, copied from a JVM running
 * tests/workloads/JChurn.java, a C2 OSR one and a C1 one) and of the
 * prologues C1 and C2 write,
 * each with the part of its frame on the stack there, known by the
 * instructions run before it. */
#include <stdio.h>
#include <string.h>
#include "bpf/runtime/jvm_code.h"
#include "check.h"

/* Worker.evenSpin's OSR nmethod (tests/workloads/jchurn/A/Worker.java),
 * frame size 4 words, frame complete 0x1c, at code begin 0x7fb1d4f27d20:
 *   0x00 call; nops              0x10 sub rsp, 0x18
 *   0x17 mov [rsp + 0x10], rbp   0x1c..0x68 the body (loop, its poll)
 *   0x69 add rsp, 0x10           0x6d pop rbp
 *   0x6e cmp rsp, [r15 + 0x340]  0x75 ja 0x7c            0x7b ret
 * and its stubs: the return poll's (0x7c movabs r10, begin + 0x6e; 0x86
 * mov [r15 + 0x358], r10; 0x8d jmp the return handler blob), the
 * exception handler (0xa0 jmp) and the deopt handler (0xa5). */
static const char osr_hex[] =
    "e89bf72f166666660f1f8400000000004881ec1800000048896c2410488b6e204c8b6e10488b1e488bfe"
    "49bac07c2eebb17f000041ffd2eb280f1f80000000004d8b97480300004c8bdb4983c3014d8bc549c1e8"
    "034c33c34d03e8418502498bdb483bdd7cda498bc54883c4105d493ba7400300000f8701000000c349ba"
    "8e7df2d4b17f00004d899758030000e94e8ba6fff4f4f4f4f4f4f4f4f4f4f4f4f4f4e93b64a7ffe80000"
    "000048832c2405e9cc9fa6fff4f4f4f4";
#define OSR_BEGIN 0x7fb1d4f27d20ULL

/* Worker.evenSpin's C1 (tier 3, profiled) nmethod from the same JVM, frame
 * size 14 words, frame complete 0x0c, at code begin 0x7f2aad4773c0:
 *   0x00 bang; 0x07 push rbp; 0x08 sub rsp, 0x60   the entry
 *   0x0c..0xde the body (counters, the loop, its poll at 0x92)
 *   0xe1 add rsp, 0x60; 0xe5 pop rbp; 0xe6 cmp rsp, [r15 + 0x340];
 *   0xed ja 0x181; 0xf3 ret
 *   0xf4 bang; 0xfb push rbp; 0xfc sub rsp, 0x60   the OSR entry
 *   0x100..0x13a the OSR buffer's migration, a call, a jmp to the loop
 *   0x13f, 0x160 the counter overflow stubs (calls, the frame whole)
 *   0x181 movabs r10, begin + 0xe6; 0x18b mov [r15 + 0x358], r10; 0x192
 *   jmp: the return poll's stub
 *   0x199..0x1bb the unwind handler (add rsp, 0x60; pop rbp; jmp).
 * CI's jvm_churn failure was a sample at 0xfb, read as a whole frame. */
static const char c1_hex[] =
    "89842400c0feff554883ec6048bf003540432a7f00008b9ff400000083c302899ff400000081e3fe0700"
    "0083fb000f840b01000048c7c70000000048c7c300000000e96100000090b903000000488bc348d3e848"
    "33c74803c349c7c2010000004903fa48bb003540432a7f00008b93f800000083c2028993f800000081e2"
    "fe3f000083fa000f84d50000004d8b974803000041850248bb003540432a7f0000ff8358010000488bd8"
    "488bcf483bce48b9003540432a7f000048c7c0480100000f8c0700000048c7c038010000488b1401488d"
    "5201488914010f8c6affffff488bc34883c4605d493ba7400300000f878e000000c389842400c0feff55"
    "4883ec60488b5e20488b4610488b16488bfe48895c245048894424484889542440e8de07271c488b5424"
    "40488bfa488b442448488bd8488b4c2450488bf1e969ffffff49ba603340432a7f00004c8954240848c7"
    "0424ffffffffe865ce5b07e9d4feffff49ba603340432a7f00004c8954240848c704241b000000e844ce"
    "5b07e90affffff49baa67447ad2a7f00004d899758030000e9a99351079090498b87d003000049c787d0"
    "0300000000000049c787d8030000000000004883c4605de9809f5207e87b915b0748bf4ad69bc92a7f00"
    "004883e4f0e8581f091cf449ba997547ad2a7f00004152e9f6a75107f4f4f4f4f4f4";
#define C1_BEGIN 0x7f2aad4773c0ULL

static size_t unhex(const char *hex, unsigned char *out, size_t max)
{
	size_t n = 0;
	unsigned v;

	while (n < max && sscanf(hex + 2 * n, "%2x", &v) == 1)
		out[n++] = (unsigned char)v;
	return n;
}

/* The decoder's answer at code offset off of code[0, len) at begin, the
 * bytes outside it zero (as a blob's header before it reads, near enough:
 * none of the sequences reaches there). */
static __u32 at(const unsigned char *code, size_t len, __u64 begin, __s32 complete, size_t off)
{
	__u8 c[JVM_CODE_LEN];

	for (int i = 0; i < JVM_CODE_LEN; i++) {
		long k = (long)off - JVM_CODE_AT + i;

		c[i] = k >= 0 && (size_t)k < len ? code[k] : 0;
	}
	return jvm_code_partial(c, begin + off, begin, complete);
}

static void test_c2_nmethod(void)
{
	unsigned char code[256];
	size_t len = unhex(osr_hex, code, sizeof(code));
	const struct {
		size_t off;
		__u32 want;
	} cases[] = {
	    {0x00, 8},
	    {0x05, 8},
	    {0x10, 8},			 /* sub not run: the return address at sp */
	    {0x17, 0x18 + 8},		 /* sub run, rbp not saved yet */
	    {0x1c, 0},			 /* complete */
	    {0x40, 0},			 /* the loop */
	    {0x5b, 0},			 /* its safepoint poll */
	    {0x66, 0},			 /* after the loop */
	    {0x69, 0},			 /* add rsp not run */
	    {0x6d, 16 | JVM_PARTIAL_BP}, /* pop rbp not run */
	    {0x6e, 8},			 /* the return poll's cmp */
	    {0x75, 8},			 /* its ja */
	    {0x7b, 8},			 /* ret */
	    {0x7c, 8},			 /* the poll stub: popped (was read whole) */
	    {0x86, 8},
	    {0x8d, 8},
	    {0xa0, 0}, /* the exception handler: whole */
	};

	CHECKF(len == 0xb8, "%zu bytes of code", len);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		__u32 got = at(code, len, OSR_BEGIN, 0x1c, cases[i].off);

		CHECKF(got == cases[i].want, "at %#zx: %#x, want %#x", cases[i].off, got,
		       cases[i].want);
	}
	/* The stub's movabs naming a pc outside the code before it is no
	 * poll stub of this blob: whole. */
	CHECK(at(code, len, OSR_BEGIN + 0x1000, 0x1c, 0x7c) == 0);
}

static void test_c1_nmethod(void)
{
	unsigned char code[512];
	size_t len = unhex(c1_hex, code, sizeof(code));
	const struct {
		size_t off;
		__u32 want;
	} cases[] = {
	    {0x00, 8},
	    {0x07, 8},
	    {0x08, 16 | JVM_PARTIAL_BP},
	    {0x0c, 0},
	    {0x48, 0},
	    {0x92, 0},
	    {0xde, 0},
	    {0xe1, 0},
	    {0xe5, 16 | JVM_PARTIAL_BP},
	    {0xe6, 8},
	    {0xed, 8},
	    {0xf3, 8},
	    {0xf4, 8},			 /* the OSR entry's bang (was read whole) */
	    {0xfb, 8},			 /* its push rbp (was read whole: CI's) */
	    {0xfc, 16 | JVM_PARTIAL_BP}, /* its sub (was read whole) */
	    {0x100, 0},
	    {0x122, 0},
	    {0x13f, 0},
	    {0x156, 0},
	    {0x181, 8},
	    {0x18b, 8},
	    {0x192, 8},
	    {0x1b6, 0},
	    {0x1ba, 16 | JVM_PARTIAL_BP},
	    {0x1bb, 8},
	};

	CHECKF(len == 0x1f0, "%zu bytes of code", len);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		__u32 got = at(code, len, C1_BEGIN, 0x0c, cases[i].off);

		CHECKF(got == cases[i].want, "at %#zx: %#x, want %#x", cases[i].off, got,
		       cases[i].want);
	}
}

/* A prologue with a stack bang (java.lang.ref.Reference.<init>'s, C2,
 * from the same JVM), with an 8-bit frame, a 32-bit one, and
 * -XX:+PreserveFramePointer's mov rbp, rsp; then JDK 21's entry barrier. */
static void test_bang_prologues(void)
{
	/* nops; mov [rsp - 0x14000], eax; push rbp; sub rsp, 0x30; mov rdi, imm */
	static const char imm8[] = "660f1f440000"
				   "89842400c0feff"
				   "55"
				   "4883ec30"
				   "48bf";
	static const char imm32[] = "660f1f440000"
				    "89842400c0feff"
				    "55"
				    "4881ec88000000"
				    "48bf";
	static const char pfp[] = "660f1f440000"
				  "89842400c0feff"
				  "55"
				  "4889e5"
				  "4883ec30"
				  "48bf";
	static const char barrier[] = "660f1f440000"
				      "89842400c0feff"
				      "55"
				      "4883ec30"
				      "41817f2001000000"
				      "0f8500000000"
				      "48bf";
	unsigned char code[64];
	size_t n;

	n = unhex(imm8, code, sizeof(code));
	CHECK(at(code, n, 0x1000, 18, 6) == 8);			     /* the bang */
	CHECK(at(code, n, 0x1000, 18, 13) == 8);		     /* push not run */
	CHECK(at(code, n, 0x1000, 18, 14) == (16 | JVM_PARTIAL_BP)); /* pushed */
	CHECK(at(code, n, 0x1000, 18, 18) == 0);		     /* complete */
	n = unhex(imm32, code, sizeof(code));
	CHECK(at(code, n, 0x1000, 21, 13) == 8);
	CHECK(at(code, n, 0x1000, 21, 14) == (16 | JVM_PARTIAL_BP)); /* was 8: its sub is 7 bytes */
	CHECK(at(code, n, 0x1000, 21, 21) == 0);
	n = unhex(pfp, code, sizeof(code));
	CHECK(at(code, n, 0x1000, 21, 14) == (16 | JVM_PARTIAL_BP));
	CHECK(at(code, n, 0x1000, 21, 17) == (16 | JVM_PARTIAL_BP)); /* and mov rbp, rsp */
	CHECK(at(code, n, 0x1000, 21, 21) == 0);
	/* The barrier's cmp and jne before the frame complete offset: the
	 * frame is made. */
	n = unhex(barrier, code, sizeof(code));
	CHECK(at(code, n, 0x1000, 32, 14) == (16 | JVM_PARTIAL_BP));
	CHECK(at(code, n, 0x1000, 32, 18) == 0);
	CHECK(at(code, n, 0x1000, 32, 26) == 0);
}

/* C2's prologue without a bang, frames past disp8 and of rbp alone. */
static void test_nobang_prologues(void)
{
	/* sub rsp, 0x108; mov [rsp + 0x100], rbp */
	static const char big[] = "4881ec08010000"
				  "4889ac2400010000"
				  "48bf";
	/* sub rsp, 8; mov [rsp], rbp */
	static const char small[] = "4883ec08"
				    "48892c24"
				    "48bf";
	unsigned char code[64];
	size_t n;

	n = unhex(big, code, sizeof(code));
	CHECK(at(code, n, 0x1000, 15, 0) == 8);
	CHECK(at(code, n, 0x1000, 15, 7) == 0x108 + 8);
	CHECK(at(code, n, 0x1000, 15, 15) == 0);
	n = unhex(small, code, sizeof(code));
	CHECK(at(code, n, 0x1000, 8, 0) == 8);
	CHECK(at(code, n, 0x1000, 8, 4) == 16); /* rbp not at sp yet */
}

int main(void)
{
	RUN_TEST(test_c2_nmethod);
	RUN_TEST(test_c1_nmethod);
	RUN_TEST(test_bang_prologues);
	RUN_TEST(test_nobang_prologues);
	return check_tests_failed ? 1 : 0;
}
