#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <signal.h>
#include <unistd.h>
#include "user/proc.h"
#include "user/symbols.h"
#include "formats/procmaps.h"
#include "formats/util.h"
#include "user/unwind.h"

#define MAPS_REREAD_NS (MAPS_REREAD_MS * 1000 * 1000ULL)
#define MAPS_MAX_BYTES (64u << 20)
/* The vdso is two pages today; a mapping far larger is not one. */
#define VDSO_MAX_BYTES (1u << 20)

static uint64_t file_hash(unsigned major, unsigned minor, uint64_t ino)
{
	return hash_u64(ino ^ ((uint64_t)major << 52) ^ ((uint64_t)minor << 32));
}

static bool file_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct known_file *m = &((const struct procs *)ctx)->files.v.v[id];
	const struct mapping *k = key;

	return m->inode == k->inode && m->dev_major == k->dev_major && m->dev_minor == k->dev_minor;
}

static const struct known_file *known_file(struct procs *procs, const struct mapping *k)
{
	uint32_t id = idtab_find(&procs->files.tab, file_hash(k->dev_major, k->dev_minor, k->inode),
				 file_eq, procs, k);

	return id == UINT32_MAX ? NULL : &procs->files.v.v[id];
}

static void add_known_file(struct procs *procs, const struct mapping *m)
{
	struct known_file kf = {m->inode, m->dev_major, m->dev_minor, NULL};

	if (m->path[0] != '/' || m->deleted || !m->inode || known_file(procs, m))
		return;
	/* Only a lookup aid: on failure the name is just not found later. */
	if (!(kf.path = strdup(m->path)))
		return;
	if (VEC_PUSH(procs->files.v, kf)) {
		free(kf.path);
		return;
	}
	if (idtab_insert(&procs->files.tab, file_hash(m->dev_major, m->dev_minor, m->inode),
			 procs->files.v.n - 1))
		free(procs->files.v.v[--procs->files.v.n].path);
}

void procs_exec_file(struct procs *procs, uint32_t dev_major, uint32_t dev_minor, uint64_t ino,
		     const char *path, size_t n)
{
	struct mapping k = {.inode = ino, .dev_major = dev_major, .dev_minor = dev_minor};
	char given[EXEC_PATH_LEN], real[PATH_MAX];
	struct stat st;

	if (!ino || !n || path[0] != '/' || known_file(procs, &k))
		return;
	n = strnlen(path, n < sizeof(given) ? n : sizeof(given) - 1);
	memcpy(given, path, n);
	given[n] = 0;
	/* The path is the exec's, written by whoever ran it: taken only for
	 * the file the kernel exec'd (its inode and device now), by its
	 * resolved name (a link's target). */
	if (!realpath(given, real) || stat(real, &st) || !S_ISREG(st.st_mode) || st.st_ino != ino ||
	    major(st.st_dev) != dev_major || minor(st.st_dev) != dev_minor)
		return;
	k.path = real;
	add_known_file(procs, &k);
}

static bool proc_eq(const void *ctx, uint32_t id, const void *key)
{
	return ((const struct procs *)ctx)->v.v[id]->pid == *(const pid_t *)key;
}

struct proc *proc_find(struct procs *procs, pid_t pid)
{
	uint32_t id;

	if (procs->last_proc && procs->last_proc->pid == pid)
		return procs->last_proc;
	id = idtab_find(&procs->tab, hash_u64(pid), proc_eq, procs, &pid);
	if (id == UINT32_MAX)
		return NULL;
	return procs->last_proc = procs->v.v[id];
}

static int cmp_map(const void *a, const void *b)
{
	const struct mapping *x = *(struct mapping *const *)a, *y = *(struct mapping *const *)b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static bool same_mapping(const struct mapping *m, const struct procmaps_entry *e)
{
	return m->start == e->start && m->end == e->end && m->offset == e->offset &&
	       m->inode == e->inode && !strcmp(m->path, e->path);
}

/* Re-reads /proc/PID/maps; mappings seen before keep their records (and the
 * symbols already loaded for them). */
static void resolve_unmapped(struct proc *p);

/* The maps text with each line sanitized (fmt_sanitize), newlines kept:
 * paths are the target's to choose (the kernel escapes only '\n'), and they
 * reach every file. The same buffer when it was clean, else a new one (text
 * freed); NULL on ENOMEM. */
static char *sanitize_lines(char *text, size_t *len)
{
	size_t n = 0, total, i, k;
	char *out;

	for (i = 0; i < *len; i = k + 1) {
		k = i + strcspn(text + i, "\n");
		n += fmt_sanitize(NULL, 0, text + i, k - i) + 1;
	}
	if (n == *len + (*len && text[*len - 1] != '\n'))
		return text; /* clean: nothing grew */
	total = n;
	out = malloc(total + 1);
	if (out) {
		for (i = 0, n = 0; i < *len; i = k + 1) {
			k = i + strcspn(text + i, "\n");
			n += fmt_sanitize(out + n, total + 1 - n, text + i, k - i);
			out[n++] = '\n';
		}
		out[n] = 0;
		*len = n;
	}
	free(text);
	return out;
}

/* dir: proc_dir's, or -1 to open the maps by their path. */
static int read_maps_in(struct proc *p, int dir)
{
	char path[64], *text;
	struct procmaps_entry *ents = NULL;
	size_t n = 0, i, j, len;
	int err;

	p->maps_read_ns = now_ns(CLOCK_MONOTONIC);
	snprintf(path, sizeof(path), "/proc/%d/maps", p->pid);
	err = read_path_all_at(dir >= 0 ? dir : AT_FDCWD, dir >= 0 ? "maps" : path, 0,
			       MAPS_MAX_BYTES, &text, &len);
	if (err) {
		if (!p->maps_text)
			p->gone = true;
		return err;
	}
	if (!(text = sanitize_lines(text, &len)))
		return -ENOMEM;
	err = procmaps_parse(text, len, &ents, &n);
	if (err || (!n && p->maps_text)) {
		/* An exited process (a zombie) reads as empty: keep what it had. */
		free(text);
		procmaps_free(ents, n);
		return err ? err : -ESRCH;
	}
	free(p->maps_text);
	p->maps_text = text;
	p->maps.n = 0;
	for (i = 0; i < n; i++) {
		struct mapping *m = NULL;

		/* Exec'd processes replace everything; otherwise most lines are old. */
		for (j = p->maps_all.n; j-- > 0;) {
			if (same_mapping(p->maps_all.v[j], &ents[i])) {
				m = p->maps_all.v[j];
				break;
			}
		}
		if (!m) {
			m = calloc(1, sizeof(*m));
			if (!m || VEC_PUSH(p->maps_all, m)) {
				free(m);
				err = -ENOMEM;
				break;
			}
			m->start = ents[i].start;
			m->end = ents[i].end;
			m->offset = ents[i].offset;
			m->inode = ents[i].inode;
			m->dev_major = ents[i].dev_major;
			m->dev_minor = ents[i].dev_minor;
			m->exec = ents[i].exec;
			m->deleted = ents[i].deleted;
			m->path = xstrdup(ents[i].path);
			add_known_file(p->set, m);
		}
		if (VEC_PUSH(p->maps, m)) {
			err = -ENOMEM;
			break;
		}
	}
	procmaps_free(ents, n);
	if (p->maps.n) /* maps.v is NULL with no mapping; qsort wants a pointer */
		qsort(p->maps.v, p->maps.n, sizeof(*p->maps.v), cmp_map);
	resolve_unmapped(p);
	if (!err) {
		for (i = 0; i < p->set->nnames; i++)
			if (p->set->names[i].maps_read)
				p->set->names[i].maps_read(p->set->names[i].ctx, p);
		if (!p->maps_read_queued && !VEC_PUSH(p->set->maps_read, p->pid))
			p->maps_read_queued = true;
	}
	return err;
}

static int read_maps(struct proc *p)
{
	return read_maps_in(p, -1);
}

static struct mapping *find_mapping(struct proc *p, uint64_t addr)
{
	size_t lo = 0, hi = p->maps.n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->maps.v[mid]->start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && addr < p->maps.v[lo - 1]->end)
		return p->maps.v[lo - 1];
	return NULL;
}

