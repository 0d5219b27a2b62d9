/* The DWARF unwinder on this process's own stack: samples taken inside
 * chains of noinline functions (built without frame pointers at -O2), through
 * libc's qsort and through "JIT" code without CFI; each is unwound from its
 * registers and a copy of the stack, as BPF would copy it, and the return
 * addresses found are compared with the ones the functions saw themselves
 * (__builtin_return_address). Also frameless leaves, PLT entries, short
 * copies, a library loaded after the unwinder was made, and the cost. */
#include <dlfcn.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "bpf/cfi.h"
#include "check.h"
#include "capture.h"
#include "user/unwind.h"

#define RA() ((uint64_t)(uintptr_t)__builtin_return_address(0))

#define MAXPCS 128

extern void _start(void);

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int under_valgrind(void)
{
	const char *p = getenv("LD_PRELOAD");

	return p && strstr(p, "vgpreload");
}

static int in_libc(uint64_t pc, const char **sym)
{
	Dl_info di;

	if (!dladdr((void *)(uintptr_t)pc, &di) || !di.dli_fname)
		return 0;
	if (sym)
		*sym = di.dli_sname;
	return strstr(di.dli_fname, "libc.so") != NULL;
}

static int in_exe(uint64_t pc)
{
	Dl_info a, b;

	return dladdr((void *)(uintptr_t)pc, &a) && dladdr((void *)(uintptr_t)take_sample, &b) &&
	       a.dli_fbase == b.dli_fbase;
}

/* The last frames of the main thread: main's caller in libc
 * (__libc_start_call_main), __libc_start_main, then _start. */
static void check_root(const uint64_t *pcs, int n, int main_ra_at)
{
	const char *sym = NULL;

	CHECKF(n == main_ra_at + 3, "n %d, main's return address at %d", n, main_ra_at);
	if (n != main_ra_at + 3)
		return;
	CHECKF(in_libc(pcs[main_ra_at], NULL), "main returns to %#llx",
	       (unsigned long long)pcs[main_ra_at]);
	CHECK(in_libc(pcs[main_ra_at + 1], &sym));
	CHECKF(sym && strstr(sym, "__libc_start_main"), "%s", sym ? sym : "(no symbol)");
	CHECKF(pcs[n - 1] > (uint64_t)(uintptr_t)_start &&
		   pcs[n - 1] < (uint64_t)(uintptr_t)_start + 64,
	       "last %#llx, _start %p", (unsigned long long)pcs[n - 1], (void *)_start);
}

/* A test goes on only with an unwinder and a sample that copied some stack.
 * A macro, so that a failing CHECK names the test's own line. */
#define REQUIRE_SAMPLE(u, s)                                                                       \
	do {                                                                                       \
		CHECK((u) != NULL && (s).len > 256);                                               \
		if (!(u) || (s).len <= 256)                                                        \
			goto out;                                                                  \
	} while (0)

/* ---- main -> test_chain -> fa -> fb -> fc: the sample is in fc. ---- */

static struct sample s_chain;
static uint64_t ra_fc, ra_fb, ra_fa, ra_test_chain, cfa_fb;

NOINLINE int fc(int x)
{
	CAPTURE(&s_chain);
	ra_fc = RA();
	return x * 7 + 1;
}

NOINLINE int fb(int x)
{
	int r = fc(x + 1);

	ra_fb = RA();
	cfa_fb = (uint64_t)(uintptr_t)__builtin_dwarf_cfa();
	return r * 5 + 3;
}

NOINLINE int fa(int x)
{
	int r = fb(x + 2);

	ra_fa = RA();
	return r * 3 + 2;
}

static void test_chain(void)
{
	struct unwinder *u = unwinder_new(getpid(), NULL);
	uint64_t pcs[MAXPCS], pcs2[MAXPCS];
	unsigned flags = 99;
	int n, i;
	volatile int sink;

	ra_test_chain = RA();
	sink = fa(1);
	(void)sink;
	REQUIRE_SAMPLE(u, s_chain);
	n = unwind_dwarf(u, s_chain.regs, 0, s_chain.stack, s_chain.len, pcs, MAXPCS, &flags);
	print_pcs("chain", pcs, n);
	CHECKF(flags == 0, "flags %u", flags);
	CHECK(n >= 5);
	if (n < 5)
		goto out;
	CHECK(pcs[0] == s_chain.regs[UNWIND_IP]);
	/* fc keeps no frame pointer: its caller is found by its CFI (a CFA
	 * relative to rsp), where a frame-pointer walk would miss it. */
	CHECKF(pcs[1] == ra_fc, "%#llx, fc returns to %#llx", (unsigned long long)pcs[1],
	       (unsigned long long)ra_fc);
	CHECK(pcs[2] == ra_fb);
	CHECK(pcs[3] == ra_fa);
	CHECK(pcs[4] == ra_test_chain);
	check_root(pcs, n, 5);

	/* The same again: the Dwfl and caches serve a second sample. */
	i = unwind_dwarf(u, s_chain.regs, 0, s_chain.stack, s_chain.len, pcs2, MAXPCS, &flags);
	CHECK(i == n && !memcmp(pcs, pcs2, n * sizeof(*pcs)) && flags == 0);
	/* max bounds it. */
	CHECK(unwind_dwarf(u, s_chain.regs, 0, s_chain.stack, s_chain.len, pcs2, 3, &flags) == 3);
	CHECK(!memcmp(pcs, pcs2, 3 * sizeof(*pcs)));
	CHECK(unwind_dwarf(u, s_chain.regs, 0, s_chain.stack, s_chain.len, pcs2, 1, &flags) == 1);
	CHECK(pcs2[0] == pcs[0]);
out:
	unwinder_free(u);
}

