#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include "formats/elfout.h"
#include "formats/util.h"

struct elfout {
	Elf *elf;
	char *shstr; /* section names, built as sections are added */
	size_t shstr_len;
	void **blobs; /* copies of section data, freed at the end */
	size_t nblobs, blobs_cap;
	int err;
};

static void *keep(struct elfout *e, const void *p, size_t n)
{
	void *c;

	if (fmt_grow((void **)&e->blobs, &e->blobs_cap, e->nblobs + 1, sizeof(*e->blobs)))
		return NULL;
	c = malloc(n ? n : 1);
	if (!c)
		return NULL;
	if (n)
		memcpy(c, p, n);
	e->blobs[e->nblobs++] = c;
	return c;
}

static size_t add_name(struct elfout *e, const char *name)
{
	size_t len = strlen(name) + 1, off = e->shstr_len;
	char *s = realloc(e->shstr, e->shstr_len + len);

	if (!s) {
		e->err = -ENOMEM;
		return 0;
	}
	memcpy(s + off, name, len);
	e->shstr = s;
	e->shstr_len += len;
	return off;
}

struct elfout *elfout_begin(int fd, int type)
{
	struct elfout *e;
	GElf_Ehdr eh;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return NULL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->elf = elf_begin(fd, ELF_C_WRITE, NULL);
	if (!e->elf || !gelf_newehdr(e->elf, ELFCLASS64) || !gelf_getehdr(e->elf, &eh)) {
		if (e->elf)
			elf_end(e->elf);
		free(e);
		return NULL;
	}
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_OSABI] = ELFOSABI_NONE;
	eh.e_type = type;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	gelf_update_ehdr(e->elf, &eh);
	add_name(e, ""); /* index 0 of .shstrtab */
	return e;
}

unsigned elfout_section(struct elfout *e, const char *name, uint32_t type, uint64_t flags,
			uint64_t addr, const void *data, size_t size, uint64_t align)
{
	Elf_Scn *scn = elf_newscn(e->elf);
	Elf_Data *d;
	GElf_Shdr sh;

	if (!scn || !(d = elf_newdata(scn)) || !gelf_getshdr(scn, &sh)) {
		e->err = -ENOMEM;
		return 0;
	}
	d->d_align = align ? align : 1;
	d->d_size = size;
	d->d_type = ELF_T_BYTE;
	d->d_buf = type == SHT_NOBITS ? NULL : keep(e, data, size);
	if (type != SHT_NOBITS && !d->d_buf) {
		e->err = -ENOMEM;
		return 0;
	}
	sh.sh_name = add_name(e, name);
	sh.sh_type = type;
	sh.sh_flags = flags;
	sh.sh_addr = addr;
	sh.sh_addralign = align ? align : 1;
	if (type == SHT_NOBITS)
		sh.sh_size = size;
	gelf_update_shdr(scn, &sh);
	return elf_ndxscn(scn);
}

int elfout_symtab(struct elfout *e, const struct elfout_sym *syms, size_t n)
{
	size_t i, strsz = 1, off = 1;
	char *str;
	Elf64_Sym *tab;
	unsigned strndx, symndx;
	Elf_Scn *scn;
	GElf_Shdr sh;

	for (i = 0; i < n; i++)
		strsz += strlen(syms[i].name) + 1;
	str = calloc(1, strsz);
	tab = calloc(n + 1, sizeof(*tab));
	if (!str || !tab) {
		free(str);
		free(tab);
		return e->err = -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		size_t len = strlen(syms[i].name) + 1;

		memcpy(str + off, syms[i].name, len);
		tab[i + 1].st_name = off;
		tab[i + 1].st_value = syms[i].value;
		tab[i + 1].st_size = syms[i].size;
		tab[i + 1].st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
		tab[i + 1].st_shndx = syms[i].section;
		off += len;
	}
	strndx = elfout_section(e, ".strtab", SHT_STRTAB, 0, 0, str, strsz, 1);
	symndx = elfout_section(e, ".symtab", SHT_SYMTAB, 0, 0, tab, (n + 1) * sizeof(*tab), 8);
	free(str);
	free(tab);
	if (!strndx || !symndx)
		return e->err = -ENOMEM;
	scn = elf_getscn(e->elf, symndx);
	gelf_getshdr(scn, &sh);
	sh.sh_link = strndx;
	sh.sh_info = 1; /* one local symbol: the null one */
	sh.sh_entsize = sizeof(Elf64_Sym);
	gelf_update_shdr(scn, &sh);
	elf_getdata(scn, NULL)->d_type = ELF_T_SYM;
	return 0;
}

int elfout_load_segment(struct elfout *e, unsigned idx, uint32_t flags, uint64_t *offset)
{
	Elf_Scn *scn = elf_getscn(e->elf, idx);
	GElf_Phdr ph = {0};
	GElf_Shdr sh;

	if (!scn || !gelf_newphdr(e->elf, 1) || !gelf_getshdr(scn, &sh))
		return e->err = -ENOMEM;
	/* A first layout tells where the section lands. */
	if (elf_update(e->elf, ELF_C_NULL) < 0 || !gelf_getshdr(scn, &sh))
		return e->err = -EIO;
	ph.p_type = PT_LOAD;
	ph.p_flags = flags;
	ph.p_offset = sh.sh_offset;
	ph.p_vaddr = ph.p_paddr = sh.sh_addr;
	/* Even over a NOBITS section: pprof ignores a PT_LOAD without file
	 * bytes, and the readers of these images read headers and symbols only. */
	ph.p_filesz = sh.sh_size;
	ph.p_memsz = sh.sh_size;
	ph.p_align = 1;
	gelf_update_phdr(e->elf, 0, &ph);
	*offset = sh.sh_offset;
	return 0;
}

int elfout_finish(struct elfout *e)
{
	unsigned idx;
	int err = e->err;
	size_t i;

	if (!err) {
		char *names;
		size_t len;

		/* .shstrtab names itself, so its name goes in before the copy. */
		size_t self = add_name(e, ".shstrtab");

		names = e->shstr;
		len = e->shstr_len;
		idx = elfout_section(e, "", SHT_STRTAB, 0, 0, names, len, 1);
		if (idx) {
			Elf_Scn *scn = elf_getscn(e->elf, idx);
			GElf_Shdr sh;

			GElf_Ehdr eh;

			gelf_getshdr(scn, &sh);
			sh.sh_name = self;
			gelf_update_shdr(scn, &sh);
			gelf_getehdr(e->elf, &eh);
			eh.e_shstrndx = idx;
			gelf_update_ehdr(e->elf, &eh);
			if (elf_update(e->elf, ELF_C_WRITE) < 0)
				err = -EIO;
		} else {
			err = -ENOMEM;
		}
	}
	elf_end(e->elf);
	for (i = 0; i < e->nblobs; i++)
		free(e->blobs[i]);
	free(e->blobs);
	free(e->shstr);
	free(e);
	return err;
}
