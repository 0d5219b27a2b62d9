/* Captured stacks for the unwinder tests: a sample as BPF records it, the
 * registers at one instruction and up to 16 KiB of stack copied from sp,
 * clamped to the stack's end as BPF clamps it. Shared by test_unwind.c and
 * test_cfi_table.c, which compare unwinders on the same captures. */
#ifndef TESTS_UNIT_CAPTURE_H
#define TESTS_UNIT_CAPTURE_H

#include <dlfcn.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "user/unwind.h"

#ifndef NOINLINE
#define NOINLINE __attribute__((noinline, noclone))

#endif

/* Functions built without or with a frame pointer, whatever the flags (gcc;
 * clang has no such attribute). */
#ifdef __clang__
#define OMIT_FP
#define KEEP_FP
#else
#define OMIT_FP __attribute__((optimize("omit-frame-pointer")))
#define KEEP_FP __attribute__((optimize("no-omit-frame-pointer")))
#endif

struct sample {
	uint64_t regs[3];
	unsigned char *stack;
	size_t len;
};

static uint64_t stack_end; /* of the main thread's stack */

/* The end of the mapping that holds addr: the [stack] one, or under valgrind
 * the one it gives the program's stack. */
static uint64_t find_stack_end(uint64_t addr)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	unsigned long long lo, hi, end = 0;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx-%llx", &lo, &hi) == 2 && addr >= lo && addr < hi)
			end = hi;
	if (f)
		fclose(f);
	return end;
}

/* Runs below sp: the bytes it copies are the capturing function's and its
 * callers'. */
static NOINLINE void take_sample(struct sample *s, uint64_t ip, uint64_t sp, uint64_t bp)
{
	size_t len = 16384;

	if (sp >= stack_end)
		len = 0;
	else if (stack_end - sp < len)
		len = stack_end - sp;
	s->regs[UNWIND_IP] = ip;
	s->regs[UNWIND_SP] = sp;
	s->regs[UNWIND_BP] = bp;
	s->stack = malloc(len ? len : 1);
	s->len = s->stack ? len : 0;
	if (s->stack)
		memcpy(s->stack, (const void *)(uintptr_t)sp, len);
}

/* rip, rsp and rbp at one instruction, as a sample interrupting it sees them. */
#define CAPTURE(s)                                                                                 \
	do {                                                                                       \
		uint64_t ip_, sp_, bp_;                                                            \
		__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"              \
				 : "=r"(ip_), "=r"(sp_), "=r"(bp_));                               \
		take_sample((s), ip_, sp_, bp_);                                                   \
	} while (0)

/* A stack's pcs on stderr, for a failed comparison. */
static void print_pcs(const char *what, const uint64_t *pcs, int n)
{
	int i;

	fprintf(stderr, "%s:", what);
	for (i = 0; i < n; i++)
		fprintf(stderr, " %#llx", (unsigned long long)pcs[i]);
	fputc('\n', stderr);
}

static void sample_free(struct sample *s)
{
	free(s->stack);
	memset(s, 0, sizeof(*s));
}

/* The run-time address of this program's .plt, or 0. */
static uint64_t find_plt(size_t *size)
{
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	Elf *e;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t shstr;
	uint64_t addr = 0;
	Dl_info di;

	if (fd < 0)
		return 0;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (e && !elf_getshdrstrndx(e, &shstr) && dladdr((void *)(uintptr_t)take_sample, &di)) {
		while ((scn = elf_nextscn(e, scn)) && gelf_getshdr(scn, &sh)) {
			const char *name = elf_strptr(e, shstr, sh.sh_name);

			if (name && !strcmp(name, ".plt")) {
				addr = (uint64_t)(uintptr_t)di.dli_fbase + sh.sh_addr;
				*size = sh.sh_size;
			}
		}
	}
	elf_end(e);
	close(fd);
	return addr;
}

#endif
