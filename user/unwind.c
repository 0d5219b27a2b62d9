/* DWARF unwinding of copied user stacks with elfutils' libdwfl: the
 * process's mappings are the modules (their .eh_frame / .debug_frame CFI),
 * and the bytes BPF copied from sp serve as the process's memory. One Dwfl
 * per process, kept across samples: building one per sample (as perf 6.1
 * does) costs more than the unwinding.
 *
 * libdwfl 0.188 behaviours this file works around:
 * - Where a frame has no CFI (no module, as JIT code; or no FDE), libdwfl
 *   itself takes one frame-pointer step (x86_64's backend unwinder) and goes
 *   on with CFI above: fine, but nothing tells it happened. The CFI cache
 *   below tells, so such samples are marked truncated.
 * - When the return address lies beyond the copied bytes, libdwfl ends the
 *   unwinding as if it had reached the root (return 0, pc undefined). A
 *   failed memory read in the last step tells the two apart. */
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <errno.h>
#include <fcntl.h>
#include <libelf.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include "bpf/cfi.h"
#include "formats/procmaps.h"
#include "formats/util.h"
#include "user/unwind.h"
#include "user/util.h"

/* x86_64 DWARF register numbers. */
#define REG_RBP 6
#define REG_RSP 7
#define REG_RA	16

/* Re-reading /proc/PID/maps: at first soon (the libraries ld.so maps right
 * after exec), then at most every 100 ms (JIT code is in no module). */
#define REPORT_FIRST_GAP_NS 1000000ULL
#define REPORT_EVERY_NS	    100000000ULL
#define CFI_CACHE_MAX	    (1u << 19) /* addresses cached; a full cache starts again */
#define FP_MAX_STEPS	    256

/* Whether CFI covers one address (a pc, minus 1 for return addresses). */
enum cfi_kind {
	CFI_NOMOD = 1, /* in no module */
	CFI_NONE,      /* a module without CFI there */
	CFI_FOUND,
	CFI_GO, /* Go code (module_is_go): frame pointers */
};

struct cfi_ent {
	uint64_t pc;
	uint64_t seen_ns; /* CFI_NOMOD: when first looked up */
	uint32_t kind;
	uint32_t pad;
};

/* One file the unwinders read, by identity: libelf counts its references
 * (elf_begin with a reference hands out the same Elf), so every process's
 * Dwfl reads one mapping of it. users: the unwinders that took it. */
struct shared_elf {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	Elf *elf; /* the reference held here */
	unsigned users;
};

struct unwind_elves {
	VEC(struct shared_elf *) v;
};

/* A module as report_maps reported it: its file's identity and its first
 * mapping, for find_elf. */
struct umod {
	uint64_t low, first_end;
	dev_t dev;
	ino_t ino;
};
struct umods {
	VEC_BODY(struct umod)
};

struct unwinder {
	Dwfl *dwfl;
	/* The architecture for dwfl_attach_state. Left to itself, it borrows
	 * the Ebl of some module, which a later report may free (dlclose). */
	Elf64_Ehdr ehdr;
	Elf *arch;
	pid_t pid;
	struct unwind_elves *elves;	/* or NULL: files not shared */
	VEC(struct shared_elf *) taken; /* from elves, one per find_elf that took one */
	struct umods mods;		/* of the last report, by address */
	bool attached;
	bool own_root;		/* the process's root is ours: a module's path opens here too */
	uint64_t reported_ns;	/* last report_maps (as it began) */
	uint64_t report_gap_ns; /* before the next one: doubles up to REPORT_EVERY_NS */
	uint64_t modules_sig;	/* of the modules it reported */
	bool report_changed;	/* the last report changed the modules */
	/* The sample being unwound: the registers libdwfl starts from (the
	 * sample's, or a perf trampoline's caller's), the copy's base. */
	uint64_t ip, sp, bp, sp0;
	const unsigned char *stack;
	size_t stack_len;
	uint64_t *pcs;
	int max, n;
	bool full;	  /* pcs filled up */
	bool read_failed; /* a memory read failed since the last frame */
	bool no_cfi;	  /* some frame was unwound without CFI */
	bool go_fp;	  /* stopped at Go code, for frame pointers from there */
	bool py_tramp;	  /* stopped at a perf trampoline: ip, sp, bp its caller's */
	bool new_nomod;	  /* a frame lies in no module, and no report since it was seen */
	uint64_t last_bp; /* rbp of the last frame DWARF produced */
	bool last_bp_ok;
	/* What the CFI says by address; emptied when the modules change. */
	VEC(struct cfi_ent) cfi;
	struct idtab cfi_tab;
};

