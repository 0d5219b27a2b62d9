/* HotSpot JVMs in the recorded processes (user/runtime/jvm.h). */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>
#include "formats/jvm_debuginfo.h"
#include "formats/jvm_tables.h"
#include "formats/procmaps.h"
#include "user/runtime/jvm.h"
#include "user/runtime/jvm_chain.h"
#include "user/runtime/jvm_method.h"
#include "user/util.h"

/* Bounds of what is read from a process. */
#define JVM_DEBUG_MAX  (16u << 20) /* an nmethod's PcDescs or scopes */
#define JVM_META_MAX   (1u << 16)  /* an nmethod's metadata entries */
#define JVM_CACHE_MAX  65536	   /* methods or nmethods per process; then it starts over */
#define JVM_INLINE_MAX 64	   /* inlined methods of one pc */

/* The libjvm symbols the tables are found by: their variables' link-time
 * addresses (formats/jvm_tables.h reads them). */
static const char *const table_syms[] = {
    "gHotSpotVMStructs",
    "gHotSpotVMStructEntryTypeNameOffset",
    "gHotSpotVMStructEntryFieldNameOffset",
    "gHotSpotVMStructEntryTypeStringOffset",
    "gHotSpotVMStructEntryIsStaticOffset",
    "gHotSpotVMStructEntryOffsetOffset",
    "gHotSpotVMStructEntryAddressOffset",
    "gHotSpotVMStructEntryArrayStride",
    "gHotSpotVMTypes",
    "gHotSpotVMTypeEntryTypeNameOffset",
    "gHotSpotVMTypeEntrySuperclassNameOffset",
    "gHotSpotVMTypeEntryIsOopTypeOffset",
    "gHotSpotVMTypeEntryIsIntegerTypeOffset",
    "gHotSpotVMTypeEntryIsUnsignedOffset",
    "gHotSpotVMTypeEntrySizeOffset",
    "gHotSpotVMTypeEntryArrayStride",
    "gHotSpotVMIntConstants",
    "gHotSpotVMIntConstantEntryNameOffset",
    "gHotSpotVMIntConstantEntryValueOffset",
    "gHotSpotVMIntConstantEntryArrayStride",
    "gHotSpotVMLongConstants",
    "gHotSpotVMLongConstantEntryNameOffset",
    "gHotSpotVMLongConstantEntryValueOffset",
    "gHotSpotVMLongConstantEntryArrayStride",
};
#define NSYMS (sizeof(table_syms) / sizeof(table_syms[0]))

/* A file read once per recording, by device and inode. */
struct jvm_bin {
	uint64_t dev, ino;
	int ret; /* 0: a libjvm (sym[0] set); -ENOENT: not one; -errno */
	uint64_t sym[NSYMS];
	struct {
		uint64_t vaddr, offset;
	} loads[8];
	int nloads;
	bool warned;
};

/* The layout the naming reads by (offsets from the tables). */
struct jvm_layout {
	uint32_t cb_name, cb_code_begin, cb_code_end, cb_frame_complete;
	uint32_t cm_method, nm_compile_id, nm_scopes_data, nm_scopes_pcs, nm_deps, nm_metadata;
	struct jvm_method_layout m; /* a method's names and lines */
	struct jvm_pcdesc_layout pcdesc;
};

struct jvm_method_ent {
	uint64_t addr, cm; /* the Method*, its ConstMethod* when read */
	uint64_t seq;	   /* jvm_proc's reads when it was read */
	struct jvm_method m;
	uint8_t *lines;
	size_t nlines;
	uint32_t token; /* its name's Symbol's hash when read (jvm_method_read's) */
};

struct jvm_nmethod_ent {
	uint64_t addr;
	uint64_t seq; /* as jvm_method_ent's */
	uint32_t compile_id;
	uint32_t kind_stub; /* a stub: m only */
	uint64_t method, begin;
	int32_t complete; /* CodeBlob::_frame_complete_offset */
	uint8_t *pcs, *scopes;
	size_t npcs, nscopes;
	uint64_t *meta;
	size_t nmeta;
	struct jvm_method stub; /* a stub's name */
};

/* Where the code cache's state is: read when the process is first seen, and
 * again while the JVM is still starting (not made yet). */
struct jvm_cc_vars {
	uint64_t heaps, lo, hi; /* CodeCache's statics */
	uint32_t ga_len, ga_data, heap_mem, heap_segmap, heap_log2, vs_lo, vs_hi;
};

struct jvm_proc {
	pid_t pid;
	/* Its methods and nmethods read from it so far, in order: which of
	 * two entries was read first (method_get's min_seq). */
	uint64_t seq;
	/* Set by method_get and nm_get where what the frame's address holds
	 * now is not what the sample saw (jvm_frame_names' -ESTALE). */
	bool stale;
	bool ready; /* its code cache read: in the walk */
	char path[256], version[64];
	struct jvm_cc_vars cc;
	struct jvm_layout l;
	struct jvm_bpf_proc bpf;
	VEC(struct jvm_method_ent *) methods;
	struct idtab method_tab;
	VEC(struct jvm_nmethod_ent *) nms;
	struct idtab nm_tab;
	/* Entries replaced (their object freed and its address reused) while
	 * a frame's names pointed at them: freed at the next frame's. */
	VEC(struct jvm_method_ent *) dead_methods;
	VEC(struct jvm_nmethod_ent *) dead_nms;
};

