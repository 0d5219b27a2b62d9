/* V8 in the recorded processes (user/runtime/v8.h). */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>
#include "formats/procmaps.h"
#include "formats/v8_meta.h"
#include "formats/v8_srcpos.h"
#include "user/util.h"
#include "user/runtime/v8.h"

#define V8_NAME_MAX   512  /* bytes of a function's or a script's name */
#define V8_CACHE_BITS 12   /* functions remembered per process, direct-mapped by address */
#define V8_LOCALS_MAX 4096 /* a ScopeInfo's context locals, at most */
/* A ScopeInfo keeps its context locals' names inline below this many
 * (V8's kScopeInfoMaxInlinedLocalNamesSize), else in one hash table. */
#define V8_INLINE_LOCALS 75
#define V8_NMETA	 64

/* The exported functions that say where the embedded builtins are. */
#define SYM_BLOB_CODE "_ZN2v88internal23DefaultEmbeddedBlobCodeEv"
#define SYM_BLOB_SIZE "_ZN2v88internal27DefaultEmbeddedBlobCodeSizeEv"

/* A file read once per recording, by device and inode. */
struct v8_bin {
	uint64_t dev, ino;
	int ret;	/* 0: exports V8's metadata; -ENOENT: not; -errno */
	unsigned nsyms; /* v8dbg_* symbols */
	bool have[V8_NMETA];
	int32_t val[V8_NMETA];
	uint64_t emb_lo, emb_size; /* link-time address of the builtins, or 0 */
	struct {
		uint64_t vaddr, offset;
	} loads[8];
	int nloads;
	bool warned;
};

struct v8_fn_ent {
	uint64_t sfi, data; /* the SharedFunctionInfo, and its function_data when read */
	char *name, *file;
	int start_line;
};

/* Bytes of a source position table, and line ends of a script, read at
 * most: a function's table is far smaller; lines past are 0. */
#define V8_SRCPOS_BYTES (256 * 1024)
#define V8_LINES_MAX	(1 << 20)
/* A script's line ends, by its name: a script's text does not change. */
struct v8_script_lines {
	char *file;
	int32_t *ends;
	size_t n;
};

struct v8_proc {
	pid_t pid;
	char path[256];
	struct v8_layout l;
	struct v8_bpf_proc bpf;
	struct v8_fn_ent cache[1u << V8_CACHE_BITS];
	VEC(struct v8_script_lines) scripts;
	uint64_t is_map; /* InstructionStream's map, once one is found */
};

struct v8 {
	struct file_memo bins; /* struct v8_bin */
	VEC(struct v8_proc *) procs;
};

int v8_new(struct v8 **out)
{
	*out = calloc(1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	(*out)->bins.size = sizeof(struct v8_bin);
	return 0;
}

static void proc_free(struct v8_proc *p)
{
	for (size_t i = 0; i < (1u << V8_CACHE_BITS); i++) {
		free(p->cache[i].name);
		free(p->cache[i].file);
	}
	for (size_t i = 0; i < p->scripts.n; i++) {
		free(p->scripts.v[i].file);
		free(p->scripts.v[i].ends);
	}
	VEC_FREE(p->scripts);
	free(p);
}

void v8_free(struct v8 *v)
{
	if (!v)
		return;
	for (size_t i = 0; i < v->procs.n; i++)
		proc_free(v->procs.v[i]);
	VEC_FREE(v->procs);
	file_memo_free(&v->bins);
	free(v);
}

void v8_forget(struct v8 *v, pid_t pid)
{
	if (!v)
		return;
	for (size_t i = 0; i < v->procs.n; i++)
		if (v->procs.v[i]->pid == pid) {
			proc_free(v->procs.v[i]);
			v->procs.v[i] = v->procs.v[--v->procs.n];
			return;
		}
}

void v8_proc_bpf(const struct v8_proc *p, struct v8_bpf_proc *out)
{
	*out = p->bpf;
}

/* ---- The binary ---- */

struct scan {
	struct v8_bin *b;
	uint64_t addr[V8_NMETA];
	uint64_t blob_code, blob_size;
};

static void note_symbol(void *ctx, const char *name, uint64_t value, uint64_t size)
{
	struct scan *s = ctx;
	const char *n;

	(void)size;
	if (!strcmp(name, SYM_BLOB_CODE))
		s->blob_code = value;
	else if (!strcmp(name, SYM_BLOB_SIZE))
		s->blob_size = value;
	if (strncmp(name, "v8dbg_", 6))
		return;
	s->b->nsyms++;
	for (size_t i = 0; i < V8_NMETA && (n = v8_meta_name(i)); i++)
		if (!strcmp(name + 6, n))
			s->addr[i] = value;
}

/* len bytes at the link-time address a, from the file: 0, or -ENOENT (not
 * in a segment); bytes past a segment's file size (.bss) read as 0. */
static int file_read(int fd, Elf *elf, size_t nph, uint64_t a, void *buf, size_t len)
{
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD || a < ph.p_vaddr ||
		    a + len > ph.p_vaddr + ph.p_memsz)
			continue;
		memset(buf, 0, len);
		if (a + len <= ph.p_vaddr + ph.p_filesz)
			return pread(fd, buf, len, (off_t)(ph.p_offset + a - ph.p_vaddr)) ==
				       (ssize_t)len
				   ? 0
				   : -EIO;
		return a >= ph.p_vaddr + ph.p_filesz ? 0 : -EIO;
	}
	return -ENOENT;
}

