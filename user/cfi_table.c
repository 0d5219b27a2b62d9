/* Unwind tables for BPF from a binary's CFI. The FDEs are listed by
 * walking the CFI section with dwarf_next_cfi (decoding each one's address
 * range, which libdw keeps private); then, FDE by FDE in address order, libdw
 * evaluates the rules at the start of each row (dwarf_cfi_addrframe, whose
 * frame says where its row ends: dwarf_frame_info) and each is reduced to a
 * struct cfi_row. So every row is evaluated once, and a row's rules are
 * exactly what libdwfl's unwinder uses at those addresses; the unit test
 * checks the table against cfi_classify at every address. */
#include <dwarf.h>
#include <errno.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "formats/util.h"
#include "user/cfi_table.h"
#include "user/unwind.h"

/* x86-64 DWARF register numbers. */
#define REG_RBP 6
#define REG_RSP 7
#define REG_RA	16

/* One FDE's code range, [lo, hi) in ELF vaddrs. */
struct fde_range {
	uint64_t lo, hi;
};

/* A CIE's encoding of its FDEs' initial_location and address_range. */
struct cie_enc {
	uint64_t off; /* section offset */
	uint8_t enc;  /* DW_EH_PE_*; DW_EH_PE_omit: an encoding this file cannot read */
};

static struct cfi_row fallback(enum cfi_fallback_why *why, enum cfi_fallback_why w)
{
	if (why)
		*why = w;
	return (struct cfi_row){.kind = CFI_ROW_FALLBACK};
}

/* Base register and offset of a DW_OP_bregN / DW_OP_bregx op; false for
 * other ops. libdw gives a DW_CFA_def_cfa rule as DW_OP_bregx, and an
 * expression's ops as they are written (DW_OP_breg7). */
static bool op_breg(const Dwarf_Op *op, unsigned *reg, int64_t *off)
{
	if (op->atom >= DW_OP_breg0 && op->atom <= DW_OP_breg31) {
		*reg = op->atom - DW_OP_breg0;
		*off = (int64_t)op->number;
		return true;
	}
	if (op->atom == DW_OP_bregx) {
		*reg = (unsigned)op->number;
		*off = (int64_t)op->number2;
		return true;
	}
	return false;
}

static bool is_breg(const Dwarf_Op *op, unsigned reg, int64_t off)
{
	unsigned r;
	int64_t o;

	return op_breg(op, &r, &o) && r == reg && o == off;
}

/* The CFA expression of lazy-binding .plt entries, as binutils and lld
 * write it: rsp + N + ((rip & 15) >= 11 ? 8 : 0). N in *off. */
static bool is_plt_expr(const Dwarf_Op *ops, size_t nops, int64_t *off)
{
	static const uint8_t tail[] = {DW_OP_lit15, DW_OP_and,	DW_OP_lit0 + CFI_PLT_SPLIT,
				       DW_OP_ge,    DW_OP_lit3, DW_OP_shl,
				       DW_OP_plus};
	unsigned reg;
	size_t i;

	if (nops != 2 + sizeof(tail) || !op_breg(&ops[0], &reg, off) || reg != REG_RSP ||
	    !is_breg(&ops[1], REG_RA, 0))
		return false;
	for (i = 0; i < sizeof(tail); i++)
		if (ops[2 + i].atom != tail[i])
			return false;
	return true;
}

/* A register saved at CFA + off (DW_CFA_offset and kin): libdw's location
 * is DW_OP_call_frame_cfa, plus DW_OP_plus_uconst off unless off is 0. */
static bool at_cfa_plus(const Dwarf_Op *ops, size_t nops, int64_t *off)
{
	if (nops < 1 || nops > 2 || ops[0].atom != DW_OP_call_frame_cfa)
		return false;
	if (nops == 1) {
		*off = 0;
		return true;
	}
	if (ops[1].atom != DW_OP_plus_uconst)
		return false;
	*off = (int64_t)ops[1].number;
	return true;
}

/* A register saved at rsp + off by DW_CFA_expression: libdw's location
 * pushes the CFA first (as DWARF says the expression starts), then the
 * expression's own ops, DW_OP_breg7 off. */
static bool at_rsp_plus(const Dwarf_Op *ops, size_t nops, int64_t off)
{
	if (nops == 2 && ops[0].atom == DW_OP_call_frame_cfa)
		ops++, nops--;
	return nops == 1 && is_breg(&ops[0], REG_RSP, off);
}