struct jvm {
	VEC(struct jvm_bin) bins;
	struct idtab bins_by_file;
	VEC(struct jvm_proc *) procs;
};

int jvm_new(struct jvm **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

static void method_free(struct jvm_method_ent *e)
{
	if (!e)
		return;
	free((char *)e->m.name);
	free((char *)e->m.sig);
	free((char *)e->m.file);
	free(e->lines);
	free(e);
}

static void nm_free(struct jvm_nmethod_ent *e)
{
	if (!e)
		return;
	free(e->pcs);
	free(e->scopes);
	free(e->meta);
	free((char *)e->stub.name);
	free(e);
}

static void dead_clear(struct jvm_proc *p)
{
	for (size_t i = 0; i < p->dead_methods.n; i++)
		method_free(p->dead_methods.v[i]);
	for (size_t i = 0; i < p->dead_nms.n; i++)
		nm_free(p->dead_nms.v[i]);
	p->dead_methods.n = p->dead_nms.n = 0;
}

static void caches_clear(struct jvm_proc *p)
{
	dead_clear(p);
	for (size_t i = 0; i < p->methods.n; i++)
		method_free(p->methods.v[i]);
	for (size_t i = 0; i < p->nms.n; i++)
		nm_free(p->nms.v[i]);
	p->methods.n = p->nms.n = 0;
	idtab_clear(&p->method_tab);
	idtab_clear(&p->nm_tab);
}

static void proc_free(struct jvm_proc *p)
{
	caches_clear(p);
	VEC_FREE(p->methods);
	VEC_FREE(p->nms);
	VEC_FREE(p->dead_methods);
	VEC_FREE(p->dead_nms);
	idtab_free(&p->method_tab);
	idtab_free(&p->nm_tab);
	free(p);
}

void jvm_free(struct jvm *j)
{
	if (!j)
		return;
	for (size_t i = 0; i < j->procs.n; i++)
		proc_free(j->procs.v[i]);
	VEC_FREE(j->procs);
	VEC_FREE(j->bins);
	idtab_free(&j->bins_by_file);
	free(j);
}

void jvm_forget(struct jvm *j, pid_t pid)
{
	if (!j)
		return;
	for (size_t i = 0; i < j->procs.n; i++)
		if (j->procs.v[i]->pid == pid) {
			proc_free(j->procs.v[i]);
			j->procs.v[i] = j->procs.v[--j->procs.n];
			return;
		}
}

void jvm_proc_bpf(const struct jvm_proc *p, struct jvm_bpf_proc *out)
{
	*out = p->bpf;
}

const char *jvm_proc_version(const struct jvm_proc *p)
{
	return p->version;
}

bool jvm_in_cache(const struct jvm_proc *p, uint64_t pc)
{
	return pc >= p->bpf.cc_lo && pc < p->bpf.cc_hi;
}

/* ---- The binary ---- */

static void note_symbol(void *ctx, const char *name, uint64_t value, uint64_t size)
{
	struct jvm_bin *b = ctx;

	(void)size;
	if (strncmp(name, "gHotSpotVM", 10))
		return;
	for (size_t i = 0; i < NSYMS; i++)
		if (!strcmp(name, table_syms[i]))
			b->sym[i] = value;
}

static void bin_read(int fd, struct jvm_bin *b)
{
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	size_t n = 0;

	b->ret = -ENOENT;
	if (!elf)
		return;
	if (elf_kind(elf) == ELF_K_ELF && !elf_getphdrnum(elf, &n)) {
		elf_scan_dynsym(elf, note_symbol, b);
		for (size_t i = 0; i < n && b->nloads < 8; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD) {
				b->loads[b->nloads].vaddr = ph.p_vaddr;
				b->loads[b->nloads].offset = ph.p_offset;
				b->nloads++;
			}
		}
		if (b->sym[0])
			b->ret = 0;
	}
	elf_end(elf);
}

static bool bin_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct jvm_bin *b = &((const struct jvm *)ctx)->bins.v[id], *k = key;

	return b->dev == k->dev && b->ino == k->ino;
}

static struct jvm_bin *bin_of(struct jvm *j, pid_t pid, const struct procmaps_entry *m)
{
	uint64_t dev = (uint64_t)m->dev_major << 32 | m->dev_minor,
		 h = hash_u64(dev ^ hash_u64(m->inode));
	struct jvm_bin e = {.dev = dev, .ino = m->inode};
	uint32_t id = idtab_find(&j->bins_by_file, h, bin_eq, j, &e);
	char path[64];
	int fd;

	if (id != UINT32_MAX)
		return &j->bins.v[id];
	snprintf(path, sizeof(path), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)pid, m->start,
		 m->end);
	fd = open_regular(path, 0);
	if (fd < 0)
		return NULL;
	bin_read(fd, &e);
	close(fd);
	if (VEC_PUSH(j->bins, e))
		return NULL;
	if (idtab_insert(&j->bins_by_file, h, (uint32_t)(j->bins.n - 1))) {
		j->bins.n--;
		return NULL;
	}
	return &j->bins.v[j->bins.n - 1];
}

/* ---- Reading the process ---- */

/* Up to len bytes at addr: how many could be read (a read stops at the
 * first unmapped page). */
static size_t rd_part(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec l = {buf, len}, r = {(void *)(uintptr_t)addr, len};
	ssize_t n;

	if (!addr || addr + len < addr)
		return 0;
	n = process_vm_readv(pid, &l, 1, &r, 1, 0);
	return n > 0 ? (size_t)n : 0;
}

