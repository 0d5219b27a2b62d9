/* DWARF unwinding of copied user stacks with elfutils' libdwfl. */
#ifndef USER_UNWIND_H
#define USER_UNWIND_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct unwinder;
struct unwinder *unwinder_new(pid_t pid);
void unwinder_free(struct unwinder *u);
#define UNWIND_TRUNCATED 1u
int unwind_dwarf(struct unwinder *u, const uint64_t regs[3], const void *stack, size_t stack_len,
		 uint64_t *pcs, int max, unsigned *flags);
uint64_t unwind_leaf_caller(struct unwinder *u, uint64_t ip, uint64_t sp, const void *stack,
			    size_t stack_len);
int unwind_srcline(struct unwinder *u, uint64_t pc, const char **file, int *line);

#endif