/* __restore_rt's FDE (augmentation 'S'): CFA = *(rsp + CFI_SIG_RSP), rip at
 * rsp + CFI_SIG_RIP and rbp at rsp + CFI_SIG_RBP, as DW_CFA_expression. */
static struct cfi_row classify_signal(Dwarf_Frame *frame, enum cfi_fallback_why *why)
{
	Dwarf_Op ops_mem[3], *ops;
	size_t nops;

	if (dwarf_frame_cfa(frame, &ops, &nops) || nops != 2 ||
	    !is_breg(&ops[0], REG_RSP, CFI_SIG_RSP) || ops[1].atom != DW_OP_deref)
		return fallback(why, CFI_WHY_SIGNAL);
	if (dwarf_frame_register(frame, REG_RA, ops_mem, &ops, &nops) ||
	    !at_rsp_plus(ops, nops, CFI_SIG_RIP))
		return fallback(why, CFI_WHY_SIGNAL);
	if (dwarf_frame_register(frame, REG_RBP, ops_mem, &ops, &nops) ||
	    !at_rsp_plus(ops, nops, CFI_SIG_RBP))
		return fallback(why, CFI_WHY_SIGNAL);
	return (struct cfi_row){.kind = CFI_ROW_SIGNAL};
}

static struct cfi_row classify_frame(Dwarf_Frame *frame, enum cfi_fallback_why *why)
{
	struct cfi_row r = {0};
	Dwarf_Op ops_mem[3], *ops;
	Dwarf_Addr start, end;
	int64_t off;
	unsigned reg;
	size_t nops;
	bool signal;

	if (dwarf_frame_info(frame, &start, &end, &signal) != REG_RA)
		return fallback(why, CFI_WHY_RA);
	if (signal)
		return classify_signal(frame, why);
	/* The return address first: undefined marks the outermost frame,
	 * whatever the CFA. */
	if (dwarf_frame_register(frame, REG_RA, ops_mem, &ops, &nops))
		return fallback(why, CFI_WHY_RA);
	if (nops == 0 && ops)
		return (struct cfi_row){.kind = CFI_ROW_END};
	if (!at_cfa_plus(ops, nops, &off) || off != -8)
		return fallback(why, CFI_WHY_RA);

	if (dwarf_frame_cfa(frame, &ops, &nops) || nops == 0)
		return fallback(why, CFI_WHY_CFA_EXPR);
	if (nops == 1 && op_breg(&ops[0], &reg, &off)) {
		if (reg == REG_RSP)
			r.kind = CFI_ROW_RSP;
		else if (reg == REG_RBP)
			r.kind = CFI_ROW_RBP;
		else
			return fallback(why, CFI_WHY_CFA_REG);
	} else if (is_plt_expr(ops, nops, &off)) {
		r.kind = CFI_ROW_PLT;
	} else {
		return fallback(why, CFI_WHY_CFA_EXPR);
	}
	if (off % 8 || off / 8 < INT16_MIN || off / 8 > INT16_MAX)
		return fallback(why, CFI_WHY_CFA_RANGE);
	r.cfa_off = (int16_t)(off / 8);

	/* rbp: "same value" is nops 0 with ops NULL; "undefined" is nops 0
	 * with ops set, and a walk could not go on from it. */
	if (dwarf_frame_register(frame, REG_RBP, ops_mem, &ops, &nops))
		return fallback(why, CFI_WHY_RBP);
	if (nops == 0 && !ops)
		return r;
	if (!at_cfa_plus(ops, nops, &off) || off % 8 || off / 8 < INT8_MIN || off / 8 >= 0)
		return fallback(why, CFI_WHY_RBP);
	r.rbp_off = (int8_t)(off / 8);
	return r;
}

struct cfi_row cfi_classify(Dwarf_CFI *cfi, uint64_t vaddr, enum cfi_fallback_why *why)
{
	Dwarf_Frame *frame = NULL;
	struct cfi_row r;

	if (dwarf_cfi_addrframe(cfi, vaddr, &frame))
		return (struct cfi_row){.kind = CFI_ROW_NONE};
	r = classify_frame(frame, why);
	free(frame);
	return r;
}

/* ---- Listing the FDEs. ---- */

/* Reads a DW_EH_PE-encoded value at *p (advanced past it); field_vaddr is
 * where the field is loaded, for pcrel. Only what FDE ranges use: absolute
 * and pc-relative applications. */
