#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include "formats/elfout.h"
#include "formats/jitelf.h"
#include "formats/util.h"

/* Where libelf lays out the first section after the ELF header (64 bytes)
 * and one program header (56), aligned to 16. */
#define TEXT_OFF 0x80

static void u8(struct fmt_buf *b, unsigned v)
{
	unsigned char c = v;

	fmt_put(b, &c, 1);
}

static void u16(struct fmt_buf *b, uint16_t v)
{
	fmt_put(b, &v, 2);
}

static void u32(struct fmt_buf *b, uint32_t v)
{
	fmt_put(b, &v, 4);
}

static void u64(struct fmt_buf *b, uint64_t v)
{
	fmt_put(b, &v, 8);
}

static void sleb(struct fmt_buf *b, int64_t v)
{
	for (;;) {
		unsigned char c = v & 0x7f;

		v >>= 7;
		if ((v == 0 && !(c & 0x40)) || (v == -1 && (c & 0x40))) {
			u8(b, c);
			return;
		}
		u8(b, c | 0x80);
	}
}

static void str(struct fmt_buf *b, const char *s)
{
	fmt_put(b, s, strlen(s) + 1);
}

/* DWARF 4 constants used here. */
enum {
	TAG_compile_unit = 0x11,
	TAG_subprogram = 0x2e,
	AT_name = 0x03,
	AT_stmt_list = 0x10,
	AT_low_pc = 0x11,
	AT_high_pc = 0x12,
	AT_language = 0x13,
	AT_producer = 0x25,
	FORM_addr = 0x01,
	FORM_data2 = 0x05,
	FORM_data8 = 0x07,
	FORM_string = 0x08,
	FORM_sec_offset = 0x17,
	LNS_copy = 1,
	LNS_advance_pc = 2,
	LNS_advance_line = 3,
	LNS_set_file = 4,
	LNE_end_sequence = 1,
	LNE_set_address = 2,
};

struct files {
	VEC_BODY(const char *)
};

/* File index (1-based) of name in the line table's file list; 0 on ENOMEM. */
static unsigned file_index(struct files *fs, const char *name)
{
	size_t i;

	for (i = fs->n; i-- > 0;) /* consecutive rows mostly share a file */
		if (!strcmp(fs->v[i], name))
			return i + 1;
	if (VEC_PUSH(*fs, name))
		return 0;
	return fs->n;
}

/* .debug_abbrev, .debug_info and .debug_line for the kept functions, at
 * their image addresses. A function without line rows gets one, at line 1
 * of a file named after it. */
static int build_dwarf(const struct elfout_sym *syms, const struct jitelf_func *const *src,
		       size_t k, struct fmt_buf *abbrev, struct fmt_buf *info, struct fmt_buf *line)
{
	struct fmt_buf prog = {0};
	struct files fs = {0};
	size_t i, j, hdr_len_at, len_at;
	uint64_t lo = UINT64_MAX, hi = 0;

	for (i = 0; i < k; i++) { /* the unit's range, whatever the order */
		if (syms[i].value < lo)
			lo = syms[i].value;
		if (syms[i].value + syms[i].size > hi)
			hi = syms[i].value + syms[i].size;
	}
	/* abbrevs: 1 compile unit (with children), 2 subprogram */
	fmt_put_uleb(abbrev, 1), fmt_put_uleb(abbrev, TAG_compile_unit), u8(abbrev, 1);
	fmt_put_uleb(abbrev, AT_name), fmt_put_uleb(abbrev, FORM_string);
	fmt_put_uleb(abbrev, AT_producer), fmt_put_uleb(abbrev, FORM_string);
	fmt_put_uleb(abbrev, AT_language), fmt_put_uleb(abbrev, FORM_data2);
	fmt_put_uleb(abbrev, AT_low_pc), fmt_put_uleb(abbrev, FORM_addr);
	fmt_put_uleb(abbrev, AT_high_pc), fmt_put_uleb(abbrev, FORM_data8);
	fmt_put_uleb(abbrev, AT_stmt_list), fmt_put_uleb(abbrev, FORM_sec_offset);
	u8(abbrev, 0), u8(abbrev, 0);
	fmt_put_uleb(abbrev, 2), fmt_put_uleb(abbrev, TAG_subprogram), u8(abbrev, 0);
	fmt_put_uleb(abbrev, AT_name), fmt_put_uleb(abbrev, FORM_string);
	fmt_put_uleb(abbrev, AT_low_pc), fmt_put_uleb(abbrev, FORM_addr);
	fmt_put_uleb(abbrev, AT_high_pc), fmt_put_uleb(abbrev, FORM_data8);
	u8(abbrev, 0), u8(abbrev, 0);
	u8(abbrev, 0);

	len_at = info->n;
	u32(info, 0); /* unit_length, patched */
	u16(info, 4);
	u32(info, 0); /* abbrev offset */
	u8(info, 8);
	fmt_put_uleb(info, 1);
	str(info, "jit");
	str(info, "bpftrace-rec");
	u16(info, 0x8001); /* DW_LANG_lo_user: not a source language */
	u64(info, lo);
	u64(info, hi - lo);
	u32(info, 0); /* stmt_list: the only line program */
	for (i = 0; i < k; i++) {
		fmt_put_uleb(info, 2);
		str(info, syms[i].name);
		u64(info, syms[i].value);
		u64(info, syms[i].size);
	}
	u8(info, 0);
	if (!info->err) {
		uint32_t ul = info->n - len_at - 4;

		memcpy(info->p + len_at, &ul, 4);
	}

	/* The line program: one sequence per function. */
	for (i = 0; i < k; i++) {
		const struct jitelf_func *f = src[i];
		uint64_t base = syms[i].value, addr = base, end = base + syms[i].size;
		int64_t cur = 1;
		unsigned cur_file = 0;
		size_t n = f->nlines ? f->nlines : 1;

		for (j = 0; j < n; j++) {
			const char *file = f->nlines ? f->lines[j].file : syms[i].name;
			int64_t ln = f->nlines ? (int64_t)f->lines[j].line : 1;
			uint64_t a = f->nlines && f->lines[j].addr > f->start
					 ? base + (f->lines[j].addr - f->start)
					 : base;

			if (!file || !*file)
				file = syms[i].name;
			if (a >= end)
				break;
			if (j == 0) {
				u8(&prog, 0), fmt_put_uleb(&prog, 9), u8(&prog, LNE_set_address);
				u64(&prog, base);
			} else if (a > addr) {
				u8(&prog, LNS_advance_pc), fmt_put_uleb(&prog, a - addr);
			}
			addr = a > addr ? a : addr;
			{
				unsigned fi = file_index(&fs, file);

				if (!fi)
					prog.err = -ENOMEM;
				if (fi != cur_file) {
					u8(&prog, LNS_set_file), fmt_put_uleb(&prog, fi);
					cur_file = fi;
				}
			}
			if (ln != cur) {
				u8(&prog, LNS_advance_line), sleb(&prog, ln - cur);
				cur = ln;
			}
			u8(&prog, LNS_copy);
		}
		u8(&prog, LNS_advance_pc), fmt_put_uleb(&prog, end - addr);
		u8(&prog, 0), fmt_put_uleb(&prog, 1), u8(&prog, LNE_end_sequence);
	}

	len_at = line->n;
	u32(line, 0); /* unit_length, patched */
	u16(line, 4);
	hdr_len_at = line->n;
	u32(line, 0);		     /* header_length, patched */
	u8(line, 1);		     /* minimum_instruction_length */
	u8(line, 1);		     /* maximum_operations_per_instruction */
	u8(line, 1);		     /* default_is_stmt */
	u8(line, (unsigned char)-5); /* line_base */
	u8(line, 14);		     /* line_range */
	u8(line, 13);		     /* opcode_base */
	{
		static const unsigned char lens[12] = {0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1};

		fmt_put(line, lens, sizeof(lens));
	}
	u8(line, 0); /* no include directories */
	for (i = 0; i < fs.n; i++) {
		str(line, fs.v[i]);
		fmt_put_uleb(line, 0), fmt_put_uleb(line, 0), fmt_put_uleb(line, 0);
	}
	u8(line, 0);
	if (!line->err) {
		uint32_t hl = line->n - hdr_len_at - 4;

		memcpy(line->p + hdr_len_at, &hl, 4);
	}
	fmt_put(line, prog.p, prog.n);
	if (!line->err) {
		uint32_t ul = line->n - len_at - 4;

		memcpy(line->p + len_at, &ul, 4);
	}
	free(prog.p);
	free(fs.v);
	if (prog.err)
		return prog.err;
	return abbrev->err ? abbrev->err : info->err ? info->err : line->err;
}