static void cfi_cache_clear(struct unwinder *u)
{
	u->cfi.n = 0;
	idtab_clear(&u->cfi_tab);
}

/* No separate debug files: libdwfl's unwinder asks for .debug_frame before
 * .eh_frame, and finding libc's debug file made each process's Dwfl load and
 * inflate all of its DWARF (~6 ms and tens of MB, per process). .eh_frame is
 * what the unwinder needs; source lines come from user/symbols.c. */
static int no_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
			char **debuginfo_file_name)
{
	(void)mod, (void)userdata, (void)modname, (void)base, (void)file_name;
	(void)debuglink_file, (void)debuglink_crc, (void)debuginfo_file_name;
	return -1;
}

/* A regular file's fd, and its name for libdwfl (which frees it); or -1. */
/* An fd of the file at path if it is a regular one, with the path
 * strdup'd into *file_name for libdwfl; else -1. */
static int open_regular_named(const char *path, char **file_name)
{
	int fd = open_regular(path, 0);

	if (fd >= 0 && !(*file_name = strdup(path))) {
		close(fd);
		fd = -1;
	}
	return fd < 0 ? -1 : fd;
}

/* The module's file as the process mapped it: its first mapping in
 * /proc/PID/map_files, the very file whatever its path says here. In a
 * container the path in /proc/PID/maps is the one in the container's mount
 * namespace (under its root, or not even that after a chroot), so opening
 * it here finds nothing, or another file. */
static int open_mapped_module(const struct unwinder *u, const struct umod *m, char **file_name)
{
	char path[80];

	snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", (int)u->pid,
		 (unsigned long long)m->low, (unsigned long long)m->first_end);
	return open_regular_named(path, file_name);
}

struct unwind_elves *unwind_elves_new(void)
{
	return calloc(1, sizeof(struct unwind_elves));
}

void unwind_elves_free(struct unwind_elves *elves)
{
	if (!elves)
		return;
	for (size_t i = 0; i < elves->v.n; i++) {
		elf_end(elves->v.v[i]->elf);
		free(elves->v.v[i]);
	}
	VEC_FREE(elves->v);
	free(elves);
}

size_t unwind_elves_held(const struct unwind_elves *elves)
{
	return elves ? elves->v.n : 0;
}

static bool same_file(const struct shared_elf *e, const struct stat *st)
{
	return e->dev == st->st_dev && e->ino == st->st_ino && e->size == st->st_size &&
	       e->mtime.tv_sec == st->st_mtim.tv_sec && e->mtime.tv_nsec == st->st_mtim.tv_nsec;
}

/* A new reference to e's Elf, taken by u (libdwfl ends it with the
 * module), or NULL. */
static Elf *shared_elf_ref(struct unwinder *u, struct shared_elf *e)
{
	Elf *elf;

	if (VEC_RESERVE(u->taken, u->taken.n + 1) ||
	    !(elf = elf_begin(-1, ELF_C_READ_MMAP, e->elf)))
		return NULL;
	e->users++;
	u->taken.v[u->taken.n++] = e;
	return elf;
}

/* The Elf of the file open at fd when another unwinder already reads it,
 * else NULL. */
static Elf *shared_elf_take(struct unwinder *u, int fd)
{
	struct stat st;

	if (fstat(fd, &st))
		return NULL;
	for (size_t i = 0; i < u->elves->v.n; i++)
		if (same_file(u->elves->v.v[i], &st))
			return shared_elf_ref(u, u->elves->v.v[i]);
	return NULL;
}

