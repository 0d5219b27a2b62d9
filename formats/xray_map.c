#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include "formats/elfout.h"
#include "formats/jitelf.h"
#include "formats/xray_map.h"

/* Made-up addresses: 16 bytes a function from here; llvm-xray only needs
 * them to be distinct and non-zero (0 means "relocate me"). */
#define BASE 0x100000ULL
#define STEP 16

struct sled {
	uint64_t address, function;
	uint8_t kind, always, version, pad[13];
};

int xray_map_write(int fd, const struct xray_map_func *funcs, size_t n)
{
	struct sled *sleds = calloc(n ? n : 1, sizeof(*sleds));
	struct elfout_sym *syms = calloc(n ? n : 1, sizeof(*syms));
	struct jitelf_func *jf = calloc(n ? n : 1, sizeof(*jf));
	struct jitelf_line *rows = calloc(n ? n : 1, sizeof(*rows));
	const struct jitelf_func **src = calloc(n ? n : 1, sizeof(*src));
	uint64_t lo = UINT64_MAX, hi = 0;
	struct elfout *e = NULL;
	unsigned text;
	size_t i;
	int err;

	if (!sleds || !syms || !jf || !rows || !src) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < n; i++) {
		uint64_t a = funcs[i].address ? funcs[i].address : BASE + i * STEP;
		uint64_t sz = funcs[i].size ? funcs[i].size : STEP;

		/* Version 0: absolute addresses; kind 0: an entry sled. */
		sleds[i].address = a;
		sleds[i].function = a;
		sleds[i].always = 1;
		syms[i].name = funcs[i].name;
		syms[i].value = a;
		syms[i].size = sz;
		/* One line row at the function's start: its file and line. */
		rows[i].addr = a;
		rows[i].line = funcs[i].line;
		rows[i].file = funcs[i].file && *funcs[i].file ? funcs[i].file : "[unknown]";
		jf[i] = (struct jitelf_func){a, sz, funcs[i].name, &rows[i], 1};
		src[i] = &jf[i];
		if (a < lo)
			lo = a;
		if (a + sz > hi)
			hi = a + sz;
	}
	if (!n)
		lo = hi = BASE;
	e = elfout_begin(fd, ET_EXEC);
	if (!e) {
		err = -ENOMEM;
		goto out;
	}
	/* The symbolizer finds functions in an allocated executable section;
	 * no bytes are needed. */
	text = elfout_section(e, ".text", SHT_NOBITS, SHF_ALLOC | SHF_EXECINSTR, lo, NULL, hi - lo,
			      16);
	for (i = 0; i < n; i++)
		syms[i].section = text;
	elfout_section(e, "xray_instr_map", SHT_PROGBITS, SHF_ALLOC, 0, sleds, n * sizeof(*sleds),
		       8);
	err = elfout_symtab(e, syms, n);
	if (!err && n)
		err = jitelf_add_dwarf(e, syms, src, n);
	{
		int ferr = elfout_finish(e);

		if (!err)
			err = ferr;
	}
out:
	free(sleds);
	free(syms);
	free(jf);
	free(rows);
	free(src);
	return err;
}
