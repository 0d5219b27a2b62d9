/* CPython detection, code objects and the user-space frame walk
 * (user/runtime/python.h). Layouts: user/runtime/python_layouts.h (3.8-3.12, generated),
 * _Py_DebugOffsets (3.13). Facts from CPython's headers of each version
 * (Include/internal/pycore_frame.h, pycore_runtime.h, cpython/code.h). */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include "formats/procmaps.h"
#include "formats/pyline.h"
#include "user/runtime/python.h"
#include "user/runtime/python_layouts.h"
#include "user/util.h"

/* Bounds of what is read from a process: a name or file name longer than
 * this is cut; a line table or bytecode larger is refused. */
#define PY_STR_MAX   4096
#define PY_TABLE_MAX (1u << 24)
#define PY_CODE_MAX  (1u << 26)
#define PY_CACHE_MAX 65536 /* code objects per process; then the cache starts over */

/* ---- The binary ---- */

struct elf_syms {
	uint64_t runtime, runtime_size, code_type, unicode_type, bytes_type, version;
	uint64_t eval, eval_size;
	bool bytes_main, frame_get_code, new_ref, have_version;
};

static void note_symbol(void *ctx, const char *name, uint64_t value, uint64_t size)
{
	struct elf_syms *s = ctx;

	/* Most names fail here: C++'s _Z..., and whatever is not _Py or Py. */
	if (!((name[0] == '_' && name[1] == 'P') || (name[0] == 'P' && name[1] == 'y')))
		return;
	if (!strcmp(name, "_PyRuntime")) {
		s->runtime = value;
		s->runtime_size = size;
	} else if (!strcmp(name, "_PyEval_EvalFrameDefault")) {
		s->eval = value;
		s->eval_size = size;
	} else if (!strcmp(name, "PyCode_Type")) {
		s->code_type = value;
	} else if (!strcmp(name, "PyUnicode_Type")) {
		s->unicode_type = value;
	} else if (!strcmp(name, "PyBytes_Type")) {
		s->bytes_type = value;
	} else if (!strcmp(name, "Py_Version")) {
		s->version = value;
		s->have_version = true;
	} else if (!strcmp(name, "Py_BytesMain")) {
		s->bytes_main = true;
	} else if (!strcmp(name, "PyFrame_GetCode")) {
		s->frame_get_code = true;
	} else if (!strcmp(name, "Py_NewRef")) {
		s->new_ref = true;
	}
}

/* len bytes at link-time address vaddr, from the file bytes of a PT_LOAD
 * segment (not its zero-filled tail). 0 or -EINVAL. */
static int read_vaddr(int fd, const struct py_binary *b, uint64_t vaddr, void *buf, size_t len)
{
	for (int i = 0; i < b->nloads; i++) {
		uint64_t v = b->loads[i].vaddr, fsz = b->loads[i].filesz;

		if (vaddr >= v && vaddr - v <= fsz && len <= fsz - (vaddr - v))
			return pread(fd, buf, len, (off_t)(b->loads[i].offset + (vaddr - v))) ==
				       (ssize_t)len
				   ? 0
				   : -EINVAL;
	}
	return -EINVAL;
}

/* PY_VERSION ("3.10.13", "3.9.0rc1") of minor in .rodata: a string of its
 * own or the tail of a longer one (the linker merges it into a path that
 * ends with it, as pyenv's prefix does). The micro, or -1. */
static int rodata_micro(Elf *elf, int fd, int minor)
{
	Elf_Scn *scn = NULL;
	size_t shstr;
	char pat[16];
	int micro = -1;

	if (elf_getshdrstrndx(elf, &shstr))
		return -1;
	snprintf(pat, sizeof(pat), "3.%d.", minor);
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *n;
		char *buf, *p, *end;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(n = elf_strptr(elf, shstr, sh.sh_name)) || strcmp(n, ".rodata") ||
		    sh.sh_size > (64u << 20) || !(buf = malloc(sh.sh_size + 1)))
			continue;
		if (pread(fd, buf, sh.sh_size, (off_t)sh.sh_offset) != (ssize_t)sh.sh_size) {
			free(buf);
			continue;
		}
		buf[sh.sh_size] = 0;
		end = buf + sh.sh_size;
		for (p = buf; micro < 0 && (p = memmem(p, end - p, pat, strlen(pat))); p++) {
			char *q = p + strlen(pat), *e;
			long m;

			if (p > buf && (p[-1] == '.' || (p[-1] >= '0' && p[-1] <= '9')))
				continue;
			if (*q < '0' || *q > '9')
				continue;
			m = strtol(q, &e, 10);
			/* Then a pre-release tag (a1, b2, rc1), a '+', and the NUL. */
			if (*e == 'a' || *e == 'b' || (*e == 'r' && e[1] == 'c'))
				for (e += *e == 'r' ? 2 : 1; *e >= '0' && *e <= '9'; e++)
					;
			if (*e == '+')
				e++;
			if (!*e && e < end && m < 100)
				micro = (int)m;
		}
		free(buf);
	}
	return micro;
}