static int rd(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	return rd_part(pid, addr, buf, len) == len ? 0 : -EFAULT;
}

static int rd_u64(pid_t pid, uint64_t addr, void *v) /* 8 bytes: a uint64_t or __u64 */
{
	return rd(pid, addr, v, 8);
}

struct rd_ctx {
	pid_t pid;
	const struct jvm_bin *b;
	uint64_t bias;
};

static int tables_rd(void *ctx, uint64_t addr, void *buf, size_t len)
{
	return rd(((struct rd_ctx *)ctx)->pid, addr, buf, len);
}

static uint64_t tables_sym(void *ctx, const char *name)
{
	const struct rd_ctx *c = ctx;

	for (size_t i = 0; i < NSYMS; i++)
		if (!strcmp(name, table_syms[i]))
			return c->b->sym[i] ? c->b->sym[i] + c->bias : 0;
	return 0;
}

/* Whether the JVM has filled in its tables' layout: the entries' strides
 * and offsets are zero (.bss) until its start-up sets them
 * (VMStructs::init), and a JVM read before then is still starting, not
 * one to refuse. One whose layout is set but bad is refused. */
static bool tables_ready(struct rd_ctx *c)
{
	for (size_t i = 0; i < NSYMS; i++) {
		uint64_t a = tables_sym(c, table_syms[i]), v = 0;

		/* The tables' own pointers (initialized data) say nothing. */
		if (strstr(table_syms[i], "Offset") || strstr(table_syms[i], "Stride"))
			if (a && !rd_u64(c->pid, a, &v) && v)
				return true;
	}
	return false;
}

/* ---- The layout ---- */

struct need {
	const char *type, *field;
	uint32_t *off;
};

/* The offsets the walk and the naming need; the first missing named in
 * err. */
