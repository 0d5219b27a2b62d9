/* Unwind tables for BPF (bpf/cfi.h) compiled from a binary's CFI with
 * libdw, and a reference walker that unwinds a copied stack with them step
 * for step as the BPF side is meant to. Self-contained: link with -ldw
 * -lelf. x86-64 only. Tables are per binary; the caller keys them by
 * (device, inode) or build id and shares them between processes. */
#ifndef USER_CFI_TABLE_H
#define USER_CFI_TABLE_H

#include <elfutils/libdw.h>
#include <libelf.h>
#include <stddef.h>
#include <stdint.h>
#include "bpf/cfi.h"

/* Why rows became CFI_ROW_FALLBACK, for the stats. */
enum cfi_fallback_why {
	CFI_WHY_CFA_REG,   /* CFA from another register (DRAP's r10, ...) */
	CFI_WHY_CFA_EXPR,  /* a CFA expression not of the PLT's shape */
	CFI_WHY_CFA_RANGE, /* CFA offset not a multiple of 8, or beyond cfa_off's range */
	CFI_WHY_RBP,	   /* rbp saved elsewhere than CFA + 8 * rbp_off, or undefined */
	CFI_WHY_RA,	   /* return address elsewhere than CFA - 8 */
	CFI_WHY_SIGNAL,	   /* a signal frame not laid out as CFI_SIG_* */
	CFI_WHY_LIBDW,	   /* libdw could not evaluate the CFI at an FDE's address */
	CFI_WHY_NR,
};

struct cfi_stats {
	size_t fdes;		/* FDEs read (with a nonempty range) */
	size_t rows;		/* in the table, after merging */
	size_t bytes;		/* rows * sizeof(struct cfi_row) */
	size_t fallback_rows;	/* CFI_ROW_FALLBACK rows */
	size_t none_rows;	/* CFI_ROW_NONE rows (gaps, and the final one) */
	size_t raw_rows;	/* rows before merging: one per CFI row, one per FDE end */
	const char *section;	/* ".eh_frame" or ".debug_frame" */
	size_t why[CFI_WHY_NR]; /* fallback rows before merging, by reason */
};

struct cfi_table {
	uint64_t base; /* ELF vaddr of rows[0]; pc_off counts from it */
	struct cfi_row *rows;
	size_t nrows;
	struct cfi_stats stats;
};

/* Builds the table of an ELF file from its .eh_frame (found through
 * .eh_frame_hdr when it has one), else its .debug_frame. Linear in the
 * FDEs: each FDE's rows are evaluated once, at the address where each
 * starts. 0, -ENOENT (no CFI), -ENOEXEC (not x86-64 ELF64), -EOVERFLOW (the
 * FDEs span more than 4 GiB), -ENOMEM or -EIO (libdw failed); t is
 * untouched on error. */
int cfi_table_build(Elf *elf, struct cfi_table *t);
/* The same for an open file (only read; the caller keeps fd). */
int cfi_table_build_fd(int fd, struct cfi_table *t);
void cfi_table_free(struct cfi_table *t);

/* The rules at one ELF vaddr, from libdw, as a row (pc_off 0): what the
 * table holds at that address. The builder's own evaluation, exposed so
 * tests can compare the table with it at every address. NONE where libdw
 * finds no CFI; why (if not NULL) is set for FALLBACK rows only. (Inside an
 * FDE that libdw cannot evaluate at all the table says FALLBACK: no such
 * FDE was met in the binaries measured.) */
struct cfi_row cfi_classify(Dwarf_CFI *cfi, uint64_t vaddr, enum cfi_fallback_why *why);

/* The row covering ELF vaddr, by the bounded binary search bpf/cfi.h
 * describes (over the whole table: the reference does not split). A
 * CFI_ROW_NONE row for an address outside the table. */
struct cfi_row cfi_table_lookup(const struct cfi_table *t, uint64_t vaddr);

/* ---- The reference walker. ---- */

/* An executable mapping of the unwound process: [start, end) holds code of
 * table's binary, loaded with bias (run-time address - ELF vaddr). */
struct cfi_map {
	uint64_t start, end, bias;
	const struct cfi_table *table;
};

/* Why cfi_walk stopped. */
enum cfi_stop {
	CFI_STOP_END,	   /* CFI_ROW_END: the outermost frame */
	CFI_STOP_MAX,	   /* pcs filled up */
	CFI_STOP_NO_MAP,   /* a pc in no mapping (JIT code, garbage) */
	CFI_STOP_NONE,	   /* a CFI_ROW_NONE row */
	CFI_STOP_FALLBACK, /* a CFI_ROW_FALLBACK row */
	CFI_STOP_READ,	   /* a word outside the copied stack */
	CFI_STOP_ZERO_RA,  /* a return address of 0 */
};

/* Unwinds a sample (regs in bpf/events.h's UREG_* order: ip, sp, bp) over
 * the stack_len bytes copied from sp, the only memory read, with maps
 * sorted by start and not overlapping. pcs[0] is the ip, then return
 * addresses as found on the stack (not minus 1), as user/unwind.h's
 * unwind_dwarf gives them. Returns how many (at most max). */
int cfi_walk(const struct cfi_map *maps, size_t nmaps, const uint64_t regs[3], const void *stack,
	     size_t stack_len, uint64_t *pcs, int max, enum cfi_stop *stop);

#endif
