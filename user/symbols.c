#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <libiberty/demangle.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>
#include "formats/gopclntab.h"
#include "formats/util.h"
#include "user/symbols.h"
#include "user/util.h"

/* Every FUNC symbol, aliases included (-t matches any name at an address;
 * lookups take the first at it). */
struct sym {
	uint64_t addr, size;
	uint32_t name; /* offset into names */
	uint32_t ver;  /* .dynsym's version (offset into names), 0: none */
	uint32_t idx;  /* order in the tables: ties keep it */
	uint8_t rank;  /* lower wins among symbols at one address */
	bool hidden;   /* a non-default version (name@VER, not name@@VER) */
	bool dyn;      /* from .dynsym (merged into .symtab's same name) */
	bool synth;    /* made here (func@plt, _start): named, never traced */
};

struct symvec {
	VEC_BODY(struct sym)
};
struct charvec {
	VEC_BODY(char)
};

struct load {
	uint64_t off, vaddr, filesz;
};

struct symfile {
	dev_t dev;
	ino_t ino;
	struct sym *syms;
	size_t nsyms;
	/* Demangled names, made on a symbol's first lookup (demangle_cached()). */
	char **dnames;
	char *names;
	size_t names_len;
	struct load *loads;
	size_t nloads;
	uint64_t *fstarts; /* function starts from .eh_frame_hdr, sorted */
	uint64_t *fdes;	   /* fstarts[i]'s FDE (its vaddr), for its range */
	size_t nfstarts;
	bool go; /* a Go program: frame pointers always, with Go's own prologue */
	/* Go's line table (.gopclntab: libdw reads no line of Go's DWARF),
	 * read from dw_fd on the first line looked up, freed with the Dwfl. */
	uint64_t go_tab_off, go_tab_size, go_text;
	uint8_t *go_tab;
	struct gopcln go_lines;
	bool go_tried;
	char build_id[41 * 2];
	/* Source lines and .eh_frame function ranges: the file stays open (the
	 * process may be gone when the files are written); libdw reads its
	 * DWARF, or its separate debug file's, on the first lookup of a line.
	 * One per file, whatever the processes. */
	int dw_fd; /* ours: libdwfl gets a copy, so the Dwfl can go and come back */
	char *path;
	Dwfl *dwfl;
	bool dwfl_tried;
	uint64_t dwfl_used_ns; /* CLOCK_MONOTONIC: symfiles_trim frees an idle Dwfl */
	/* Holders (symfile_get .. symfile_put), and when the last one let go:
	 * symfiles_trim frees a file nobody has held for a while. */
	unsigned refs;
	uint64_t released_ns;
};

static VEC(struct symfile *) files;
static struct idtab files_tab;

static bool file_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct stat *st = key;

	(void)ctx;
	return files.v[id]->dev == st->st_dev && files.v[id]->ino == st->st_ino;
}

static uint64_t file_hash(const struct stat *st)
{
	return hash_u64(st->st_dev * 0x9e3779b97f4a7c15ULL ^ st->st_ino);
}

static int cmp_sym(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* An old version's name (cfree@GLIBC_2.2.5) names no function today. */
	if (x->hidden != y->hidden)
		return x->hidden ? 1 : -1;
	if (x->rank != y->rank)
		return (int)x->rank - (int)y->rank;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Appends a sanitized copy of s to names; its offset, or 0 on ENOMEM (0 is
 * the empty name, which no caller appends). */
static uint32_t add_name(struct charvec *names, const char *s)
{
	size_t n = strlen(s), len = fmt_sanitize(NULL, 0, s, n) + 1;
	uint32_t off = names->n;

	/* Sanitized: a symbol name is the binary's author's to choose. */
	if (names->n + len > UINT32_MAX || VEC_RESERVE(*names, names->n + len))
		return 0;
	fmt_sanitize(names->v + names->n, len, s, n);
	names->n += len;
	return off;
}

/* .dynsym's symbol versions (.gnu.version, and the names of the versions
 * the file defines in .gnu.version_d): free@@GLIBC_2.2.5 is "free" in
 * the string table. */
struct versions {
	Elf_Data *versym;
	VEC(uint32_t) names; /* by version index: offset into names, 0 none */
};

static int read_versions(Elf *elf, Elf_Scn *dynsym, struct versions *v, struct charvec *names)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *d;
		size_t off = 0, i;
		GElf_Verdef vd;
		GElf_Verdaux va;

		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_GNU_versym && sh.sh_link == elf_ndxscn(dynsym)) {
			v->versym = elf_getdata(scn, NULL);
			continue;
		}
		if (sh.sh_type != SHT_GNU_verdef || !(d = elf_getdata(scn, NULL)))
			continue;
		/* Bounded by the section's count: a loop of vd_next must end. */
		for (i = 0; i < sh.sh_info && gelf_getverdef(d, off, &vd); i++) {
			const char *n;
			uint32_t no;

			if (vd.vd_ndx < 0x8000 && gelf_getverdaux(d, off + vd.vd_aux, &va) &&
			    (n = elf_strptr(elf, sh.sh_link, va.vda_name)) && *n &&
			    !(vd.vd_flags & VER_FLG_BASE)) {
				if (VEC_RESERVE(v->names, vd.vd_ndx + 1u))
					return -ENOMEM;
				while (v->names.n <= vd.vd_ndx)
					v->names.v[v->names.n++] = 0;
				if (!(no = add_name(names, n)))
					return -ENOMEM;
				v->names.v[vd.vd_ndx] = no;
			}
			if (!vd.vd_next)
				break;
			off += vd.vd_next;
		}
	}
	return 0;
}