/* The same by device and inode (the process's maps say them), newest
 * first: no file is opened. While the share maps the file its inode
 * cannot go to another one, and a file changed in place is changed in the
 * process's mapping too. */
static Elf *shared_elf_by_id(struct unwinder *u, dev_t dev, ino_t ino)
{
	for (size_t i = u->elves->v.n; i-- > 0;)
		if (u->elves->v.v[i]->dev == dev && u->elves->v.v[i]->ino == ino)
			return shared_elf_ref(u, u->elves->v.v[i]);
	return NULL;
}

/* The file at fd, just opened as elf, for the other unwinders: the share
 * holds a reference of its own. Without memory, simply not shared. */
static void shared_elf_add(struct unwinder *u, int fd, Elf *elf)
{
	struct shared_elf *e;
	struct stat st;

	if (fstat(fd, &st) || VEC_RESERVE(u->taken, u->taken.n + 1) ||
	    VEC_RESERVE(u->elves->v, u->elves->v.n + 1) || !(e = calloc(1, sizeof(*e))))
		return;
	if (!(e->elf = elf_begin(-1, ELF_C_READ_MMAP, elf))) {
		free(e);
		return;
	}
	e->dev = st.st_dev;
	e->ino = st.st_ino;
	e->size = st.st_size;
	e->mtime = st.st_mtim;
	e->users = 1;
	u->elves->v.v[u->elves->v.n++] = e;
	u->taken.v[u->taken.n++] = e;
}

/* The unwinder's files given back: one no unwinder reads is unmapped. */
static void shared_elf_release(struct unwinder *u)
{
	struct unwind_elves *elves = u->elves;

	for (size_t i = 0; i < u->taken.n; i++) {
		struct shared_elf *e = u->taken.v[i];

		if (--e->users)
			continue;
		for (size_t j = 0; j < elves->v.n; j++)
			if (elves->v.v[j] == e) {
				elves->v.v[j] = elves->v.v[--elves->v.n];
				break;
			}
		elf_end(e->elf);
		free(e);
	}
	VEC_FREE(u->taken);
}

/* libdwfl's, with two changes. The file is the one the process mapped
 * (open_mapped_module), else its path in the process's root; libdwfl's own
 * opens the path here, and every stack of a containerized program without
 * frame pointers ended at its first frame. And no fd is kept per module for
 * the Dwfl's life: one per module per process, and under -a with process
 * churn that ran out of fds (EMFILE) within seconds. The file is mapped
 * whole (READ_MMAP), and FDREAD reads in what a failed mapping left, so the
 * fd is not needed. userdata is the unwinder (report() sets it on every
 * module). */
static int find_elf(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
		    char **file_name, Elf **elfp)
{
	struct unwinder *u = *userdata;
	const struct umod *m = NULL;
	char path[PATH_MAX + 32];
	int fd = -1;

	for (size_t i = 0; u && i < u->mods.n && !m; i++)
		if (u->mods.v[i].low == base)
			m = &u->mods.v[i];
	if (m && m->ino && u->elves && (*elfp = shared_elf_by_id(u, m->dev, m->ino))) {
		*file_name = strdup(modname);
		return -1;
	}
	if (u && modname[0] == '/') {
		if (m)
			fd = open_mapped_module(u, m, file_name);
		if (fd < 0) {
			snprintf(path, sizeof(path), "/proc/%d/root%s", (int)u->pid, modname);
			fd = open_regular_named(path, file_name);
		}
		/* The process is gone, or the file deleted: the path here is
		 * the same file only when the root is ours (libdwfl reads a
		 * deleted file from the process's memory). */
		if (fd < 0 && !u->own_root && !strstr(modname, " (deleted)"))
			return -1;
	}
	if (fd < 0)
		fd = dwfl_linux_proc_find_elf(mod, userdata, modname, base, file_name, elfp);
	if (fd < 0 || *elfp)
		return fd;
	if (u && u->elves && (*elfp = shared_elf_take(u, fd))) {
		close(fd);
		return -1;
	}
	*elfp = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!*elfp)
		return fd; /* libdwfl tries itself, and says why */
	if (elf_cntl(*elfp, ELF_C_FDREAD)) {
		elf_end(*elfp);
		*elfp = NULL;
		return fd;
	}
	if (u && u->elves)
		shared_elf_add(u, fd, *elfp);
	close(fd);
	return -1;
}