static int layout_read(const struct jvm_tables *t, struct jvm_proc *p, char *err, size_t errlen)
{
	struct jvm_layout *l = &p->l;
	struct jvm_bpf_proc *b = &p->bpf;
	uint32_t cb_size, cb_fs, deopt, orig_pc, pcd_pc, pcd_scope;
	struct jvm_cc_vars *cc = &p->cc;
	const struct need needs[] = {
	    {"CodeBlob", "_name", &l->cb_name},
	    {"CodeBlob", "_size", &cb_size},
	    {"CodeBlob", "_frame_complete_offset", &l->cb_frame_complete},
	    {"CodeBlob", "_frame_size", &cb_fs},
	    {"CodeBlob", "_code_begin", &l->cb_code_begin},
	    {"CodeBlob", "_code_end", &l->cb_code_end},
	    {"CompiledMethod", "_method", &l->cm_method},
	    {"CompiledMethod", "_deopt_handler_begin", &deopt},
	    {"CompiledMethod", "_scopes_data_begin", &l->nm_scopes_data},
	    {"nmethod", "_orig_pc_offset", &orig_pc},
	    {"nmethod", "_compile_id", &l->nm_compile_id},
	    {"nmethod", "_scopes_pcs_offset", &l->nm_scopes_pcs},
	    {"nmethod", "_dependencies_offset", &l->nm_deps},
	    {"nmethod", "_metadata_offset", &l->nm_metadata},
	    {"Method", "_constMethod", &l->m.m_const},
	    {"ConstMethod", "_constants", &l->m.c_constants},
	    {"ConstMethod", "_code_size", &l->m.c_code_size},
	    {"ConstMethod", "_name_index", &l->m.c_name_index},
	    {"ConstMethod", "_signature_index", &l->m.c_sig_index},
	    {"ConstMethod", "_flags", &l->m.c_flags},
	    {"ConstantPool", "_pool_holder", &l->m.cp_holder},
	    {"ConstantPool", "_source_file_name_index", &l->m.cp_source_file},
	    {"Klass", "_name", &l->m.k_name},
	    {"Symbol", "_length", &l->m.sym_length},
	    {"Symbol", "_body", &l->m.sym_body},
	    {"PcDesc", "_pc_offset", &pcd_pc},
	    {"PcDesc", "_scope_decode_offset", &pcd_scope},
	    {"CodeHeap", "_memory", &cc->heap_mem},
	    {"CodeHeap", "_segmap", &cc->heap_segmap},
	    {"CodeHeap", "_log2_segment_size", &cc->heap_log2},
	    {"VirtualSpace", "_low_boundary", &cc->vs_lo},
	    {"VirtualSpace", "_high_boundary", &cc->vs_hi},
	    {"GrowableArrayBase", "_len", &cc->ga_len},
	    {"GrowableArray<int>", "_data", &cc->ga_data},
	};
	const struct need back[] = {
	    {"ConstMethod", "_method_idnum", &l->m.c_idnum},
	    {"InstanceKlass", "_constants", &l->m.k_constants},
	    {"InstanceKlass", "_methods", &l->m.k_methods},
	    {"Array<int>", "_length", &l->m.arr_len},
	    {"Array<Method*>", "_data", &l->m.arr_data},
	};
	const char *types[] = {"ConstMethod", "ConstantPool", "HeapBlock", "PcDesc"};
	int64_t sizes[4];
	int32_t last_sp, sender_sp, lines_flag;

	for (size_t i = 0; i < sizeof(needs) / sizeof(needs[0]); i++) {
		int64_t off = jvm_field_offset(t, needs[i].type, needs[i].field);

		if (off < 0 || off > UINT16_MAX) {
			snprintf(err, errlen, "no %s::%s in its tables", needs[i].type,
				 needs[i].field);
			return -ENOTSUP;
		}
		*needs[i].off = (uint32_t)off;
	}
	/* The way back from a class to its methods: where the tables lack a
	 * piece of it, methods are named unchecked (jvm_method_ids). */
	for (size_t i = 0; i < sizeof(back) / sizeof(back[0]); i++) {
		int64_t off = jvm_field_offset(t, back[i].type, back[i].field);

		if (off < 0 || off > UINT16_MAX) {
			l->m.k_methods = l->m.k_constants = l->m.arr_data = 0;
			debug("process %d: no %s::%s in its JVM's tables: methods read unchecked",
			      (int)p->pid, back[i].type, back[i].field);
			break;
		}
		*back[i].off = (uint32_t)off;
	}
	/* Two checks more of the same kind, each skipped when the tables lack
	 * it: a Symbol's count, a class's state. */
	{
		int64_t rc = jvm_field_offset(t, "Symbol", "_hash_and_refcount"),
			is = jvm_field_offset(t, "InstanceKlass", "_init_state");
		int32_t linked = 0;

		l->m.has_refcount = rc >= 0 && rc <= UINT16_MAX;
		l->m.sym_refcount = l->m.has_refcount ? (uint32_t)rc : 0;
		if (is > 0 && is <= UINT16_MAX &&
		    jvm_int_const(t, "InstanceKlass::linked", &linked) && linked > 0 &&
		    linked < 256) {
			l->m.k_init_state = (uint32_t)is;
			l->m.linked = (uint32_t)linked;
		}
	}
	for (size_t i = 0; i < 4; i++)
		if ((sizes[i] = jvm_type_size(t, types[i])) <= 0 || sizes[i] > UINT16_MAX) {
			snprintf(err, errlen, "no size of %s in its tables", types[i]);
			return -ENOTSUP;
		}
	if (!jvm_int_const(t, "frame::interpreter_frame_last_sp_offset", &last_sp) ||
	    !jvm_int_const(t, "frame::interpreter_frame_sender_sp_offset", &sender_sp) ||
	    !jvm_int_const(t, "ConstMethod::_has_linenumber_table", &lines_flag)) {
		snprintf(err, errlen,
			 "no interpreter frame layout or line table flag in its tables");
		return -ENOTSUP;
	}
	/* The frame's slots below last_sp are fixed by frame_x86.hpp since
	 * JDK 9 (the mirror slot came then): method = last_sp - 1, then
	 * mirror, mdp, cache, locals, bcp = last_sp - 6. */
	b->if_sender_sp = (int16_t)sender_sp;
	b->if_method = (int16_t)(last_sp - 1);
	b->if_bcp = (int16_t)(last_sp - 6);
	b->cb_name = (uint16_t)l->cb_name;
	b->cb_size = (uint16_t)cb_size;
	b->cb_frame_complete = (uint16_t)l->cb_frame_complete;
	b->cb_frame_size = (uint16_t)cb_fs;
	b->cb_code_begin = (uint16_t)l->cb_code_begin;
	b->cb_code_end = (uint16_t)l->cb_code_end;
	b->nm_method = (uint16_t)l->cm_method;
	b->nm_deopt = (uint16_t)deopt;
	b->nm_orig_pc = (uint16_t)orig_pc;
	b->nm_compile_id = (uint16_t)l->nm_compile_id;
	b->m_const = (uint16_t)l->m.m_const;
	b->cm_size = (uint16_t)sizes[0];
	l->m.c_size = (uint32_t)sizes[0];
	l->m.cp_size = (uint32_t)sizes[1];
	b->block_size = (uint32_t)sizes[2];
	l->m.flag_lines = (uint32_t)lines_flag;
	/* The interpreted frames' token (bpf/runtime/jvm.bpf.c's method_token),
	 * where the tables give its reads and the BPF reads hold the fields:
	 * of the ConstMethod, 32 bytes from _constants; of the pool, 64. */
	{
		int64_t w = jvm_field_offset(t, "ConstMethod", "_constMethod_size");
		const uint32_t in_cm[] = {l->m.c_name_index, l->m.c_code_size, l->m.c_flags};

		l->m.c_words = w > 0 && w <= UINT16_MAX ? (uint32_t)w : 0;
		l->m.tokens = l->m.has_refcount && l->m.sym_refcount < JVM_NO_TOKEN &&
			      l->m.c_words >= l->m.c_constants + 8 &&
			      l->m.c_words - l->m.c_constants <= 28 && l->m.cp_source_file <= 62 &&
			      lines_flag > 0 && lines_flag <= UINT16_MAX;
		for (size_t i = 0; i < 3; i++)
			l->m.tokens = l->m.tokens && in_cm[i] >= l->m.c_constants + 8 &&
				      in_cm[i] - l->m.c_constants <= 30;
	}
	b->sym_hash = JVM_NO_TOKEN;
	if (l->m.tokens) {
		b->cm_constants = (uint16_t)l->m.c_constants;
		b->cm_name_index = (uint16_t)l->m.c_name_index;
		b->cm_code_size = (uint16_t)l->m.c_code_size;
		b->cm_flags = (uint16_t)l->m.c_flags;
		b->cm_words = (uint16_t)l->m.c_words;
		b->cp_size = (uint16_t)l->m.cp_size;
		b->cp_source_file = (uint16_t)l->m.cp_source_file;
		b->sym_hash = (uint16_t)l->m.sym_refcount;
		b->lines_flag = (uint16_t)lines_flag;
	} else {
		debug("process %d: interpreted frames named without their Symbol's token",
		      (int)p->pid);
	}
	l->pcdesc = (struct jvm_pcdesc_layout){
	    .size = (uint32_t)sizes[3], .pc_offset = pcd_pc, .scope_decode_offset = pcd_scope};
	/* Every field the BPF step reads lies in the bytes it reads of a blob. */
	{
		const uint16_t words[] = {b->cb_name, b->cb_code_begin, b->cb_code_end,
					  b->nm_method, b->nm_deopt},
			       ints[] = {b->cb_size, b->cb_frame_complete, b->cb_frame_size,
					 b->nm_orig_pc, b->nm_compile_id};

		for (size_t i = 0; i < 5; i++)
			if (words[i] > JVM_BLOB_READ - 8 || ints[i] > JVM_BLOB_READ - 4) {
				snprintf(err, errlen,
					 "a CodeBlob field past the %d bytes the walk reads",
					 JVM_BLOB_READ);
				return -ENOTSUP;
			}
	}
	cc->heaps = jvm_static_address(t, "CodeCache", "_heaps");
	cc->lo = jvm_static_address(t, "CodeCache", "_low_bound");
	cc->hi = jvm_static_address(t, "CodeCache", "_high_bound");
	if (!cc->heaps || !cc->lo || !cc->hi) {
		snprintf(err, errlen, "no CodeCache::_heaps, _low_bound or _high_bound");
		return -ENOTSUP;
	}
	{
		uint64_t rel = jvm_static_address(t, "Abstract_VM_Version", "_s_vm_release"), s = 0;
		char v[64] = "";

		if (rel && !rd_u64(p->pid, rel, &s) && s)
			rd_part(p->pid, s, v, sizeof(v) - 1);
		fmt_sanitize(p->version, sizeof(p->version), v, strnlen(v, sizeof(v) - 1));
	}
	return 0;
}