/* Appends the FUNC symbols of one symbol table. */
static int read_symtab(Elf *elf, Elf_Scn *scn, GElf_Shdr *sh, struct symvec *out,
		       struct charvec *names)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	struct versions ver = {0};
	size_t i, n;
	int err = 0;

	if (!data || !sh->sh_entsize)
		return 0;
	if (sh->sh_type == SHT_DYNSYM && (err = read_versions(elf, scn, &ver, names)))
		goto out;
	n = sh->sh_size / sh->sh_entsize;
	for (i = 0; i < n; i++) {
		GElf_Versym vs;
		GElf_Sym s;
		const char *name;
		struct sym y = {0};

		if (!gelf_getsym(data, i, &s))
			break;
		if (GELF_ST_TYPE(s.st_info) != STT_FUNC && GELF_ST_TYPE(s.st_info) != STT_GNU_IFUNC)
			continue;
		if (s.st_shndx == SHN_UNDEF || !s.st_value)
			continue;
		name = elf_strptr(elf, sh->sh_link, s.st_name);
		if (!name || !*name)
			continue;
		y.addr = s.st_value;
		y.size = s.st_size;
		y.idx = out->n;
		y.dyn = sh->sh_type == SHT_DYNSYM;
		y.rank = GELF_ST_BIND(s.st_info) == STB_GLOBAL ? 0
			 : GELF_ST_BIND(s.st_info) == STB_WEAK ? 1
							       : 2;
		if (ver.versym && gelf_getversym(ver.versym, i, &vs) &&
		    (vs & 0x7fff) < ver.names.n) {
			y.ver = ver.names.v[vs & 0x7fff];
			y.hidden = vs & 0x8000;
		}
		if (!(y.name = add_name(names, name)) || VEC_PUSH(*out, y)) {
			err = -ENOMEM;
			break;
		}
	}
out:
	VEC_FREE(ver.names);
	return err;
}

static void read_build_id(Elf *elf, struct symfile *f)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *data;
		GElf_Nhdr nh;
		size_t off = 0, noff, doff;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		data = elf_getdata(scn, NULL);
		while (data && (off = gelf_getnote(data, off, &nh, &noff, &doff)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp((char *)data->d_buf + noff, "GNU", 4) && nh.n_descsz <= 40) {
				const unsigned char *d = (unsigned char *)data->d_buf + doff;
				size_t i;

				for (i = 0; i < nh.n_descsz; i++)
					sprintf(f->build_id + 2 * i, "%02x", d[i]);
				return;
			}
		}
	}
}

/* Reads .symtab and .dynsym of elf: .symtab names more functions,
 * .dynsym's names carry their versions (merge_dynsym). */
static int read_syms(Elf *elf, struct symvec *syms, struct charvec *names, bool *had_symtab)
{
	Elf_Scn *scn = NULL, *dyn = NULL, *tab = NULL;
	GElf_Shdr sh, dsh, tsh;
	int err = 0;

	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB) {
			tab = scn;
			tsh = sh;
		} else if (sh.sh_type == SHT_DYNSYM) {
			dyn = scn;
			dsh = sh;
		}
	}
	*had_symtab = tab != NULL;
	if (tab)
		err = read_symtab(elf, tab, &tsh, syms, names);
	if (dyn && !err)
		err = read_symtab(elf, dyn, &dsh, syms, names);
	return err;
}

/* syms sorted by address: a .dynsym symbol whose name .symtab has at the
 * same address adds only its version to it. */
static void merge_dynsym(struct symvec *syms, const char *names)
{
	size_t i, j, k, end, n = 0;

	for (i = 0; i < syms->n; i = end) {
		for (end = i + 1; end < syms->n && syms->v[end].addr == syms->v[i].addr; end++)
			;
		for (j = i; j < end; j++) {
			struct sym *d = &syms->v[j];

			for (k = i; d->dyn && k < end; k++) {
				struct sym *t = &syms->v[k];

				if (t->dyn || strcmp(names + t->name, names + d->name))
					continue;
				if (!t->ver) {
					t->ver = d->ver;
					t->hidden = d->hidden;
				}
				/* Its place in .dynsym (the first table read
				 * where there is no .symtab): the address's
				 * name stays the one it was before the merge. */
				t->idx = t->idx < d->idx ? t->idx : d->idx;
				d->name = 0; /* merged: dropped below */
				break;
			}
		}
	}
	for (i = 0; i < syms->n; i = end) {
		size_t start = n;

		for (end = i; end < syms->n && syms->v[end].addr == syms->v[i].addr; end++)
			if (syms->v[end].name)
				syms->v[n++] = syms->v[end];
		if (n - start > 1) /* merged entries moved in their group */
			qsort(syms->v + start, n - start, sizeof(*syms->v), cmp_sym);
	}
	syms->n = n;
}

/* Debian's -dbgsym packages put full symbol tables under the build id: a
 * path looked up by a build id that the target's files choose, so opened as
 * a regular file only, without blocking (a FIFO planted there would hang the
 * recording). Symlinks are followed: other distributions link these files. */
static int open_build_id_file(const char *build_id, char *path, size_t len)
{
	int fd;

	if (strlen(build_id) < 4)
		return -ENOENT;
	snprintf(path, len, "/usr/lib/debug/.build-id/%.2s/%s.debug", build_id, build_id + 2);
	fd = open_regular(path, 0);
	if (fd == -EINVAL)
		warn("%s: not a regular file; ignored", path);
	return fd;
}

static Elf *open_debug_file(const char *build_id, int *fd)
{
	char path[128];
	Elf *elf;

	*fd = open_build_id_file(build_id, path, sizeof(path));
	if (*fd < 0)
		return NULL;
	elf = elf_begin(*fd, ELF_C_READ_MMAP, NULL);
	if (!elf) {
		close(*fd);
		*fd = -1;
	}
	return elf;
}

/* Function start addresses from the binary-search table of .eh_frame_hdr,
 * in its usual encoding (datarel sdata4 pairs); stripped programs have no
 * symbols, but every function has an FDE. */