/* fc "calls" ip from its sampled instruction: the chain's stack with one
 * more return address on it, and below that the npush words ip's code
 * pushed (push[0] at sp). Unwound with len bytes of that stack copied (at
 * most all of it). The frame count, or -1 (no memory). */
static int unwind_called(struct unwinder *u, uint64_t ip, uint64_t time_ns, const uint64_t *push,
			 size_t npush, size_t len, uint64_t *pcs, unsigned *flags)
{
	size_t below = (npush + 1) * 8, total = below + s_chain.len;
	unsigned char *stack = malloc(total);
	uint64_t regs[3] = {ip, s_chain.regs[UNWIND_SP] - below, s_chain.regs[UNWIND_BP]};
	int n;

	if (!stack)
		return -1;
	if (npush)
		memcpy(stack, push, npush * 8);
	memcpy(stack + npush * 8, &s_chain.regs[UNWIND_IP], 8);
	memcpy(stack + below, s_chain.stack, s_chain.len);
	n = unwind_dwarf(u, regs, time_ns, stack, len < total ? len : total, pcs, MAXPCS, flags);
	free(stack);
	return n;
}

/* Whether the sample at ip, called from fc (unwind_called) with the whole
 * stack copied, unwinds to ip and then every frame of the chain, with CFI
 * all the way (no UNWIND_TRUNCATED). */
static bool unwinds_as_called(struct unwinder *u, uint64_t ip, uint64_t time_ns,
			      const uint64_t *push, size_t npush)
{
	uint64_t full[MAXPCS], pcs[MAXPCS];
	unsigned fflags, flags = 0;
	int nfull, n;

	nfull = unwind_dwarf(u, s_chain.regs, 0, s_chain.stack, s_chain.len, full, MAXPCS, &fflags);
	n = unwind_called(u, ip, time_ns, push, npush, SIZE_MAX, pcs, &flags);
	if (nfull >= 5 && fflags == 0 && n == nfull + 1 && flags == 0 && pcs[0] == ip &&
	    !memcmp(pcs + 1, full, nfull * sizeof(*pcs)))
		return true;
	fprintf(stderr, "called at %#llx: %d frames, flags %u; the chain's %d, flags %u\n",
		(unsigned long long)ip, n, flags, nfull, fflags);
	print_pcs("called", pcs, n > 0 ? n : 0);
	print_pcs("chain", full, nfull);
	return false;
}

/* Every copy length from 0 up: a short copy gives a prefix of the stack and
 * the TRUNCATED flag, never a read outside the copy (each copy is a malloc
 * of exactly its length, for valgrind), and from the length the root needs,
 * the whole stack. */
static void test_short_copies(void)
{
	struct unwinder *u = unwinder_new(getpid(), NULL);
	uint64_t full[MAXPCS], pcs[MAXPCS];
	unsigned flags, fflags;
	int nfull, n, bad_trunc = 0, bad_full = 0, bad_prefix = 0;
	size_t len, need = SIZE_MAX;

	REQUIRE_SAMPLE(u, s_chain);
	nfull = unwind_dwarf(u, s_chain.regs, 0, s_chain.stack, s_chain.len, full, MAXPCS, &fflags);
	CHECK(fflags == 0 && nfull >= 8);
	n = unwind_dwarf(u, s_chain.regs, 0, NULL, 0, pcs, MAXPCS, &flags);
	CHECKF(n == 1 && pcs[0] == full[0] && flags == UNWIND_TRUNCATED, "n %d flags %u", n, flags);
	for (len = 0; len <= s_chain.len; len += 8) {
		unsigned char *copy = malloc(len ? len : 1);

		if (!copy)
			break;
		memcpy(copy, s_chain.stack, len);
		n = unwind_dwarf(u, s_chain.regs, 0, copy, len, pcs, MAXPCS, &flags);
		free(copy);
		if (n < 1 || pcs[0] != full[0])
			bad_prefix++;
		if (flags == 0 && need == SIZE_MAX)
			need = len;
		if (need == SIZE_MAX) {
			if (!(flags & UNWIND_TRUNCATED))
				bad_trunc++;
			/* DWARF's part matches; frame pointers may add more. */
			if (n >= 2 && pcs[1] != full[1] && len >= 64)
				bad_prefix++;
		} else if (flags != 0 || n != nfull || memcmp(pcs, full, n * sizeof(*pcs))) {
			bad_full++;
		}
	}
	fprintf(stderr, "# the root needs %zu of the %zu bytes copied\n", need, s_chain.len);
	CHECK(need != SIZE_MAX && need > 64);
	CHECKF(!bad_trunc, "%d short copies not marked truncated", bad_trunc);
	CHECKF(!bad_full, "%d long-enough copies differ", bad_full);
	CHECKF(!bad_prefix, "%d copies with a wrong first frames", bad_prefix);

	/* Up to fb's CFA, where fa's frame starts: fc's frame and fb's, not
	 * fa's. So fc, fb, fa, then truncated. */
	len = cfa_fb - s_chain.regs[UNWIND_SP];
	CHECK(len > 16 && len < s_chain.len);
	n = unwind_dwarf(u, s_chain.regs, 0, s_chain.stack, len, pcs, MAXPCS, &flags);
	CHECKF(n >= 3 && pcs[1] == ra_fc && pcs[2] == ra_fb && (flags & UNWIND_TRUNCATED),
	       "n %d flags %u", n, flags);
	/* A misaligned or absurd copy does not crash. */
	n = unwind_dwarf(u, s_chain.regs, 0, s_chain.stack + 1, 5, pcs, MAXPCS, &flags);
	CHECK(n == 1 && (flags & UNWIND_TRUNCATED));
	CHECK(unwind_dwarf(u, (uint64_t[3]){0, 0, 0}, 0, NULL, 0, pcs, MAXPCS, &flags) == 0);
out:
	unwinder_free(u);
}