static bool read_encoded(uint8_t enc, const uint8_t **p, const uint8_t *end, uint64_t field_vaddr,
			 uint64_t *val)
{
	const uint8_t *q = *p;
	uint64_t v = 0;
	unsigned shift = 0, size;

	switch (enc & 0x0f) {
	case DW_EH_PE_absptr:
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		size = 8;
		break;
	case DW_EH_PE_udata4:
	case DW_EH_PE_sdata4:
		size = 4;
		break;
	case DW_EH_PE_udata2:
	case DW_EH_PE_sdata2:
		size = 2;
		break;
	case DW_EH_PE_uleb128:
	case DW_EH_PE_sleb128:
		do {
			if (q >= end || shift > 63)
				return false;
			v |= (uint64_t)(*q & 0x7f) << shift;
			shift += 7;
		} while (*q++ & 0x80);
		if ((enc & 0x0f) == DW_EH_PE_sleb128 && shift < 64 && (q[-1] & 0x40))
			v |= ~0ULL << shift;
		size = 0;
		break;
	default:
		return false;
	}
	if (size) {
		if ((size_t)(end - q) < size)
			return false;
		memcpy(&v, q, size); /* little-endian: x86-64 only */
		if ((enc & 0x08) && size < 8 && (v >> (size * 8 - 1)) & 1)
			v |= ~0ULL << (size * 8); /* sdata: sign-extend */
		q += size;
	}
	switch (enc & 0x70) {
	case DW_EH_PE_absptr:
		break;
	case DW_EH_PE_pcrel:
		v += field_vaddr;
		break;
	default:
		return false;
	}
	*p = q;
	*val = v;
	return true;
}

/* The FDE pointer encoding a CIE's augmentation gives ('R'); absptr
 * without one. DW_EH_PE_omit when the augmentation is not understood. */
static uint8_t cie_fde_encoding(const Dwarf_CIE *cie, bool eh_frame)
{
	const uint8_t *p = cie->augmentation_data, *end = p + cie->augmentation_data_size;
	const char *a = cie->augmentation;
	uint64_t skip;

	if (!eh_frame || !a || !a[0])
		return DW_EH_PE_absptr;
	if (a[0] != 'z' || !p)
		return DW_EH_PE_omit;
	for (a++; *a; a++) {
		switch (*a) {
		case 'L': /* LSDA encoding */
			if (p >= end)
				return DW_EH_PE_omit;
			p++;
			break;
		case 'P': /* personality: encoding, then the pointer */
			if (p >= end)
				return DW_EH_PE_omit;
			{
				uint8_t penc = *p++;

				/* Its application does not matter, only its size. */
				if (!read_encoded(penc & 0x0f, &p, end, 0, &skip))
					return DW_EH_PE_omit;
			}
			break;
		case 'R':
			return p < end ? *p : DW_EH_PE_omit;
		case 'S': /* signal frame */
		case 'B': /* AArch64 BTI */
			break;
		default:
			return DW_EH_PE_omit;
		}
	}
	return DW_EH_PE_absptr;
}