/* The address or value an exported one-instruction function returns:
 * mov eax, imm32; lea rax, [rip + d]; mov eax, [rip + d] (then ret). 0
 * when it is none of those. */
static uint64_t decode_ret(int fd, Elf *elf, size_t nph, uint64_t fn)
{
	uint8_t c[8];
	int32_t d;
	uint32_t v;

	if (!fn || file_read(fd, elf, nph, fn, c, sizeof(c)))
		return 0;
	if (c[0] == 0xb8 && c[5] == 0xc3) {
		memcpy(&v, c + 1, 4);
		return v;
	}
	if (c[0] == 0x48 && c[1] == 0x8d && c[2] == 0x05 && c[7] == 0xc3) {
		memcpy(&d, c + 3, 4);
		return fn + 7 + (int64_t)d;
	}
	if (c[0] == 0x8b && c[1] == 0x05 && c[6] == 0xc3) {
		memcpy(&d, c + 2, 4);
		if (file_read(fd, elf, nph, fn + 6 + (int64_t)d, &v, 4))
			return 0;
		return v;
	}
	return 0;
}

/* A file's v8dbg_* metadata (a file_memo_read_fn). */
static void bin_read(void *ctx, int fd, const struct procmaps_entry *m, void *entry)
{
	struct v8_bin *b = entry;
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	struct scan s = {.b = b};
	size_t n = 0;

	(void)ctx;
	(void)m;
	b->ret = -ENOENT;
	if (!elf)
		return;
	if (elf_kind(elf) == ELF_K_ELF && !elf_getphdrnum(elf, &n)) {
		elf_scan_dynsym(elf, note_symbol, &s);
		for (size_t i = 0; i < n && b->nloads < 8; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD) {
				b->loads[b->nloads].vaddr = ph.p_vaddr;
				b->loads[b->nloads].offset = ph.p_offset;
				b->nloads++;
			}
		}
		if (b->nsyms) {
			b->ret = 0;
			for (size_t i = 0; i < V8_NMETA; i++)
				b->have[i] =
				    s.addr[i] && !file_read(fd, elf, n, s.addr[i], &b->val[i], 4);
			b->emb_lo = decode_ret(fd, elf, n, s.blob_code);
			b->emb_size = decode_ret(fd, elf, n, s.blob_size);
			if (!b->emb_lo || !b->emb_size || b->emb_size > (1u << 30))
				b->emb_lo = b->emb_size = 0;
		}
	}
	elf_end(elf);
}

static struct v8_bin *bin_of(struct v8 *v, pid_t pid, const struct procmaps_entry *m)
{
	return file_memo_get(&v->bins, pid, m, bin_read, NULL);
}

static int meta_get(void *ctx, const char *name, int32_t *val)
{
	const struct v8_bin *b = ctx;
	const char *n;

	for (size_t i = 0; i < V8_NMETA && (n = v8_meta_name(i)); i++)
		if (!strcmp(n, name)) {
			if (!b->have[i])
				return -ENOENT;
			*val = b->val[i];
			return 0;
		}
	return -ENOENT;
}

/* ---- Reading the process ---- */

static int rd(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct v8_proc *p = ctx;
	struct iovec l = {buf, len}, r = {(void *)(uintptr_t)addr, len};

	if (!addr || addr + len < addr)
		return -EFAULT;
	return process_vm_readv(p->pid, &l, 1, &r, 1, 0) == (ssize_t)len ? 0 : -EFAULT;
}