/* The mapping at a code address: only an executable one. A pc in another
 * lies in memory mapped since the maps were read (JIT code mapped where
 * ld.so.cache was, right after exec), which is unmapped until a re-read. */
static struct mapping *code_mapping(struct proc *p, uint64_t pc)
{
	struct mapping *m = find_mapping(p, pc);

	return m && m->exec ? m : NULL;
}

/* Opens the mapped file as the process sees it: through /proc/PID/root (so
 * containers resolve), or through /proc/PID/map_files when it was deleted or
 * replaced since it was mapped. When neither works (the process has exited: a
 * short-lived one is often gone before its samples are drained), by its path
 * here, if that is the very file it mapped (device and inode). Only regular
 * files: the paths are the target's to choose, and we are root. */
static int open_mapped(struct proc *p, const struct mapping *m)
{
	char path[PATH_MAX + 64];
	struct stat st;
	int fd = -1;

	if (!m->deleted) {
		snprintf(path, sizeof(path), "/proc/%d/root%s", p->pid, m->path);
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
		if (fd >= 0 && (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_ino != m->inode)) {
			close(fd);
			fd = -1;
		}
	}
	if (fd < 0) {
		snprintf(path, sizeof(path), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, p->pid,
			 m->start, m->end);
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
		if (fd >= 0 && (fstat(fd, &st) || !S_ISREG(st.st_mode))) {
			close(fd);
			fd = -1;
		}
	}
	if (fd < 0 && !m->deleted && m->path[0] == '/') {
		fd = open(m->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
		if (fd >= 0 &&
		    (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_ino != m->inode ||
		     major(st.st_dev) != m->dev_major || minor(st.st_dev) != m->dev_minor)) {
			close(fd);
			fd = -1;
		}
	}
	return fd;
}

/* The vdso's image as the process has it (it has no file), else ours: the
 * same kernel maps the same image into every 64-bit process. malloc'd. */
static void *vdso_image(struct proc *p, const struct mapping *m, size_t *size)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)getauxval(AT_SYSINFO_EHDR);
	size_t n = m->end - m->start;
	char path[64];
	void *img;
	int fd;

	if (n > VDSO_MAX_BYTES || !(img = malloc(n)))
		return NULL;
	snprintf(path, sizeof(path), "/proc/%d/mem", p->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && pread(fd, img, n, m->start) == (ssize_t)n) {
		close(fd);
		*size = n;
		return img;
	}
	if (fd >= 0)
		close(fd);
	/* Gone: ours, which ends with its section headers. */
	if (!eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    (n = eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize) > VDSO_MAX_BYTES) {
		free(img);
		return NULL;
	}
	memcpy(img, eh, n);
	*size = n;
	return img;
}

/* The vdso's functions named from its own symbols (__vdso_clock_gettime,
 * as perf names them): each distinct image is kept once in a memfd, which
 * symfile_get reads as a file and caches by its inode. */
static struct symfile *vdso_symbols(struct proc *p, struct mapping *m)
{
	struct vdso_image v = {0};
	size_t size = 0, i;
	void *img = vdso_image(p, m, &size);

	if (!img)
		return NULL;
	v.hash = hash_bytes(img, size);
	for (i = 0; i < p->set->vdsos.n; i++)
		if (p->set->vdsos.v[i].hash == v.hash) {
			free(img);
			m->vdso = i + 1;
			return symfile_get(p->set->vdsos.v[i].fd, "[vdso]");
		}
	v.fd = memfd_create("vdso", MFD_CLOEXEC);
	if (v.fd < 0 || write(v.fd, img, size) != (ssize_t)size || p->set->vdsos.n >= UINT16_MAX ||
	    VEC_PUSH(p->set->vdsos, v)) {
		if (v.fd >= 0)
			close(v.fd);
		free(img);
		return NULL;
	}
	free(img);
	m->vdso = p->set->vdsos.n;
	return symfile_get(v.fd, "[vdso]");
}

static struct symfile *mapping_symbols(struct proc *p, struct mapping *m)
{
	int fd;

	if (m->sym_tried)
		return m->sym;
	m->sym_tried = true;
	if (m->exec && !strcmp(m->path, "[vdso]"))
		return m->sym = vdso_symbols(p, m);
	if (!m->path[0] || m->path[0] == '[' || !m->inode)
		return NULL;
	fd = open_mapped(p, m);
	if (fd < 0) {
		debug("pid %d: cannot open %s for symbols", p->pid, m->path);
		return NULL;
	}
	m->sym = symfile_get(fd, m->path);
	close(fd);
	return m->sym;
}

/* The process's /proc directory (O_PATH), or -1: its files are then
 * opened relative to it, each one path walk of /proc/PID less (procfs's
 * slow lookup, per new process), and all of the same process. */
