/* An ELF image of JIT code for the gperftools readers: `jit-PID.so` holds a
 * FUNC symbol (with its true size) for each JIT function, at the address
 * its offset in the JIT region plus the image's text offset, in a NOBITS
 * .text covered by one r-x PT_LOAD at that offset. A mapping
 * line "START-END r-xp OFFSET 00:00 0 /abs/jit-PID.so" in the profile then
 * lets google-pprof and pprof name the frames (they read symbols with nm).
 * A minimal DWARF 4 (.debug_info with a compile unit and a subprogram per
 * function, .debug_abbrev, .debug_line with rows covering each function)
 * serves the readers that name frames only through DWARF (go tool pprof). */
#ifndef FORMATS_JITELF_H
#define FORMATS_JITELF_H

#include <stddef.h>
#include <stdint.h>
#include "formats/elfout.h"

struct jitelf_line {
	uint64_t addr; /* at the code's run-time address */
	uint32_t line;
	const char *file;
};

struct jitelf_func {
	uint64_t start, size;
	const char *name;
	const struct jitelf_line *lines; /* optional, sorted by addr */
	size_t nlines;
};

/* Adds that DWARF to e (before elfout_finish): syms[i] is src[i]'s
 * function at its address in the image (the line rows' addresses are
 * taken relative to src[i]->start). Also for the XRay map, so that llvm-xray
 * prints file:line. 0 or -errno. */
int jitelf_add_dwarf(struct elfout *e, const struct elfout_sym *syms,
		     const struct jitelf_func *const *src, size_t k);

/* funcs need not be sorted; overlapping ones after the first are dropped.
 * *start and *end get the region, *offset the file offset of .text (the
 * PT_LOAD's p_offset), all three for the mapping line. 0 or -errno. */
int jitelf_write(int fd, struct jitelf_func *funcs, size_t n, uint64_t *start, uint64_t *end,
		 uint64_t *offset);

#endif