/* The tagged field at off of the object at the tagged pointer obj. */
static int field(const struct v8_proc *p, uint64_t obj, uint32_t off, uint64_t *v)
{
	return rd((void *)p, obj - p->l.str.heap_tag + off, v, 8);
}

int v8_attach_maps(struct v8 *v, pid_t pid, const char *maps_text, size_t len, struct v8_proc **out)
{
	struct procmaps_entry *maps = NULL;
	size_t nmaps = 0;
	int ret;

	for (size_t i = 0; i < v->procs.n; i++)
		if (v->procs.v[i]->pid == pid) {
			*out = v->procs.v[i];
			return 0;
		}
	ret = procmaps_parse(maps_text, len, &maps, &nmaps);
	if (ret)
		return ret;
	ret = -ENOENT;
	for (size_t i = 0; i < nmaps && ret == -ENOENT; i++) {
		const struct procmaps_entry *m = &maps[i];
		struct v8_bin *b;
		struct v8_proc *p;
		char err[160] = "";
		uint64_t bias;
		int k;

		if (!m->inode || !m->path || m->path[0] != '/' || !(b = bin_of(v, pid, m)) ||
		    b->ret)
			continue;
		for (k = 0; k < b->nloads; k++)
			if (b->loads[k].offset >= m->offset &&
			    b->loads[k].offset - m->offset < 4096)
				break;
		if (k == b->nloads)
			continue;
		bias = m->start - m->offset + b->loads[k].offset - b->loads[k].vaddr;
		if (!(p = calloc(1, sizeof(*p)))) {
			ret = -ENOMEM;
			break;
		}
		p->pid = pid;
		snprintf(p->path, sizeof(p->path), "%s", m->path);
		if (v8_meta_layout(meta_get, b, &p->l, err, sizeof(err))) {
			if (!b->warned) /* once per binary */
				warn("process %d runs V8 (%s) whose frames cannot be walked: %s; "
				     "they are named as JIT code (node --perf-basic-prof names "
				     "them)",
				     (int)pid, p->path, err);
			b->warned = true;
			proc_free(p);
			ret = -ENOTSUP;
			break;
		}
		p->bpf = (struct v8_bpf_proc){
		    .emb_lo = b->emb_lo ? b->emb_lo + bias : 0,
		    .emb_hi = b->emb_lo ? b->emb_lo + bias + b->emb_size : 0,
		    .fp_function = (__s16)p->l.fp_function,
		    .fp_context = (__s16)p->l.fp_context,
		    .fp_bc_array = (__s16)p->l.fp_bc_array,
		    .fp_bc_offset = (__s16)p->l.fp_bc_offset,
		    .jsf_shared = (__u16)p->l.jsf_shared,
		    .sfi_data = (__u16)p->l.sfi_data,
		    .heap_tag = (__u8)p->l.str.heap_tag,
		    .heap_tag_mask = (__u8)p->l.str.heap_tag_mask,
		    .smi_shift = (__u8)p->l.str.smi_shift,
		};
		if (VEC_PUSH(v->procs, p)) {
			proc_free(p);
			ret = -ENOMEM;
			break;
		}
		*out = p;
		ret = 0;
		debug("process %d runs V8 (%s), builtins at %#llx-%#llx", (int)pid, m->path,
		      (unsigned long long)p->bpf.emb_lo, (unsigned long long)p->bpf.emb_hi);
	}
	procmaps_free(maps, nmaps);
	return ret;
}

/* ---- Names ---- */

static int type_of(const struct v8_proc *p, uint64_t obj, uint16_t *t)
{
	return v8_instance_type(&p->l.str, rd, (void *)p, obj, t);
}

/* A string's text into out, or "" when obj is no string. */
static void str_or_empty(const struct v8_proc *p, uint64_t obj, char *out, size_t size)
{
	uint16_t t;

	out[0] = 0;
	if (!type_of(p, obj, &t) && t < p->l.str.first_nonstring)
		v8_string_read(&p->l.str, rd, (void *)p, obj, out, size, NULL);
}

/* A compiled function's name, from its ScopeInfo: the first string after
 * the context locals' names and infos (the function variable's name, or
 * the inferred name V8 gives an anonymous function: "Holder.nmethod" for
 * one assigned there). */