static void read_fde_starts(Elf *elf, struct symfile *f)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;
		Elf_Data *d;
		const unsigned char *b;
		uint32_t count;
		size_t i;

		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(elf, shstrndx, sh.sh_name)))
			continue;
		if (!strcmp(name, ".gopclntab") && sh.sh_type == SHT_PROGBITS) {
			f->go = true;
			f->go_tab_off = sh.sh_offset;
			f->go_tab_size = sh.sh_size;
		}
		/* Go 1.18+'s table is relative to runtime.text, which a PIE's
		 * table leaves to a relocation (0 in the file) and Go 1.26's
		 * no longer holds: used where no symbol names it (go_lines). */
		if (!strcmp(name, ".text"))
			f->go_text = sh.sh_addr;
		/* The first table only: a second (objcopy can add one) would
		 * replace it, leaking it. */
		if (strcmp(name, ".eh_frame_hdr") || sh.sh_type != SHT_PROGBITS || f->fstarts)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || d->d_size < 12)
			continue;
		b = d->d_buf;
		if (b[0] != 1 || b[2] != 0x03 || b[3] != 0x3b)
			continue;
		memcpy(&count, b + 8, 4);
		if (count > (d->d_size - 12) / 8)
			count = (d->d_size - 12) / 8;
		f->fstarts = calloc(count ? count : 1, sizeof(*f->fstarts));
		f->fdes = calloc(count ? count : 1, sizeof(*f->fdes));
		if (!f->fstarts || !f->fdes) {
			free(f->fstarts);
			free(f->fdes);
			f->fstarts = f->fdes = NULL;
			return;
		}
		for (i = 0; i < count; i++) {
			int32_t loc, fde;

			memcpy(&loc, b + 12 + 8 * i, 4);
			memcpy(&fde, b + 16 + 8 * i, 4);
			f->fstarts[i] = sh.sh_addr + (int64_t)loc;
			f->fdes[i] = sh.sh_addr + (int64_t)fde;
		}
		f->nfstarts = count;
	}
}

/* A synthesized, sized symbol (PLT stubs, the entry point): ranked after
 * every real one at its address. 0 or -ENOMEM. */
static int add_synth(struct symvec *out, struct charvec *names, uint64_t addr, uint64_t size,
		     const char *name)
{
	struct sym y = {.addr = addr, .size = size, .rank = 3, .synth = true};

	y.idx = out->n;
	if (!(y.name = add_name(names, name)) || VEC_PUSH(*out, y))
		return -ENOMEM;
	return 0;
}

/* A GOT slot a dynamic relocation fills with a symbol's address. */
struct got_slot {
	uint64_t addr;
	const char *name;
};

struct slotvec {
	VEC_BODY(struct got_slot)
};

static int cmp_slot(const void *a, const void *b)
{
	const struct got_slot *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The named slots of a SHT_RELA section whose symbols are in .dynsym:
 * .rela.plt's JUMP_SLOTs (what .plt and .plt.sec jump through) and
 * .rela.dyn's GLOB_DATs (.plt.got's). */
static int read_got_slots(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, struct slotvec *out)
{
	Elf_Scn *dynsym = elf_getscn(elf, sh->sh_link);
	Elf_Data *rd = elf_getdata(scn, NULL), *sd;
	GElf_Shdr dsh;
	size_t i, n;

	if (!rd || !sh->sh_entsize || !dynsym || !gelf_getshdr(dynsym, &dsh) ||
	    dsh.sh_type != SHT_DYNSYM || !(sd = elf_getdata(dynsym, NULL)))
		return 0;
	n = sh->sh_size / sh->sh_entsize;
	for (i = 0; i < n; i++) {
		GElf_Rela r;
		GElf_Sym sym;
		struct got_slot g;
		uint32_t type;

		if (!gelf_getrela(rd, i, &r))
			break;
		type = GELF_R_TYPE(r.r_info);
		if ((type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) ||
		    !GELF_R_SYM(r.r_info) || !gelf_getsym(sd, GELF_R_SYM(r.r_info), &sym) ||
		    !(g.name = elf_strptr(elf, dsh.sh_link, sym.st_name)) || !*g.name)
			continue;
		g.addr = r.r_offset;
		if (VEC_PUSH(*out, g))
			return -ENOMEM;
	}
	return 0;
}

/* PLT stubs named func@plt, as objdump and perf name them: each entry of
 * .plt, .plt.sec and .plt.got that jumps through a GOT slot (jmp
 * *disp32(%rip), ff 25, after an optional endbr64 and bnd prefix) is named
 * after the symbol that slot's relocation binds. Otherwise a stub takes the
 * nearest symbol before it (_init, before .plt). Lazy-binding entries and
 * PLT0, which jump through no named slot, stay unnamed. */
static int read_plt(Elf *elf, struct symvec *syms, struct charvec *names)
{
	struct slotvec slots = {0};
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t shstrndx;
	int err = 0;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return 0;
	while ((scn = elf_nextscn(elf, scn)) && !err)
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_RELA)
			err = read_got_slots(elf, scn, &sh, &slots);
	if (err || !slots.n)
		goto out;
	qsort(slots.v, slots.n, sizeof(*slots.v), cmp_slot);
	scn = NULL;
	while ((scn = elf_nextscn(elf, scn)) && !err) {
		const char *name;
		const unsigned char *b;
		uint64_t ent, k;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(name = elf_strptr(elf, shstrndx, sh.sh_name)) ||
		    (strcmp(name, ".plt") && strcmp(name, ".plt.sec") &&
		     strcmp(name, ".plt.got")) ||
		    !(d = elf_getdata(scn, NULL)) || !d->d_buf)
			continue;
		ent = sh.sh_entsize >= 8 && sh.sh_entsize <= 32 ? sh.sh_entsize : 16;
		b = d->d_buf;
		for (k = 0; k + ent <= d->d_size && !err; k += ent) {
			struct got_slot key, *g;
			char buf[512];
			uint64_t j;
			int32_t disp;

			for (j = 0; j + 6 <= ent && (b[k + j] != 0xff || b[k + j + 1] != 0x25); j++)
				;
			if (j + 6 > ent)
				continue;
			memcpy(&disp, b + k + j + 2, 4);
			key.addr = sh.sh_addr + k + j + 6 + (int64_t)disp;
			g = bsearch(&key, slots.v, slots.n, sizeof(key), cmp_slot);
			if (!g)
				continue;
			snprintf(buf, sizeof(buf), "%s@plt", g->name);
			err = add_synth(syms, names, sh.sh_addr + k, ent, buf);
		}
	}
out:
	VEC_FREE(slots);
	return err;
}

/* The ELF entry point named _start where no symbol is there: Debian's ld.so
 * has no .symtab, and its _start no FDE, so loader-time stacks ended in
 * "[ld-linux-x86-64.so.2]" at their root. It ends where the next function
 * (symbol or FDE) or its section does. */
