/* A small ELF writer on libelf, for the files we generate: XRay
 * instrumentation maps and the ELF images of JIT code. Sections are added in
 * order; libelf lays the file out. */
#ifndef FORMATS_ELFOUT_H
#define FORMATS_ELFOUT_H

#include <stddef.h>
#include <stdint.h>

struct elfout;

struct elfout_sym {
	const char *name;
	uint64_t value, size;
	unsigned section; /* index from elfout_section */
};

/* An x86_64 little-endian ELF64 of type (ET_DYN, ET_EXEC) written to fd. */
struct elfout *elfout_begin(int fd, int type);
/* Adds a section; data is copied (NULL with SHT_NOBITS). Returns its index,
 * or 0 on failure. */
unsigned elfout_section(struct elfout *e, const char *name, uint32_t type, uint64_t flags,
			uint64_t addr, const void *data, size_t size, uint64_t align);
/* Adds .symtab and .strtab with FUNC symbols. 0 or -errno. */
int elfout_symtab(struct elfout *e, const struct elfout_sym *syms, size_t n);
/* Adds one PT_LOAD (flags PF_R|PF_X...) covering section idx, placed where
 * libelf lays that section out; *offset gets its file offset. Call once,
 * after the last section. 0 or -errno. */
int elfout_load_segment(struct elfout *e, unsigned idx, uint32_t flags, uint64_t *offset);
/* Writes the file and frees e (also on failure). 0 or -errno. */
int elfout_finish(struct elfout *e);

#endif