static void scope_name(const struct v8_proc *p, uint64_t si, char *out, size_t size)
{
	uint64_t w, base = si - p->l.str.heap_tag + 8; /* slots follow the map */
	int64_t n;
	uint64_t first;

	out[0] = 0;
	if (rd((void *)p, base + 8 * (uint64_t)p->l.scope_ncontextlocals, &w, 8) || (w & 1))
		return;
	n = (int64_t)w >> p->l.str.smi_shift;
	if (n < 0 || n > V8_LOCALS_MAX)
		return;
	first = (uint64_t)p->l.scope_first_vars + (uint64_t)(n < V8_INLINE_LOCALS ? n : 1) +
		(uint64_t)n;
	for (uint64_t i = 0; i < 3 && !out[0]; i++) {
		if (rd((void *)p, base + 8 * (first + i), &w, 8))
			return;
		if ((w & p->l.str.heap_tag_mask) == p->l.str.heap_tag)
			str_or_empty(p, w, out, size);
	}
}

static bool is_obj(const struct v8_proc *p, uint64_t w)
{
	return (w & p->l.str.heap_tag_mask) == p->l.str.heap_tag;
}

/* A Smi field's value: 0, or -EINVAL when the word is no Smi. */
static int smi_field(const struct v8_proc *p, uint64_t obj, uint32_t off, int64_t *v)
{
	uint64_t w;

	if (field(p, obj, off, &w) || (w & 1))
		return -EINVAL;
	*v = (int64_t)w >> p->l.str.smi_shift;
	return 0;
}

static int read_names(const struct v8_proc *p, uint64_t sfi, char *name, char *file,
		      uint64_t *script_out)
{
	uint64_t nos, script, sname;
	uint16_t t;

	name[0] = file[0] = 0;
	*script_out = 0;
	if (field(p, sfi, p->l.sfi_name_or_scope, &nos))
		return -EFAULT;
	if (is_obj(p, nos) && !type_of(p, nos, &t)) {
		if (t < p->l.str.first_nonstring)
			str_or_empty(p, nos, name, V8_NAME_MAX);
		else if (t == p->l.type_scope_info)
			scope_name(p, nos, name, V8_NAME_MAX);
	}
	if (!field(p, sfi, p->l.sfi_script, &script) && is_obj(p, script) &&
	    !type_of(p, script, &t) && t == p->l.type_script &&
	    !field(p, script, p->l.script_name, &sname)) {
		str_or_empty(p, sname, file, V8_NAME_MAX);
		*script_out = script;
	}
	return 0;
}

/* The source position of bytecode offset off in the BytecodeArray bca: 0
 * and *pos, or -errno (no table: V8 makes them lazily, for stack traces
 * and profilers). */
static int bytecode_pos(const struct v8_proc *p, uint64_t bca, uint32_t off, int64_t *pos)
{
	uint64_t tab;
	int64_t len;
	uint16_t t;
	uint8_t *buf;
	int r;

	/* A baseline function's data: its Code, whose bytecode it is. */
	if (!type_of(p, bca, &t) && t == p->l.type_code && field(p, bca, p->l.code_bytecode, &bca))
		return -ENOENT;
	if (type_of(p, bca, &t) || t != p->l.type_bytecode_array ||
	    field(p, bca, p->l.bca_srcpos, &tab) || !is_obj(p, tab) || type_of(p, tab, &t) ||
	    t != p->l.type_byte_array || smi_field(p, tab, p->l.fab_length, &len))
		return -ENOENT;
	if (len <= 0 || len > V8_SRCPOS_BYTES)
		return -EINVAL;
	if (!(buf = malloc((size_t)len)))
		return -ENOMEM;
	r = rd((void *)p, tab - p->l.str.heap_tag + p->l.fa_data, buf, (size_t)len);
	if (!r)
		r = v8_srcpos_find(buf, (size_t)len, off, pos);
	free(buf);
	return r;
}

/* The line ends of the script (named file) from its line_ends (a FixedArray
 * of Smis, when V8 made them) or its source: NULL when neither reads. */