/* ---- through libc: test_qsort -> qa -> qsort (libc, no frame pointers)
 * -> cmp -> qc: the sample is in qc. ---- */

static struct sample s_qsort;
static uint64_t ra_qc, ra_cmp, ra_qa;

NOINLINE int qc(int x)
{
	if (!s_qsort.stack) {
		CAPTURE(&s_qsort);
		ra_qc = RA();
	}
	return x + 1;
}

NOINLINE int cmp(const void *a, const void *b)
{
	int r = qc(*(const int *)a) - qc(*(const int *)b);

	ra_cmp = RA();
	return r;
}

NOINLINE int qa(int n)
{
	int v[16], i;

	for (i = 0; i < 16; i++)
		v[i] = (i * 7) % 16;
	qsort(v, (size_t)n, sizeof(v[0]), cmp);
	ra_qa = RA();
	return v[0] + v[n - 1];
}

/* Defined when AddressSanitizer's runtime is linked (make test SANITIZE=1). */
extern void __asan_init(void) __attribute__((weak));

static void test_qsort(void)
{
	struct unwinder *u = unwinder_new(getpid(), NULL);
	uint64_t pcs[MAXPCS], bp, ra, next;
	unsigned flags = 99;
	int n, i, k, nfp = 1;
	volatile int sink;

	sink = qa(16);
	(void)sink;
	REQUIRE_SAMPLE(u, s_qsort);
	n = unwind_dwarf(u, s_qsort.regs, 0, s_qsort.stack, s_qsort.len, pcs, MAXPCS, &flags);
	print_pcs("qsort", pcs, n);
	CHECKF(flags == 0, "flags %u", flags);
	CHECK(n >= 6);
	if (n < 6)
		goto out;
	CHECK(pcs[1] == ra_qc);
	CHECKF(pcs[2] == ra_cmp && in_libc(pcs[2], NULL), "%#llx, cmp returns to %#llx",
	       (unsigned long long)pcs[2], (unsigned long long)ra_cmp);
	/* libc's frames (msort_with_tmp, __qsort_r), then qa, test_qsort, main. */
	for (k = 3; k < n && in_libc(pcs[k], NULL); k++)
		;
	CHECKF(k > 3 && k < n - 1 && in_exe(pcs[k]) && pcs[k + 1] == ra_qa, "k %d", k);
	if (k < n - 1)
		check_root(pcs, n, k + 3);

	/* What a frame-pointer walk makes of it, for the record. */
	for (bp = s_qsort.regs[UNWIND_BP]; nfp < MAXPCS; bp = next, nfp++) {
		uint64_t off = bp - s_qsort.regs[UNWIND_SP];

		if (bp < s_qsort.regs[UNWIND_SP] || off + 16 > s_qsort.len)
			break;
		memcpy(&next, s_qsort.stack + off, 8);
		memcpy(&ra, s_qsort.stack + off + 8, 8);
		if (next <= bp)
			break;
	}
	fprintf(stderr, "# through qsort: %d frames with DWARF, %d with frame pointers\n", n, nfp);
	for (i = 0; i < n; i++)
		CHECK(pcs[i] != 0);
out:
	unwinder_free(u);
}

/* n bytes of code in an executable anonymous page (munmap 4096), or NULL
 * with the test skipped. */
static void *code_page(const char *test, const unsigned char *code, size_t n)
{
	void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (page == MAP_FAILED) {
		printf("SKIP %s: mmap failed\n", test);
		return NULL;
	}
	memcpy(page, code, n);
	if (mprotect(page, 4096, PROT_READ | PROT_EXEC)) {
		munmap(page, 4096);
		printf("SKIP %s: no executable anonymous memory here\n", test);
		return NULL;
	}
	return page;
}

/* ---- "JIT" code without CFI, in an anonymous mapping, with a frame
 * pointer: test_jit -> call_jit -> JIT code -> jit_callee. ---- */

static struct sample s_jit;
static uint64_t ra_jit_callee, ra_call_jit;

NOINLINE void jit_callee(void)
{
	CAPTURE(&s_jit);
	ra_jit_callee = RA();
	__asm__ volatile("" ::: "memory");
}

NOINLINE int call_jit(void (*code)(void (*)(void)))
{
	code(jit_callee);
	ra_call_jit = RA();
	return 1;
}