int jitelf_add_dwarf(struct elfout *e, const struct elfout_sym *syms,
		     const struct jitelf_func *const *src, size_t k)
{
	struct fmt_buf abbrev = {0}, info = {0}, line = {0};
	int err = k ? build_dwarf(syms, src, k, &abbrev, &info, &line) : -ENODATA;

	if (!err &&
	    (!elfout_section(e, ".debug_abbrev", SHT_PROGBITS, 0, 0, abbrev.p, abbrev.n, 1) ||
	     !elfout_section(e, ".debug_info", SHT_PROGBITS, 0, 0, info.p, info.n, 1) ||
	     !elfout_section(e, ".debug_line", SHT_PROGBITS, 0, 0, line.p, line.n, 1)))
		err = -ENOMEM;
	free(abbrev.p);
	free(info.p);
	free(line.p);
	return err;
}

static int cmp(const void *a, const void *b)
{
	const struct jitelf_func *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

int jitelf_write(int fd, struct jitelf_func *funcs, size_t n, uint64_t *start, uint64_t *end,
		 uint64_t *offset)
{
	struct elfout_sym *syms = calloc(n ? n : 1, sizeof(*syms));
	const struct jitelf_func **src = calloc(n ? n : 1, sizeof(*src));
	struct elfout *e;
	size_t i, k = 0;
	unsigned text;
	int err, ferr;

	if (!syms || !src) {
		free(syms);
		free(src);
		return -ENOMEM;
	}
	qsort(funcs, n, sizeof(*funcs), cmp);
	for (i = 0; i < n; i++) {
		if (!funcs[i].size)
			continue;
		if (k && funcs[i].start < syms[k - 1].value + syms[k - 1].size)
			continue; /* one name per address */
		syms[k].name = funcs[i].name;
		syms[k].value = funcs[i].start;
		syms[k].size = funcs[i].size;
		src[k] = &funcs[i];
		k++;
	}
	if (!k) {
		free(syms);
		free(src);
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
		err = -ENOMEM;
		goto out;
	}
	/* No code bytes: the readers only need the symbols and where .text is. */
	text = elfout_section(e, ".text", SHT_NOBITS, SHF_ALLOC | SHF_EXECINSTR, TEXT_OFF, NULL,
			      *end - *start, 16);
	for (i = 0; i < k; i++)
		syms[i].section = text;
	err = elfout_symtab(e, syms, k);
	if (!err)
		err = jitelf_add_dwarf(e, syms, src, k);
	if (!err)
		err = elfout_load_segment(e, text, PF_R | PF_X, offset);
	if (!err && *offset != TEXT_OFF) /* libelf laid .text elsewhere */
		err = -EIO;
	ferr = elfout_finish(e);
	if (!err)
		err = ferr;
out:
	free(syms);
	free(src);
	return err;
}