/* A part of the code cache not readable: not one, refused (err says
 * which: heap -1 for its bounds and heaps array). */
static int unreadable(char *err, size_t errlen, int heap)
{
	if (heap < 0)
		snprintf(err, errlen, "its code cache's bounds or heaps are not readable");
	else
		snprintf(err, errlen, "its code heap %d is not readable", heap);
	return -EINVAL;
}

/* The code cache's bounds and heaps, into the walk's layout: 0; -EAGAIN
 * while the JVM has not made it yet; -EINVAL (err says what) when what is
 * there is not one. */
static int cache_read(struct jvm_proc *p, char *err, size_t errlen)
{
	const struct jvm_cc_vars *cc = &p->cc;
	struct jvm_bpf_proc *b = &p->bpf;
	uint64_t arr = 0, data = 0;
	int32_t len = 0;

	/* What cannot be read is no code cache: refused. Values read but not
	 * consistent yet are a JVM still making it (its start-up fills them
	 * in turn): read again at its next samples. */
	if (rd_u64(p->pid, cc->heaps, &arr) || rd_u64(p->pid, cc->lo, &b->cc_lo) ||
	    rd_u64(p->pid, cc->hi, &b->cc_hi))
		return unreadable(err, errlen, -1);
	if (!arr)
		return -EAGAIN;
	if (rd(p->pid, arr + cc->ga_len, &len, 4) || rd_u64(p->pid, arr + cc->ga_data, &data))
		return unreadable(err, errlen, -1);
	if (len <= 0 || len > JVM_HEAPS || !data || !b->cc_lo || b->cc_lo >= b->cc_hi)
		return -EAGAIN;
	b->nheaps = 0;
	for (int i = 0; i < len; i++) {
		uint64_t heap = 0;
		int32_t log2 = 0;

		if (rd_u64(p->pid, data + 8 * (uint64_t)i, &heap))
			return unreadable(err, errlen, i);
		if (!heap)
			return -EAGAIN; /* its heaps being added */
		if (rd_u64(p->pid, heap + cc->heap_mem + cc->vs_lo, &b->heap[i].lo) ||
		    rd_u64(p->pid, heap + cc->heap_mem + cc->vs_hi, &b->heap[i].hi) ||
		    rd_u64(p->pid, heap + cc->heap_segmap + cc->vs_lo, &b->heap[i].segmap) ||
		    rd(p->pid, heap + cc->heap_log2, &log2, 4))
			return unreadable(err, errlen, i);
		if (log2 < 4 || log2 > 16 || (b->nheaps && (uint32_t)log2 != b->seg_shift) ||
		    !b->heap[i].segmap || b->heap[i].lo >= b->heap[i].hi)
			return -EAGAIN;
		b->seg_shift = (uint32_t)log2;
		b->nheaps++;
	}
	return 0;
}

static void refuse(struct jvm_proc *p, const char *err)
{
	warn("process %d runs a JVM (%s) whose frames cannot be walked: %s; they are named as JIT "
	     "code (jcmd %d Compiler.perfmap names compiled methods)",
	     (int)p->pid, p->path, err, (int)p->pid);
}

int jvm_attach_maps(struct jvm *j, pid_t pid, const char *maps_text, size_t len,
		    struct jvm_proc **out)
{
	struct procmaps_entry *maps = NULL;
	size_t nmaps = 0;
	int ret;