static int cmp_cie(const void *a, const void *b)
{
	const struct cie_enc *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

static int cmp_fde(const void *a, const void *b)
{
	const struct fde_range *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->hi < y->hi ? -1 : x->hi > y->hi;
}

/* The nonempty FDE ranges of a CFI section, sorted by address. */
static int list_fdes(Elf *elf, Elf_Data *data, uint64_t sec_vaddr, bool eh_frame,
		     struct fde_range **out, size_t *nout)
{
	const unsigned char *ident = (const unsigned char *)elf_getident(elf, NULL);
	struct cie_enc *cies = NULL, key, *cie;
	struct fde_range *fdes = NULL;
	size_t ncies = 0, ciecap = 0, nfdes = 0, fdecap = 0;
	Dwarf_Off off, next;
	Dwarf_CFI_Entry ent;
	int pass, r, err = 0;

	/* Pass 0: the CIEs (an FDE may come before its CIE); pass 1: FDEs. */
	for (pass = 0; pass < 2 && !err; pass++) {
		/* cies is NULL in a binary without CIEs: qsort's pointer must
		 * not be, even for 0 elements. */
		if (pass == 1 && ncies)
			qsort(cies, ncies, sizeof(*cies), cmp_cie);
		for (off = 0; (r = dwarf_next_cfi(ident, data, eh_frame, off, &next, &ent)) == 0;
		     off = next) {
			const uint8_t *p, *end;
			uint64_t lo, len, field;

			if (pass == 0 && dwarf_cfi_cie_p(&ent)) {
				if ((err = fmt_grow((void **)&cies, &ciecap, ncies + 1,
						    sizeof(*cies))))
					break;
				cies[ncies].off = off;
				cies[ncies++].enc = cie_fde_encoding(&ent.cie, eh_frame);
			}
			if (pass == 0 || dwarf_cfi_cie_p(&ent))
				continue;
			key.off = ent.fde.CIE_pointer;
			cie = bsearch(&key, cies, ncies, sizeof(*cies), cmp_cie);
			if (!cie || cie->enc == DW_EH_PE_omit)
				continue;
			p = ent.fde.start;
			end = ent.fde.end;
			field = sec_vaddr + (uint64_t)(p - (const uint8_t *)data->d_buf);
			if (!read_encoded(cie->enc, &p, end, field, &lo) ||
			    !read_encoded(cie->enc & 0x0f, &p, end, 0, &len))
				continue;
			/* Empty, or a function the linker discarded (its
			 * .debug_frame FDE then starts at 0). */
			if (!len || !lo || lo + len < lo)
				continue;
			if ((err = fmt_grow((void **)&fdes, &fdecap, nfdes + 1, sizeof(*fdes))))
				break;
			fdes[nfdes].lo = lo;
			fdes[nfdes++].hi = lo + len;
		}
		if (r < 0 && !err)
			err = -EIO;
	}
	free(cies);
	if (err) {
		free(fdes);
		return err;
	}
	/* fdes is NULL when there is none: qsort's pointer must not be. */
	if (nfdes)
		qsort(fdes, nfdes, sizeof(*fdes), cmp_fde);
	*out = fdes;
	*nout = nfdes;
	return 0;
}

/* ---- Building the rows. ---- */

struct builder {
	struct cfi_row *rows;
	size_t n, cap;
	uint64_t base;
	size_t emitted; /* rows before merging */
};

static bool same_rules(struct cfi_row a, struct cfi_row b)
{
	return a.kind == b.kind && a.rbp_off == b.rbp_off && a.cfa_off == b.cfa_off;
}

/* Row r from vaddr pc on. At the same pc as the last row it replaces it
 * (an FDE that starts where the previous one ended replaces its NONE). */
static int emit(struct builder *b, uint64_t pc, struct cfi_row r)
{
	r.pc_off = (uint32_t)(pc - b->base);
	b->emitted++;
	if (b->n && b->rows[b->n - 1].pc_off == r.pc_off) {
		b->n--;
		if (b->n && same_rules(b->rows[b->n - 1], r))
			return 0;
	} else if (b->n && same_rules(b->rows[b->n - 1], r)) {
		return 0;
	}
	if (fmt_grow((void **)&b->rows, &b->cap, b->n + 1, sizeof(*b->rows)))
		return -ENOMEM;
	b->rows[b->n++] = r;
	return 0;
}

/* The rows of one FDE, [lo, hi): libdw's rule at each row's start. */
static int build_fde(struct builder *b, Dwarf_CFI *cfi, uint64_t lo, uint64_t hi,
		     struct cfi_stats *st)
{
	uint64_t pc = lo;
	int err;

	while (pc < hi) {
		enum cfi_fallback_why why = CFI_WHY_NR;
		Dwarf_Frame *frame = NULL;
		Dwarf_Addr start, end;
		struct cfi_row r;
		bool signal;

		if (dwarf_cfi_addrframe(cfi, pc, &frame)) {
			/* An FDE libdw cannot evaluate: there is CFI, but
			 * not one this table can use. */
			st->why[CFI_WHY_LIBDW]++;
			return emit(b, pc, (struct cfi_row){.kind = CFI_ROW_FALLBACK});
		}
		r = classify_frame(frame, &why);
		if (dwarf_frame_info(frame, &start, &end, &signal) < 0 || end <= pc || end > hi)
			end = hi; /* a row that does not end inside its FDE ends with it */
		free(frame);
		if (why < CFI_WHY_NR)
			st->why[why]++;
		if ((err = emit(b, pc, r)))
			return err;
		pc = end;
	}
	return 0;
}

/* A CFI section by name, with data; NULL if absent or without bytes in the
 * file (.eh_frame is NOBITS in separate debug files). */
static Elf_Scn *find_section(Elf *elf, const char *want, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;
	size_t shstr;

	if (elf_getshdrstrndx(elf, &shstr))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;

		if (!gelf_getshdr(scn, sh))
			continue;
		name = elf_strptr(elf, shstr, sh->sh_name);
		if (name && !strcmp(name, want) && sh->sh_type != SHT_NOBITS && sh->sh_size)
			return scn;
	}
	return NULL;
}