static int proc_dir(pid_t pid)
{
	char path[32];

	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	return open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

/* dir: proc_dir's. comm_known: p->comm is the leader's already (a sample
 * of it, an exec): one read of /proc less per new process, most of them
 * short-lived under -a. */
static void proc_read_identity(struct proc *p, int dir, bool comm_known)
{
	char exe[PATH_MAX], *comm;
	struct stat st;
	ssize_t n;

	if (dir < 0)
		return; /* gone */
	if (!fstat(dir, &st))
		p->uid = st.st_uid;
	n = readlinkat(dir, "exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		char *clean = fmt_sanitize_dup(exe, n);

		if (clean) {
			free(p->exe);
			p->exe = clean;
		}
	}
	if (!comm_known && !read_path_all_at(dir, "comm", 0, 64, &comm, NULL)) {
		proc_set_comm(p->comm, comm, strcspn(comm, "\n"));
		free(comm);
	}
}

/* Identity and maps, read relative to one proc_dir. */
static void proc_read(struct proc *p, bool comm_known)
{
	int dir = proc_dir(p->pid);

	proc_read_identity(p, dir, comm_known);
	read_maps_in(p, dir);
	if (dir >= 0)
		close(dir);
}

void proc_set_comm(char dst[COMM_TEXT_LEN], const char *src, size_t n)
{
	/* A comm is at most COMM_LEN - 1 bytes: longer input is not one. */
	fmt_sanitize(dst, COMM_TEXT_LEN, src, strnlen(src, n < COMM_LEN ? n : COMM_LEN - 1));
}

static void mark_exited(struct proc *p, uint64_t time_ns)
{
	if (!p->exited && p->set->aggregate)
		VEC_PUSH(p->set->exited, p); /* on ENOMEM it is only not retired */
	p->exited = true;
	p->exit_ns = time_ns;
}

struct proc *proc_get(struct procs *procs, pid_t pid, const char *comm)
{
	struct proc *p = proc_find(procs, pid);

	if (p)
		return p;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->set = procs;
	p->pid = pid;
	p->uid = (uid_t)-1;
	if (comm)
		proc_set_comm(p->comm, comm, COMM_LEN);
	if (VEC_PUSH(procs->v, p) || idtab_insert(&procs->tab, hash_u64(pid), procs->v.n - 1)) {
		free(p);
		return NULL;
	}
	proc_read(p, comm != NULL);
	/* Gone already: its exit event came before this first sight (a
	 * sample the kernel took in do_exit, drained after the exit), and no
	 * other will come. */
	if (p->gone)
		mark_exited(p, now_ns(CLOCK_MONOTONIC));
	return p;
}

struct frame_key {
	uint64_t pc;
	uint8_t kind;
	bool caller;
};

/* A user frame's function: its symbol, else (a stripped binary) where its
 * .eh_frame FDE starts, which names it "file+0xSTART". */
static void name_user_frame(struct proc *p, struct frame *f)
{
	struct symfile *sf = mapping_symbols(p, f->map);
	uint64_t off = f->pc - f->map->start + f->map->offset;

	if (!sf)
		return;
	f->name = symfile_lookup(sf, off, NULL, NULL, &f->system_name);
	if (!f->name)
		f->func = symfile_func_start(sf, off, &f->name);
}

void proc_name_again(struct proc *p)
{
	size_t i;

	for (i = 0; i < p->frames.n; i++) {
		struct frame *f = &p->frames.v[i];
		struct mapping *m = f->map;

		if (f->kind != FRAME_USER || f->name || f->func || !m || m->sym)
			continue;
		if (m->sym_tried && !m->sym_retried) {
			m->sym_retried = true;
			m->sym_tried = false;
		}
		if (!m->sym_tried)
			name_user_frame(p, f);
	}
}

/* Frames interned while no mapping covered them (sampled between an mmap
 * and the next read of the maps: libc right after exec, a dlopen) are named
 * once a mapping does; a frame is interned once, so later samples of the
 * same pc would otherwise stay unnamed. */
static void resolve_unmapped(struct proc *p)
{
	size_t i;

	for (i = p->image_frames; i < p->frames.n && p->unmapped; i++) {
		struct frame *f = &p->frames.v[i];

		if (f->kind != FRAME_USER || f->map || !(f->map = code_mapping(p, f->pc)))
			continue;
		p->unmapped--;
		name_user_frame(p, f);
	}
}

/* The process's maps to be read again by procs_reread_stale, once
 * MAPS_REREAD_NS have passed since the last read. */
static void mark_stale(struct proc *p)
{
	if (!p->maps_stale && !VEC_PUSH(p->set->maps_stale, p->pid))
		p->maps_stale = true;
}

/* For an address no mapping covers: re-reads the maps unless they were read
 * in the last MAPS_REREAD_NS. True when it did. */
static bool reread_maps(struct proc *p)
{
	if (now_ns(CLOCK_MONOTONIC) - p->maps_read_ns <= MAPS_REREAD_NS) {
		mark_stale(p);
		return false;
	}
	read_maps(p);
	return true;
}

void procs_trim_unwinders(struct procs *procs, uint64_t now, uint64_t idle_ns)
{
	size_t i;

	for (i = 0; i < procs->v.n; i++) {
		struct proc *p = procs->v.v[i];

		if (p->uw && (!idle_ns || now - p->uw_used_ns >= idle_ns)) {
			unwinder_free(p->uw);
			p->uw = NULL;
		}
	}
}

void procs_reread_stale(struct procs *procs, uint64_t now)
{
	size_t i, kept = 0;

	for (i = 0; i < procs->maps_stale.n; i++) {
		struct proc *p = proc_find(procs, procs->maps_stale.v[i]);

		if (!p || !p->maps_stale || p->exited || p->gone) {
			if (p)
				p->maps_stale = false;
			continue;
		}
		if (now - p->maps_read_ns <= MAPS_REREAD_NS) {
			procs->maps_stale.v[kept++] = p->pid;
			continue;
		}
		p->maps_stale = false;
		read_maps(p); /* names the frames found unmapped meanwhile too */
	}
	procs->maps_stale.n = kept;
}

struct mapping *proc_mapping_at(struct proc *p, uint64_t addr)
{
	struct mapping *m = find_mapping(p, addr);

	if (!m && reread_maps(p))
		m = find_mapping(p, addr);
	return m;
}

static bool frame_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct frame *f = &((const struct proc *)ctx)->frames.v[id];
	const struct frame_key *k = key;

	return f->pc == k->pc && f->kind == k->kind && f->caller == k->caller;
}

static uint64_t frame_hash(uint64_t pc, uint8_t kind, bool caller)
{
	return hash_u64(pc ^ ((uint64_t)kind << 62) ^ ((uint64_t)caller << 61));
}

static uint32_t intern_frame(struct proc *p, uint64_t ip, uint8_t kind, bool caller)
{
	struct frame_key k = {caller ? ip - 1 : ip, kind, caller};
	uint64_t h = frame_hash(k.pc, kind, caller);
	uint32_t id = idtab_find(&p->frame_tab, h, frame_eq, p, &k);
	struct frame f = {0};

	if (id != UINT32_MAX) {
		/* Still unmapped: the maps may have it by now. */
		if (kind == FRAME_USER && !p->frames.v[id].map && k.pc < SOURCE_PC_BASE)
			reread_maps(p);
		return id;
	}
	f.pc = k.pc;
	f.kind = kind;
	f.caller = caller;
	if (kind == FRAME_USER && k.pc >= SOURCE_PC_BASE) {
		/* A source's frame: named by it, never mapped. */
	} else if (kind == FRAME_KERNEL) {
		f.name = kallsyms_lookup(f.pc, &f.module);
	} else {
		f.map = code_mapping(p, f.pc);
		if (!f.map && reread_maps(p))
			f.map = code_mapping(p, f.pc);
		if (f.map)
			name_user_frame(p, &f);
		else
			p->unmapped++;
	}
	if (VEC_PUSH(p->frames, f) || idtab_insert(&p->frame_tab, h, p->frames.n - 1))
		return UINT32_MAX;
	return p->frames.n - 1;
}