/* _Py_DebugOffsets of 3.13 (Include/internal/pycore_runtime.h): 64-bit
 * words after the cookie, in the header's order. */
enum {
	DO_VERSION = 1,
	DO_FREE_THREADED,
	DO_RUNTIME_SIZE,
	DO_RUNTIME_INTERP_HEAD = 5,
	DO_INTERP_SIZE,
	DO_INTERP_NEXT = 8,
	DO_INTERP_THREADS_HEAD,
	DO_TSTATE_SIZE = 19,
	DO_TSTATE_NEXT = 21,
	DO_TSTATE_CURRENT_FRAME = 23,
	DO_TSTATE_THREAD_ID,
	DO_TSTATE_NATIVE_THREAD_ID,
	DO_FRAME_SIZE = 28,
	DO_FRAME_PREVIOUS,
	DO_FRAME_EXECUTABLE,
	DO_FRAME_INSTR_PTR,
	DO_FRAME_OWNER = 33,
	DO_CODE_SIZE,
	DO_CODE_FILENAME,
	DO_CODE_NAME,
	DO_CODE_QUALNAME,
	DO_CODE_LINETABLE,
	DO_CODE_FIRSTLINENO,
	DO_CODE_ADAPTIVE = 43,
	DO_OBJECT_SIZE,
	DO_OBJECT_TYPE,
	DO_BYTES_SIZE = 64,
	DO_BYTES_OB_SIZE,
	DO_BYTES_SVAL,
	DO_UNICODE_SIZE,
	DO_UNICODE_STATE,
	DO_UNICODE_LENGTH,
	DO_UNICODE_ASCII_SIZE,
	DO_WORDS = 73,
};

/* The layout of a 3.13 from its _Py_DebugOffsets (the words at the start of
 * _PyRuntime's initial value): its cookie and version must be the binary's,
 * each offset inside the size its struct declares; the fields it does not
 * give (string state bits, code_size) come from the generated 3.13 row,
 * which is what the offsets are compared with. 0 or -EINVAL. */
static int debug_offsets(const uint64_t *w, uint64_t version, const struct py_layout *row,
			 struct py_layout *l, const char *name)
{
	static const struct {
		int word, size;
		size_t field;
		int width;
	} map[] = {
#define F(w, s, f, n) {w, s, offsetof(struct py_layout, f), n}
	    F(DO_RUNTIME_INTERP_HEAD, DO_RUNTIME_SIZE, runtime_interp_head, 8),
	    F(DO_INTERP_NEXT, DO_INTERP_SIZE, interp_next, 8),
	    F(DO_INTERP_THREADS_HEAD, DO_INTERP_SIZE, interp_tstate_head, 8),
	    F(DO_TSTATE_NEXT, DO_TSTATE_SIZE, tstate_next, 8),
	    F(DO_TSTATE_CURRENT_FRAME, DO_TSTATE_SIZE, tstate_frame, 8),
	    F(DO_TSTATE_THREAD_ID, DO_TSTATE_SIZE, tstate_thread_id, 8),
	    F(DO_TSTATE_NATIVE_THREAD_ID, DO_TSTATE_SIZE, tstate_native_thread_id, 8),
	    F(DO_FRAME_PREVIOUS, DO_FRAME_SIZE, frame_back, 8),
	    F(DO_FRAME_EXECUTABLE, DO_FRAME_SIZE, frame_code, 8),
	    F(DO_FRAME_INSTR_PTR, DO_FRAME_SIZE, frame_lasti, 8),
	    F(DO_FRAME_OWNER, DO_FRAME_SIZE, frame_owner, 1),
	    F(DO_CODE_FILENAME, DO_CODE_SIZE, code_filename, 8),
	    F(DO_CODE_NAME, DO_CODE_SIZE, code_name, 8),
	    F(DO_CODE_QUALNAME, DO_CODE_SIZE, code_qualname, 8),
	    F(DO_CODE_LINETABLE, DO_CODE_SIZE, code_lines, 8),
	    F(DO_CODE_FIRSTLINENO, DO_CODE_SIZE, code_firstlineno, 4),
	    F(DO_CODE_ADAPTIVE, DO_CODE_SIZE, code_code, 0),
	    F(DO_OBJECT_TYPE, DO_OBJECT_SIZE, object_type, 8),
	    F(DO_BYTES_OB_SIZE, DO_BYTES_SIZE, bytes_size, 8),
	    F(DO_BYTES_SVAL, DO_BYTES_SIZE, bytes_data, 0),
	    F(DO_UNICODE_STATE, DO_UNICODE_SIZE, unicode_state, 4),
	    F(DO_UNICODE_LENGTH, DO_UNICODE_SIZE, unicode_length, 8),
#undef F
	};
	int differ = 0;

