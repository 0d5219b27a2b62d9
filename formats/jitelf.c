#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include "formats/elfout.h"
#include "formats/jitelf.h"

/* Where libelf lays out the first section after the ELF header (64 bytes)
 * and one program header (56), aligned to 16. */
#define TEXT_OFF 0x80

static int cmp(const void *a, const void *b)
{
	const struct jitelf_func *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

int jitelf_write(int fd, struct jitelf_func *funcs, size_t n, uint64_t *start, uint64_t *end,
		 uint64_t *offset)
{
	struct elfout_sym *syms = calloc(n ? n : 1, sizeof(*syms));
	struct elfout *e;
	size_t i, k = 0;
	unsigned text;
	int err, ferr;

	if (!syms)
		return -ENOMEM;
	qsort(funcs, n, sizeof(*funcs), cmp);
	for (i = 0; i < n; i++) {
		if (!funcs[i].size)
			continue;
		if (k && funcs[i].start < syms[k - 1].value + syms[k - 1].size)
			continue; /* one name per address */
		syms[k].name = funcs[i].name;
		syms[k].value = funcs[i].start;
		syms[k].size = funcs[i].size;
		k++;
	}
	if (!k) {
		free(syms);
		return -ENODATA;
	}
	*start = syms[0].value & ~0xfffULL;
	*end = (syms[k - 1].value + syms[k - 1].size + 0xfff) & ~0xfffULL;
	/* Addresses in the image are file offsets (vaddr == offset, as in the
	 * first segment of a PIE): the mapping line's OFFSET then takes both
	 * readers to the right symbol, x - start + OFFSET: pprof through the
	 * PT_LOAD (Off == Vaddr), google-pprof through .text (vma == offset). */
	for (i = 0; i < k; i++)
		syms[i].value = TEXT_OFF + (syms[i].value - *start);
	e = elfout_begin(fd, ET_DYN);
	if (!e) {
		free(syms);
		return -ENOMEM;
	}
	/* No code bytes: the readers only need the symbols and where .text is. */
	text = elfout_section(e, ".text", SHT_NOBITS, SHF_ALLOC | SHF_EXECINSTR, TEXT_OFF, NULL,
			      *end - *start, 16);
	for (i = 0; i < k; i++)
		syms[i].section = text;
	err = elfout_symtab(e, syms, k);
	if (!err)
		err = elfout_load_segment(e, text, PF_R | PF_X, offset);
	if (!err && *offset != TEXT_OFF) /* libelf laid .text elsewhere */
		err = -EIO;
	ferr = elfout_finish(e);
	free(syms);
	return err ? err : ferr;
}