/* The frame that ends a stack cut at --max-stack (TRUNCATED_PC). */
static uint32_t intern_truncated(struct proc *p)
{
	struct frame_key k = {TRUNCATED_PC, FRAME_USER, false};
	uint64_t h = frame_hash(k.pc, k.kind, k.caller);
	uint32_t id = idtab_find(&p->frame_tab, h, frame_eq, p, &k);
	struct frame f = {.pc = TRUNCATED_PC, .kind = FRAME_USER, .name = "[truncated]"};

	if (id != UINT32_MAX)
		return id;
	if (VEC_PUSH(p->frames, f) || idtab_insert(&p->frame_tab, h, p->frames.n - 1))
		return UINT32_MAX;
	return p->frames.n - 1;
}

static bool stack_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct proc *p = ctx;
	const uint32_t *a = &p->stack_data.v[p->stack_off.v[id]], *b = key;

	return a[0] == b[0] && a[1] == b[1] && !memcmp(a + 2, b + 2, (a[0] + a[1]) * 4);
}

static uint32_t intern_stack(struct proc *p, const uint32_t *st)
{
	size_t len = 2 + st[0] + st[1];
	uint64_t h = hash_bytes(st, len * 4);
	uint32_t id = idtab_find(&p->stack_tab, h, stack_eq, p, st);

	if (id != UINT32_MAX)
		return id;
	if (VEC_RESERVE(p->stack_data, p->stack_data.n + len) ||
	    VEC_PUSH(p->stack_off, (uint32_t)p->stack_data.n))
		return UINT32_MAX;
	memcpy(p->stack_data.v + p->stack_data.n, st, len * 4);
	p->stack_data.n += len;
	if (idtab_insert(&p->stack_tab, h, p->stack_off.n - 1))
		return UINT32_MAX;
	return p->stack_off.n - 1;
}

static bool thread_eq(const void *ctx, uint32_t id, const void *key)
{
	return ((const struct proc *)ctx)->threads.v[id].tid == *(const uint32_t *)key;
}

struct thread *proc_thread(struct proc *p, uint32_t tid)
{
	uint32_t id;
	struct thread t = {.tid = tid};

	if (p->last_thread < p->threads.n && p->threads.v[p->last_thread].tid == tid)
		return &p->threads.v[p->last_thread];
	id = idtab_find(&p->thread_tab, hash_u64(tid), thread_eq, p, &tid);
	if (id == UINT32_MAX) {
		if (VEC_PUSH(p->threads, t) ||
		    idtab_insert(&p->thread_tab, hash_u64(tid), p->threads.n - 1))
			return NULL;
		id = p->threads.n - 1;
	}
	p->last_thread = id;
	return &p->threads.v[id];
}

const struct thread *proc_thread_find(const struct proc *p, uint32_t tid)
{
	uint32_t id = idtab_find(&p->thread_tab, hash_u64(tid), thread_eq, p, &tid);
	size_t i;

	if (id != UINT32_MAX)
		return &p->threads.v[id];
	/* Compacted: no table, and a process has few threads. */
	for (i = 0; p->compacted && i < p->threads.n; i++)
		if (p->threads.v[i].tid == tid)
			return &p->threads.v[i];
	return NULL;
}

static uint64_t sample_hash(const struct sample *s)
{
	return hash_u64(s->stack ^ ((uint64_t)s->tid << 32) ^ ((uint64_t)s->cpu << 20));
}

static bool sample_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct sample *a = &((const struct proc *)ctx)->samples.v[id], *b = key;

	return a->stack == b->stack && a->tid == b->tid && a->cpu == b->cpu;
}

/* Stores a sample: under procs->aggregate, as one more of an equal one. JIT
 * code is named by the time of its sample (the runtime reuses addresses):
 * those processes keep each sample. */
static int store_sample(struct proc *p, const struct sample *smp)
{
	uint64_t h;
	uint32_t id;

	p->nsamples++;
	if (!p->set->aggregate || proc_named_by_time(p))
		return VEC_PUSH(p->samples, *smp);
	h = sample_hash(smp);
	id = idtab_find(&p->sample_tab, h, sample_eq, p, smp);
	if (id != UINT32_MAX) {
		p->samples.v[id].count++;
		return 0;
	}
	if (VEC_PUSH(p->samples, *smp))
		return -ENOMEM;
	return idtab_insert(&p->sample_tab, h, p->samples.n - 1);
}

/* --max-stack: the user frames a stack shows at most. */
static int user_max(const struct proc *p)
{
	int max = p->set->max_stack ? (int)p->set->max_stack : MAX_STACK_DEFAULT;

	return max > MAX_USER_STACK ? MAX_USER_STACK : max;
}

/* The user frames of a sample, leaf first: DWARF-unwound from the copied
 * stack when the record carries one, else the ips BPF walked (by CFI or by
 * frame pointers). Returns the count. */
static int user_frames(struct proc *p, const struct ev_sample *s, uint64_t *pcs, bool *cut)
{
	const __u64 *fp = &s->ips[s->nkernel];
	const void *stack = &s->ips[ev_sample_ips(s)];
	int n = 0, i, max = user_max(p);
	unsigned flags = 0;

	*cut = false;

	/* Only a copy for DWARF needs one: an off-CPU stack walked in BPF
	 * carries its first window for user/offcpu.c's sig alone. */
	/* A stack with Java frames is the BPF walk's whole (bpf/runtime/jvm.bpf.c
	 * stepped them, and their records name its ips by index): libdwfl
	 * unwinds no JIT frame, and its guesses from the copy put other pcs
	 * at those indices (a JVM recorded while libjvm's table was being
	 * built, 12 % of javac's samples: stacks cut to their middle). The
	 * walk stepped the frames it had no table for by rbp, which HotSpot's
	 * own code keeps. */
	if ((s->flags & SAMPLE_DWARF) && s->stack_len && !p->uw && !s->njvm)
		p->uw = unwinder_new(p->pid, p->set->elves);
	if (p->uw && (s->flags & SAMPLE_DWARF) && !s->njvm) {
		uint64_t regs[UREG_NR] = {s->uregs[UREG_IP], s->uregs[UREG_SP], s->uregs[UREG_BP]};
		/* SAMPLE_DWARF_AT: the walk's first ips, then the copy's frames
		 * from the one after them (bpf/events.h). */
		int at = s->flags & SAMPLE_DWARF_AT ? (int)s->dwarf_at : 0;
		/* A malformed record: the ips alone, below. */
		bool bad = at && (at >= s->nuser || at >= max || !fp[at]);
		uint64_t t0 = now_ns(CLOCK_MONOTONIC);

		if (bad)
			at = 0;
		for (i = 0; i < at; i++)
			pcs[i] = fp[i];
		n = bad ? 0
			: unwind_dwarf(p->uw, regs, s->hdr.time_ns, stack, s->stack_len, pcs + at,
				       max - at, &flags);
		p->unwind_ns += now_ns(CLOCK_MONOTONIC) - t0;
		p->uw_used_ns = t0;
		p->unwound++;
		if (flags & UNWIND_TRUNCATED)
			p->truncated++;
		if (at && n)
			pcs[at] = fp[at]; /* the return address, not the lookup's - 1 */
		if (!bad && (n > 1 || n + at >= s->nuser)) {
			n += at;
			*cut = n >= max; /* the limit, not the stack's end */
			return n;
		}
		n = 0;
	}
	for (i = 0; i < s->nuser && fp[i] && n < max; i++)
		pcs[n++] = fp[i];
	*cut = (s->flags & SAMPLE_MAX_STACK) || (n >= max && i < s->nuser && fp[i]);
	return n;
}