static int add_entry(Elf *elf, const struct symfile *f, struct symvec *syms, struct charvec *names)
{
	uint64_t entry, end = UINT64_MAX;
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	GElf_Shdr sh;
	size_t i;

	if (!gelf_getehdr(elf, &eh) || !(entry = eh.e_entry))
		return 0;
	for (i = 0; i < syms->n; i++) {
		if (syms->v[i].addr == entry)
			return 0;
		if (syms->v[i].addr > entry && syms->v[i].addr < end)
			end = syms->v[i].addr;
	}
	for (i = 0; i < f->nfstarts; i++)
		if (f->fstarts[i] > entry && f->fstarts[i] < end)
			end = f->fstarts[i];
	while ((scn = elf_nextscn(elf, scn)))
		/* (A hostile section's end may wrap: it must lie past entry.) */
		if (gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_EXECINSTR) &&
		    entry >= sh.sh_addr && entry - sh.sh_addr < sh.sh_size &&
		    sh.sh_addr + sh.sh_size > entry && sh.sh_addr + sh.sh_size < end)
			end = sh.sh_addr + sh.sh_size;
	return end == UINT64_MAX ? 0 : add_synth(syms, names, entry, end - entry, "_start");
}

static int load_symfile(struct symfile *f, int fd)
{
	struct symvec syms = {0};
	struct charvec names = {0};
	VEC(struct load) loads = {0};
	size_t i, nph;
	bool had_symtab = false;
	Elf *elf;
	int err = 0;

	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		err = -ENOEXEC;
		goto out;
	}
	if (elf_getphdrnum(elf, &nph) == 0) {
		for (i = 0; i < nph; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(elf, i, &ph) && ph.p_type == PT_LOAD) {
				struct load l = {ph.p_offset, ph.p_vaddr, ph.p_filesz};

				if (VEC_PUSH(loads, l)) {
					err = -ENOMEM;
					goto out;
				}
			}
		}
	}
	read_build_id(elf, f);
	if (VEC_PUSH(names, '\0')) {
		err = -ENOMEM;
		goto out;
	}
	err = read_syms(elf, &syms, &names, &had_symtab);
	if (!err && !had_symtab && f->build_id[0]) {
		int dfd = -1;
		Elf *delf = open_debug_file(f->build_id, &dfd);

		if (delf) {
			size_t before = syms.n;

			err = read_syms(delf, &syms, &names, &had_symtab);
			debug("symbols: %zu from debug file of build id %s", syms.n - before,
			      f->build_id);
			elf_end(delf);
			close(dfd);
		}
	}
	if (err)
		goto out;
	read_fde_starts(elf, f);
	if (!err)
		err = read_plt(elf, &syms, &names);
	if (!err)
		err = add_entry(elf, f, &syms, &names);
	if (err)
		goto out;
	if (syms.n) /* syms.v is NULL with no symbol; qsort wants a pointer */
		qsort(syms.v, syms.n, sizeof(*syms.v), cmp_sym);
	merge_dynsym(&syms, names.v);
	f->syms = syms.v;
	f->nsyms = syms.n;
	f->names = names.v;
	f->names_len = names.n;
	f->loads = loads.v;
	f->nloads = loads.n;
	syms.v = NULL;
	names.v = NULL;
	loads.v = NULL;
out:
	if (elf)
		elf_end(elf);
	VEC_FREE(syms);
	VEC_FREE(names);
	VEC_FREE(loads);
	return err;
}

static char not_mangled[] = "";

static void go_lines_free(struct symfile *f)
{
	free(f->go_tab);
	f->go_tab = NULL;
	f->go_tried = false;
	memset(&f->go_lines, 0, sizeof(f->go_lines));
}

static void symfile_free(struct symfile *f)
{
	go_lines_free(f);
	demangle_cache_free(f->dnames, f->nsyms);
	free(f->syms);
	free(f->names);
	free(f->loads);
	free(f->fstarts);
	free(f->fdes);
	free(f->path);
	if (f->dwfl)
		dwfl_end(f->dwfl);
	if (f->dw_fd >= 0)
		close(f->dw_fd);
	free(f);
}

struct symfile *symfile_get(int fd, const char *path)
{
	struct stat st;
	struct symfile *f;
	uint32_t id;
	int err;

	if (fstat(fd, &st))
		return NULL;
	id = idtab_find(&files_tab, file_hash(&st), file_eq, NULL, &st);
	if (id != UINT32_MAX) {
		files.v[id]->refs++;
		return files.v[id];
	}
	if (elf_version(EV_CURRENT) == EV_NONE)
		return NULL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	f->dw_fd = -1;
	err = load_symfile(f, fd);
	if (err && err != -ENOEXEC) {
		symfile_free(f); /* what it read before the error too */
		return NULL;
	}
	if (err) /* not ELF: cache the empty table so it is not read again */
		debug("symbols: %s: not an ELF file", path);
	else
		debug("symbols: %s: %zu functions", path, f->nsyms);
	if (!err) {
		f->dw_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
		f->path = strdup(path);
	}
	if (VEC_PUSH(files, f) || idtab_insert(&files_tab, file_hash(&st), files.n - 1)) {
		if (files.n && files.v[files.n - 1] == f)
			files.n--;
		symfile_free(f);
		return NULL;
	}
	f->refs = 1;
	return f;
}

void symfile_put(struct symfile *f)
{
	if (f && f->refs && !--f->refs)
		f->released_ns = now_ns(CLOCK_MONOTONIC);
}

/* The ELF vaddr of a file offset, or the offset itself when no PT_LOAD has it. */
static uint64_t symfile_vaddr(const struct symfile *f, uint64_t off)
{
	size_t i;

	for (i = 0; i < f->nloads; i++)
		if (off >= f->loads[i].off && off - f->loads[i].off < f->loads[i].filesz)
			return off - f->loads[i].off + f->loads[i].vaddr;
	return off;
}

/* libdwfl's find_debuginfo: the build-id debug file, opened as above.
 * dwfl_build_id_find_debuginfo would open it blocking. */
