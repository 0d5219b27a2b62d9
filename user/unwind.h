/* DWARF unwinding of copied user stacks with elfutils' libdwfl. */
#ifndef USER_UNWIND_H
#define USER_UNWIND_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct unwinder;

/* One per recorded process, kept across samples. NULL + errno on failure. */
struct unwinder *unwinder_new(pid_t pid);
void unwinder_free(struct unwinder *u);

/* regs[] of the functions below */
enum { UNWIND_IP, UNWIND_SP, UNWIND_BP };

/* DWARF stopped before the root; frame pointers took over from there. */
#define UNWIND_TRUNCATED 1u

/* Unwinds one sample from its registers and the stack bytes copied from sp.
 * pcs[0] is the ip; the rest are return addresses as found (not minus 1).
 * Returns how many. */
int unwind_dwarf(struct unwinder *u, const uint64_t regs[3], const void *stack, size_t stack_len,
		 uint64_t *pcs, int max, unsigned *flags);
/* The leaf-caller fix of frame-pointer stacks: when the CFI at ip puts the
 * return address relative to sp (a frameless leaf, a prologue or an
 * epilogue), that return address, read from the copied stack; else 0. */
uint64_t unwind_leaf_caller(struct unwinder *u, uint64_t ip, uint64_t sp, const void *stack,
			    size_t stack_len);
/* Source file and line of pc where debug info exists: 0, or -ENOENT. */
int unwind_srcline(struct unwinder *u, uint64_t pc, const char **file, int *line);

#endif