	if (memcmp(w, "xdebugpy", 8) || w[DO_VERSION] != version || w[DO_FREE_THREADED]) {
		warn("%s: _PyRuntime does not start with the _Py_DebugOffsets of CPython %#" PRIx64
		     " (or it is free-threaded): its Python frames are not named",
		     name, version);
		return -EINVAL;
	}
	*l = *row;
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		uint64_t off = w[map[i].word], size = w[map[i].size];
		__u32 *dst = (__u32 *)((char *)l + map[i].field);

		if (size > (1u << 20) || off > size || size - off < (uint64_t)map[i].width) {
			warn("%s: _Py_DebugOffsets word %d (%#" PRIx64 ") is outside its struct "
			     "(%" PRIu64 " bytes): its Python frames are not named",
			     name, map[i].word, off, size);
			return -EINVAL;
		}
		differ += *dst != off;
		*dst = (__u32)off;
	}
	l->unicode_ascii = (__u32)w[DO_UNICODE_ASCII_SIZE];
	differ += l->unicode_ascii != row->unicode_ascii;
	if (differ)
		debug("%s: %d offsets of _Py_DebugOffsets differ from CPython %d.%d's headers",
		      name, differ, row->version >> 8, row->version & 0xff);
	return 0;
}

static const struct py_layout *layout_row(int major, int minor)
{
	for (size_t i = 0; i < sizeof(py_layouts) / sizeof(py_layouts[0]); i++)
		if (py_layouts[i].version == (major << 8 | minor))
			return &py_layouts[i];
	return NULL;
}

int py_binary_read(int fd, const char *name, struct py_binary *b)
{
	struct elf_syms s = {0};
	const struct py_layout *row;
	GElf_Ehdr eh;
	size_t nph;
	Elf *elf;
	int ret = 0;

	memset(b, 0, sizeof(*b));
	b->micro = -1;
	elf_version(EV_CURRENT);
	if (!(elf = elf_begin(fd, ELF_C_READ_MMAP, NULL)))
		return -ENOENT;
	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) || elf_getphdrnum(elf, &nph)) {
		ret = -ENOENT;
		goto out;
	}
	elf_scan_dynsym(elf, note_symbol, &s);
	if (!s.runtime) {
		ret = -ENOENT;
		goto out;
	}
	for (size_t i = 0; i < nph && b->nloads < 8; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD) {
			b->loads[b->nloads].vaddr = ph.p_vaddr;
			b->loads[b->nloads].offset = ph.p_offset;
			b->loads[b->nloads].filesz = ph.p_filesz;
			b->nloads++;
		}
	}
	b->runtime = s.runtime;
	b->eval = s.eval;
	b->eval_size = s.eval_size;
	b->code_type = s.code_type;
	b->unicode_type = s.unicode_type;
	b->bytes_type = s.bytes_type;
	if (s.have_version) { /* 3.11 on: PY_VERSION_HEX */
		uint64_t v = 0;

		if (read_vaddr(fd, b, s.version, &v, 4)) {
			warn("%s: defines _PyRuntime but its Py_Version is not readable: "
			     "its Python frames are not named",
			     name);
			ret = -EINVAL;
			goto out;
		}
		b->hexversion = (uint32_t)v;
		b->major = (int)(v >> 24 & 0xff);
		b->minor = (int)(v >> 16 & 0xff);
		b->micro = (int)(v >> 8 & 0xff);
	} else if (s.bytes_main) { /* the API each version added */
		b->major = 3;
		b->minor = s.new_ref ? 10 : s.frame_get_code ? 9 : 8;
		b->micro = rodata_micro(elf, fd, b->minor);
	} else {
		/* 3.7 and older have _PyRuntime and none of these. */
		b->major = 3;
		b->minor = 7;
	}
	if (b->major != 3 || b->minor > 99) {
		warn("%s: defines _PyRuntime but says it is CPython %d.%d: "
		     "its Python frames are not named",
		     name, b->major, b->minor);
		ret = -EINVAL;
		goto out;
	}
	if (!(row = layout_row(b->major, b->minor))) {
		ret = -ENOTSUP;
		goto out;
	}
	if (!b->code_type || !b->unicode_type || !b->bytes_type) {
		warn("%s: defines _PyRuntime but not PyCode_Type, PyUnicode_Type and PyBytes_Type: "
		     "its Python frames are not named",
		     name);
		ret = -EINVAL;
		goto out;
	}
	if (b->minor >= 13) {
		uint64_t w[DO_WORDS];

		if (s.runtime_size && s.runtime_size < sizeof(w)) {
			ret = -EINVAL;
		} else if (read_vaddr(fd, b, s.runtime, w, sizeof(w))) {
			warn("%s: the _Py_DebugOffsets of its _PyRuntime are not in the file: "
			     "its Python frames are not named",
			     name);
			ret = -EINVAL;
		} else {
			ret = debug_offsets(w, b->hexversion, row, &b->layout, name);
		}
		if (ret)
			goto out;
	} else {
		b->layout = *row;
	}
	b->has_layout = true;