static void test_jit(void)
{
	/* push rbp; mov rbp, rsp; call *rdi; pop rbp; ret */
	static const unsigned char code[] = {0x55, 0x48, 0x89, 0xe5, 0xff, 0xd7, 0x5d, 0xc3};
	void *page = code_page("test_jit", code, sizeof(code));
	struct unwinder *u;
	uint64_t pcs[MAXPCS], regs[3], jit;
	unsigned flags = 0;
	int n;
	volatile int sink;

	if (!page)
		return;
	jit = (uint64_t)(uintptr_t)page;
	u = unwinder_new(getpid(), NULL);
	sink = call_jit((void (*)(void (*)(void)))page);
	(void)sink;
	REQUIRE_SAMPLE(u, s_jit);
	n = unwind_dwarf(u, s_jit.regs, 0, s_jit.stack, s_jit.len, pcs, MAXPCS, &flags);
	print_pcs("jit", pcs, n);
	CHECKF(flags == UNWIND_TRUNCATED, "flags %u", flags);
	CHECK(n >= 4);
	if (n >= 4) {
		CHECKF(pcs[1] == ra_jit_callee && pcs[1] == jit + 6, "%#llx",
		       (unsigned long long)pcs[1]);
		/* The frame pointer's step out of the JIT code, then CFI again. */
		CHECK(in_exe(pcs[2]));
		CHECK(pcs[3] == ra_call_jit);
		CHECK(n >= 7 && in_libc(pcs[n - 3], NULL));
		CHECK(pcs[n - 1] > (uint64_t)(uintptr_t)_start &&
		      pcs[n - 1] < (uint64_t)(uintptr_t)_start + 64);
	}
	/* A leaf in the JIT code, which no CFI covers: marked. */
	regs[UNWIND_IP] = jit;
	regs[UNWIND_SP] = s_jit.regs[UNWIND_SP];
	regs[UNWIND_BP] = s_jit.regs[UNWIND_BP];
	n = unwind_dwarf(u, regs, 0, s_jit.stack, s_jit.len, pcs, MAXPCS, &flags);
	CHECKF(n >= 1 && pcs[0] == jit && flags == UNWIND_TRUNCATED, "n %d flags %u", n, flags);
	/* The same unwinder's CFI cache keeps each address's answer: the
	 * chain, all CFI, is not marked, and the JIT sample still is. */
	if (s_chain.len) {
		unwind_dwarf(u, s_chain.regs, 0, s_chain.stack, s_chain.len, pcs, MAXPCS, &flags);
		CHECKF(flags == 0, "flags %u", flags);
	}
	unwind_dwarf(u, s_jit.regs, 0, s_jit.stack, s_jit.len, pcs, MAXPCS, &flags);
	CHECKF(flags == UNWIND_TRUNCATED, "flags %u", flags);
out:
	unwinder_free(u);
	munmap(page, 4096);
}

/* ---- CPython's perf trampoline (python -X perf; bpf/cfi.h's PY_TRAMP_*),
 * in an anonymous mapping without CFI or frame record:
 * test_py_tramp -> call_py_tramp -> trampoline -> py_callee. ---- */

static struct sample s_py;
static uint64_t ra_py_callee, ra_call_py_tramp, py_cfa, py_bp;

KEEP_FP NOINLINE void py_callee(void)
{
	uint64_t *fp = __builtin_frame_address(0);

	CAPTURE(&s_py);
	ra_py_callee = RA();
	/* The trampoline's frame: sp just above the return address into it
	 * (this frame's CFA), rbp as the trampoline left it (untouched). */
	py_cfa = (uint64_t)(uintptr_t)(fp + 2);
	py_bp = fp[0];
	__asm__ volatile("" ::: "memory");
}

/* With a frame pointer: the frame-pointer step from the trampoline takes
 * this frame's record, past call_py_tramp to its caller. */
KEEP_FP NOINLINE int call_py_tramp(void (*code)(long, long, long, void (*)(void)))
{
	code(0, 0, 0, py_callee);
	ra_call_py_tramp = RA();
	return 1;
}

/* A return address into call_py_tramp (after its call of the trampoline). */
static bool in_call_py_tramp(uint64_t pc)
{
	return pc > (uint64_t)(uintptr_t)call_py_tramp &&
	       pc < (uint64_t)(uintptr_t)call_py_tramp + 64;
}

/* From the sample in py_callee, and from the trampoline's frame on, as
 * user/proc.c unwinds a stack the BPF walk handed over there
 * (SAMPLE_DWARF_AT: the trampoline's anonymous mapping not in the process's
 * tables yet): both step through the trampoline to call_py_tramp. Before,
 * the trampoline's own frame was never stepped through, and one in a
 * module's range (this page lands next to a library's) not even from its
 * callee: libdwfl's frame-pointer step left call_py_tramp out, and user
 * space took the BPF walk's frames, cut at the trampoline (python_perf_3.12
 * under load: 97.5 % of stacks agreed with the perf map). */
static void test_py_tramp(void)
{
	/* sub rsp, 8; call *rcx; add rsp, 8; ret */
	static const unsigned char code[] = {0x48, 0x83, 0xec, 0x08, 0xff, 0xd1,
					     0x48, 0x83, 0xc4, 0x08, 0xc3};
	void *page = code_page("test_py_tramp", code, sizeof(code));
	struct unwinder *u = NULL;
	uint64_t pcs[MAXPCS], regs[3], tramp, off;
	unsigned flags = 0;
	int n;
	volatile int sink;

	if (!page)
		return;
	tramp = (uint64_t)(uintptr_t)page;
	u = unwinder_new(getpid(), NULL);
	sink = call_py_tramp((void (*)(long, long, long, void (*)(void)))page);
	(void)sink;
	REQUIRE_SAMPLE(u, s_py);
	CHECK(ra_py_callee == tramp + PY_TRAMP_RET);
	n = unwind_dwarf(u, s_py.regs, 0, s_py.stack, s_py.len, pcs, MAXPCS, &flags);
	print_pcs("py_tramp", pcs, n);
	CHECKF(n >= 5 && pcs[1] == ra_py_callee && in_call_py_tramp(pcs[2]) &&
		   pcs[3] == ra_call_py_tramp,
	       "n %d", n);
	off = py_cfa - s_py.regs[UNWIND_SP];
	CHECK(off < s_py.len);
	if (off >= s_py.len)
		goto out;
	regs[UNWIND_IP] = ra_py_callee;
	regs[UNWIND_SP] = py_cfa;
	regs[UNWIND_BP] = py_bp;
	n = unwind_dwarf(u, regs, 0, s_py.stack + off, s_py.len - off, pcs, MAXPCS, &flags);
	print_pcs("from py_tramp", pcs, n);
	CHECKF(n >= 4 && pcs[0] == ra_py_callee && in_call_py_tramp(pcs[1]) &&
		   pcs[2] == ra_call_py_tramp,
	       "n %d", n);
	if (n >= 4)
		CHECK(pcs[n - 1] > (uint64_t)(uintptr_t)_start &&
		      pcs[n - 1] < (uint64_t)(uintptr_t)_start + 64);
out:
	unwinder_free(u);
	munmap(page, 4096);
}