static const struct v8_script_lines *script_lines(struct v8_proc *p, uint64_t script,
						  const char *file)
{
	struct v8_script_lines e = {0};
	uint64_t le, src;
	int64_t n, v;
	uint16_t t;

	for (size_t i = 0; i < p->scripts.n; i++)
		if (!strcmp(p->scripts.v[i].file, file))
			return p->scripts.v[i].ends ? &p->scripts.v[i] : NULL;
	if (!(e.file = strdup(file)))
		return NULL;
	if (!field(p, script, p->l.script_line_ends, &le) && is_obj(p, le) && !type_of(p, le, &t) &&
	    t == p->l.type_fixed_array && !smi_field(p, le, p->l.fab_length, &n) && n > 0 &&
	    n <= V8_LINES_MAX && (e.ends = malloc((size_t)n * sizeof(*e.ends)))) {
		for (int64_t i = 0; i < n; i++) {
			if (smi_field(p, le, p->l.fa_data + 8 * (uint32_t)i, &v) || v < 0 ||
			    v > INT32_MAX) {
				free(e.ends);
				e.ends = NULL;
				break;
			}
			e.ends[i] = (int32_t)v;
		}
		e.n = e.ends ? (size_t)n : 0;
	}
	/* The source as read (UTF-8, cut at V8_STRING_MAX): its offsets are
	 * V8's (UTF-16 units) only while it is ASCII. */
	if (!e.ends && !field(p, script, p->l.script_source, &src) && is_obj(p, src)) {
		char *text = malloc(V8_STRING_MAX + 1);
		size_t len = 0;
		bool ascii = true;

		if (text && !v8_string_read_text(&p->l.str, rd, (void *)p, src, text,
						 V8_STRING_MAX + 1, &len)) {
			len = strlen(text);
			for (size_t i = 0; i < len && ascii; i++)
				ascii = !((unsigned char)text[i] & 0x80);
			if (ascii && (e.ends = malloc((len + 2) * sizeof(*e.ends))))
				e.n = v8_line_ends(text, len, e.ends, len + 2);
		}
		free(text);
	}
	if (VEC_PUSH(p->scripts, e)) {
		free(e.file);
		free(e.ends);
		return NULL;
	}
	return e.ends ? &p->scripts.v[p->scripts.n - 1] : NULL;
}

static int line_of(struct v8_proc *p, uint64_t script, const char *file, int64_t pos)
{
	const struct v8_script_lines *s;
	int line;

	if (!script || !file || !(s = script_lines(p, script, file)) ||
	    v8_line_of(s->ends, s->n, v8_srcpos_script_offset(pos), &line))
		return 0;
	return line;
}

/* The cache's entry of the SharedFunctionInfo addr whose function_data is
 * data, read when not there: NULL on an error (*r). */
static struct v8_fn_ent *fn_entry(struct v8_proc *p, uint64_t addr, uint64_t data, int *r)
{
	struct v8_fn_ent *e = &p->cache[hash_u64(addr) & ((1u << V8_CACHE_BITS) - 1)];
	char name[V8_NAME_MAX], file[V8_NAME_MAX];
	uint64_t script = 0;
	int64_t pos;

	if (e->sfi != addr || e->data != data) {
		if ((*r = read_names(p, addr, name, file, &script)))
			return NULL;
		free(e->name);
		free(e->file);
		e->sfi = e->data = 0;
		e->name = strdup(name[0] ? name : "<anonymous>");
		e->file = file[0] ? strdup(file) : NULL;
		if (!e->name || (file[0] && !e->file)) {
			free(e->name);
			free(e->file);
			e->name = e->file = NULL;
			*r = -ENOMEM;
			return NULL;
		}
		/* Its first position's line: the function's start, as near
		 * as its bytecode says (its entry's stack check). */
		e->start_line = 0;
		if (p->l.lines && !bytecode_pos(p, data, 0, &pos))
			e->start_line = line_of(p, script, e->file, pos);
		e->sfi = addr;
		e->data = data;
	}
	return e;
}

/* Whether the function_data data is baseline code compiled since the sample
 * from the BytecodeArray the sample saw (its cookie): Sparkplug replaces an
 * interpreted function's data with its Code as it runs, often within the
 * milliseconds before the drain reads it (5402 of 5606 frames left native
 * in a tsc compile's first seconds). The object is the one sampled all the
 * same: that Code's bytecode is the sampled data. */
static bool tiered_from(const struct v8_proc *p, uint64_t data, uint64_t info)
{
	uint64_t bca;
	uint16_t t;

	return p->l.code_bytecode && is_obj(p, data) && !type_of(p, data, &t) &&
	       t == p->l.type_code && !field(p, data, p->l.code_bytecode, &bca) &&
	       V8_COOKIE(bca) == V8_FRAME_COOKIE(info);
}