static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			  const char *file_name, const char *debuglink_file,
			  GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	const unsigned char *bits;
	GElf_Addr vaddr;
	char hex[2 * 40 + 1], path[128];
	int n, i, fd;

	(void)userdata, (void)modname, (void)base, (void)file_name, (void)debuglink_file;
	(void)debuglink_crc;
	n = dwfl_module_build_id(mod, &bits, &vaddr);
	if (n < 2 || n > 40)
		return -1;
	for (i = 0; i < n; i++)
		sprintf(hex + 2 * i, "%02x", bits[i]);
	fd = open_build_id_file(hex, path, sizeof(path));
	if (fd < 0)
		return -1;
	*debuginfo_file_name = strdup(path); /* libdwfl's: it frees it */
	return fd;
}

/* The file's own DWARF (libdwfl looks there first), else its build-id debug
 * file (/usr/lib/debug/.build-id). Not dwfl_standard_find_debuginfo: it
 * dlopens libdebuginfod (~10 ms) even with no server configured. */
static const Dwfl_Callbacks file_callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = find_debuginfo,
};

/* The file as a libdwfl module at bias 0 (module addresses are the file's
 * own vaddrs), opened on first use; NULL when that failed. */
static Dwfl *symfile_dwfl(struct symfile *f)
{
	int fd;

	f->dwfl_used_ns = now_ns(CLOCK_MONOTONIC);
	if (!f->dwfl_tried) {
		f->dwfl_tried = true;
		if (f->dw_fd < 0 || !f->path || !(f->dwfl = dwfl_begin(&file_callbacks)))
			return NULL;
		/* libdwfl owns the copy from here on, failure or not. */
		fd = fcntl(f->dw_fd, F_DUPFD_CLOEXEC, 3);
		dwfl_report_begin(f->dwfl);
		if (fd < 0 || !dwfl_report_elf(f->dwfl, f->path, f->path, fd, 0, false))
			debug("dwfl: %s: %s", f->path, fd < 0 ? strerror(errno) : dwfl_errmsg(-1));
		dwfl_report_end(f->dwfl, NULL, NULL);
	}
	return f->dwfl;
}

/* Source file names are the binary's too: sanitized copies of those that
 * need it, by libdw's string (stable until symfiles_free), made once. */
static struct {
	VEC(const char *) raw;
	VEC(char *) clean;
	struct idtab tab;
} dirty_files;

static bool dirty_eq(const void *ctx, uint32_t id, const void *key)
{
	(void)ctx;
	return dirty_files.raw.v[id] == key;
}

static const char *clean_file(const char *s)
{
	uint64_t h = hash_u64((uintptr_t)s);
	uint32_t id;
	size_t n = strlen(s);
	char *c;

	if (fmt_sanitize(NULL, 0, s, n) == n)
		return s;
	id = idtab_find(&dirty_files.tab, h, dirty_eq, NULL, s);
	if (id != UINT32_MAX)
		return dirty_files.clean.v[id];
	c = fmt_sanitize_dup(s, n);
	if (!c || VEC_RESERVE(dirty_files.raw, dirty_files.raw.n + 1) ||
	    VEC_PUSH(dirty_files.clean, c)) {
		free(c);
		return NULL;
	}
	dirty_files.raw.v[dirty_files.raw.n++] = s;
	if (idtab_insert(&dirty_files.tab, h, dirty_files.raw.n - 1))
		dirty_files.raw.v[dirty_files.raw.n - 1] = NULL; /* not found again: made anew */
	return c;
}

static void dirty_files_clear(void)
{
	size_t i;

	for (i = 0; i < dirty_files.clean.n; i++)
		free(dirty_files.clean.v[i]);
	VEC_FREE(dirty_files.raw);
	VEC_FREE(dirty_files.clean);
	idtab_free(&dirty_files.tab);
}

void symfiles_trim(uint64_t now, uint64_t idle_ns)
{
	bool freed = false, dropped = false;
	size_t i, n = 0;

	for (i = 0; i < files.n; i++) {
		struct symfile *f = files.v[i];

		if (!f->refs && now - f->released_ns >= idle_ns) {
			freed |= f->dwfl != NULL || f->go_tab;
			symfile_free(f);
			dropped = true;
			continue;
		}
		files.v[n++] = f;
		if ((!f->dwfl && !f->go_tab) || now - f->dwfl_used_ns < idle_ns)
			continue;
		go_lines_free(f);
		freed = true;
		if (!f->dwfl)
			continue;
		dwfl_end(f->dwfl);
		f->dwfl = NULL;
		f->dwfl_tried = false;
		freed = true;
	}
	files.n = n;
	if (dropped) { /* index the others again */
		idtab_free(&files_tab);
		for (i = 0; i < files.n; i++) {
			struct stat st = {.st_dev = files.v[i]->dev, .st_ino = files.v[i]->ino};

			/* Fails only on ENOMEM: the file is then read again. */
			idtab_insert(&files_tab, file_hash(&st), i);
		}
	}
	/* Their file names were libdw's strings (or Go tables'), keys of the
	 * cache. */
	if (freed)
		dirty_files_clear();
}

/* Go's line table, read on first use; NULL when it is not there or not a
 * layout gopcln knows. */
static const struct gopcln *go_lines(struct symfile *f)
{
	uint64_t text = f->go_text;
	size_t i;
	int err;

	f->dwfl_used_ns = now_ns(CLOCK_MONOTONIC);
	if (f->go_tried)
		return f->go_tab ? &f->go_lines : NULL;
	f->go_tried = true;
	/* The whole table in memory: 64 MiB covers the largest Go programs
	 * (kubelet's is ~30 MiB). */
	if (!f->go_tab_size || f->go_tab_size > (64u << 20) || f->dw_fd < 0 ||
	    !(f->go_tab = malloc(f->go_tab_size)))
		return NULL;
	/* The functions' entries are offsets from runtime.text: its symbol
	 * (a cgo program's .text starts with the C code the C linker put
	 * first), else the start of .text, as go tool objdump takes them. */
	for (i = 0; i < f->nsyms; i++)
		if (!strcmp(f->names + f->syms[i].name, "runtime.text")) {
			text = f->syms[i].addr;
			break;
		}
	if (pread(f->dw_fd, f->go_tab, f->go_tab_size, f->go_tab_off) != (ssize_t)f->go_tab_size)
		err = -EIO;
	else
		err = gopcln_open(&f->go_lines, f->go_tab, f->go_tab_size, text);
	if (err) {
		debug("%s: .gopclntab: %s", f->path ? f->path : "?",
		      err == -ENOTSUP ? "a Go version before 1.18" : "unreadable");
		go_lines_free(f);
		f->go_tried = true;
		return NULL;
	}
	return &f->go_lines;
}