/* No module at all: libdwfl's frame-pointer steps through a made-up chain
 * of frame records, marked truncated, ending where the chain ends. */
static void test_fp_only(void)
{
	struct unwinder *u = unwinder_new(getpid(), NULL);
	uint64_t stack[16] = {0}, base = 0x7ff000000000ULL, pcs[MAXPCS];
	uint64_t regs[3] = {0x1000, base, base + 16};
	unsigned flags = 0;
	int n;

	CHECK(u != NULL);
	if (!u)
		return;
	stack[2] = base + 48; /* rbp -> the next record */
	stack[3] = 0x2000;    /* its return address */
	stack[6] = base + 96;
	stack[7] = 0x3000;
	stack[12] = 0; /* the outermost record */
	stack[13] = 0x4000;
	n = unwind_dwarf(u, regs, 0, stack, sizeof(stack), pcs, MAXPCS, &flags);
	print_pcs("fp", pcs, n);
	CHECKF(n == 4 && pcs[0] == 0x1000 && pcs[1] == 0x2000 && pcs[2] == 0x3000 &&
		   pcs[3] == 0x4000,
	       "n %d", n);
	CHECK(flags == UNWIND_TRUNCATED);
	/* A record that points down the stack ends the walk: no loops. */
	stack[12] = base + 16;
	n = unwind_dwarf(u, regs, 0, stack, sizeof(stack), pcs, MAXPCS, &flags);
	print_pcs("fp loop", pcs, n);
	CHECKF(n >= 4 && n < MAXPCS && flags == UNWIND_TRUNCATED, "n %d", n);
	unwinder_free(u);
}

/* Garbage stacks and registers: no crash, no read outside the copy (for
 * valgrind), a count within bounds. Words are code addresses of this
 * program and libc, pointers into the copy, or random. */
static void test_garbage(void)
{
	struct unwinder *u = unwinder_new(getpid(), NULL);
	uint64_t code[] = {(uint64_t)(uintptr_t)fa,
			   (uint64_t)(uintptr_t)qa,
			   ra_fc,
			   ra_fb,
			   ra_fa,
			   ra_test_chain,
			   ra_cmp ? ra_cmp : ra_fc, /* 0 when test_qsort was skipped */
			   (uint64_t)(uintptr_t)qsort,
			   (uint64_t)(uintptr_t)memcpy,
			   s_chain.regs[UNWIND_IP]};
	uint64_t words[128], pcs[MAXPCS], base = 0x7ff000000000ULL, x = 0x9e3779b97f4a7c15ULL;
	unsigned flags;
	int iter, i, n, bad = 0, ncode = sizeof(code) / sizeof(code[0]);

	CHECK(u != NULL);
	if (!u)
		return;
	for (iter = 0; iter < 3000; iter++) {
		uint64_t regs[3];
		size_t len;

		for (i = 0; i < 128 + 3; i++) {
			uint64_t w;

			x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift64 */
			switch (x % 4) {
			case 0:
				w = code[(x >> 8) % ncode] + ((x >> 20) % 3);
				break;
			case 1:
				w = base + ((x >> 8) % 140) * 8 - 32;
				break;
			case 2:
				w = 0;
				break;
			default:
				w = x;
			}
			if (i < 128)
				words[i] = w;
			else
				regs[i - 128] = w;
		}
		regs[UNWIND_IP] = code[iter % ncode];
		regs[UNWIND_SP] = base;
		len = (x >> 30) % (sizeof(words) + 1);
		n = unwind_dwarf(u, regs, 0, words, len, pcs, 1 + iter % MAXPCS, &flags);
		if (n < 1 || n > 1 + iter % MAXPCS || pcs[0] != regs[UNWIND_IP])
			bad++;
		/* Any word as the ip (0: no frame). */
		regs[UNWIND_IP] = words[iter % 128];
		n = unwind_dwarf(u, regs, 0, words, len, pcs, MAXPCS, &flags);
		if (regs[UNWIND_IP] ? n < 1 || n > MAXPCS || pcs[0] != regs[UNWIND_IP] : n != 0)
			bad++;
	}
	CHECKF(!bad, "%d bad counts", bad);
	unwinder_free(u);
}

/* PLT entries: their CFA is an expression of rsp and rip (8 bytes above sp
 * until the entry's push, 16 after), which libdwfl evaluates with rip as
 * register 16 (set_initial_registers). A sample in one unwinds through it to
 * its caller and on to the root. */