int cfi_table_build(Elf *elf, struct cfi_table *t)
{
	struct builder b = {0};
	struct cfi_stats st = {0};
	struct fde_range *fdes = NULL;
	Dwarf *dw = NULL;
	Dwarf_CFI *cfi = NULL;
	Elf_Scn *scn;
	Elf_Data *data;
	GElf_Ehdr eh;
	GElf_Shdr sh;
	size_t nfdes = 0, i;
	uint64_t covered = 0, top = 0;
	bool eh_frame;
	int err;

	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) || eh.e_machine != EM_X86_64 ||
	    gelf_getclass(elf) != ELFCLASS64)
		return -ENOEXEC;
	/* .eh_frame is what the process has loaded and what libdwfl's
	 * unwinder reads first; .debug_frame only when it is the only CFI
	 * (some hand-written or -fno-asynchronous-unwind-tables objects). */
	scn = find_section(elf, ".eh_frame", &sh);
	eh_frame = scn != NULL;
	if (!scn) {
		scn = find_section(elf, ".debug_frame", &sh);
		if (!scn)
			return -ENOENT;
		/* libdw reads it decompressed, and so must list_fdes. */
		if ((sh.sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0)
			return -EIO;
	}
	data = elf_getdata(scn, NULL);
	if (!data || !data->d_buf)
		return -EIO;
	if (eh_frame) {
		cfi = dwarf_getcfi_elf(elf);
	} else {
		dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
		cfi = dw ? dwarf_getcfi(dw) : NULL;
	}
	if (!cfi) {
		err = -EIO;
		goto out;
	}
	st.section = eh_frame ? ".eh_frame" : ".debug_frame";
	err = list_fdes(elf, data, sh.sh_addr, eh_frame, &fdes, &nfdes);
	if (err)
		goto out;
	if (!nfdes) {
		err = -ENOENT;
		goto out;
	}
	st.fdes = nfdes;
	b.base = fdes[0].lo;
	for (i = 0; i < nfdes; i++)
		if (fdes[i].hi > top)
			top = fdes[i].hi;
	if (top - b.base > UINT32_MAX) {
		err = -EOVERFLOW;
		goto out;
	}
	for (i = 0; i < nfdes; i++) {
		uint64_t lo = fdes[i].lo > covered ? fdes[i].lo : covered;

		/* Overlapping FDEs (rare, and a linker's mistake): the part
		 * not covered yet, by libdw's choice of FDE there. */
		if (lo >= fdes[i].hi)
			continue;
		if ((err = build_fde(&b, cfi, lo, fdes[i].hi, &st)))
			goto out;
		/* The FDE's end: NONE until the next FDE, which replaces it
		 * when it starts right here. */
		if ((err = emit(&b, fdes[i].hi, (struct cfi_row){.kind = CFI_ROW_NONE})))
			goto out;
		covered = fdes[i].hi;
	}
	for (i = 0; i < b.n; i++) {
		if (b.rows[i].kind == CFI_ROW_FALLBACK)
			st.fallback_rows++;
		else if (b.rows[i].kind == CFI_ROW_NONE)
			st.none_rows++;
	}
	st.rows = b.n;
	st.raw_rows = b.emitted;
	st.bytes = b.n * sizeof(*b.rows);
	t->base = b.base;
	t->rows = b.rows;
	t->nrows = b.n;
	t->stats = st;
	b.rows = NULL;
out:
	free(b.rows);
	free(fdes);
	if (dw)
		dwarf_end(dw); /* owns the .debug_frame CFI */
	else if (cfi)
		dwarf_cfi_end(cfi);
	return err;
}

int cfi_table_build_fd(int fd, struct cfi_table *t)
{
	Elf *elf;
	int err;

	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return -ENOEXEC;
	err = cfi_table_build(elf, t);
	elf_end(elf);
	return err;
}

void cfi_table_free(struct cfi_table *t)
{
	if (!t)
		return;
	free(t->rows);
	memset(t, 0, sizeof(*t));
}