/* A sample of a compacted process (the pid was reused, or a late sample):
 * its tables again, from what it kept. 0 or -ENOMEM. */
static int uncompact(struct proc *p)
{
	uint32_t nk, nu, i;
	const uint32_t *st;

	for (i = p->image_frames; i < p->frames.n; i++) {
		const struct frame *f = &p->frames.v[i];

		if (idtab_insert(&p->frame_tab, frame_hash(f->pc, f->kind, f->caller), i))
			return -ENOMEM;
	}
	for (i = 0; i < p->stack_off.n; i++) {
		st = proc_stack(p, i, &nk, &nu);
		if (idtab_insert(&p->stack_tab, hash_bytes(st - 2, (2 + nk + nu) * 4), i))
			return -ENOMEM;
	}
	for (i = 0; i < p->threads.n; i++)
		if (idtab_insert(&p->thread_tab, hash_u64(p->threads.v[i].tid), i))
			return -ENOMEM;
	for (i = 0; p->set->aggregate && !proc_named_by_time(p) && i < p->samples.n; i++)
		if (idtab_insert(&p->sample_tab, sample_hash(&p->samples.v[i]), i))
			return -ENOMEM;
	p->compacted = false;
	p->exited = false; /* it runs */
	return 0;
}

/* A record's ips as walked in BPF: kernel frames, then user frames up to the
 * first 0, as user_frames and proc_intern_record take them. */
struct raw_key {
	const __u64 *ips;
	uint32_t nk, nu;
};

static bool raw_eq(const void *ctx, uint32_t id, const void *key)
{
	const uint64_t *a = &((const struct proc *)ctx)->raw_ips.v[id];
	const struct raw_key *k = key;

	return (uint32_t)a[0] == (k->nk << 16 | k->nu) &&
	       !memcmp(a + 1, k->ips, (k->nk + k->nu) * sizeof(*k->ips));
}

/* One step of the raw ips' hash: the multiply is off the chain from word
 * to word (a rotate and a xor), so the words' multiplies overlap; the
 * table's low bits come from the final mix (raw_find). */
static inline uint64_t raw_step(uint64_t h, uint64_t ip)
{
	return (h << 29 | h >> 35) ^ ip * 0x9e3779b97f4a7c15ULL;
}

/* The record's stack when its raw ips were seen before, else UINT32_MAX
 * (and *h, *k set for raw_remember). The user frames' end (the first 0) is
 * found in the same pass over the record as the hash: its first reads of
 * the record are cache misses. */
static uint32_t raw_find(struct proc *p, const struct ev_sample *s, struct raw_key *k, uint64_t *h)
{
	const __u64 *u = &s->ips[s->nkernel];
	uint32_t nu = 0, i, id;
	uint64_t x = 0;

	k->ips = s->ips;
	k->nk = s->nkernel < MAX_FRAMES ? s->nkernel : MAX_FRAMES;
	/* Kernel frames beyond MAX_FRAMES would sit between the two parts; a
	 * stack cut at --max-stack ends in a frame its ips do not have; the
	 * Python frames of a record make its stack too (a source's rewrite), and
	 * its JavaScript frames (interpreted ones share the interpreter's ips). */
	if (k->nk != s->nkernel || (s->flags & (SAMPLE_DWARF | SAMPLE_MAX_STACK)) || s->npython ||
	    s->njvm || s->nv8) {
		k->ips = NULL;
		return UINT32_MAX;
	}
	for (i = 0; i < k->nk; i++)
		x = raw_step(x, s->ips[i]);
	for (; nu < s->nuser && nu < MAX_USER_FRAMES && u[nu]; nu++)
		x = raw_step(x, u[nu]);
	k->nu = nu;
	*h = hash_u64(x ^ ((uint64_t)k->nk << 48 | nu));
	id = idtab_find(&p->raw_tab, *h, raw_eq, p, k);
	return id == UINT32_MAX ? id : (uint32_t)(p->raw_ips.v[id] >> 32);
}

static void raw_remember(struct proc *p, const struct raw_key *k, uint64_t h, uint32_t stack)
{
	const uint32_t *a = &p->stack_data.v[p->stack_off.v[stack]];
	size_t at = p->raw_ips.n, n = 1 + (size_t)k->nk + k->nu;
	uint32_t i;

	if (!k->ips || a[0] != k->nk || a[1] != k->nu) /* DWARF-unwound after all */
		return;
	for (i = a[0]; i < a[0] + a[1]; i++)
		if (!p->frames.v[a[2 + i]].map)
			return;
	/* On ENOMEM, or past the ids' range: only not cached. */
	if (at >= UINT32_MAX - n || VEC_RESERVE(p->raw_ips, at + n))
		return;
	p->raw_ips.v[at] = (uint64_t)stack << 32 | k->nk << 16 | k->nu;
	memcpy(&p->raw_ips.v[at + 1], k->ips, (n - 1) * sizeof(*k->ips));
	if (!idtab_insert(&p->raw_tab, h, at))
		p->raw_ips.n = at + n;
}

int proc_intern_record(struct procs *procs, const struct ev_sample *s, struct proc **pp,
		       uint32_t *stack)
{
	uint32_t st[2 + MAX_STACK_FRAMES], i, n = 0, id;
	uint64_t upcs[MAX_USER_FRAMES], h = 0;
	struct proc *p = *pp =
	    proc_get(procs, s->hdr.pid, s->hdr.tid == s->hdr.pid ? s->comm : NULL);
	struct raw_key rk;
	bool cut;
	int nu;

	if (!p || (p->compacted && uncompact(p)))
		return -ENOMEM;
	if (!p->comm[0])
		proc_set_comm(p->comm, s->comm, COMM_LEN);
	if (s->flags & SAMPLE_CFI) {
		p->cfi_walked++;
		p->cfi_root += !!(s->flags & SAMPLE_CFI_END);
		p->cfi_to_dwarf += !!(s->flags & SAMPLE_CFI_NOTABLE);
	}
	*stack = raw_find(p, s, &rk, &h);
	if (*stack != UINT32_MAX)
		return 0;
	st[0] = st[1] = 0;
	for (i = 0; i < s->nkernel && i < MAX_FRAMES; i++) {
		id = intern_frame(p, s->ips[i], FRAME_KERNEL, i > 0);
		if (id == UINT32_MAX)
			return -ENOMEM;
		st[2 + n++] = id;
		st[0]++;
	}
	nu = user_frames(p, s, upcs, &cut);
	for (i = 0; i < procs->nnames; i++)
		if (procs->names[i].rewrite)
			procs->names[i].rewrite(procs->names[i].ctx, p, s, upcs, &nu, user_max(p),
						&cut);
	for (i = 0; i < (uint32_t)nu; i++) {
		id = intern_frame(p, upcs[i], FRAME_USER, i > 0 && upcs[i] < SOURCE_PC_BASE);
		if (id == UINT32_MAX)
			return -ENOMEM;
		st[2 + n++] = id;
		st[1]++;
	}
	if (cut) {
		id = intern_truncated(p);
		if (id == UINT32_MAX)
			return -ENOMEM;
		st[2 + n++] = id;
		st[1]++;
		p->max_stack_cut++;
		procs->max_stack_cut++;
	}
	*stack = intern_stack(p, st);
	if (*stack == UINT32_MAX)
		return -ENOMEM;
	raw_remember(p, &rk, h, *stack);
	return 0;
}

