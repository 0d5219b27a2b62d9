/* TEMPORARY: stands in for user/unwind.c until it lands. */
#include <errno.h>
#include <stdlib.h>
#include "user/unwind.h"
struct unwinder *unwinder_new(pid_t pid) { (void)pid; errno = ENOSYS; return NULL; }
void unwinder_free(struct unwinder *u) { (void)u; }
int unwind_dwarf(struct unwinder *u, const uint64_t regs[3], const void *stack, size_t stack_len, uint64_t *pcs, int max, unsigned *flags) { (void)u; (void)regs; (void)stack; (void)stack_len; (void)pcs; (void)max; (void)flags; return 0; }
uint64_t unwind_leaf_caller(struct unwinder *u, uint64_t ip, uint64_t sp, const void *stack, size_t stack_len) { (void)u; (void)ip; (void)sp; (void)stack; (void)stack_len; return 0; }
int unwind_srcline(struct unwinder *u, uint64_t pc, const char **file, int *line) { (void)u; (void)pc; (void)file; (void)line; return -ENOENT; }