int v8_frame_function(struct v8_proc *p, uint64_t addr, uint64_t info, struct v8_function *out)
{
	struct v8_fn_ent *e;
	uint64_t data, script;
	int64_t pos;
	uint16_t t;
	int r;

	/* The object is a SharedFunctionInfo still, and the one sampled: the
	 * same function_data as the step read. */
	if ((r = type_of(p, addr, &t)))
		return r;
	if (t != p->l.type_sfi)
		return -ESTALE;
	if ((r = field(p, addr, p->l.sfi_data, &data)))
		return r;
	if (V8_COOKIE(data) != V8_FRAME_COOKIE(info) && !tiered_from(p, data, info))
		return -ESTALE;
	if (!(e = fn_entry(p, addr, data, &r)))
		return r;
	out->name = e->name;
	out->file = e->file;
	out->start_line = e->start_line;
	out->line = 0;
	/* An interpreted frame's offset slot holds the bytecode's offset from
	 * the tagged BytecodeArray (V8's kHeaderSize - kHeapObjectTag + off). */
	if (p->l.lines && e->file && V8_FRAME_KIND(info) == V8_KIND_INTERP &&
	    V8_FRAME_OFF(info) >= p->l.bca_data - p->l.str.heap_tag) {
		uint32_t off = V8_FRAME_OFF(info) - (p->l.bca_data - p->l.str.heap_tag);

		if (!field(p, addr, p->l.sfi_script, &script) && !bytecode_pos(p, data, off, &pos))
			out->line = line_of(p, script, e->file, pos);
	}
	return 0;
}

/* ---- Inlined frames ---- */

/* Bytes below a pc looked through for its InstructionStream's header:
 * optimized code is rarely larger. */
#define V8_CODE_SCAN  (1024 * 1024)
#define V8_SCAN_WORDS 512

static bool is_type(const struct v8_proc *p, uint64_t obj, uint16_t want)
{
	uint16_t t;

	return is_obj(p, obj) && !type_of(p, obj, &t) && t == want;
}

/* Words read as a map's type, at most, in one scan before the map is
 * known: each is two reads, and machine code looks tagged half the time. */
#define V8_SCAN_PROBES 256

/* The tagged InstructionStream holding pc: the nearest header below it
 * (its map an InstructionStream's, its Code a Code), or 0. The map, one
 * for them all, is remembered once found. */
static uint64_t istream_at(struct v8_proc *p, uint64_t pc)
{
	uint64_t buf[V8_SCAN_WORDS], top, code;
	unsigned probes = 0;

	if (pc < V8_CODE_SCAN + p->l.is_istart)
		return 0;
	top = (pc - p->l.is_istart) & ~7ULL;
	for (uint64_t lo = top; top - lo < V8_CODE_SCAN;) {
		lo -= sizeof(buf) - 8;
		if (rd(p, lo, buf, sizeof(buf)))
			return 0;
		for (int k = V8_SCAN_WORDS - 1; k >= 0; k--) {
			uint64_t w = buf[k], obj = lo + 8 * (uint64_t)k + p->l.str.heap_tag;

			if (p->is_map ? w != p->is_map : !is_obj(p, w))
				continue;
			if (!p->is_map && ++probes > V8_SCAN_PROBES)
				return 0;
			if (!p->is_map && !is_type(p, obj, (uint16_t)p->l.type_istream))
				continue;
			if (field(p, obj, 8, &code) || !is_type(p, code, (uint16_t)p->l.type_code))
				continue;
			p->is_map = w;
			return obj;
		}
		lo -= 8;
	}
	return 0;
}

/* The FixedArray (or WeakFixedArray) arr's length: 0 and *n, or -EINVAL. */
static int array_len(const struct v8_proc *p, uint64_t arr, int64_t *n)
{
	if (!is_obj(p, arr) || smi_field(p, arr, p->l.fab_length, n) || *n < 0 || *n > (1 << 24))
		return -EINVAL;
	return 0;
}

static int array_at(const struct v8_proc *p, uint64_t arr, int64_t n, int64_t i, uint64_t *v)
{
	if (i < 0 || i >= n)
		return -EINVAL;
	return field(p, arr, p->l.fa_data + 8 * (uint32_t)i, v);
}