static void test_plt(void)
{
	struct unwinder *u;
	uint64_t plt, ent, pcs[MAXPCS], pushed = 5;
	unsigned flags;
	size_t size = 0;
	int n;

	plt = find_plt(&size);
	if (!plt || size < 48) {
		SKIP_TEST(test_plt, "no .plt in this program (linked with -z now or -fno-plt?)");
		return;
	}
	ent = plt + 16; /* the first entry after PLT0 */
	u = unwinder_new(getpid(), NULL);
	REQUIRE_SAMPLE(u, s_chain);
	/* At the entry, the return address is at sp; past its push, sp + 8. */
	CHECK(unwinds_as_called(u, ent, 0, NULL, 0));
	CHECK(unwinds_as_called(u, ent + 11, 0, &pushed, 1));
	/* A copy of the push and the return address, no more: the caller,
	 * and the sample marked; of the push alone: no caller. */
	n = unwind_called(u, ent + 11, 0, &pushed, 1, 16, pcs, &flags);
	print_pcs("plt, 16 bytes", pcs, n > 0 ? n : 0);
	CHECKF(n >= 2 && pcs[0] == ent + 11 && pcs[1] == s_chain.regs[UNWIND_IP] &&
		   (flags & UNWIND_TRUNCATED),
	       "n %d flags %u", n, flags);
	n = unwind_called(u, ent + 11, 0, &pushed, 1, 8, pcs, &flags);
	CHECKF(n == 1 && pcs[0] == ent + 11 && flags == UNWIND_TRUNCATED, "n %d flags %u", n,
	       flags);
out:
	unwinder_free(u);
}

/* ---- A frameless leaf, called by a function with a frame: test_leaf ->
 * framed -> leaf. ---- */

/* A capture without a call, so that the function's frame is as the
 * compiler made it: rip, rsp and rbp, and up to buf's size of stack from
 * rsp (as far as the stack goes, as take_sample). rbx and r12 are clobbered:
 * a function saves them, and its CFA moves 16 bytes up. */