out:
	elf_end(elf);
	return ret;
}

/* ---- Processes ---- */

/* A code object as cached: what was read, and what is compared at the next
 * lookup to know it is still that object. */
struct code_ent {
	struct py_code c;
	uint64_t seen[8]; /* type, name, qualname, file, table, code pointers, first line, size */
	uint8_t objhdr[4][24]; /* bytes 8-32 (type, size, hash) of the 4 objects it points to */
	uint64_t objaddr[4];
};

struct py_proc {
	pid_t pid;
	struct py_binary bin;
	uint64_t runtime, code_type, unicode_type, bytes_type; /* in the process */
	uint64_t eval_lo, eval_hi; /* _PyEval_EvalFrameDefault in the process */
	VEC(struct code_ent) codes;
	struct idtab by_addr;
};

/* One file read: its device and inode, and what py_binary_read said. */
struct bin_ent {
	uint64_t dev, ino;
	int ret;
	struct py_binary bin;
};

struct python {
	struct file_memo bins; /* struct bin_ent */
	VEC(struct py_proc *) procs;
	unsigned warned[128]; /* minor versions without a layout, said once */
};

int python_new(struct python **out)
{
	*out = calloc(1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	(*out)->bins.size = sizeof(struct bin_ent);
	return 0;
}

static void code_clear(struct code_ent *e)
{
	free(e->c.name);
	free(e->c.file);
	free(e->c.lines);
	memset(e, 0, sizeof(*e));
}

static void proc_free(struct py_proc *p)
{
	for (size_t i = 0; i < p->codes.n; i++)
		code_clear(&p->codes.v[i]);
	VEC_FREE(p->codes);
	idtab_free(&p->by_addr);
	free(p);
}

void python_free(struct python *py)
{
	if (!py)
		return;
	for (size_t i = 0; i < py->procs.n; i++)
		proc_free(py->procs.v[i]);
	VEC_FREE(py->procs);
	file_memo_free(&py->bins);
	free(py);
}

void py_proc_eval(const struct py_proc *p, uint64_t *lo, uint64_t *hi)
{
	*lo = p->eval_lo;
	*hi = p->eval_hi;
}

const struct py_binary *py_proc_binary(const struct py_proc *p)
{
	return &p->bin;
}

/* A file's interpreter facts (a file_memo_read_fn). */
static void bin_ent_read(void *ctx, int fd, const struct procmaps_entry *m, void *entry)
{
	struct bin_ent *e = entry;

	(void)ctx;
	e->ret = py_binary_read(fd, m->path, &e->bin);
}

/* The file of a mapping, read once per recording. */
static const struct bin_ent *bin_of(struct python *py, pid_t pid, const struct procmaps_entry *m)
{
	return file_memo_get(&py->bins, pid, m, bin_ent_read, NULL);
}

void python_forget(struct python *py, pid_t pid)
{
	if (!py)
		return;
	for (size_t i = 0; i < py->procs.n; i++)
		if (py->procs.v[i]->pid == pid) {
			proc_free(py->procs.v[i]);
			py->procs.v[i] = py->procs.v[--py->procs.n];
			return;
		}
}

static struct py_proc *proc_known(const struct python *py, pid_t pid)
{
	for (size_t i = 0; i < py->procs.n; i++)
		if (py->procs.v[i]->pid == pid)
			return py->procs.v[i];
	return NULL;
}

int python_attach(struct python *py, pid_t pid, struct py_proc **out)
{
	char path[32], *text = NULL;
	size_t len;
	int ret;

	if ((*out = proc_known(py, pid)))
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	ret = read_path_all(path, 0, 64u << 20, &text, &len);
	if (!ret)
		ret = python_attach_maps(py, pid, text, len, out);
	free(text);
	return ret;
}

int python_attach_maps(struct python *py, pid_t pid, const char *maps_text, size_t len,
		       struct py_proc **out)
{
	struct procmaps_entry *maps = NULL;
	size_t nmaps = 0;
	int ret;

	if ((*out = proc_known(py, pid)))
		return 0;
	ret = procmaps_parse(maps_text, len, &maps, &nmaps);
	if (ret)
		return ret;
	ret = -ENOENT;
	for (size_t i = 0; i < nmaps && ret == -ENOENT; i++) {
		const struct procmaps_entry *m = &maps[i];
		const struct bin_ent *b;
		struct py_proc *p;

		if (!m->inode || !m->path || m->path[0] != '/' || !(b = bin_of(py, pid, m)) ||
		    b->ret == -ENOENT)
			continue;
		if (b->ret == -ENOTSUP) {
			unsigned minor = (unsigned)b->bin.minor & 127;

			if (!py->warned[minor]++)
				warn("CPython %d.%d (%s, process %d): no layout of its structures "
				     "for this version; its frames are named as native code",
				     b->bin.major, b->bin.minor, m->path, (int)pid);
			ret = -ENOTSUP;
			continue;
		}
		if (b->ret) {
			ret = b->ret;
			continue;
		}
		/* The load bias, from the segment this mapping starts. */
		for (int k = 0; k < b->bin.nloads; k++) {
			uint64_t off = b->bin.loads[k].offset, bias;

			if (off < m->offset || off - m->offset >= 4096)
				continue;
			bias = m->start - m->offset + off - b->bin.loads[k].vaddr;
			if (!(p = calloc(1, sizeof(*p)))) {
				ret = -ENOMEM;
				break;
			}
			p->pid = pid;
			p->bin = b->bin;
			p->runtime = b->bin.runtime + bias;
			p->code_type = b->bin.code_type + bias;
			p->unicode_type = b->bin.unicode_type + bias;
			p->bytes_type = b->bin.bytes_type + bias;
			if (b->bin.eval && b->bin.eval_size) {
				p->eval_lo = b->bin.eval + bias;
				p->eval_hi = p->eval_lo + b->bin.eval_size;
			}
			if (VEC_PUSH(py->procs, p)) {
				free(p);
				ret = -ENOMEM;
				break;
			}
			*out = p;
			ret = 0;
			debug("process %d runs CPython %d.%d (%s)", (int)pid, p->bin.major,
			      p->bin.minor, m->path);
			break;
		}
	}
	procmaps_free(maps, nmaps);
	return ret;
}

/* ---- Reading a process's objects ---- */

static int rd(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec l = {buf, len}, r = {(void *)(uintptr_t)addr, len};

	if (!addr || addr + len < addr)
		return -EFAULT;
	return process_vm_readv(pid, &l, 1, &r, 1, 0) == (ssize_t)len ? 0 : -EFAULT;
}

static uint64_t u64_at(const uint8_t *buf, uint32_t off)
{
	uint64_t v;

	memcpy(&v, buf + off, 8);
	return v;
}

/* Appends code point c as UTF-8 (lone surrogates too: fmt_sanitize then
 * escapes them, as it does any invalid byte). */
static size_t put_utf8(char *d, uint32_t c)
{
	if (c < 0x80) {
		d[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		d[0] = (char)(0xc0 | c >> 6);
		d[1] = (char)(0x80 | (c & 63));
		return 2;
	}
	if (c < 0x10000) {
		d[0] = (char)(0xe0 | c >> 12);
		d[1] = (char)(0x80 | (c >> 6 & 63));
		d[2] = (char)(0x80 | (c & 63));
		return 3;
	}
	if (c > 0x10ffff)
		c = 0xfffd;
	d[0] = (char)(0xf0 | c >> 18);
	d[1] = (char)(0x80 | (c >> 12 & 63));
	d[2] = (char)(0x80 | (c >> 6 & 63));
	d[3] = (char)(0x80 | (c & 63));
	return 4;
}

/* A str object (compact: every name and file name is), as sanitized UTF-8,
 * its first PY_STR_MAX characters; hdr gets its bytes 8-32. 0 or -EINVAL,
 * -EFAULT, -ENOMEM. */
static int read_str(const struct py_proc *p, uint64_t addr, char **out, uint8_t *hdr)
{
	const struct py_layout *l = &p->bin.layout;
	uint8_t h[128], raw[PY_STR_MAX * 4];
	char utf8[PY_STR_MAX * 4 + 1];
	uint32_t state, need = l->unicode_compact < 40 ? 40 : l->unicode_compact;
	int64_t len;
	unsigned kind;
	size_t n = 0;

	if (need > sizeof(h) || l->unicode_state + 4 > need || l->unicode_length + 8 > need)
		return -EINVAL;
	if (rd(p->pid, addr, h, need))
		return -EFAULT;
	memcpy(hdr, h + 8, 24);
	memcpy(&state, h + l->unicode_state, 4);
	memcpy(&len, h + l->unicode_length, 8);
	kind = state >> l->state_kind_shift & 7;
	if (u64_at(h, l->object_type) != p->unicode_type || len < 0 ||
	    !(state >> l->state_compact_shift & 1) ||
	    (l->state_ready_shift != 0xff && !(state >> l->state_ready_shift & 1)) ||
	    (kind != 1 && kind != 2 && kind != 4))
		return -EINVAL;
	if (len > PY_STR_MAX)
		len = PY_STR_MAX;
	if (rd(p->pid,
	       addr + (state >> l->state_ascii_shift & 1 ? l->unicode_ascii : l->unicode_compact),
	       raw, (size_t)len * kind))
		return -EFAULT;
	for (int64_t i = 0; i < len; i++) {
		uint32_t c;

		if (kind == 1) {
			c = raw[i];
		} else if (kind == 2) {
			uint16_t u;

			memcpy(&u, raw + 2 * i, 2);
			c = u;
		} else {
			memcpy(&c, raw + 4 * i, 4);
		}
		n += put_utf8(utf8 + n, c);
	}
	*out = fmt_sanitize_dup(utf8, n);
	return *out ? 0 : -ENOMEM;
}

/* A bytes object's size (bounded by max), its type checked; hdr as above. */
static int bytes_size(const struct py_proc *p, uint64_t addr, size_t max, size_t *size,
		      uint8_t *hdr)
{
	const struct py_layout *l = &p->bin.layout;
	uint8_t h[64];
	uint32_t need = l->bytes_data < 32 ? 32 : l->bytes_data;
	int64_t n;

	if (need > sizeof(h) || l->bytes_size + 8 > need)
		return -EINVAL;
	if (rd(p->pid, addr, h, need))
		return -EFAULT;
	memcpy(hdr, h + 8, 24);
	memcpy(&n, h + l->bytes_size, 8);
	if (u64_at(h, l->object_type) != p->bytes_type || n < 0 || (uint64_t)n > max)
		return -EINVAL;
	*size = (size_t)n;
	return 0;
}

/* The fixed part of a code object: the pointers and values that identify
 * it (seen[]) and the addresses of its strings and bytes. */
static int code_head(const struct py_proc *p, uint64_t addr, uint64_t seen[8])
{
	const struct py_layout *l = &p->bin.layout;
	uint32_t fields[] = {l->code_name,	  l->code_qualname, l->code_filename, l->code_lines,
			     l->code_firstlineno, l->code_size,	    l->code_code};
	uint32_t need = l->object_type + 8;
	uint8_t h[512];
	int32_t first;

	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		if (fields[i] != PY_OFF_NONE && fields[i] + 8 > need)
			need = fields[i] + 8;
	if (need > sizeof(h) || rd(p->pid, addr, h, need))
		return -EFAULT;
	memset(seen, 0, 8 * sizeof(seen[0]));
	seen[0] = u64_at(h, l->object_type);
	if (seen[0] != p->code_type)
		return -EINVAL;
	seen[1] = u64_at(h, l->code_name);
	seen[2] = l->code_qualname != PY_OFF_NONE ? u64_at(h, l->code_qualname) : seen[1];
	seen[3] = u64_at(h, l->code_filename);
	seen[4] = u64_at(h, l->code_lines);
	memcpy(&first, h + l->code_firstlineno, 4);
	if (first < 0)
		return -EINVAL;
	seen[6] = (uint64_t)first;
	if (l->code_size != PY_OFF_NONE) { /* 3.11 on: ob_size code units inline */
		int64_t units = (int64_t)u64_at(h, l->code_size);

		if (units <= 0 || (uint64_t)units > PY_CODE_MAX / 2)
			return -EINVAL;
		seen[7] = (uint64_t)units * 2;
	} else {
		seen[5] = u64_at(h, l->code_code); /* co_code, a bytes object */
	}
	return 0;
}

/* Reads the code object at addr into e (cleared first). */
static int code_read(const struct py_proc *p, uint64_t addr, const uint64_t seen[8],
		     struct code_ent *e)
{
	size_t n;
	int ret;

	code_clear(e);
	e->c.addr = addr;
	memcpy(e->seen, seen, sizeof(e->seen));
	e->c.firstlineno = (int)seen[6];
	e->objaddr[0] = seen[2];
	e->objaddr[1] = seen[3];
	e->objaddr[2] = seen[4];
	e->objaddr[3] = seen[5];
	{
		uint64_t head = 0;

		/* As the BPF walk tags a frame's code object; not readable:
		 * no tag, which no frame has. */
		if (!rd(p->pid, seen[1] + p->bin.layout.unicode_ascii, &head, 8) &&
		    p->bin.layout.code_filename + 8 == p->bin.layout.code_name)
			e->c.tag = py_code_tag(seen[3], seen[1], head);
	}
	if ((ret = read_str(p, seen[2], &e->c.name, e->objhdr[0])) ||
	    (ret = read_str(p, seen[3], &e->c.file, e->objhdr[1])) ||
	    (ret = bytes_size(p, seen[4], PY_TABLE_MAX, &e->c.nlines, e->objhdr[2])))
		goto fail;
	if (seen[5]) { /* before 3.11: the size of co_code */
		if ((ret = bytes_size(p, seen[5], PY_CODE_MAX, &n, e->objhdr[3])))
			goto fail;
		e->c.ncode = n;
	} else {
		e->c.ncode = seen[7];
	}
	if (!(e->c.lines = malloc(e->c.nlines ? e->c.nlines : 1))) {
		ret = -ENOMEM;
		goto fail;
	}
	if (e->c.nlines &&
	    (ret = rd(p->pid, seen[4] + p->bin.layout.bytes_data, e->c.lines, e->c.nlines)))
		goto fail;
	return 0;
fail:
	code_clear(e);
	return ret;
}

/* Whether the objects a cached code object points to are still the ones
 * read (type, size and hash, bytes 8-32 of each): one read of them all. */
static bool objs_same(const struct py_proc *p, const struct code_ent *e)
{
	uint8_t now[4][24];
	struct iovec l[4], r[4];
	int n = 0;
	ssize_t want = 0;

	for (int i = 0; i < 4; i++) {
		if (!e->objaddr[i])
			continue;
		l[n] = (struct iovec){now[n], 24};
		r[n] = (struct iovec){(void *)(uintptr_t)(e->objaddr[i] + 8), 24};
		want += 24;
		n++;
	}
	if (process_vm_readv(p->pid, l, n, r, n, 0) != want)
		return false;
	for (int i = 0, k = 0; i < 4; i++)
		if (e->objaddr[i] && memcmp(now[k++], e->objhdr[i], 24))
			return false;
	return true;
}

static bool addr_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct py_proc *p = ctx;

	return p->codes.v[id].c.addr == *(const uint64_t *)key;
}

int py_code_get(struct py_proc *p, uint64_t addr, const struct py_code **out)
{
	uint64_t seen[8], h = hash_u64(addr);
	struct code_ent e = {0};
	uint32_t id;
	int ret;

	if ((ret = code_head(p, addr, seen)))
		return ret;
	id = idtab_find(&p->by_addr, h, addr_eq, p, &addr);
	if (id != UINT32_MAX) {
		struct code_ent *c = &p->codes.v[id];

		/* Still the object read before: the same fields, the same
		 * strings. Else the address was freed and reused. */
		if (!memcmp(c->seen, seen, sizeof(seen)) && objs_same(p, c)) {
			*out = &c->c;
			return 0;
		}
		ret = code_read(p, addr, seen, c);
		if (ret) { /* keep the slot for its address, empty */
			c->c.addr = addr;
			c->seen[0] = 0;
			return ret;
		}
		*out = &c->c;
		return 0;
	}
	if (p->codes.n >= PY_CACHE_MAX) {
		for (size_t i = 0; i < p->codes.n; i++)
			code_clear(&p->codes.v[i]);
		p->codes.n = 0;
		idtab_clear(&p->by_addr);
	}
	if ((ret = code_read(p, addr, seen, &e)))
		return ret;
	if (VEC_PUSH(p->codes, e) || idtab_insert(&p->by_addr, h, (uint32_t)(p->codes.n - 1))) {
		if (p->codes.n && p->codes.v[p->codes.n - 1].c.addr == addr)
			p->codes.n--;
		code_clear(&e);
		return -ENOMEM;
	}
	*out = &p->codes.v[p->codes.n - 1].c;
	return 0;
}

int py_code_line(const struct py_proc *p, const struct py_code *c, int64_t off, int *line)
{
	return pyline_lookup(pyline_format_of(p->bin.major, p->bin.minor), c->lines, c->nlines,
			     c->firstlineno, off, line);
}

/* ---- The walk ---- */

int py_frame_decode(const struct py_proc *p, uint64_t code, uint64_t raw, uint8_t owner,
		    struct py_frame *f)
{
	const struct py_layout *l = &p->bin.layout;
	int ret = 0;

	/* A shim frame of the C stack (3.12 on) runs no code. */
	if (l->owner_cstack != 0xff && owner == l->owner_cstack)
		return 1;
	if (owner == PY_OWNER_PENDING && l->code_framesize != PY_OFF_NONE)
		ret = 2;
	f->code = code;
	raw = PY_LASTI(raw); /* the tag above it: py_code_tag */
	switch (l->lasti_kind) {
	case PY_LASTI_PTR: /* into the code object's inline bytecode */
		f->lasti = (int64_t)(raw - (code + l->code_code));
		break;
	case PY_LASTI_UNITS:
		f->lasti = 2 * (int64_t)(int32_t)raw;
		break;
	default:
		f->lasti = (int32_t)raw;
	}
	return ret;
}

void py_proc_bpf(const struct py_proc *p, struct py_bpf_proc *out)
{
	memset(out, 0, sizeof(*out));
	out->layout = p->bin.layout;
	if (out->layout.frame_owner == PY_OFF_NONE) /* read, and ignored */
		out->layout.frame_owner = out->layout.frame_code;
	out->runtime = p->runtime;
}

static int rd_ptr(pid_t pid, uint64_t addr, uint32_t off, uint64_t *v)
{
	if (off == PY_OFF_NONE)
		return -EINVAL;
	return rd(pid, addr + off, v, 8);
}

/* Brent's cycle finding over a chain of pointers: a chain read from a
 * process may loop (memory reused, or made to), and is then cut as soon as
 * it comes back to a node, rather than followed to the bound. */
struct loop {
	uint64_t mark;
	unsigned power, len;
};
static bool loops(struct loop *l, uint64_t node)
{
	if (node == l->mark)
		return true;
	if (++l->len == l->power) {
		l->mark = node;
		l->power = l->power ? 2 * l->power : 1;
		l->len = 0;
	}
	return false;
}

/* One thread's frames, innermost first, into t. */
static void walk_frames(const struct py_proc *p, uint64_t tstate, struct py_thread *t)
{
	const struct py_layout *l = &p->bin.layout;
	struct loop lp = {0, 1, 0};
	uint64_t frame = 0;

	t->nframes = 0;
	t->truncated = false;
	if (rd_ptr(p->pid, tstate, l->tstate_frame, &frame))
		goto bad;
	if (l->cframe_current_frame != PY_OFF_NONE && frame &&
	    rd_ptr(p->pid, frame, l->cframe_current_frame, &frame))
		goto bad;
	while (frame) {
		uint64_t code, raw;
		uint8_t owner = 0;

		if (t->nframes >= PY_MAX_FRAMES || loops(&lp, frame))
			goto bad;
		if (rd_ptr(p->pid, frame, l->frame_code, &code) ||
		    rd_ptr(p->pid, frame, l->frame_lasti, &raw) ||
		    (l->frame_owner != PY_OFF_NONE &&
		     rd(p->pid, frame + l->frame_owner, &owner, 1)))
			goto bad;
		t->nframes += !py_frame_decode(p, code, raw, owner, &t->frames[t->nframes]);
		if (rd_ptr(p->pid, frame, l->frame_back, &frame))
			goto bad;
	}
	return;
bad:
	t->truncated = true;
}

int python_walk(struct py_proc *p, py_thread_fn fn, void *ctx)
{
	const struct py_layout *l = &p->bin.layout;
	struct py_thread t = {0};
	struct loop li = {0, 1, 0}, lt;
	uint64_t interp, tstate;
	int ret = 0, ninterp = 0, nthreads = 0;

	if (!(t.frames = calloc(PY_MAX_FRAMES, sizeof(*t.frames))))
		return -ENOMEM;
	if (rd_ptr(p->pid, p->runtime, l->runtime_interp_head, &interp)) {
		ret = -EFAULT;
		goto out;
	}
	for (; interp && !ret; ninterp++) {
		if (ninterp >= 64 || loops(&li, interp)) {
			ret = -EINVAL;
			break;
		}
		if (rd_ptr(p->pid, interp, l->interp_tstate_head, &tstate)) {
			ret = -EFAULT;
			break;
		}
		lt = (struct loop){0, 1, 0};
		for (; tstate && !ret; nthreads++) {
			if (nthreads >= 4096 || loops(&lt, tstate)) {
				ret = -EINVAL;
				break;
			}
			t.tstate = tstate;
			t.tid = 0;
			if (rd_ptr(p->pid, tstate, l->tstate_thread_id, &t.thread_id) ||
			    (l->tstate_native_thread_id != PY_OFF_NONE &&
			     rd_ptr(p->pid, tstate, l->tstate_native_thread_id, &t.tid)) ||
			    rd_ptr(p->pid, tstate, l->tstate_next, &tstate)) {
				ret = -EFAULT;
				break;
			}
			walk_frames(p, t.tstate, &t);
			ret = fn(&t, ctx);
		}
		if (!ret && rd_ptr(p->pid, interp, l->interp_next, &interp))
			ret = -EFAULT;
	}
out:
	free(t.frames);
	return ret;
}