static const Dwfl_Callbacks proc_callbacks = {
    .find_elf = find_elf,
    .find_debuginfo = no_debuginfo,
};

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	struct unwinder *u = arg;

	(void)dwfl;
	if (*thread_argp)
		return 0;
	*thread_argp = u;
	return u->pid;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	(void)dwfl;
	(void)tid;
	*thread_argp = arg;
	return true;
}

static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	struct unwinder *u = arg;
	uint64_t v;

	(void)dwfl;
	if (!unwind_stack_word(u->stack, u->stack_len, u->sp0, addr, &v)) {
		u->read_failed = true;
		return false;
	}
	*result = v;
	return true;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	struct unwinder *u = arg;
	Dwarf_Word r[2] = {u->bp, u->sp}; /* DWARF registers 6 and 7 */
	Dwarf_Word ip = u->ip;

	/* rip as register 16 as well: PLT entries' CFA expressions read it,
	 * and without it libdwfl ends there as if at the root. */
	if (!dwfl_thread_state_registers(thread, REG_RBP, 2, r) ||
	    !dwfl_thread_state_registers(thread, REG_RA, 1, &ip))
		return false;
	dwfl_thread_state_register_pc(thread, u->ip);
	return true;
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
    .next_thread = next_thread,
    .get_thread = get_thread,
    .memory_read = memory_read,
    .set_initial_registers = set_initial_registers,
};

static uint64_t hash_str(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */

	while (*s)
		h = (h ^ (unsigned char)*s++) * 0x100000001b3ULL;
	return h | 1; /* nonzero: a key */
}

struct report_ctx {
	struct unwinder *u;
	uint64_t sig;
};

static int module_sig_cb(Dwfl_Module *m, void **userdata, const char *name, Dwarf_Addr start,
			 void *arg)
{
	struct report_ctx *rc = arg;
	uint64_t *sig = &rc->sig, h;
	Dwarf_Addr end;

	*userdata = rc->u; /* for find_elf */
	dwfl_module_info(m, NULL, NULL, &end, NULL, NULL, NULL, NULL);
	h = hash_str(name ? name : "") ^ (start * 0x9e3779b97f4a7c15ULL) ^ (end << 17 | end >> 47);
	*sig += h * 0xff51afd7ed558ccdULL + 1; /* order-independent */
	return DWARF_CB_OK;
}

/* /proc/PID/maps into the Dwfl as libdwfl's dwfl_linux_proc_report reads
 * it (the consecutive mappings of one file, anonymous ones between, are
 * one module; the [vdso] is "[vdso: PID]", which libdwfl reads from the
 * process's memory), through the tree's one parser of it
 * (formats/procmaps.c), keeping each module's device, inode and first
 * mapping (u->mods) for find_elf: a file another unwinder reads is then
 * taken without opening anything, else its first mapping is opened by name
 * in map_files. Under process churn that was a tenth of the recorder's CPU:
 * libdwfl's own read of the maps, then a read of the whole map_files
 * directory per module. 0, an errno, or -1 (a libdwfl error). */
/* A mapping of a file (libdwfl's test: a path, and an inode or device). */
static bool file_mapping(const struct procmaps_entry *x)
{
	return x->path[0] == '/' && (x->inode || x->dev_major || x->dev_minor);
}