int proc_add_sample(struct procs *procs, const struct ev_sample *s)
{
	struct proc *p;
	struct thread *t;
	struct sample smp;
	const uint32_t *ids;
	uint32_t nk, nu, i;

	if (proc_intern_record(procs, s, &p, &smp.stack))
		return -ENOMEM;
	/* JIT guidance counts CPU samples by their user leaf. */
	ids = proc_stack(p, smp.stack, &nk, &nu);
	for (i = 0; nu > 0 && i < procs->nnames; i++)
		if (procs->names[i].leaf)
			procs->names[i].leaf(procs->names[i].ctx, p, &p->frames.v[ids[nk]]);
	smp.tid = s->hdr.tid;
	smp.cpu = s->hdr.cpu;
	smp.time_ns = s->hdr.time_ns;
	smp.count = 1;
	t = proc_thread(p, s->hdr.tid);
	if (!t)
		return -ENOMEM;
	/* A clean comm is stored as it came: the same one again (every sample
	 * but a thread's renaming) needs no sanitizing. */
	if (strncmp(t->comm, s->comm, COMM_LEN - 1) || t->comm[strnlen(s->comm, COMM_LEN - 1)])
		proc_set_comm(t->comm, s->comm, COMM_LEN);
	t->nsamples++;
	return store_sample(p, &smp);
}

static const char *basename_of(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

const char *frame_name(const struct frame *f, char *buf, size_t len)
{
	if (f->name)
		return f->name;
	if (f->kind == FRAME_KERNEL)
		return "[kernel]";
	if (f->map && f->map->path[0] == '[')
		return f->map->path;
	if (f->map && f->map->path[0] && f->func) {
		snprintf(buf, len, "%s+0x%" PRIx64, basename_of(f->map->path), f->func);
		return buf;
	}
	if (f->map && f->map->path[0]) {
		snprintf(buf, len, "[%s]", basename_of(f->map->path));
		return buf;
	}
	return "[unknown]";
}

bool proc_srcline(const struct frame *f, const char **file, int *line)
{
	struct symfile *sf = f->kind == FRAME_USER && f->map ? f->map->sym : NULL;

	*file = NULL;
	*line = 0;
	return sf && !symfile_srcline(sf, f->pc - f->map->start + f->map->offset, file, line);
}

const char *frame_name_at(struct proc *p, const struct frame *f, uint64_t t, char *buf, size_t len,
			  const char **system_name, const char **file, int *line)
{
	struct name_hit hit;
	unsigned i;

	if (file) {
		*file = NULL;
		*line = 0;
	}
	for (i = 0; !f->name && f->kind == FRAME_USER && i < p->set->nnames; i++) {
		const struct name_source *src = &p->set->names[i];

		if (!src->find || !src->find(src->ctx, p, f->pc, t, &hit))
			continue;
		if (file) {
			*file = hit.file;
			*line = hit.line;
		}
		if (system_name)
			*system_name = hit.system_name;
		return hit.name;
	}
	if (file)
		proc_srcline(f, file, line);
	if (system_name)
		*system_name = f->name ? f->system_name : NULL;
	return frame_name(f, buf, len);
}

int frame_start_line(struct proc *p, const struct frame *f, uint64_t t)
{
	struct name_hit hit = {0};

	for (unsigned i = 0; !f->name && f->kind == FRAME_USER && i < p->set->nnames; i++) {
		const struct name_source *src = &p->set->names[i];

		if (src->find && src->find(src->ctx, p, f->pc, t, &hit))
			return hit.start_line;
	}
	return 0;
}

const uint32_t *proc_stack(const struct proc *p, uint32_t stack, uint32_t *nk, uint32_t *nu)
{
	const uint32_t *st = &p->stack_data.v[p->stack_off.v[stack]];

	*nk = st[0];
	*nu = st[1];
	return st + 2;
}

void frame_iter_init(struct frame_iter *it, struct proc *p, const struct sample *s, bool root_first)
{
	uint32_t nu;

	*it = (struct frame_iter){.p = p, .s = s, .root_first = root_first};
	it->ids = proc_stack(p, s->stack, &it->nk, &nu);
	it->n = it->nk + nu;
}

/* frame_iter's stable: named from a symbol, or a kernel frame. */
static bool frame_stable(const struct frame *f)
{
	return f->name || f->kind != FRAME_USER;
}

bool frame_iter_next(struct frame_iter *it)
{
	if (it->k >= it->n)
		return false;
	it->id = it->ids[it->root_first ? it->n - 1 - it->k : it->k];
	it->k++;
	it->f = &it->p->frames.v[it->id];
	it->stable = frame_stable(it->f);
	return true;
}

bool proc_stack_stable(const struct proc *p, uint32_t stack)
{
	uint32_t nk, nu, i;
	const uint32_t *ids = proc_stack(p, stack, &nk, &nu);

	for (i = 0; i < nk + nu; i++)
		if (!frame_stable(&p->frames.v[ids[i]]))
			return false;
	return true;
}

struct merge_ctx {
	const struct sample *out;
};

static bool merged_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct sample *a = &((const struct merge_ctx *)ctx)->out[id], *b = key;

	return a->stack == b->stack && a->tid == b->tid && a->cpu == b->cpu;
}

ssize_t proc_samples_merged(const struct proc *p, size_t first, size_t end, struct sample *out)
{
	/* Per stack: 0 not looked at yet, 1 stable, 2 not. */
	uint8_t *stable = calloc(p->stack_off.n ? p->stack_off.n : 1, 1);
	struct merge_ctx mc = {out};
	struct idtab tab = {0};
	size_t j, n = 0;
	ssize_t ret = -ENOMEM;

	if (!stable)
		return -ENOMEM;
	for (j = first; j < end; j++) {
		const struct sample *s = &p->samples.v[j];
		uint64_t h = sample_hash(s);
		uint32_t id;

		if (s->stack < p->stack_off.n && !stable[s->stack])
			stable[s->stack] = proc_stack_stable(p, s->stack) ? 1 : 2;
		if (s->stack >= p->stack_off.n || stable[s->stack] != 1) {
			out[n++] = *s;
			continue;
		}
		id = idtab_find(&tab, h, merged_eq, &mc, s);
		if (id != UINT32_MAX) {
			out[id].count += s->count;
			continue;
		}
		out[n] = *s;
		if (idtab_insert(&tab, h, (uint32_t)n++))
			goto out;
	}
	ret = (ssize_t)n;
out:
	idtab_free(&tab);
	free(stable);
	return ret;
}