int symfile_srcline(struct symfile *f, uint64_t file_off, const char **file, int *line)
{
	const struct gopcln *g = f->go ? go_lines(f) : NULL;
	const char *fn, *s;
	Dwfl_Line *dl;
	Dwfl *dwfl;

	if (g && !gopcln_lookup(g, symfile_vaddr(f, file_off), &fn, &s, line))
		return (*file = clean_file(s)) ? 0 : -ENOENT;
	dwfl = symfile_dwfl(f);
	if (!dwfl || !(dl = dwfl_getsrc(dwfl, symfile_vaddr(f, file_off))))
		return -ENOENT;
	s = dwfl_lineinfo(dl, NULL, line, NULL, NULL, NULL);
	if (!s || !(s = clean_file(s)))
		return -ENOENT;
	*file = s; /* valid until symfiles_trim or symfiles_free */
	return 0;
}

/* rt_sigreturn as glibc's and musl's __restore_rt make it: mov $15,%rax;
 * syscall. */
static bool is_restore_rt(const struct symfile *f, uint64_t vaddr)
{
	static const unsigned char code[SYMFILE_RESTORE_RT_SIZE - 2] = {0x48, 0xc7, 0xc0, 0x0f, 0,
									0,    0,    0x0f, 0x05};
	unsigned char b[sizeof(code)];
	uint64_t off = symfile_offset(f, vaddr);

	return off != UINT64_MAX && f->dw_fd >= 0 &&
	       pread(f->dw_fd, b, sizeof(b), off) == (ssize_t)sizeof(b) &&
	       !memcmp(b, code, sizeof(b));
}