static int report_maps(Dwfl *dwfl, pid_t pid, struct umods *mods)
{
	char path[48], name[PATH_MAX + 16], *buf = NULL;
	struct procmaps_entry *e = NULL;
	size_t n = 0, len, i, j, last;
	int err;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	err = read_path_all(path, 0, 64 << 20, &buf, &len);
	if (!err)
		err = procmaps_parse(buf, len, &e, &n);
	free(buf);
	if (err)
		return -err;
	if (mods)
		mods->n = 0;
	for (i = 0; i < n && !err; i++) {
		const struct procmaps_entry *x = &e[i];
		uint64_t high = x->end;

		if (!strcmp(x->path, "[vdso]")) {
			snprintf(name, sizeof(name), "[vdso: %d]", (int)pid);
			if (!dwfl_report_module(dwfl, name, x->start, x->end))
				err = -1;
			continue;
		}
		if (!file_mapping(x))
			continue;
		/* The group's last mapping: the lines between (anonymous, the
		 * [vdso]) are the outer loop's still. */
		for (j = i + 1, last = i; j < n; j++) {
			const struct procmaps_entry *y = &e[j];

			if (!file_mapping(y))
				continue;
			if (y->inode != x->inode || y->dev_major != x->dev_major ||
			    y->dev_minor != x->dev_minor || strcmp(y->path, x->path))
				break;
			high = y->end;
			last = j;
		}
		snprintf(name, sizeof(name), "%s%s", x->path, x->deleted ? " (deleted)" : "");
		if (!dwfl_report_module(dwfl, name, x->start, high) ||
		    (mods && VEC_PUSH(*mods, ((struct umod){x->start, x->end,
							    makedev(x->dev_major, x->dev_minor),
							    (ino_t)x->inode}))))
			err = -1;
		i = last;
	}
	procmaps_free(e, n);
	return err;
}

int unwind_report_maps(Dwfl *dwfl, pid_t pid)
{
	return report_maps(dwfl, pid, NULL);
}

/* Reads /proc/PID/maps into the Dwfl; when the modules changed (dlopen,
 * dlclose: another may have taken a module's place), the caches go. Returns
 * 0, an errno or -1 (libdwfl error); *changed says whether they changed. */
static int report(struct unwinder *u, bool *changed)
{
	struct report_ctx rc = {u, 0};
	int err;

	/* Before the maps are read: a sample taken after this time may need a
	 * module the read missed (report_again). */
	u->reported_ns = now_ns(CLOCK_MONOTONIC);
	dwfl_report_begin(u->dwfl);
	err = report_maps(u->dwfl, u->pid, &u->mods);
	dwfl_report_end(u->dwfl, NULL, NULL);
	dwfl_getmodules(u->dwfl, module_sig_cb, &rc, 0);
	*changed = u->report_changed = rc.sig != u->modules_sig;
	if (*changed) {
		u->modules_sig = rc.sig;
		cfi_cache_clear(u);
	}
	return err;
}

/* Whether /proc/PID/maps has a line: not after the process exited, when a
 * report would drop every module its last samples need. */
static bool maps_readable(pid_t pid)
{
	char path[48], c;
	int fd;
	bool ok;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ok = read(fd, &c, 1) == 1;
	close(fd);
	return ok;
}

/* Modules mapped since the last report (ld.so's after exec, dlopen) appear
 * by reporting again, after a gap that grows from 1 to 100 ms; for a sample
 * taken after the last report (time_ns, CLOCK_MONOTONIC; 0: unknown), at
 * once while the modules are still changing. An unwinder made at a process's
 * first sample, as ld.so starts mapping its libraries, met the first wait in
 * libc's read within that 1 ms: libdwfl took a frame-pointer step there past
 * the read's caller (1 off-CPU stack in ~15 of waits.c repeat). Once a report
 * changed nothing, the gap alone: code in no module (JIT code) would cost a
 * report per sample. True when the modules changed. */
static bool report_again(struct unwinder *u, uint64_t time_ns)
{
	bool changed = false;

	if (now_ns(CLOCK_MONOTONIC) - u->reported_ns < u->report_gap_ns &&
	    !(u->report_changed && time_ns >= u->reported_ns))
		return false;
	u->report_gap_ns =
	    u->report_gap_ns * 2 < REPORT_EVERY_NS ? u->report_gap_ns * 2 : REPORT_EVERY_NS;
	if (maps_readable(u->pid))
		report(u, &changed);
	else
		u->reported_ns = now_ns(CLOCK_MONOTONIC);
	return changed;
}