	for (size_t i = 0; i < j->procs.n; i++) {
		struct jvm_proc *p = j->procs.v[i];
		char err[160] = "";

		if (p->pid != pid)
			continue;
		/* Still starting when first seen: its code cache now. */
		if (!p->ready && (ret = cache_read(p, err, sizeof(err)))) {
			if (ret != -EAGAIN) {
				refuse(p, err);
				proc_free(p);
				j->procs.v[i] = j->procs.v[--j->procs.n];
				return -ENOTSUP;
			}
			return -EAGAIN;
		}
		p->ready = true;
		*out = p;
		return 0;
	}
	ret = procmaps_parse(maps_text, len, &maps, &nmaps);
	if (ret)
		return ret;
	ret = -ENOENT;
	for (size_t i = 0; i < nmaps && ret == -ENOENT; i++) {
		const struct procmaps_entry *m = &maps[i];
		struct jvm_tables *t = NULL;
		struct jvm_bin *b;
		struct jvm_proc *p;
		struct rd_ctx c = {.pid = pid};
		char err[160] = "";
		int k;

		if (!m->inode || !m->path || m->path[0] != '/' || !(b = bin_of(j, pid, m)) ||
		    b->ret)
			continue;
		/* The load bias, from the segment this mapping starts. */
		for (k = 0; k < b->nloads; k++)
			if (b->loads[k].offset >= m->offset &&
			    b->loads[k].offset - m->offset < 4096)
				break;
		if (k == b->nloads)
			continue;
		c.b = b;
		c.bias = m->start - m->offset + b->loads[k].offset - b->loads[k].vaddr;
		if (!(p = calloc(1, sizeof(*p)))) {
			ret = -ENOMEM;
			break;
		}
		p->pid = pid;
		snprintf(p->path, sizeof(p->path), "%s", m->path);
		/* Its tables not set yet: nothing kept, all read again next
		 * time (a JVM kept then, with no layout, was read again at
		 * address 0 and refused: -Xint in a CI run). */
		if (!tables_ready(&c)) {
			proc_free(p);
			ret = -EAGAIN;
			break;
		}
		ret = jvm_tables_read(&t, tables_rd, tables_sym, &c, err, sizeof(err));
		if (!ret)
			ret = layout_read(t, p, err, sizeof(err));
		jvm_tables_free(t);
		if (!ret)
			ret = cache_read(p, err, sizeof(err));
		if (ret && ret != -EAGAIN) {
			if (!b->warned) /* once per libjvm */
				refuse(p, err);
			b->warned = true;
			proc_free(p);
			ret = -ENOTSUP;
			break;
		}
		/* Still starting (-EAGAIN): kept, its tables read, for the
		 * code cache to be read again. */
		p->ready = !ret;
		if (VEC_PUSH(j->procs, p)) {
			proc_free(p);
			ret = -ENOMEM;
			break;
		}
		if (ret)
			break;
		*out = p;
		debug("process %d runs the JVM %s (%s), %u code heaps", (int)pid, p->version,
		      m->path, p->bpf.nheaps);
	}
	procmaps_free(maps, nmaps);
	return ret;
}

/* ---- Names ---- */

static bool method_eq(const void *ctx, uint32_t id, const void *key)
{
	return ((const struct jvm_proc *)ctx)->methods.v[id]->addr == *(const uint64_t *)key;
}

/* jvm_method_read's reader: the process's memory. */
static size_t proc_mem(void *ctx, uint64_t addr, void *buf, size_t len)
{
	return rd_part(((const struct jvm_proc *)ctx)->pid, addr, buf, len);
}

/* Any ConstMethod: a method an nmethod holds, which the nmethod's compile
 * id vouches for (its metadata names the methods it was compiled from). */
#define COOKIE_ANY UINT32_MAX

/* The method at addr, read when not known, when its ConstMethod is not
 * the one the sample saw (cookie: its address >> 3, 24 bits), or when it
 * was read before min_seq: an nmethod vouches (COOKIE_ANY) only for the
 * methods at its metadata's addresses while it lives, and the entry known
 * for such an address may be of a method since unloaded, its memory
 * another's now (tests/workloads/JChurn.java: two classes' same-shaped
 * metadata at one address in turn). The nmethod's own entry is read before
 * the methods it names are looked up, and they must not be older. */
static const struct jvm_method_ent *method_get(struct jvm_proc *p, uint64_t addr, uint32_t cookie,
					       uint32_t token, uint64_t min_seq)
{
	uint64_t h = hash_u64(addr);
	uint32_t id = idtab_find(&p->method_tab, h, method_eq, p, &addr);
	struct jvm_method_rd r = {&p->l.m, proc_mem, p};
	struct jvm_method_read mr;
	struct jvm_method_ent *e;

	if (id != UINT32_MAX) {
		e = p->methods.v[id];
		if ((cookie == COOKIE_ANY ||
		     (JVM_CM_COOKIE(e->cm) == cookie && (!p->l.m.tokens || e->token == token))) &&
		    e->seq >= min_seq)
			return e;
	}
	/* Read now, and checked against the sample's ConstMethod and name. */
	if (jvm_method_read(&r, addr, &mr))
		return NULL;
	if (cookie != COOKIE_ANY &&
	    (JVM_CM_COOKIE(mr.cm) != cookie || (p->l.m.tokens && mr.token != token)))
		p->stale = true;
	if (p->stale || !(e = calloc(1, sizeof(*e)))) {
		jvm_method_read_free(&mr);
		return NULL;
	}
	*e = (struct jvm_method_ent){addr, mr.cm, ++p->seq, mr.m, mr.lines, mr.nlines, mr.token};
	if (id != UINT32_MAX) { /* the old one is freed at the next frame's naming */
		if (VEC_PUSH(p->dead_methods, p->methods.v[id])) {
			method_free(e);
			return NULL;
		}
		p->methods.v[id] = e;
		return e;
	}
	if (VEC_PUSH(p->methods, e) ||
	    idtab_insert(&p->method_tab, h, (uint32_t)(p->methods.n - 1))) {
		if (p->methods.n && p->methods.v[p->methods.n - 1] == e)
			p->methods.n--;
		method_free(e);
		return NULL;
	}
	return e;
}