const char *frame_iter_name(const struct frame_iter *it, char *buf, size_t len,
			    const char **system_name, const char **file, int *line)
{
	return frame_name_at(it->p, it->f, it->s->time_ns, buf, len, system_name, file, line);
}

void proc_on_exec(struct procs *procs, pid_t pid, const char *comm)
{
	struct proc *p = proc_get(procs, pid, comm);

	if (!p)
		return;
	/* A new address space: old frames keep their names, new addresses
	 * resolve against the new mappings. */
	proc_set_comm(p->comm, comm, COMM_LEN);
	/* The old program's samples are read with its maps (the gperftools
	 * file of each image); on ENOMEM they are only left with the new. */
	if (!VEC_PUSH(p->images, ((struct image){p->maps_text, p->exe, p->samples.n}))) {
		p->maps_text = NULL;
		p->exe = NULL;
	}
	idtab_free(&p->frame_tab); /* frames interned from here on are the new image's */
	idtab_free(&p->raw_tab);
	p->raw_ips.n = 0;
	p->image_frames = p->frames.n;
	p->unmapped = 0;
	proc_read(p, true); /* a new program; its comm the event's */
	/* Read at the exec, the maps hold the program and its loader: the
	 * loader maps the libraries next. Read again soon (procs_reread_stale),
	 * or what the libraries show (a CPython's libpython) waits for a sample
	 * at an address no mapping covers, up to a drain's wait later: the
	 * samples meanwhile carry no Python frames (CI: 8 % of a 3 s run). */
	mark_stale(p);
	if (p->uw) { /* its modules are the old image's */
		unwinder_free(p->uw);
		p->uw = NULL;
	}
}

void proc_on_exit(struct procs *procs, pid_t pid, uint64_t time_ns)
{
	struct proc *p = proc_find(procs, pid);

	if (!p)
		return;
	/* Its samples so far are named: frames are named as they are
	 * interned, and the exit-time mappings (EV_VMA) came before this. */
	if (p->uw) { /* it keeps an fd per module */
		unwinder_free(p->uw);
		p->uw = NULL;
	}
	mark_exited(p, time_ns);
}

/* Gives back a vector's unused capacity (doubling leaves up to half). */
static void vec_fit(void **v, size_t *cap, size_t n, size_t elsz)
{
	void *nv;

	if (*cap == n)
		return;
	if (!n) {
		free(*v);
		*v = NULL;
		*cap = 0;
		return;
	}
	if ((nv = realloc(*v, n * elsz))) {
		*v = nv;
		*cap = n;
	}
}
#define VEC_FIT(a) vec_fit((void **)&(a).v, &(a).cap, (a).n, sizeof(*(a).v))

/* Keeps what the profile and the summary read of an exited process: its
 * frames, stacks, samples, threads, and the mappings its frames name. */
static void compact(struct proc *p)
{
	size_t i, n;

	idtab_free(&p->frame_tab);
	idtab_free(&p->stack_tab);
	idtab_free(&p->raw_tab); /* starts empty again on uncompact */
	VEC_FREE(p->raw_ips);
	idtab_free(&p->thread_tab);
	idtab_free(&p->sample_tab);
	free(p->maps_text);
	p->maps_text = NULL;
	for (i = 0; i < p->images.n; i++) { /* for the per-process files only */
		free(p->images.v[i].maps_text);
		p->images.v[i].maps_text = NULL;
	}
	VEC_FREE(p->maps);
	p->unmapped = 0;
	for (i = 0; i < p->maps_all.n; i++)
		p->maps_all.v[i]->referenced = false;
	for (i = 0; i < p->frames.n; i++)
		if (p->frames.v[i].map)
			p->frames.v[i].map->referenced = true;
	for (i = 0, n = 0; i < p->maps_all.n; i++) {
		struct mapping *m = p->maps_all.v[i];

		if (m->referenced) {
			p->maps_all.v[n++] = m;
		} else {
			symfile_put(m->sym);
			free(m->path);
			free(m);
		}
	}
	p->maps_all.n = n;
	VEC_FIT(p->maps_all);
	VEC_FIT(p->frames);
	VEC_FIT(p->stack_data);
	VEC_FIT(p->stack_off);
	VEC_FIT(p->samples);
	VEC_FIT(p->threads);
	p->compacted = true;
}

static void proc_free(struct proc *p)
{
	size_t j;

	for (j = 0; j < p->maps_all.n; j++) {
		symfile_put(p->maps_all.v[j]->sym);
		free(p->maps_all.v[j]->path);
		free(p->maps_all.v[j]);
	}
	VEC_FREE(p->maps_all);
	VEC_FREE(p->maps);
	VEC_FREE(p->frames);
	idtab_free(&p->frame_tab);
	VEC_FREE(p->stack_data);
	VEC_FREE(p->stack_off);
	idtab_free(&p->stack_tab);
	idtab_free(&p->raw_tab);
	VEC_FREE(p->raw_ips);
	VEC_FREE(p->samples);
	idtab_free(&p->sample_tab);
	VEC_FREE(p->threads);
	idtab_free(&p->thread_tab);
	free(p->maps_text);
	free(p->exe);
	for (j = 0; j < p->images.n; j++) {
		free(p->images.v[j].maps_text);
		free(p->images.v[j].exe);
	}
	VEC_FREE(p->images);
	if (p->uw)
		unwinder_free(p->uw);
	free(p);
}

void proc_drop_samples(struct proc *p)
{
	if (!p->set->aggregate)
		return; /* the per-process files read them one by one */
	p->samples.n = 0;
	idtab_free(&p->sample_tab);
	p->stack_data.n = p->stack_off.n = 0;
	idtab_free(&p->stack_tab);
	idtab_free(&p->raw_tab);
	p->raw_ips.n = 0;
}

void proc_window_reset(struct proc *p, bool keep_stacks)
{
	size_t i;

	if (keep_stacks) {
		p->samples.n = 0;
		idtab_free(&p->sample_tab);
	} else {
		proc_drop_samples(p);
	}
	for (i = 0; i < p->threads.n; i++)
		p->threads.v[i].nsamples = 0;
	p->nsamples = p->lost = 0;
	p->unwound = p->truncated = p->unwind_ns = p->max_stack_cut = 0;
	p->cfi_walked = p->cfi_root = p->cfi_to_dwarf = 0;
}

/* Held as live, but its pid is gone: its exit not drained yet, or missed. */
static bool proc_gone_now(const struct proc *p)
{
	return !p->exited && p->pid > 0 && kill(p->pid, 0) && errno == ESRCH;
}

void procs_held(const struct procs *procs, struct procs_held *h)
{
	*h = (struct procs_held){.procs = procs->v.n,
				 .exited = procs->exited.n,
				 .files = procs->files.v.n,
				 .exits_missed = procs->exits_missed};
	for (size_t i = 0; i < procs->v.n; i++) {
		const struct proc *p = procs->v.v[i];

		if (p->exited) /* freed at this window's close */
			continue;
		h->gone += proc_gone_now(p);
		h->frames += p->frames.n;
		h->mappings += p->maps_all.n;
		h->threads += p->threads.n;
	}
}