struct unwinder *unwinder_new(pid_t pid, struct unwind_elves *elves)
{
	struct unwinder *u = calloc(1, sizeof(*u));
	int err;

	if (!u)
		return NULL;
	u->pid = pid;
	u->elves = elves;
	u->report_gap_ns = REPORT_FIRST_GAP_NS;
	{
		char root[48];
		struct stat a, b;

		snprintf(root, sizeof(root), "/proc/%d/root", (int)pid);
		u->own_root = !stat(root, &a) && !stat("/", &b) && a.st_dev == b.st_dev &&
			      a.st_ino == b.st_ino;
	}
	u->dwfl = dwfl_begin(&proc_callbacks);
	if (!u->dwfl) {
		free(u);
		errno = ENOMEM;
		return NULL;
	}
	err = report(u, &(bool){false});
	if (err) {
		dwfl_end(u->dwfl);
		if (u->elves)
			shared_elf_release(u);
		VEC_FREE(u->mods);
		free(u);
		errno = err > 0 ? err : ESRCH; /* an errno, or -1: a libdwfl error */
		return NULL;
	}
	/* x86_64 only, as the register numbers here. Without it: frame
	 * pointers only. */
	memcpy(u->ehdr.e_ident, ELFMAG, SELFMAG);
	u->ehdr.e_ident[EI_CLASS] = ELFCLASS64;
	u->ehdr.e_ident[EI_DATA] = ELFDATA2LSB;
	u->ehdr.e_ident[EI_VERSION] = EV_CURRENT;
	u->ehdr.e_type = ET_CORE;
	u->ehdr.e_machine = EM_X86_64;
	u->ehdr.e_version = EV_CURRENT;
	u->ehdr.e_ehsize = sizeof(u->ehdr);
	elf_version(EV_CURRENT);
	u->arch = elf_memory((char *)&u->ehdr, sizeof(u->ehdr));
	u->attached = u->arch && dwfl_attach_state(u->dwfl, u->arch, pid, &thread_callbacks, u);
	return u;
}

void unwinder_free(struct unwinder *u)
{
	if (!u)
		return;
	dwfl_end(u->dwfl); /* its modules' references first */
	if (u->elves)
		shared_elf_release(u);
	if (u->arch)
		elf_end(u->arch);
	VEC_FREE(u->cfi);
	VEC_FREE(u->mods);
	idtab_free(&u->cfi_tab);
	free(u);
}

/* Go code (a .gopclntab or Go's build id): no .eh_frame, and frame
 * pointers always (amd64, Go 1.7 on). Its .debug_frame is never needed,
 * and asking libdw for it inflates all of the binary's compressed DWARF:
 * 184 ms of a 10 s -a recording's CPU (perf), and tens of MiB, for the
 * first stacks of other jobs' pprof and otelcol, copied before their
 * process's tables were loaded. */
static bool module_is_go(Dwfl_Module *m)
{
	Dwarf_Addr bias;
	Elf *elf = dwfl_module_getelf(m, &bias);
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (!elf || elf_getshdrstrndx(elf, &shstrndx))
		return false;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(elf, shstrndx, sh.sh_name)))
			continue;
		if (!strcmp(name, ".gopclntab") || !strcmp(name, ".note.go.buildid"))
			return true;
	}
	return false;
}

/* Whether the module's .eh_frame (else its .debug_frame) covers addr. */
static void cfi_lookup(struct unwinder *u, uint64_t addr, struct cfi_ent *e)
{
	Dwfl_Module *m = dwfl_addrmodule(u->dwfl, addr);
	Dwarf_Frame *frame = NULL;
	Dwarf_Addr bias;
	Dwarf_CFI *cfi;

	e->kind = CFI_NOMOD;
	e->seen_ns = now_ns(CLOCK_MONOTONIC);
	if (!m)
		return;
	e->kind = CFI_NONE;
	/* .debug_frame only for a module without .eh_frame: an address that
	 * .eh_frame leaves out is code without CFI, and asking for .debug_frame
	 * makes libdw load (and inflate) the whole debug file, ~7 ms for libc. */
	cfi = dwfl_module_eh_cfi(m, &bias);
	if (!cfi && module_is_go(m)) {
		e->kind = CFI_GO;
		return;
	}
	if (!cfi)
		cfi = dwfl_module_dwarf_cfi(m, &bias);
	if (!cfi || dwarf_cfi_addrframe(cfi, addr - bias, &frame))
		return;
	e->kind = CFI_FOUND;
	free(frame);
}