#define CAPTURE_HERE(c)                                                                            \
	do {                                                                                       \
		unsigned char *dst_ = (c)->stack;                                                  \
		size_t cnt_ = stack_end;                                                           \
                                                                                                   \
		__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2\n\t"          \
				 "mov %%rsp, %%rsi\n\tsub %%rsp, %%rcx\n\tcmp %5, %%rcx\n\t"       \
				 "jbe 1f\n\tmov %5, %%rcx\n1:\n\trep movsb"                        \
				 : "=&r"((c)->regs[UNWIND_IP]), "=&r"((c)->regs[UNWIND_SP]),       \
				   "=&r"((c)->regs[UNWIND_BP]), "+D"(dst_), "+c"(cnt_)             \
				 : "i"(sizeof((c)->stack))                                         \
				 : "rsi", "rbx", "r12", "cc", "memory");                           \
		(c)->len = dst_ - (c)->stack;                                                      \
	} while (0)

struct here {
	uint64_t regs[3];
	unsigned char stack[16384];
	size_t len;
};

static struct here s_leaf, s_framed;
static uint64_t ra_leaf, ra_framed;

/* A frameless leaf that saves two registers: CFA = rsp + 24 where it
 * captures, its return address at sp + 16. */
NOINLINE OMIT_FP int leaf(int x)
{
	CAPTURE_HERE(&s_leaf);
	ra_leaf = RA();
	return x + 1;
}

/* A function with a frame: CFA = rbp + 16 past its prologue. */
NOINLINE KEEP_FP int framed(int x)
{
	volatile int sink;

	CAPTURE_HERE(&s_framed);
	ra_framed = RA();
	sink = leaf(x);
	return sink + 1;
}

static void test_leaf(void)
{
	struct unwinder *u = unwinder_new(getpid(), NULL);
	uint64_t words[2] = {0x1122334455667788ULL, 0}, pcs[MAXPCS];
	unsigned flags;
	volatile int sink;
	int n;

	sink = framed(3);
	(void)sink;
	CHECK(u != NULL);
	if (!u)
		return;
	/* The leaf's caller from its CFI (a frame-pointer walk misses it),
	 * framed's through its rbp, and on to the root. */
	n = unwind_dwarf(u, s_leaf.regs, 0, s_leaf.stack, s_leaf.len, pcs, MAXPCS, &flags);
	print_pcs("leaf", pcs, n);
	CHECKF(n >= 4 && pcs[1] == ra_leaf && pcs[2] == ra_framed && flags == 0,
	       "n %d flags %u, leaf returns to %#llx, framed to %#llx", n, flags,
	       (unsigned long long)ra_leaf, (unsigned long long)ra_framed);
	/* The return address is at sp + 16: a copy of 24 bytes has it, one of
	 * 16 misses it. */
	n = unwind_dwarf(u, s_leaf.regs, 0, s_leaf.stack, 24, pcs, MAXPCS, &flags);
	CHECKF(n >= 2 && pcs[1] == ra_leaf && (flags & UNWIND_TRUNCATED), "n %d flags %u", n,
	       flags);
	n = unwind_dwarf(u, s_leaf.regs, 0, s_leaf.stack, 16, pcs, MAXPCS, &flags);
	CHECKF(n == 1 && flags == UNWIND_TRUNCATED, "n %d flags %u", n, flags);
	n = unwind_dwarf(u, s_leaf.regs, 0, NULL, 0, pcs, MAXPCS, &flags);
	CHECKF(n == 1 && flags == UNWIND_TRUNCATED, "n %d flags %u", n, flags);
	/* At a function's first instruction the return address is at sp. */
	CHECK(unwinds_as_called(u, (uint64_t)(uintptr_t)leaf, 0, NULL, 0));
	CHECK(unwinds_as_called(u, (uint64_t)(uintptr_t)fc, 0, NULL, 0));
	/* With a frame: CFA = rbp + 16. */
	n = unwind_dwarf(u, s_framed.regs, 0, s_framed.stack, s_framed.len, pcs, MAXPCS, &flags);
	print_pcs("framed", pcs, n);
	CHECKF(n >= 3 && pcs[1] == ra_framed && flags == 0, "n %d flags %u", n, flags);
	/* Not code: in no module, no CFI. */
	n = unwind_dwarf(u, (uint64_t[3]){0x1000, 0x7000, 0}, 0, words, 16, pcs, MAXPCS, &flags);
	CHECKF(n >= 1 && pcs[0] == 0x1000 && flags == UNWIND_TRUNCATED, "n %d flags %u", n, flags);
	unwinder_free(u);
}

/* A library loaded after the unwinder was made (lib, not yet loaded), at
 * its function sym's first instruction, called from the chain: in no module
 * until the maps are read again, then with the library's CFI. now: the
 * sample is taken now (its time given), else at an unknown time after a wait
 * past the gap between reads. */
static void unwinds_dlopened(const char *test, const char *lib, const char *sym, bool now)
{
	struct timespec ts = {0, 150 * 1000000L};
	struct unwinder *u;
	void *h, *fn;

	if (dlopen(lib, RTLD_NOW | RTLD_NOLOAD)) {
		printf("SKIP %s: %s is loaded already\n", test, lib);
		return;
	}
	u = unwinder_new(getpid(), NULL);
	CHECK(u != NULL);
	if (!u)
		return;
	h = dlopen(lib, RTLD_NOW);
	fn = h ? dlsym(h, sym) : NULL;
	if (!fn) {
		unwinder_free(u);
		printf("SKIP %s: no %s in %s\n", test, sym, lib);
		return;
	}
	if (!now)
		nanosleep(&ts, NULL);
	CHECKF(unwinds_as_called(u, (uint64_t)(uintptr_t)fn, now ? now_ns() : 0, NULL, 0), "%s %s",
	       lib, sym);
	unwinder_free(u);
	dlclose(h);
}

/* Found by reading the process's mappings again, at most every 100 ms. */
static void test_dlopen(void)
{
	unwinds_dlopened("test_dlopen", "libm.so.6", "cos", false);
}

/* A sample taken after the unwinder's last read of the maps, in a library
 * mapped since: read again at once, not after the 1 ms gap. As ld.so maps a
 * process's libraries right after exec, an unwinder made for its first
 * sample met a wait in libc's read within that gap: libdwfl's frame-pointer
 * step there went past read's caller (waits.c repeat lost read_heap from 1
 * stack in ~15 recordings). libcrypt: no library this test links needs it. */
static void test_dlopen_sample_after(void)
{
	unwinds_dlopened("test_dlopen_sample_after", "libcrypt.so.1", "crypt_r", true);
}

/* Cost per sample, once the modules and CFI are cached. */
static void test_cost(void)
{
	struct sample *ss[] = {&s_chain, &s_qsort};
	uint64_t pcs[MAXPCS], t0, t1, t_new, t_first;
	unsigned flags;
	int iters = under_valgrind() ? 20 : 20000, i, j, n = 0;
	struct unwinder *u;

	t0 = now_ns();
	u = unwinder_new(getpid(), NULL);
	t_new = now_ns() - t0;
	CHECK(u != NULL);
	if (!u)
		return;
	t0 = now_ns();
	unwind_dwarf(u, s_qsort.regs, 0, s_qsort.stack, s_qsort.len, pcs, MAXPCS, &flags);
	t_first = now_ns() - t0;
	fprintf(stderr, "# unwinder_new: %.1f us; first unwind (ELF and CFI loads): %.1f us\n",
		t_new / 1e3, t_first / 1e3);
	for (j = 0; j < 2; j++) {
		struct sample *s = ss[j];

		int n0 = unwind_dwarf(u, s->regs, 0, s->stack, s->len, pcs, MAXPCS, &flags);

		t0 = now_ns();
		for (i = 0; i < iters; i++)
			n = unwind_dwarf(u, s->regs, 0, s->stack, s->len, pcs, MAXPCS, &flags);
		t1 = now_ns() - t0;
		/* A figure, not a check: speed is the benchmarks' (a loaded
		 * machine doubles it). The cache must not change the answer. */
		fprintf(stderr, "# unwind_dwarf, %s: %d frames, %.0f ns per sample\n",
			j ? "through qsort" : "chain", n, (double)t1 / iters);
		/* (The qsort sample is empty under ASan, whose qsort interceptor
		 * test_qsort skips: only the chain's depth is known here.) */
		CHECKF(n == n0 && (j || n >= 8), "%d frames cached, %d the first time", n, n0);
	}
	unwinder_free(u);
}

/* File mappings in /proc/self/maps (lines with a path). */
static int file_mappings(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += strchr(line, '/') != NULL;
	fclose(f);
	return n;
}

/* Two processes' unwinders reading the same files map them once: a server's
 * backends each mapped the same binary and libc again (~1 MiB of RSS per
 * unwinder under -a --off-cpu). A file stays while an unwinder reads it. */
struct mods_seen {
	char text[16384];
	size_t len;
};

static int mod_line(Dwfl_Module *m, void **userdata, const char *name, Dwarf_Addr start, void *arg)
{
	struct mods_seen *ms = arg;
	Dwarf_Addr end;

	(void)userdata;
	dwfl_module_info(m, NULL, NULL, &end, NULL, NULL, NULL, NULL);
	if (ms->len < sizeof(ms->text))
		ms->len +=
		    snprintf(ms->text + ms->len, sizeof(ms->text) - ms->len, "%llx-%llx %s\n",
			     (unsigned long long)start, (unsigned long long)end, name);
	return DWARF_CB_OK;
}

/* The modules of pid as reported by report, one line each. */
static int mods_of(pid_t pid, bool ours, struct mods_seen *ms)
{
	static const Dwfl_Callbacks cb = {.find_elf = dwfl_linux_proc_find_elf,
					  .find_debuginfo = dwfl_standard_find_debuginfo};
	Dwfl *d = dwfl_begin(&cb);
	int err;

	ms->len = 0;
	if (!d)
		return -1;
	dwfl_report_begin(d);
	err = ours ? unwind_report_maps(d, pid) : dwfl_linux_proc_report(d, pid);
	dwfl_report_end(d, NULL, NULL);
	dwfl_getmodules(d, mod_line, ms, 0);
	dwfl_end(d);
	return err;
}

/* The unwinders' reader of /proc/PID/maps (formats/procmaps.c) reports the
 * modules libdwfl's own dwfl_linux_proc_report does: this process (libelf,
 * libdw, the vdso...) and a sleep(1) of another layout. */
static void test_report_maps(void)
{
	static struct mods_seen a, b;
	pid_t pids[2] = {getpid(), fork()};

	if (pids[1] == 0) {
		execl("/bin/sleep", "sleep", "5", (char *)NULL);
		_exit(127);
	}
	usleep(200000); /* exec'd, its libraries mapped */
	for (int i = 0; i < 2; i++) {
		CHECK(!mods_of(pids[i], false, &a));
		CHECK(!mods_of(pids[i], true, &b));
		CHECKF(a.len > 0 && a.len == b.len && !memcmp(a.text, b.text, a.len),
		       "pid %d: libdwfl:\n%.*s\nours:\n%.*s", (int)pids[i], (int)a.len, a.text,
		       (int)b.len, b.text);
		CHECKF(strstr(b.text, "[vdso: ") && strstr(b.text, "libc.so"), "pid %d:\n%.*s",
		       (int)pids[i], (int)b.len, b.text);
	}
	if (pids[1] > 0) {
		kill(pids[1], SIGKILL);
		waitpid(pids[1], NULL, 0);
	}
}

static void test_shared_files(void)
{
	struct unwind_elves *elves = unwind_elves_new();
	struct unwinder *a = elves ? unwinder_new(getpid(), elves) : NULL;
	struct unwinder *b = elves ? unwinder_new(getpid(), elves) : NULL;
	uint64_t pcs[MAXPCS], pcs2[MAXPCS];
	unsigned flags = 0;
	int n0, n1, n2, na, nb;
	size_t held;

	CHECK(a && b);
	if (!a || !b)
		goto out;
	REQUIRE_SAMPLE(a, s_chain);
	n0 = file_mappings();
	na = unwind_dwarf(a, s_chain.regs, 0, s_chain.stack, s_chain.len, pcs, MAXPCS, &flags);
	n1 = file_mappings();
	held = unwind_elves_held(elves);
	nb = unwind_dwarf(b, s_chain.regs, 0, s_chain.stack, s_chain.len, pcs2, MAXPCS, &flags);
	n2 = file_mappings();
	CHECKF(na >= 5 && nb == na && !memcmp(pcs, pcs2, na * sizeof(*pcs)), "%d and %d frames", na,
	       nb);
	CHECKF(n1 > n0 && held >= 1, "%d file mappings before, %d after; %zu files held", n0, n1,
	       held);
	CHECKF(n2 == n1 && unwind_elves_held(elves) == held,
	       "the second unwinder: %d file mappings after, %d before; %zu files held, %zu before",
	       n2, n1, unwind_elves_held(elves), held);
	unwinder_free(a);
	a = NULL;
	CHECK(unwind_elves_held(elves) == held);
	nb = unwind_dwarf(b, s_chain.regs, 0, s_chain.stack, s_chain.len, pcs2, MAXPCS, &flags);
	CHECKF(nb == na && !memcmp(pcs, pcs2, na * sizeof(*pcs)), "after the first's end: %d", nb);
	unwinder_free(b);
	b = NULL;
	CHECKF(unwind_elves_held(elves) == 0 && file_mappings() == n0,
	       "all ended: %zu files held, %d file mappings (%d before)", unwind_elves_held(elves),
	       file_mappings(), n0);
out:
	unwinder_free(a);
	unwinder_free(b);
	unwind_elves_free(elves);
}

static void test_no_process(void)
{
	errno = 0;
	CHECK(unwinder_new(0x7ffffff0, NULL) == NULL && errno != 0);
}

int main(void)
{
	int here;

	stack_end = find_stack_end((uint64_t)(uintptr_t)&here);
	if (!stack_end) {
		SKIP_TEST(test_all, "the stack is in no mapping of /proc/self/maps");
		return 0;
	}
	RUN_TEST(test_no_process);
	RUN_TEST(test_chain);
	RUN_TEST(test_short_copies);
	RUN_TEST(test_shared_files);
	RUN_TEST(test_report_maps);
	if (!__asan_init)
		RUN_TEST(test_qsort);
	else
		SKIP_TEST(test_qsort, "qsort is AddressSanitizer's interceptor, not libc's");
	RUN_TEST(test_jit);
	RUN_TEST(test_py_tramp);
	RUN_TEST(test_fp_only);
	RUN_TEST(test_garbage);
	RUN_TEST(test_plt);
	RUN_TEST(test_leaf);
	RUN_TEST(test_dlopen);
	RUN_TEST(test_dlopen_sample_after);
	RUN_TEST(test_cost);
	sample_free(&s_chain);
	sample_free(&s_qsort);
	sample_free(&s_jit);
	CHECK_EXIT();
}
