/* DWARF unwinding of copied user stacks with elfutils' libdwfl. Self-contained:
 * link with -ldw -lelf. Not thread-safe: one thread uses an unwinder at a time. */
#ifndef USER_UNWIND_H
#define USER_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

struct unwinder;
struct unwind_elves;

/* The files the unwinders read, shared among them: libdwfl maps each
 * module's file whole, per process, and under -a --off-cpu a server's
 * processes (PostgreSQL's backends) each had their own mappings of the same
 * binary and libc, ~1 MiB of RSS per unwinder. A file is held while an
 * unwinder reads it. NULL without memory. */
struct unwind_elves *unwind_elves_new(void);
void unwind_elves_free(struct unwind_elves *elves);	    /* after every unwinder */
size_t unwind_elves_held(const struct unwind_elves *elves); /* files held now */

/* One per recorded process, kept across samples: it keeps the process's
 * modules (from /proc/PID/maps), their CFI and per-address caches. The
 * process must be alive here; modules mapped later (dlopen) are found by
 * reporting /proc/PID/maps again (unwind_dwarf). elves: where its files are
 * shared, or NULL. NULL + errno. */
struct unwinder *unwinder_new(pid_t pid, struct unwind_elves *elves);
void unwinder_free(struct unwinder *u);

/* The process's /proc/PID/maps as modules into dwfl, between the caller's
 * dwfl_report_begin and _end, as libdwfl's dwfl_linux_proc_report reports
 * them (the unwinders' own reader, through formats/procmaps.c; exposed for
 * the test that compares the two). 0, an errno, or -1 (a libdwfl error). */
struct Dwfl;
int unwind_report_maps(struct Dwfl *dwfl, pid_t pid);

/* regs[] of the functions below: the same order as bpf/events.h's UREG_*. */
enum { UNWIND_IP, UNWIND_SP, UNWIND_BP };

/* DWARF did not carry the sample to the root on its own: it stopped early
 * (stack copy too short, unreadable CFI) or crossed code without CFI (JIT
 * code); frame pointers took over from that frame on (or nothing did). */
#define UNWIND_TRUNCATED 1u

/* Unwinds one sample from its registers and the stack_len bytes copied from
 * regs[UNWIND_SP]; those bytes are the only memory read. time_ns is when the
 * sample was taken (CLOCK_MONOTONIC; 0: unknown): a frame in no module of a
 * sample taken after the last read of the maps gets another read at once.
 * pcs[0] is the ip; the rest are return addresses as found on the stack (not
 * minus 1). Returns how many (at most max; >= 1 when the ip is not 0). */
int unwind_dwarf(struct unwinder *u, const uint64_t regs[3], uint64_t time_ns, const void *stack,
		 size_t stack_len, uint64_t *pcs, int max, unsigned *flags);

/* A word of a copied stack (the BPF sample's copy): [sp, sp + stack_len)
 * is all we know. Shared by the libdwfl unwinder and the CFI table walker. */
static inline bool unwind_stack_word(const unsigned char *stack, size_t stack_len, uint64_t sp,
				     uint64_t addr, uint64_t *val)
{
	if (addr < sp || addr - sp > stack_len || stack_len - (addr - sp) < 8)
		return false;
	memcpy(val, stack + (addr - sp), 8);
	return true;
}

#endif