static int method_line(const struct jvm_method_ent *e, uint32_t bci)
{
	int line = 0;

	if (!e->lines || bci >= 0xffff || jvm_line_for_bci(e->lines, e->nlines, (int)bci, &line))
		return 0;
	return line;
}

static bool nm_eq(const void *ctx, uint32_t id, const void *key)
{
	return ((const struct jvm_proc *)ctx)->nms.v[id]->addr == *(const uint64_t *)key;
}

/* A copy of [lo, hi) of the process, at most max bytes: 0 or -errno. */
static int read_range(const struct jvm_proc *p, uint64_t lo, uint64_t hi, size_t max, uint8_t **out,
		      size_t *n)
{
	if (hi < lo || hi - lo > max)
		return -EINVAL;
	*n = hi - lo;
	if (!(*out = malloc(*n ? *n : 1)))
		return -ENOMEM;
	return rd(p->pid, lo, *out, *n);
}

/* The blob at addr (an nmethod or a stub), read when not known or when it
 * is not the one the sample saw (an nmethod's compile id). */
static const struct jvm_nmethod_ent *nm_get(struct jvm_proc *p, uint64_t addr, uint32_t kind,
					    uint32_t cookie)
{
	uint64_t h = hash_u64(addr ^ 0x5bd1e995), name = 0, data = 0;
	uint32_t id = idtab_find(&p->nm_tab, h, nm_eq, p, &addr);
	struct jvm_nmethod_ent *e;
	bool stub = kind == JVM_KIND_STUB;
	int32_t cid = 0, o_pcs = 0, o_deps = 0, o_meta = 0;
	char text[128];

	if (id != UINT32_MAX) {
		e = p->nms.v[id];
		if (stub ? e->kind_stub : (!e->kind_stub && e->compile_id == cookie))
			return e;
	}
	if (!(e = calloc(1, sizeof(*e))))
		return NULL;
	e->addr = addr;
	e->kind_stub = stub;
	if (stub) {
		size_t n;

		if (rd_u64(p->pid, addr + p->l.cb_name, &name) ||
		    !(n = rd_part(p->pid, name, text, sizeof(text) - 1)))
			goto fail;
		text[n] = 0;
		e->stub.name = jvm_dup_sanitized(text);
		if (!e->stub.name)
			goto fail;
		e->stub.sig = e->stub.name;
	} else {
		uint8_t *meta = NULL;
		size_t nmeta = 0;

		if (rd(p->pid, addr + p->l.nm_compile_id, &cid, 4) ||
		    rd_u64(p->pid, addr + p->l.cm_method, &e->method))
			goto fail;
		/* Another compile id: the sampled nmethod freed, its memory
		 * another's. A NULL _method: it is unloaded
		 * (nmethod::make_unloaded), and the methods its metadata
		 * names may be of a class unloaded, their memory and Symbols
		 * another's (JChurn: "Worker." and "Worker.Worker.java", read
		 * through an unloaded nmethod of B's oddSpin). */
		if ((uint32_t)cid % (1u << 24) != cookie || !e->method) {
			p->stale = true;
			goto fail;
		}
		if (rd_u64(p->pid, addr + p->l.cb_code_begin, &e->begin) ||
		    rd(p->pid, addr + p->l.cb_frame_complete, &e->complete, 4) ||
		    rd_u64(p->pid, addr + p->l.nm_scopes_data, &data) ||
		    rd(p->pid, addr + p->l.nm_scopes_pcs, &o_pcs, 4) ||
		    rd(p->pid, addr + p->l.nm_deps, &o_deps, 4) ||
		    rd(p->pid, addr + p->l.nm_metadata, &o_meta, 4) || o_pcs < 0 ||
		    o_deps < o_pcs || o_meta < 0)
			goto fail;
		e->compile_id = cookie;
		e->seq = ++p->seq;
		/* [metadata, scopes data, PcDescs): nmethod.hpp's sections. */
		if (read_range(p, addr + (uint64_t)o_pcs, addr + (uint64_t)o_deps, JVM_DEBUG_MAX,
			       &e->pcs, &e->npcs) ||
		    read_range(p, data, addr + (uint64_t)o_pcs, JVM_DEBUG_MAX, &e->scopes,
			       &e->nscopes) ||
		    read_range(p, addr + (uint64_t)o_meta, data, JVM_META_MAX * 8, &meta, &nmeta))
			goto fail;
		e->meta = (uint64_t *)meta;
		e->nmeta = nmeta / 8;
		/* Checked again after the copies: the nmethod was not freed and
		 * its memory reused while they were read. */
		if (rd(p->pid, addr + p->l.nm_compile_id, &cid, 4) ||
		    (uint32_t)cid % (1u << 24) != cookie) {
			p->stale = true;
			goto fail;
		}
	}
	if (id != UINT32_MAX) { /* the old one is freed at the next frame's naming */
		if (VEC_PUSH(p->dead_nms, p->nms.v[id]))
			goto fail;
		p->nms.v[id] = e;
		return e;
	}
	if (VEC_PUSH(p->nms, e))
		goto fail;
	if (idtab_insert(&p->nm_tab, h, (uint32_t)(p->nms.n - 1))) {
		p->nms.n--;
		goto fail;
	}
	return e;
fail:
	nm_free(e);
	return NULL;
}