void procs_files_trim(struct procs *procs)
{
	size_t i, j;

	for (i = 0; i < procs->files.v.n; i++)
		free(procs->files.v.v[i].path);
	procs->files.v.n = 0;
	idtab_free(&procs->files.tab);
	for (i = 0; i < procs->v.n; i++)
		for (j = 0; j < procs->v.v[i]->maps_all.n; j++)
			add_known_file(procs, procs->v.v[i]->maps_all.v[j]);
	VEC_FIT(procs->files.v);
}

void procs_sweep_gone(struct procs *procs, uint64_t time_ns)
{
	for (size_t i = 0; i < procs->v.n; i++) {
		struct proc *p = procs->v.v[i];

		if (!proc_gone_now(p))
			continue;
		procs->exits_missed++;
		mark_exited(p, time_ns);
	}
}

/* Frees the retired processes and indexes the others again. */
static void remove_retired(struct procs *procs)
{
	size_t i, n = 0;

	idtab_free(&procs->tab);
	procs->last_proc = NULL;
	for (i = 0; i < procs->v.n; i++) {
		struct proc *p = procs->v.v[i];

		if (p->retired) {
			proc_free(p);
			continue;
		}
		procs->v.v[n] = p;
		/* The table had room for these: this only fails on ENOMEM,
		 * and then the process is only not found again. */
		idtab_insert(&procs->tab, hash_u64(p->pid), n);
		n++;
	}
	procs->v.n = n;
}

void procs_retire(struct procs *procs, uint64_t time_ns, uint64_t until_ns, proc_done_fn done,
		  void *ctx)
{
	size_t i, n = 0;
	bool removed = false;

	for (i = 0; i < procs->exited.n; i++) {
		struct proc *p = procs->exited.v[i];

		if (!p->exited) /* it ran again (a reused pid): not done */
			continue;
		/* Later ones wait for the next call once until_ns has passed
		 * (checked every 16: a clock read costs more than some). */
		if (p->exit_ns + PROC_COMPACT_NS > time_ns ||
		    (!(i & 15) && i && now_ns(CLOCK_MONOTONIC) > until_ns)) {
			procs->exited.v[n++] = p;
		} else if (done && done(ctx, p)) {
			p->retired = true;
			removed = true;
		} else {
			compact(p);
		}
	}
	procs->exited.n = n;
	if (removed)
		remove_retired(procs);
}

/* An exit-time mapping's file by its bare name in the loader's dirs, taken
 * only where that path is the very file mapped (its inode and device now):
 * the name is the target's to choose, the check makes it only a hint. A
 * process that exits before any process mapping the same library had its
 * maps read (-a's first short-lived runs: CI, 5 % of their libc frames
 * "[libc.so.6]") otherwise keeps the bare name, and its frames no names.
 * Known from then on. */
static const struct known_file *find_lib(struct procs *procs, const struct mapping *m,
					 const char *name)
{
	char path[PATH_MAX], real[PATH_MAX];
	struct mapping k = *m;
	struct stat st;
	size_t i;

	if (!name[0] || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, ".."))
		return NULL;
	for (i = 0; loader_lib_dirs[i]; i++) {
		if (snprintf(path, sizeof(path), "%s/%s", loader_lib_dirs[i], name) >=
			(int)sizeof(path) ||
		    !realpath(path, real) || stat(real, &st) || !S_ISREG(st.st_mode) ||
		    st.st_ino != m->inode || major(st.st_dev) != m->dev_major ||
		    minor(st.st_dev) != m->dev_minor)
			continue;
		k.path = real;
		k.deleted = false;
		add_known_file(procs, &k);
		return known_file(procs, m);
	}
	return NULL;
}

void proc_on_vma(struct procs *procs, pid_t pid, const struct ev_vma *v)
{
	struct proc *p = proc_find(procs, pid);
	const struct known_file *known;
	struct mapping *m;
	char name[4 * VMA_NAME_LEN + 1]; /* sanitized: a byte may become an escape */
	size_t i;

	/* Only frames that no mapping covered need it: the process exited
	 * before its maps were read, or before a re-read after a dlopen. */
	if (!p || !p->unmapped || v->end <= v->start)
		return;
	for (i = 0; i < p->maps.n; i++)
		if (p->maps.v[i]->start < v->end && v->start < p->maps.v[i]->end)
			return; /* known, or the maps changed since: keep what was read */
	m = calloc(1, sizeof(*m));
	if (!m || VEC_PUSH(p->maps_all, m)) {
		free(m);
		return;
	}
	*m = (struct mapping){.start = v->start,
			      .end = v->end,
			      .offset = v->offset,
			      .inode = v->ino,
			      .dev_major = v->dev_major,
			      .dev_minor = v->dev_minor,
			      .exec = true};
	fmt_sanitize(name, sizeof(name), v->name, VMA_NAME_LEN);
	known = known_file(procs, m);
	/* A whole name (not cut at VMA_NAME_LEN) that needed no escaping. */
	if (!known && memchr(v->name, 0, VMA_NAME_LEN) && !strcmp(name, v->name))
		known = find_lib(procs, m, name);
	/* Without a known path, the file's bare name still tells the module. */
	m->path = xstrdup(known ? known->path : name);
	if (VEC_PUSH(p->maps, m))
		return;
	qsort(p->maps.v, p->maps.n, sizeof(*p->maps.v), cmp_map);
	resolve_unmapped(p);
}

void procs_take_maps_read(struct procs *procs, void (*fn)(void *ctx, pid_t pid), void *ctx)
{
	size_t i;

	for (i = 0; i < procs->maps_read.n; i++) {
		struct proc *p = proc_find(procs, procs->maps_read.v[i]);

		if (p)
			p->maps_read_queued = false;
		fn(ctx, procs->maps_read.v[i]);
	}
	procs->maps_read.n = 0;
}

void procs_free(struct procs *procs)
{
	size_t i;

	for (i = 0; i < procs->v.n; i++)
		proc_free(procs->v.v[i]);
	procs->last_proc = NULL;
	VEC_FREE(procs->v);
	idtab_free(&procs->tab);
	for (i = 0; i < procs->files.v.n; i++)
		free(procs->files.v.v[i].path);
	VEC_FREE(procs->files.v);
	idtab_free(&procs->files.tab);
	VEC_FREE(procs->exited);
	VEC_FREE(procs->maps_read);
	VEC_FREE(procs->maps_stale);
	for (i = 0; i < procs->vdsos.n; i++)
		close(procs->vdsos.v[i].fd);
	VEC_FREE(procs->vdsos);
}

int procs_add_names(struct procs *procs, const struct name_source *src)
{
	if (procs->nnames >= PROCS_MAX_NAMES)
		return -ENOSPC;
	procs->names[procs->nnames++] = *src;
	return 0;
}

bool proc_named_by_time(const struct proc *p)
{
	unsigned i;

	for (i = 0; i < p->set->nnames; i++)
		if (p->set->names[i].by_time && p->set->names[i].by_time(p->set->names[i].ctx, p))
			return true;
	return false;
}