static bool cfi_ent_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct unwinder *u = ctx;

	return u->cfi.v[id].pc == *(const uint64_t *)key;
}

/* Cached: an address costs a CFI evaluation the first time only. */
static struct cfi_ent cfi_at(struct unwinder *u, uint64_t addr)
{
	struct cfi_ent tmp = {.pc = addr};
	uint32_t id;

	if (!addr) {
		tmp.kind = CFI_NOMOD;
		tmp.seen_ns = 0; /* never worth a report */
		return tmp;
	}
	id = idtab_find(&u->cfi_tab, hash_u64(addr), cfi_ent_eq, u, &addr);
	if (id != UINT32_MAX)
		return u->cfi.v[id];
	cfi_lookup(u, addr, &tmp);
	/* Bounded memory: a process that runs through more addresses than
	 * this starts its cache again. */
	if (u->cfi.n >= CFI_CACHE_MAX)
		cfi_cache_clear(u);
	if (!VEC_PUSH(u->cfi, tmp) && idtab_insert(&u->cfi_tab, hash_u64(addr), u->cfi.n - 1))
		u->cfi.n--;
	return tmp;
}

/* A return address at CPython's perf trampoline (bpf/cfi.h), code without
 * CFI: the caller's registers into u (ip, sp, bp), for libdwfl
 * to start again from there. Its frame-pointer step took a caller's rbp
 * at one, as the BPF walk did (bpf/cfi_walk.bpf.h's cfi_py_tramp). */
static bool py_tramp_step(struct unwinder *u, Dwfl_Frame *frame, uint64_t pc)
{
	__u64 code[2];
	struct iovec l = {code, sizeof(code)}, r = {(void *)(pc - PY_TRAMP_RET), sizeof(code)};
	Dwarf_Word sp, ra;

	if (process_vm_readv(u->pid, &l, 1, &r, 1, 0) != (ssize_t)sizeof(code) ||
	    !py_tramp_code(code) || dwfl_frame_reg(frame, REG_RSP, &sp) ||
	    !unwind_stack_word(u->stack, u->stack_len, u->sp0, sp + PY_TRAMP_CFA - 8, &ra) || !ra)
		return false;
	u->ip = ra;
	u->sp = sp + PY_TRAMP_CFA;
	u->bp = u->last_bp;
	return true;
}

