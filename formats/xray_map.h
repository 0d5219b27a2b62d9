/* An XRay instrumentation map for `llvm-xray ... -m FILE`: a small ELF with
 * an xray_instr_map section (one 32-byte entry sled per function: entry k is
 * function id k + 1) and a symbol table that names each function. llvm-xray
 * 14 ignores the names of a YAML map and refuses a binary that was not built
 * with XRay, hence the ELF. Its DWARF (a subprogram and a line row per
 * function, as jit-PID.so's) gives each function a file and line, which
 * llvm-xray prints before the name (else "<invalid>:0:0:"). */
#ifndef FORMATS_XRAY_MAP_H
#define FORMATS_XRAY_MAP_H

#include <stddef.h>
#include <stdint.h>

struct xray_map_func {
	const char *name;
	uint64_t address; /* 0: one is made up; never 0 in the file */
	uint64_t size;	  /* 0: 16 */
	const char *file; /* its source file, or the object it is in; NULL: "[unknown]" */
	uint32_t line;	  /* its first line; 0 when not known */
};

/* funcs[i] is function id i + 1. Addresses must differ. 0 or -errno. */
int xray_map_write(int fd, const struct xray_map_func *funcs, size_t n);

#endif