const struct jvm_method jvm_chain_cut = {JVM_CHAIN_CUT_NAME, JVM_CHAIN_CUT_NAME, NULL, 0};

/* jvm_chain_names' reader: a method of the process, any ConstMethod (the
 * nmethod's compile id vouches for its metadata), read since the nmethod. */
struct chain_ctx {
	struct jvm_proc *p;
	uint64_t min_seq;
};

static int chain_read(void *ctx, uint64_t method, int32_t bci, struct jvm_named *out)
{
	const struct chain_ctx *c = ctx;
	const struct jvm_method_ent *me = method_get(c->p, method, COOKIE_ANY, 0, c->min_seq);

	if (!me)
		return -1;
	*out = (struct jvm_named){&me->m, bci >= 0 ? method_line(me, (uint32_t)bci) : 0};
	return 0;
}

int jvm_frame_names(struct jvm_proc *p, uint64_t addr, uint64_t info, struct jvm_named *out,
		    int max)
{
	uint32_t kind = JVM_FRAME_KIND(info), cookie = JVM_FRAME_COOKIE(info),
		 off = JVM_FRAME_OFF(info);
	const struct jvm_nmethod_ent *nm;
	const struct jvm_method_ent *me;
	struct jvm_scope sc[JVM_INLINE_MAX];
	struct jvm_pcdesc pd;
	int n, k;

	if (max < 2)
		return 0;
	p->stale = false;
	/* The names handed out before are the caller's copies by now. */
	dead_clear(p);
	if (p->methods.n + JVM_INLINE_MAX >= JVM_CACHE_MAX || p->nms.n + 1 >= JVM_CACHE_MAX)
		caches_clear(p);
	if (kind == JVM_KIND_INTERP) {
		if (!(me = method_get(p, addr, cookie, JVM_FRAME_TOKEN(info), 0)))
			return p->stale ? -ESTALE : 0;
		out[0] = (struct jvm_named){&me->m, method_line(me, JVM_FRAME_BCI(info))};
		return 1;
	}
	if (kind == JVM_KIND_STUB) {
		if (!(nm = nm_get(p, addr, kind, 0)))
			return 0;
		out[0] = (struct jvm_named){&nm->stub, 0};
		return 1;
	}
	if (kind != JVM_KIND_COMPILED && kind != JVM_KIND_LEAF && kind != JVM_KIND_NATIVE)
		return 0;
	if (!(nm = nm_get(p, addr, kind, cookie)))
		return p->stale ? -ESTALE : 0;
	/* The scopes at the pc: a return address has a PcDesc of its own (the
	 * call's); a sampled pc takes the next one, as HotSpot's approximate
	 * lookup (pc_desc_near), but in the prologue, where no inlined method
	 * has begun and the next one would name one. */
	k = 0;
	if (kind != JVM_KIND_NATIVE && !(kind == JVM_KIND_LEAF && (int64_t)off < nm->complete) &&
	    !jvm_pcdesc_find(nm->pcs, nm->npcs, &p->l.pcdesc, (int32_t)off, kind != JVM_KIND_LEAF,
			     &pd))
		k = jvm_scopes_chain(nm->scopes, nm->nscopes, pd.scope_decode_offset, sc,
				     JVM_INLINE_MAX);
	n = jvm_chain_names(sc, k, nm->meta, nm->nmeta, nm->method, chain_read,
			    &(struct chain_ctx){p, nm->seq}, out, max);
	if (n == 0) { /* no scopes (a native wrapper, a pc with none): the method alone */
		if (!(me = method_get(p, nm->method, COOKIE_ANY, 0, nm->seq)))
			return 0;
		/* In the prologue: its first line, as bytecode 0's. */
		out[n++] = (struct jvm_named){
		    &me->m,
		    kind == JVM_KIND_LEAF && (int64_t)off < nm->complete ? me->m.first_line : 0};
	}
	/* The nmethod still alive after its methods were read: an nmethod is
	 * unloaded (its _method cleared, nmethod::make_unloaded) when a class
	 * it names is, before that class's memory and Symbols are freed. Else
	 * what was read may be of memory freed since the sample (JChurn's
	 * classes unloaded between the sample and the drain), and is dropped
	 * with every method read since the nmethod was. */
	{
		uint64_t m = 0;
		int32_t cid = 0;

		if (rd(p->pid, addr + p->l.nm_compile_id, &cid, 4) ||
		    (uint32_t)cid % (1u << 24) != cookie ||
		    rd_u64(p->pid, addr + p->l.cm_method, &m) || !m || m != nm->method) {
			caches_clear(p);
			return -ESTALE;
		}
	}
	return n;
}