/* How many functions of .eh_frame_hdr's table start at or before va. */
static size_t fdes_upto(const struct symfile *f, uint64_t va)
{
	size_t lo = 0, hi = f->nfstarts;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (f->fstarts[mid] <= va)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

uint64_t symfile_func_start(struct symfile *f, uint64_t file_off, const char **name)
{
	uint64_t va = symfile_vaddr(f, file_off);
	size_t lo;
	Dwarf_Frame *frame = NULL;
	bool signal = false;
	Dwfl_Module *m;
	Dwarf_Addr bias;
	Dwarf_CFI *cfi;
	Dwfl *dwfl;

	/* The FDE that starts last at or before va in .eh_frame_hdr's sorted
	 * table (libdw tells the range of a CFI row, not of its FDE)... */
	if (!(lo = fdes_upto(f, va)))
		return 0;
	/* ...is the one covering va if any does (FDEs do not overlap): libdw
	 * says whether one does, from .eh_frame only (.debug_frame would load
	 * the debug file). */
	dwfl = symfile_dwfl(f);
	m = dwfl ? dwfl_addrmodule(dwfl, va) : NULL;
	if (!m || !(cfi = dwfl_module_eh_cfi(m, &bias)) ||
	    dwarf_cfi_addrframe(cfi, va - bias, &frame))
		return 0;
	/* A signal frame's FDE starts one byte before its code (the caller's
	 * pc - 1 is the return address - 1): a trampoline that returns from a
	 * signal, which stripped libcs name nowhere. */
	if (dwarf_frame_info(frame, NULL, NULL, &signal) >= 0 && signal &&
	    is_restore_rt(f, f->fstarts[lo - 1] + 1))
		*name = "__restore_rt";
	free(frame);
	return f->fstarts[lo - 1];
}

uint64_t symfile_offset(const struct symfile *f, uint64_t vaddr)
{
	size_t i;

	for (i = 0; i < f->nloads; i++)
		if (vaddr >= f->loads[i].vaddr && vaddr - f->loads[i].vaddr < f->loads[i].filesz)
			return vaddr - f->loads[i].vaddr + f->loads[i].off;
	return UINT64_MAX;
}

/* Names longer than this are not demangled: no real one comes near it, and
 * the demangler's work grows with the name. */
#define DEMANGLE_MAX 4096

char *demangle_name(const char *raw)
{
	const char *at = strchr(raw, '@');
	size_t n = at ? (size_t)(at - raw) : strlen(raw), dn, need;
	char base[DEMANGLE_MAX], *d, *out;

	if (n < 3 || n >= sizeof(base) || raw[0] != '_' || (raw[1] != 'Z' && raw[1] != 'R'))
		return NULL;
	memcpy(base, raw, n);
	base[n] = 0;
	/* DMGL_AUTO: C++, and Rust's legacy (_ZN...17h<hash>E, the hash
	 * dropped) and v0 (_R) schemes. */
	d = cplus_demangle(base, DMGL_PARAMS | DMGL_ANSI | DMGL_AUTO);
	if (!d)
		return NULL;
	dn = strlen(d);
	need = fmt_sanitize(NULL, 0, d, dn) + (at ? strlen(at) : 0) + 1;
	out = malloc(need);
	if (out) {
		fmt_sanitize(out, need, d, dn);
		if (at)
			strcat(out, at);
	}
	free(d);
	return out;
}

const char *demangle_cached(char ***names, size_t n, size_t i, const char *raw)
{
	char *d;

	if (!*names && !(*names = calloc(n, sizeof(**names))))
		return raw; /* ENOMEM: the mangled name still names it */
	if ((*names)[i])
		return (*names)[i] == not_mangled ? raw : (*names)[i];
	d = demangle_name(raw);
	(*names)[i] = d ? d : not_mangled;
	return d ? d : raw;
}

void demangle_cache_free(char **names, size_t n)
{
	size_t i;

	for (i = 0; names && i < n; i++)
		if (names[i] != not_mangled)
			free(names[i]);
	free(names);
}

/* The name a symbol is shown by, demangled once per symbol. */
static const char *sym_display(struct symfile *f, size_t i)
{
	return demangle_cached(&f->dnames, f->nsyms, i, f->names + f->syms[i].name);
}

int symfile_foreach(struct symfile *f, symfile_fn fn, void *ctx)
{
	size_t i, first = 0;
	int r;

	for (i = 0; i < f->nsyms; i++) {
		const struct sym *y = &f->syms[i];
		struct symfile_sym s = {
		    .vaddr = y->addr,
		    .size = y->size,
		    .name = f->names + y->name,
		    .version = y->ver ? f->names + y->ver : NULL,
		    .hidden = y->hidden,
		    .display = sym_display(f, i),
		};

		if (!i || f->syms[i - 1].addr != y->addr)
			first = i;
		if (y->synth) /* a stub or the entry's code, not a function to trace */
			continue;
		s.primary = sym_display(f, first);
		if ((r = fn(ctx, &s)))
			return r;
	}
	return 0;
}

/* The first symbol (the lowest rank) at the highest address <= addr;
 * -1 when none. */
static ssize_t find_sym(const struct sym *s, size_t n, uint64_t addr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return -1;
	while (lo > 1 && s[lo - 2].addr == s[lo - 1].addr)
		lo--;
	return lo - 1;
}

const char *symfile_lookup(struct symfile *f, uint64_t file_off, uint64_t *vaddr,
			   uint64_t *sym_addr, const char **system_name)
{
	uint64_t va = symfile_vaddr(f, file_off);
	ssize_t i = find_sym(f->syms, f->nsyms, va);
	const struct sym *s = i >= 0 ? &f->syms[i] : NULL;
	const char *name;

	if (vaddr)
		*vaddr = va;
	if (system_name)
		*system_name = NULL;
	/* A sized symbol ends at its size: past it lies code with no symbol
	 * (stripped statics), which must not take its neighbour's name. */
	if (!s || (s->size && va - s->addr >= s->size))
		return NULL;
	if (sym_addr)
		*sym_addr = s->addr;
	name = sym_display(f, i);
	if (system_name && name != f->names + s->name)
		*system_name = f->names + s->name;
	return name;
}

/* The first of the symbols at syms[i]'s address. */
static size_t sym_group(const struct symfile *f, size_t i)
{
	while (i && f->syms[i - 1].addr == f->syms[i].addr)
		i--;
	return i;
}

int symfile_synth_run(struct symfile *f, uint64_t file_off, symfile_fn fn, void *ctx)
{
	uint64_t va = symfile_vaddr(f, file_off);
	ssize_t at = find_sym(f->syms, f->nsyms, va);
	size_t i, j;
	int r;

	/* The name symfile_lookup gives is the first at its address: a real
	 * symbol there outranks a made one. */
	if (at < 0 || !f->syms[at].synth || va - f->syms[at].addr >= f->syms[at].size)
		return 0;
	for (i = at; i; i = j) {
		j = sym_group(f, i - 1);
		if (!f->syms[j].synth || f->syms[j].addr + f->syms[j].size != f->syms[i].addr)
			break;
	}
	for (;;) {
		const struct sym *y = &f->syms[i];
		struct symfile_sym s = {.vaddr = y->addr,
					.size = y->size,
					.name = f->names + y->name,
					.display = sym_display(f, i)};

		s.primary = s.display;
		if ((r = fn(ctx, &s)))
			return r;
		for (j = i + 1; j < f->nsyms && f->syms[j].addr == y->addr; j++)
			;
		if (j == f->nsyms || !f->syms[j].synth || y->addr + y->size != f->syms[j].addr)
			return 0;
		i = j;
	}
}

/* The length of fstarts[i]'s function (its FDE's pc_range), or 0 when the
 * FDE cannot be read or gives a range that is not its own (a hostile file:
 * past the next function's start or out of the file's loads). Its
 * pc_begin, in the encodings compilers and linkers write (sdata4 pc-relative
 * or absolute, 8 bytes absolute), must be fstarts[i]: that tells which
 * encoding it is without reading the CIE. 64-bit DWARF entries: 0. */
static uint64_t fde_range(const struct symfile *f, size_t i)
{
	uint64_t off = symfile_offset(f, f->fdes[i]), start = f->fstarts[i], begin, len;
	unsigned char b[24];
	ssize_t n;
	uint32_t u32;
	int32_t s32;

	if (off == UINT64_MAX || f->dw_fd < 0 || (n = pread(f->dw_fd, b, sizeof(b), off)) < 16)
		return 0;
	memcpy(&u32, b, 4); /* the entry's length */
	if (u32 == 0xffffffff || u32 < 12)
		return 0;
	memcpy(&s32, b + 8, 4);
	memcpy(&begin, b + 8, 8);
	if (f->fdes[i] + 8 + (int64_t)s32 == start || (uint32_t)s32 == start) {
		memcpy(&u32, b + 12, 4);
		len = u32;
	} else if (n == (ssize_t)sizeof(b) && begin == start) {
		memcpy(&len, b + 16, 8);
	} else {
		return 0;
	}
	if (!len || len > UINT64_MAX - start ||
	    (i + 1 < f->nfstarts && len > f->fstarts[i + 1] - start) ||
	    symfile_offset(f, start + len - 1) == UINT64_MAX)
		return 0;
	return len;
}

/* Whether fstarts[i]'s function (len bytes) is named by its FDE alone, as
 * name_user_frame names it: no symbol covers its start nor starts from
 * `from` (its start, or the end of the function before it in a run) to its
 * end, and it is not __restore_rt (named by its bytes). */
static bool fde_only(struct symfile *f, size_t i, uint64_t from, uint64_t len)
{
	uint64_t a = f->fstarts[i];
	ssize_t k = len ? find_sym(f->syms, f->nsyms, a + len - 1) : -1;

	if (!len)
		return false;
	if (k >= 0 &&
	    (f->syms[k].addr >= from || !f->syms[k].size || a - f->syms[k].addr < f->syms[k].size))
		return false;
	return !is_restore_rt(f, a + 1);
}

/* Functions compiled apart are aligned (16 bytes at most on x86-64, GCC's
 * and Clang's default): a gap that short between two is padding. */
#define FDE_PADDING 16

int symfile_fde_run(struct symfile *f, uint64_t file_off, symfile_fn fn, void *ctx)
{
	uint64_t va = symfile_vaddr(f, file_off), len, prev;
	size_t lo = fdes_upto(f, va), i;
	int r;

	if (!lo)
		return 0;
	i = lo - 1;
	len = fde_range(f, i);
	if (va - f->fstarts[i] >= len || !fde_only(f, i, f->fstarts[i], len))
		return 0;
	/* Back to the run's first function... */
	while (i && (prev = fde_range(f, i - 1)) && f->fstarts[i - 1] + prev <= f->fstarts[i] &&
	       f->fstarts[i] - (f->fstarts[i - 1] + prev) < FDE_PADDING &&
	       fde_only(f, i - 1, f->fstarts[i - 1], prev) &&
	       fde_only(f, i, f->fstarts[i - 1] + prev, len)) {
		i--;
		len = prev;
	}
	/* ...and on to its last. */
	for (;;) {
		struct symfile_sym s = {.vaddr = f->fstarts[i], .size = len};
		uint64_t end = f->fstarts[i] + len;

		if ((r = fn(ctx, &s)))
			return r;
		if (++i == f->nfstarts || f->fstarts[i] < end ||
		    f->fstarts[i] - end >= FDE_PADDING || !(len = fde_range(f, i)) ||
		    !fde_only(f, i, end, len))
			return 0;
	}
}

const char *symfile_build_id(const struct symfile *f)
{
	return f->build_id[0] ? f->build_id : NULL;
}

void symfiles_free(void)
{
	size_t i;

	for (i = 0; i < files.n; i++)
		symfile_free(files.v[i]);
	VEC_FREE(files);
	idtab_free(&files_tab);
	dirty_files_clear();
}

/* Kernel symbols: text symbols of /proc/kallsyms, sorted. Their names,
 * sanitized like every name from outside, are packed in one buffer: the
 * file's text is several times larger (data symbols, addresses), and was
 * kept whole before. 16 bytes a symbol, both arrays cut to their length
 * once read: 6.18's 122,000 text symbols took 7.3 MiB with pointers and
 * the arrays' growth room, 4.3 MiB so (held for the whole run). */
#define KSYM_NONE UINT32_MAX /* no module */
struct ksym {
	uint64_t addr;
	uint32_t name, module; /* offsets in ksym_names */
};
static VEC(struct ksym) ksyms;
static VEC(char) ksym_names;

/* Appends a sanitized name; its offset, or SIZE_MAX on ENOMEM. */
static size_t add_ksym_name(const char *s)
{
	size_t n = strlen(s), need = fmt_sanitize(NULL, 0, s, n) + 1, off = ksym_names.n;

	if (VEC_RESERVE(ksym_names, off + need))
		return SIZE_MAX;
	fmt_sanitize(ksym_names.v + off, need, s, n);
	ksym_names.n += need;
	return off;
}

static int cmp_ksym(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

int kallsyms_load(void)
{
	char *text;
	size_t len;
	int err;

	if (ksyms.n)
		return 0;
	err = read_path_all("/proc/kallsyms", 0, 256 << 20, &text, &len);
	if (err)
		return err;
	return kallsyms_parse(text, len);
}

static int parse_ksyms(char *text)
{
	char *p, *line, *save = NULL, *last_mod = NULL;
	size_t zero = 0, mod_off = SIZE_MAX;

	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct ksym k;
		char type, *name, *mod;
		size_t name_off;

		k.addr = strtoull(line, &p, 16);
		if (*p != ' ')
			continue;
		type = p[1];
		if (type != 't' && type != 'T' && type != 'w' && type != 'W')
			continue;
		if (p[2] != ' ') /* "ADDR t" alone: the name would start past the line */
			continue;
		name = p + 3;
		mod = strchr(name, '\t');
		if (mod) {
			*mod++ = 0;
			if (*mod == '[') {
				mod++;
				mod[strcspn(mod, "]")] = 0;
			}
			/* A module's symbols come together: its name once. */
			if (!last_mod || strcmp(mod, last_mod))
				mod_off = add_ksym_name(mod);
			last_mod = mod;
			if (mod_off == SIZE_MAX)
				return -ENOMEM;
		}
		if ((name_off = add_ksym_name(name)) == SIZE_MAX)
			return -ENOMEM;
		if (name_off >= KSYM_NONE || (mod && mod_off >= KSYM_NONE))
			return -EFBIG; /* 4 GiB of names: not a kernel's */
		k.name = (uint32_t)name_off;
		k.module = mod ? (uint32_t)mod_off : KSYM_NONE;
		if (!k.addr)
			zero++;
		if (VEC_PUSH(ksyms, k))
			return -ENOMEM;
	}
	if (ksyms.n && zero == ksyms.n)
		return -EPERM; /* kptr_restrict hides the addresses from this process */
	if (!ksyms.n)	       /* ksyms.v is NULL with no text symbol; qsort wants a pointer */
		return 0;
	qsort(ksyms.v, ksyms.n, sizeof(*ksyms.v), cmp_ksym);
	/* Held for the whole run: the growth room goes. */
	VEC_SHRINK(ksyms);
	VEC_SHRINK(ksym_names);
	return 0;
}

int kallsyms_parse(char *text, size_t len)
{
	int err;

	(void)len; /* text ends at its NUL, text[len] */
	err = parse_ksyms(text);
	free(text);
	if (err)
		kallsyms_free();
	return err;
}

const char *kallsyms_lookup(uint64_t addr, const char **module)
{
	size_t lo = 0, hi = ksyms.n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ksyms.v[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	if (module)
		*module = ksyms.v[lo - 1].module == KSYM_NONE
			      ? NULL
			      : ksym_names.v + ksyms.v[lo - 1].module;
	return ksym_names.v + ksyms.v[lo - 1].name;
}

void kallsyms_free(void)
{
	VEC_FREE(ksyms);
	VEC_FREE(ksym_names);
}