static int frame_cb(Dwfl_Frame *frame, void *arg)
{
	struct unwinder *u = arg;
	struct cfi_ent c;
	Dwarf_Addr pc;
	Dwarf_Word bp;
	bool activation;

	if (!dwfl_frame_pc(frame, &pc, NULL))
		return DWARF_CB_ABORT;
	if (u->n >= u->max) {
		u->full = true;
		return DWARF_CB_ABORT;
	}
	u->pcs[u->n++] = pc;
	u->last_bp_ok = dwfl_frame_reg(frame, REG_RBP, &bp) == 0;
	u->last_bp = bp;
	/* Go code: frame pointers from this frame on (unwind_dwarf), before
	 * the step below, for which libdwfl would load its .debug_frame. */
	c = cfi_at(u, u->n > 1 ? pc - 1 : pc);
	if (c.kind == CFI_GO) {
		u->go_fp = true;
		return DWARF_CB_ABORT;
	}
	/* The sample's own frame too: a stack the BPF walk handed over at a
	 * trampoline (SAMPLE_DWARF_AT) starts at its return address. And in a
	 * module's range too: libdwfl's spans a library's gaps, where an
	 * anonymous mapping may lie (py_tramp_step checks the code). */
	if ((c.kind == CFI_NOMOD || c.kind == CFI_NONE) && u->last_bp_ok &&
	    py_tramp_step(u, frame, pc)) {
		u->py_tramp = true;
		return DWARF_CB_ABORT;
	}
	/* Only the reads of the step from this frame to the next matter, and
	 * dwfl_frame_pc takes that step to tell whether pc is an activation. */
	u->read_failed = false;
	if (!dwfl_frame_pc(frame, &pc, &activation))
		return DWARF_CB_ABORT;
	/* libdwfl looks up the CFI of a return address at pc - 1 (the call);
	 * where it finds none, it takes a frame-pointer step. */
	c = cfi_at(u, activation ? pc : pc - 1);
	if (c.kind == CFI_NOMOD || c.kind == CFI_NONE)
		u->no_cfi = true;
	/* In no module: a library loaded since the last report (dlopen)?
	 * Once a report after its first sighting did not find it, it is JIT
	 * code or garbage, not worth more reports. */
	if (c.kind == CFI_NOMOD && c.seen_ns >= u->reported_ns)
		u->new_nomod = true;
	return DWARF_CB_OK;
}

/* From the sample's registers; through each perf trampoline met, from its
 * caller's on (its frames after those before). */
static int run_dwfl(struct unwinder *u)
{
	int r, runs = 0;

	u->n = 0;
	u->no_cfi = u->new_nomod = false;
	if (!u->attached)
		return -1;
	do {
		u->full = u->read_failed = u->last_bp_ok = u->go_fp = u->py_tramp = false;
		r = dwfl_getthread_frames(u->dwfl, u->pid, frame_cb, u);
	} while (u->py_tramp && ++runs < FP_MAX_STEPS);
	return r;
}

int unwind_dwarf(struct unwinder *u, const uint64_t regs[3], uint64_t time_ns, const void *stack,
		 size_t stack_len, uint64_t *pcs, int max, unsigned *flags)
{
	uint64_t bp, ra, next;
	int r, steps;

	*flags = 0;
	if (!regs[UNWIND_IP] || max <= 0)
		return 0;
	u->ip = regs[UNWIND_IP];
	u->sp = u->sp0 = regs[UNWIND_SP];
	u->bp = regs[UNWIND_BP];
	u->stack = stack;
	u->stack_len = stack ? stack_len : 0;
	u->pcs = pcs;
	u->max = max;
	r = run_dwfl(u);
	/* A frame in no module may be in a library loaded since (dlopen). */
	if (u->new_nomod && report_again(u, time_ns)) {
		u->ip = regs[UNWIND_IP];
		u->sp = regs[UNWIND_SP];
		u->bp = regs[UNWIND_BP];
		r = run_dwfl(u);
	}
	if (u->no_cfi)
		*flags |= UNWIND_TRUNCATED;
	if (u->full)
		return u->n;
	if (r == 0 && !u->read_failed)
		return u->n; /* the CFI said this is the root */
	/* DWARF stopped before the root (a stack copy too short, code that
	 * neither CFI nor libdwfl's frame-pointer step could pass): frame
	 * pointers from the last frame on, as far as the copy goes. Go code's
	 * own way, not a truncation. */
	if (!u->go_fp)
		*flags |= UNWIND_TRUNCATED;
	if (!u->n) {
		pcs[u->n++] = regs[UNWIND_IP];
		bp = regs[UNWIND_BP];
	} else if (u->last_bp_ok) {
		bp = u->last_bp;
	} else {
		return u->n;
	}
	for (steps = 0; u->n < max && steps < FP_MAX_STEPS; steps++) {
		if (!unwind_stack_word(u->stack, u->stack_len, u->sp0, bp + 8, &ra) ||
		    !unwind_stack_word(u->stack, u->stack_len, u->sp0, bp, &next) || !ra)
			break;
		pcs[u->n++] = ra;
		if (next <= bp) /* frames go up the stack */
			break;
		bp = next;
	}
	return u->n;
}