/* A ByteArray's bytes, malloc'd, at most max: 0, *buf and *len, or -errno. */
static int byte_array(const struct v8_proc *p, uint64_t ba, size_t max, uint8_t **buf, size_t *len)
{
	int64_t n;

	*buf = NULL;
	*len = 0;
	if (!is_type(p, ba, (uint16_t)p->l.type_byte_array) ||
	    smi_field(p, ba, p->l.fab_length, &n) || n < 0 || (uint64_t)n > max)
		return -EINVAL;
	if (!n)
		return 0;
	if (!(*buf = malloc((size_t)n)))
		return -ENOMEM;
	if (rd((void *)p, ba - p->l.str.heap_tag + p->l.fa_data, *buf, (size_t)n)) {
		free(*buf);
		*buf = NULL;
		return -EFAULT;
	}
	*len = (size_t)n;
	return 0;
}

int v8_frame_inlined(struct v8_proc *p, uint64_t sfi, uint64_t pc, bool leaf,
		     struct v8_inlined *out, int max)
{
	struct v8_inline_frame fr[V8_INLINE_MAX];
	uint64_t is, code, dd, w, lits = 0;
	uint8_t *tab = NULL, *ipos = NULL;
	size_t tlen, ilen, nf = 0;
	int64_t n, nl = 0, pos;
	uint32_t off;
	int r;

	if (!p->l.inlining)
		return -ENOTSUP;
	if (!(is = istream_at(p, pc)) || field(p, is, 8, &code) ||
	    field(p, code, p->l.code_deopt, &dd) ||
	    !is_type(p, dd, (uint16_t)p->l.type_fixed_array) || array_len(p, dd, &n))
		return -ENOENT;
	/* Code with no deoptimization data (baseline, a builtin): none. */
	if (n <= p->l.dd_inl_pos || n <= p->l.dd_literals || n <= p->l.dd_sfi)
		return -ENOENT;
	if (array_at(p, dd, n, p->l.dd_sfi, &w) || w != sfi)
		return -ESTALE;
	/* A return address is past its call: the call's position is the one
	 * before it (V8 looks up pc - 1 too). */
	w = pc - (is - p->l.str.heap_tag + p->l.is_istart) - (leaf ? 0 : 1);
	if (w > UINT32_MAX)
		return -EINVAL;
	off = (uint32_t)w;
	if (field(p, code, p->l.code_srcpos, &w) ||
	    (r = byte_array(p, w, V8_SRCPOS_BYTES, &tab, &tlen)))
		return -EINVAL;
	r = v8_srcpos_find(tab, tlen, off, &pos);
	free(tab);
	if (r)
		return r;
	if (array_at(p, dd, n, p->l.dd_inl_pos, &w) ||
	    byte_array(p, w, (size_t)0xffff * V8_INLINING_POSITION_SIZE, &ipos, &ilen))
		return -EINVAL;
	r = v8_inline_expand(ipos, ilen, pos, fr,
			     (size_t)(max < V8_INLINE_MAX ? max : V8_INLINE_MAX), &nf);
	free(ipos);
	if (r)
		return r;
	if (nf > 1 && (array_at(p, dd, n, p->l.dd_literals, &lits) || array_len(p, lits, &nl)))
		return -EINVAL;
	for (size_t i = 0; i < nf; i++) {
		w = sfi;
		/* A literal may be held weakly (tag 3). */
		if (fr[i].literal >= 0 && (array_at(p, lits, nl, fr[i].literal, &w) ||
					   !is_type(p, w &= ~2ULL, (uint16_t)p->l.type_sfi)))
			return -EINVAL;
		out[i] = (struct v8_inlined){w, fr[i].script_offset};
	}
	return (int)nf;
}

int v8_inlined_function(struct v8_proc *p, const struct v8_inlined *f, struct v8_function *out)
{
	struct v8_fn_ent *e;
	uint64_t data, script;
	int r;

	if (!is_type(p, f->sfi, (uint16_t)p->l.type_sfi))
		return -ESTALE;
	if ((r = field(p, f->sfi, p->l.sfi_data, &data)) || !(e = fn_entry(p, f->sfi, data, &r)))
		return r;
	out->name = e->name;
	out->file = e->file;
	out->start_line = e->start_line;
	out->line = 0;
	if (e->file && !field(p, f->sfi, p->l.sfi_script, &script))
		out->line = line_of(p, script, e->file, (int64_t)f->script_offset << 1);
	return 0;
}
