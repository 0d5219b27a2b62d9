/* Go's function and line table (.gopclntab), as the runtime reads it
 * (runtime/symtab.go, debug/gosym): the file and line of a pc in a Go
 * binary, whose DWARF libdw does not read. The layouts of Go 1.18/1.19
 * (magic 0xfffffff0) and 1.20+ (0xfffffff1). Plain C over a buffer the
 * caller holds; every offset is checked against it (the table is the
 * binary's author's). */
#ifndef FORMATS_GOPCLNTAB_H
#define FORMATS_GOPCLNTAB_H

#include <stddef.h>
#include <stdint.h>

struct gopcln {
	const uint8_t *p;
	size_t len;
	int version;		    /* 118 or 120 */
	uint64_t nfunc, text_start; /* the header's, else gopcln_open's text */
	/* Tables, as offsets into p. */
	uint64_t funcnames, cutab, filetab, pctab, functab;
};

/* Checks the header of a table of len bytes at p. text is the address of
 * the binary's runtime.text, which the functions' entries are offsets
 * from, as the caller found it in the ELF (the symbol, else the start of
 * .text): used when the header does not hold it, as Go 1.26's no longer
 * does (its word is 0, as it is in a PIE's file, left to a relocation).
 * 0, or -EINVAL naming no known layout, or -ENOTSUP for another Go
 * version's. */
int gopcln_open(struct gopcln *g, const uint8_t *p, size_t len, uint64_t text);
/* The function, source file and line of a pc (a virtual address in the
 * binary): 0, or -ENOENT when no function holds it or its tables are
 * broken. *func and *file point into the table (NUL-terminated there). */
int gopcln_lookup(const struct gopcln *g, uint64_t pc, const char **func, const char **file,
		  int *line);

#endif