struct cfi_row cfi_table_lookup(const struct cfi_table *t, uint64_t vaddr)
{
	uint64_t off = vaddr - t->base;
	size_t lo = 0, hi = t->nrows, mid;
	int i;

	/* Below base wraps to >= 2^32: outside, as in BPF. */
	if (!t->nrows || off > UINT32_MAX || off < t->rows[0].pc_off)
		return (struct cfi_row){.kind = CFI_ROW_NONE};
	/* The loop BPF runs: bounded, CFI_BSEARCH_STEPS at most for a table
	 * of up to CFI_TABLE_MAX_ROWS rows. A bigger one needs more steps,
	 * which the reference takes on; BPF gets it split in slices. */
	for (i = 0; hi - lo > 1; i++) {
		mid = lo + (hi - lo) / 2;
		if (t->rows[mid].pc_off <= off)
			lo = mid;
		else
			hi = mid;
		if (i + 1 == CFI_BSEARCH_STEPS && t->nrows <= CFI_TABLE_MAX_ROWS && hi - lo > 1)
			abort(); /* the bound is wrong: BPF would miss the row */
	}
	return t->rows[lo];
}

/* ---- The reference walker. ---- */

static const struct cfi_map *find_map(const struct cfi_map *maps, size_t nmaps, uint64_t addr)
{
	size_t lo = 0, hi = nmaps;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (addr < maps[mid].start)
			hi = mid;
		else if (addr >= maps[mid].end)
			lo = mid + 1;
		else
			return &maps[mid];
	}
	return NULL;
}

int cfi_walk(const struct cfi_map *maps, size_t nmaps, const uint64_t regs[3], const void *stack,
	     size_t stack_len, uint64_t *pcs, int max, enum cfi_stop *stop)
{
	uint64_t pc = regs[0], sp = regs[1], bp = regs[2], addr = pc, cfa, ra;
	const unsigned char *s = stack;
	int n = 0;

	*stop = CFI_STOP_MAX;
	if (max <= 0)
		return 0;
	pcs[n++] = pc;
	for (;;) {
		const struct cfi_map *m;
		struct cfi_row row;

		if (n >= max) {
			*stop = CFI_STOP_MAX;
			return n;
		}
		m = find_map(maps, nmaps, addr);
		if (!m) {
			*stop = CFI_STOP_NO_MAP;
			return n;
		}
		row = cfi_table_lookup(m->table, addr - m->bias);
		switch (row.kind) {
		case CFI_ROW_RSP:
			cfa = sp + (int64_t)row.cfa_off * 8;
			break;
		case CFI_ROW_RBP:
			cfa = bp + (int64_t)row.cfa_off * 8;
			break;
		case CFI_ROW_PLT:
			cfa = sp + (int64_t)row.cfa_off * 8 + ((pc & 15) >= CFI_PLT_SPLIT ? 8 : 0);
			break;
		case CFI_ROW_SIGNAL:
			if (!unwind_stack_word(s, stack_len, regs[1], sp + CFI_SIG_RIP, &ra) ||
			    !unwind_stack_word(s, stack_len, regs[1], sp + CFI_SIG_RBP, &bp) ||
			    !unwind_stack_word(s, stack_len, regs[1], sp + CFI_SIG_RSP, &sp)) {
				*stop = CFI_STOP_READ;
				return n;
			}
			if (!ra) {
				*stop = CFI_STOP_ZERO_RA;
				return n;
			}
			/* The interrupted pc is exact: no call before it. */
			pcs[n++] = pc = addr = ra;
			continue;
		case CFI_ROW_END:
			*stop = CFI_STOP_END;
			return n;
		case CFI_ROW_FALLBACK:
			*stop = CFI_STOP_FALLBACK;
			return n;
		default:
			*stop = CFI_STOP_NONE;
			return n;
		}
		if (!unwind_stack_word(s, stack_len, regs[1], cfa - 8, &ra) ||
		    (row.rbp_off && !unwind_stack_word(s, stack_len, regs[1],
						       cfa + (int64_t)row.rbp_off * 8, &bp))) {
			*stop = CFI_STOP_READ;
			return n;
		}
		if (!ra) {
			*stop = CFI_STOP_ZERO_RA;
			return n;
		}
		sp = cfa;
		pcs[n++] = pc = ra;
		addr = ra - 1; /* the call, which may be its function's last instruction */
	}
}
