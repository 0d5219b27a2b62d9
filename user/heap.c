#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "heap.skel.h"
#include "formats/procmaps.h"
#include "user/heap.h"
#include "user/proc.h"
#include "user/symbols.h"
#include "user/target.h"
#include "user/trace.h"
#include "user/util.h"

static const char *const func_names[HEAP_NFUNC] = {
    [HEAP_MALLOC] = "malloc",
    [HEAP_CALLOC] = "calloc",
    [HEAP_REALLOC] = "realloc",
    [HEAP_REALLOCARRAY] = "reallocarray",
    [HEAP_FREE] = "free",
    [HEAP_POSIX_MEMALIGN] = "posix_memalign",
    [HEAP_ALIGNED_ALLOC] = "aligned_alloc",
    [HEAP_MEMALIGN] = "memalign",
    [HEAP_VALLOC] = "valloc",
};

/* (seq, index into allocs), sorted by seq: heap_live's values found. */
struct seq_ix {
	uint64_t seq;
	size_t ix;
};

struct heap {
	struct heap_cfg cfg;
	struct heap_bpf *skel;
	VEC(int) fds;		      /* uprobe_multi links: entries, then returns */
	VEC(struct bpf_link *) links; /* the single-probe fallback's */
	VEC(struct heap_alloc) allocs;
	uint64_t window;
	uint64_t stats[HEAP_STAT_NR];
	uint64_t live_unknown; /* heap_live entries whose record was not drained */
	uint64_t bad_records;
	const char *allocator; /* the last process's: "glibc", "jemalloc", ... */
	int multi;	       /* -1 untried, 0 no, 1 yes */
	/* No BPF cookies: each function's own entry program (NULL with them). */
	struct bpf_program *by_func[HEAP_NFUNC];
};

const char *heap_func_name(unsigned func)
{
	return func < HEAP_NFUNC ? func_names[func] : "?";
}

uint64_t heap_rate(const struct heap *h)
{
	return h->cfg.rate;
}

uint64_t heap_window(const struct heap *h)
{
	return h->window;
}

int heap_attach_mode(const struct heap *h)
{
	return h->by_func[0] ? HEAP_BY_FUNC : h->multi == 1 ? HEAP_MULTI : HEAP_SINGLE;
}

const char *heap_allocator(const struct heap *h)
{
	return h->allocator ? h->allocator : "glibc";
}

const struct heap_alloc *heap_allocs(const struct heap *h, size_t *n)
{
	*n = h->allocs.n;
	return h->allocs.v;
}

void heap_get_stats(const struct heap *h, uint64_t st[HEAP_STAT_NR])
{
	memcpy(st, h->stats, sizeof(h->stats));
}

int heap_new(const struct heap_cfg *c, struct heap **out)
{
	struct heap *h = calloc(1, sizeof(*h));
	struct heap_bpf *s;
	int err;

	*out = NULL;
	if (!h)
		return -ENOMEM;
	h->cfg = *c;
	/* uprobe_multi (6.6) has cookies (5.15); found out at attach, or
	 * turned off to try the fallback on a newer kernel. */
	h->multi =
	    c->cookies && !list_has(getenv("BPFTRACE_REC_NO_FEATURES"), "uprobe_multi") ? -1 : 0;
	s = h->skel = heap_bpf__open();
	if (!s) {
		err = -errno;
		err("--heap: open BPF object: %s", strerror(-err));
		free(h);
		return err;
	}
	{
		struct bpf_program *fn[HEAP_NFUNC] = {
		    [HEAP_MALLOC] = s->progs.heap_entry_malloc,
		    [HEAP_CALLOC] = s->progs.heap_entry_calloc,
		    [HEAP_REALLOC] = s->progs.heap_entry_realloc,
		    [HEAP_REALLOCARRAY] = s->progs.heap_entry_reallocarray,
		    [HEAP_FREE] = s->progs.heap_entry_free,
		    [HEAP_POSIX_MEMALIGN] = s->progs.heap_entry_posix_memalign,
		    [HEAP_ALIGNED_ALLOC] = s->progs.heap_entry_aligned_alloc,
		    [HEAP_MEMALIGN] = s->progs.heap_entry_memalign,
		    [HEAP_VALLOC] = s->progs.heap_entry_valloc,
		};

		/* The cookie programs, or a program per function: the kernel
		 * refuses a program that calls a helper it does not have. */
		for (unsigned i = 0; i < HEAP_NFUNC; i++) {
			bpf_program__set_autoload(fn[i], !c->cookies);
			if (!c->cookies)
				h->by_func[i] = fn[i];
		}
		bpf_program__set_autoload(s->progs.heap_entry_multi, c->cookies);
		bpf_program__set_autoload(s->progs.heap_return_multi, c->cookies);
		bpf_program__set_autoload(s->progs.heap_entry_single, c->cookies);
	}
	s->rodata->filter_pids = !c->all;
	s->rodata->self_tgid = getpid();
	s->rodata->heap_rate = c->rate;
	s->rodata->stack_copy = c->stack_copy;
	bpf_program__set_expected_attach_type(s->progs.heap_entry_multi, ATTACH_TRACE_UPROBE_MULTI);
	bpf_program__set_expected_attach_type(s->progs.heap_return_multi,
					      ATTACH_TRACE_UPROBE_MULTI);
	err = bpf_map__set_max_entries(s->maps.heap_scratch, c->ncpus > 0 ? c->ncpus : 1);
	if (!err && c->live_max)
		err = bpf_map__set_max_entries(s->maps.heap_live, c->live_max);
	if (!err)
		err = bpf_map__reuse_fd(s->maps.events, c->events_fd);
	if (!err)
		err = bpf_map__reuse_fd(s->maps.targets, c->targets_fd);
	if (!err)
		err = heap_bpf__load(s);
	if (err) {
		err("--heap: load BPF programs: %s (run with -vv for the verifier's log)",
		    strerror(-err));
		heap_free(h);
		return err;
	}
	*out = h;
	return 0;
}

/* The allocator's functions found in one file, by offset. */
struct found {
	struct symfile *sf;
	uint64_t off[HEAP_NFUNC];
	bool jemalloc, tcmalloc, has_malloc;
};

static int find_sym(void *ctx, const struct symfile_sym *s)
{
	struct found *f = ctx;
	size_t n = strcspn(s->name, "@");
	unsigned i;

	/* jemalloc's and tcmalloc's own entry points: the allocator is
	 * named by its symbols, not by the file's name. */
	if (!strcmp(s->name, "mallocx") || !strncmp(s->name, "je_", 3))
		f->jemalloc = true;
	if (!strncmp(s->name, "tc_malloc", 9))
		f->tcmalloc = true;
	for (i = 0; i < HEAP_NFUNC; i++) {
		if (strlen(func_names[i]) != n || strncmp(s->name, func_names[i], n))
			continue;
		if (f->off[i] == UINT64_MAX)
			f->off[i] = symfile_offset(f->sf, s->vaddr);
		f->has_malloc |= i == HEAP_MALLOC && f->off[i] != UINT64_MAX;
	}
	return 0;
}

static int scan_file(const char *path, struct found *f)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK), err = 0;
	unsigned i;

	memset(f, 0, sizeof(*f));
	for (i = 0; i < HEAP_NFUNC; i++)
		f->off[i] = UINT64_MAX;
	if (fd < 0)
		return -errno;
	f->sf = symfile_get(fd, path);
	close(fd);
	if (!f->sf)
		return -ENOEXEC;
	err = symfile_foreach(f->sf, find_sym, f);
	symfile_put(f->sf);
	f->sf = NULL;
	return err;
}

/* The probe links of one file's functions, in process pid (> 0) or every
 * process. 0 or -errno. */
static int probe_file(struct heap *h, const char *path, const struct found *f, pid_t pid)
{
	uint64_t offs[HEAP_NFUNC], cookies[HEAP_NFUNC], roffs[HEAP_NFUNC], rcookies[HEAP_NFUNC];
	size_t n = 0, nr = 0, i;
	int e, r;

	for (i = 0; i < HEAP_NFUNC; i++) {
		size_t j;
		bool dup = false;

		if (f->off[i] == UINT64_MAX)
			continue;
		/* An alias at one address (memalign and aligned_alloc in
		 * glibc): one probe, by the first name. */
		for (j = 0; j < n; j++)
			dup |= offs[j] == f->off[i];
		if (dup)
			continue;
		offs[n] = f->off[i];
		cookies[n++] = i;
		if (i != HEAP_FREE) {
			roffs[nr] = f->off[i];
			rcookies[nr++] = i;
		}
	}
	if (!n) {
		err("--heap: no allocation function in %s", path);
		return -ENOENT;
	}
	if (h->multi != 0) {
		/* Returns first: an entry without its return would leave the
		 * thread's call open until its next one. */
		r = uprobe_multi_link(bpf_program__fd(h->skel->progs.heap_return_multi), path,
				      roffs, rcookies, nr, true, pid);
		e = r >= 0 ? uprobe_multi_link(bpf_program__fd(h->skel->progs.heap_entry_multi),
					       path, offs, cookies, n, false, pid)
			   : r;
		if (r >= 0 && e >= 0) {
			if (VEC_PUSH(h->fds, e) || VEC_PUSH(h->fds, r)) {
				close(e);
				close(r);
				return -ENOMEM;
			}
			h->multi = 1;
			debug("--heap: %zu functions of %s probed with uprobe_multi (pid %d)", n,
			      path, pid);
			return 0;
		}
		if (r >= 0)
			close(r);
		if (h->multi == 1) {
			err("--heap: uprobe_multi on %s: %s", path, strerror(-(r < 0 ? r : e)));
			return r < 0 ? r : e;
		}
		debug("--heap: uprobe_multi: %s; one uprobe per function",
		      strerror(-(r < 0 ? r : e)));
		h->multi = 0;
	}
	for (i = 0; i < n; i++) {
		/* No cookie where the kernel has none: libbpf would refuse. */
		LIBBPF_OPTS(bpf_uprobe_opts, o, .bpf_cookie = h->by_func[0] ? 0 : cookies[i]);
		struct bpf_program *entry =
		    h->by_func[0] ? h->by_func[cookies[i]] : h->skel->progs.heap_entry_single;
		struct bpf_link *l[2] = {NULL, NULL};

		if (cookies[i] != HEAP_FREE) {
			o.retprobe = true;
			l[1] =
			    bpf_program__attach_uprobe_opts(h->skel->progs.heap_return_single,
							    pid > 0 ? pid : -1, path, offs[i], &o);
			o.retprobe = false;
		}
		if (cookies[i] == HEAP_FREE || l[1])
			l[0] = bpf_program__attach_uprobe_opts(entry, pid > 0 ? pid : -1, path,
							       offs[i], &o);
		if (!l[0]) {
			e = -errno;
			bpf_link__destroy(l[1]);
			err("--heap: uprobe %s:%s: %s", path, func_names[cookies[i]], strerror(-e));
			return e;
		}
		if (VEC_PUSH(h->links, l[0]) || (l[1] && VEC_PUSH(h->links, l[1]))) {
			bpf_link__destroy(l[0]);
			bpf_link__destroy(l[1]);
			return -ENOMEM;
		}
	}
	return 0;
}

/* glibc's own objects, never a replacement. */
static bool glibc_object(const char *path)
{
	return strstr(path, "/libc.so") || strstr(path, "/ld-linux");
}

/* The libraries path names in its DT_NEEDED, found in the system's
 * directories as target_find_library finds them (not its RPATH), each
 * handed to add (glibc's left out); and whether it imports dlsym (an
 * undefined one in .dynsym). Either may be NULL. */
static void read_dynamic(const char *path, void (*add)(void *, char *), void *ctx,
			 bool *imports_dlsym)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf_Scn *scn = NULL;
	Elf *e;

	if (imports_dlsym)
		*imports_dlsym = false;
	if (fd < 0)
		return;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	while (e && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || !sh.sh_entsize || !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0;
		     imports_dlsym && sh.sh_type == SHT_DYNSYM && i < sh.sh_size / sh.sh_entsize;
		     i++) {
			GElf_Sym sym;
			const char *name;

			if (gelf_getsym(d, (int)i, &sym) && sym.st_shndx == SHN_UNDEF &&
			    (name = elf_strptr(e, sh.sh_link, sym.st_name)) &&
			    !strncmp(name, "dlsym", 5) && (!name[5] || name[5] == '@'))
				*imports_dlsym = true;
		}
		for (size_t i = 0;
		     add && sh.sh_type == SHT_DYNAMIC && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Dyn dyn;
			const char *name;
			char *lib;

			if (!gelf_getdyn(d, (int)i, &dyn) || dyn.d_tag != DT_NEEDED ||
			    !(name = elf_strptr(e, sh.sh_link, dyn.d_un.d_val)) ||
			    !(lib = target_find_library(name)))
				continue;
			if (glibc_object(lib))
				free(lib);
			else
				add(ctx, lib);
		}
	}
	elf_end(e);
	close(fd);
}

struct files {
	VEC_BODY(char *)
};

static void add_file(void *ctx, char *path)
{
	struct files *f = ctx;

	if (VEC_PUSH(*f, path))
		free(path);
}

/* The object whose allocator the process uses: a file it runs (its program,
 * a library it mapped) that defines malloc and is not libc: jemalloc's or
 * tcmalloc's, by their symbols, or another allocator that replaces
 * malloc. NULL for glibc's. The command `--` runs has mapped nothing yet:
 * its program, then what ld.so will map before libc, in its order (the
 * LD_PRELOAD it inherits from us, the libraries the program needs). */
static char *replacement(struct heap *h, pid_t pid, const char *exe, struct found *out)
{
	struct files files = {0};
	char path[64], *text = NULL, *best = NULL;
	struct procmaps_entry *e = NULL;
	size_t ne = 0, len, i;

	if (exe) {
		const char *pre = getenv("LD_PRELOAD");
		char *list = pre ? xstrdup(pre) : NULL, *save = NULL, *tok;

		add_file(&files, xstrdup(exe));
		for (tok = list ? strtok_r(list, ": ", &save) : NULL; tok;
		     tok = strtok_r(NULL, ": ", &save)) {
			char *lib = target_find_library(tok);

			if (lib)
				add_file(&files, lib);
		}
		free(list);
		read_dynamic(exe, add_file, &files, NULL);
	} else if (pid > 0) {
		snprintf(path, sizeof(path), "/proc/%d/maps", pid);
		if (!read_path_all(path, 0, 64 << 20, &text, &len) &&
		    !procmaps_parse(text, len, &e, &ne))
			for (i = 0; i < ne; i++) {
				char buf[PATH_MAX];

				if (!e[i].exec || e[i].path[0] != '/' || glibc_object(e[i].path))
					continue;
				/* Through the process's root: a container's paths. */
				snprintf(buf, sizeof(buf), "/proc/%d/root%s", pid, e[i].path);
				if (VEC_PUSH(files, xstrdup(buf)))
					break;
			}
		procmaps_free(e, ne);
		free(text);
	}
	for (i = 0; i < files.n && !best; i++) {
		struct found f;

		if (scan_file(files.v[i], &f))
			continue;
		if (f.jemalloc || f.tcmalloc || f.has_malloc) {
			const char *name = f.jemalloc ? "jemalloc" : f.tcmalloc ? "tcmalloc" : NULL;
			bool wraps;

			read_dynamic(files.v[i], NULL, NULL, &wraps);
			if (!name && wraps) {
				/* A wrapper that finds the next malloc with dlsym
				 * (RTLD_NEXT), as heaptrack's preloaded library
				 * does: its calls reach the allocator after it,
				 * which is probed. Not its own: a return probe on
				 * its malloc puts the kernel's trampoline in its
				 * return address, and heaptrack, which unwinds
				 * there, lost every frame past it (test_heap's
				 * heap_vs_heaptrack_cxx). */
				info("--heap: pid %d: %s wraps malloc (it imports dlsym): the "
				     "allocator it calls is probed, not it",
				     pid, files.v[i]);
				continue;
			}

			if (!f.has_malloc) {
				/* Prefixed (je_malloc): the program calls those, not
				 * malloc; glibc's functions see none of it. */
				warn("--heap: %s uses %s with prefixed names; its allocations are "
				     "not "
				     "probed (only glibc's malloc and its kin are)",
				     files.v[i], name);
				continue;
			}
			h->allocator = name ? name : "malloc replacement";
			info("--heap: pid %d allocates with %s (%s): its functions are probed", pid,
			     h->allocator, files.v[i]);
			*out = f;
			best = files.v[i];
			files.v[i] = NULL;
		}
	}
	for (i = 0; i < files.n; i++)
		free(files.v[i]);
	VEC_FREE(files);
	return best;
}

/* The system's jemalloc and tcmalloc, probed beside glibc's: a uprobe is
 * placed on a file, and the kernel writes its breakpoints into whatever
 * process maps the file, then or later. So a process that loads one with
 * dlopen after the start, and under -a (pid 0) every process linked with
 * one, has its calls probed; a file no target maps costs nothing. Another
 * allocator (at another path, or mimalloc's) loaded later is not probed:
 * heap_report's warning of no call says so. glibc: its path (not probed
 * twice, should a system link one name to it). */
static void probe_later(struct heap *h, pid_t pid, const char *glibc)
{
	static const char *const libs[] = {"libjemalloc.so.2", "libtcmalloc.so.4",
					   "libtcmalloc_minimal.so.4"};
	int err;

	for (size_t i = 0; i < sizeof(libs) / sizeof(*libs); i++) {
		char *path = target_find_library(libs[i]), real[PATH_MAX], greal[PATH_MAX];
		struct found f;

		if (path && realpath(path, real) && realpath(glibc, greal) && strcmp(real, greal) &&
		    !scan_file(real, &f) && f.has_malloc) {
			/* Not fatal: glibc's are probed, which is what the
			 * targets use now; probe_file has said why. */
			if ((err = probe_file(h, real, &f, pid)))
				warn("--heap: %s not probed: a process that loads it later is "
				     "not followed there",
				     real);
			else
				debug("--heap: %s probed too, for a process that loads it later "
				      "(pid %d)",
				      real, pid);
		}
		free(path);
	}
}

static int heap_attach_one(struct heap *h, pid_t pid, const char *exe)
{
	struct found f;
	char *path = replacement(h, pid, exe, &f);
	bool glibc = !path;
	int err;

	if (!path) {
		path = pid > 0 ? target_probe_object("libc.so.6", pid, NULL)
		       : exe   ? target_probe_object("libc.so.6", 0, exe)
			       : target_find_library("libc.so.6");
		if (!path) {
			err("--heap: libc.so.6 is not mapped in pid %d", pid);
			return -ENOENT;
		}
		if ((err = scan_file(path, &f))) {
			err("--heap: %s: %s", path, strerror(-err));
			free(path);
			return err;
		}
		if (!h->allocator)
			h->allocator = "glibc";
	}
	err = probe_file(h, path, &f, pid);
	if (!err && glibc)
		probe_later(h, pid, path);
	free(path);
	return err;
}

int heap_attach(struct heap *h, const pid_t *pids, int npids, const char *exe)
{
	int i, err;

	if (!npids)
		return heap_attach_one(h, 0, NULL);
	/* One link per process: its breakpoints are written into it alone,
	 * and the machine's other processes never trap on their mallocs. */
	for (i = 0; i < npids; i++)
		if ((err = heap_attach_one(h, pids[i], exe)))
			return err;
	return 0;
}

int heap_on_record(struct heap *h, struct procs *procs, const void *data, size_t size)
{
	const struct ev_heap *e = data;
	struct heap_alloc a;
	struct proc *p;

	if (size < sizeof(*e) || size < sizeof(*e) + e->s.stack_len || e->s.nkernel || e->s.nuser ||
	    e->s.npython || e->s.njvm) {
		h->bad_records++;
		return 0;
	}
	if (proc_intern_record(procs, &e->s, &p, &a.stack))
		return -ENOMEM;
	a.pid = e->hdr.pid;
	a.seq = e->seq;
	a.size = e->size;
	a.window = h->window;
	a.func = e->func < HEAP_NFUNC ? e->func : HEAP_MALLOC;
	a.live = false;
	return VEC_PUSH(h->allocs, a);
}

void heap_detach(struct heap *h)
{
	size_t i;

	if (!h)
		return;
	/* Entries first: a call that starts now is not followed; one in
	 * progress still gets its return. */
	for (i = 0; i < h->fds.n; i += 2)
		close(h->fds.v[i]);
	for (i = 1; i < h->fds.n; i += 2)
		close(h->fds.v[i]);
	for (i = 0; i < h->links.n; i++)
		bpf_link__destroy(h->links.v[i]);
	VEC_FREE(h->fds);
	VEC_FREE(h->links);
}

static int cmp_seq(const void *a, const void *b)
{
	const struct seq_ix *x = a, *y = b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

int heap_collect(struct heap *h)
{
	int fd = bpf_map__fd(h->skel->maps.heap_live), sfd = bpf_map__fd(h->skel->maps.heap_stats);
	int ncpu = libbpf_num_possible_cpus();
	struct seq_ix *ix = calloc(h->allocs.n ? h->allocs.n : 1, sizeof(*ix));
	uint64_t *vals = calloc(ncpu > 0 ? ncpu : 1, sizeof(*vals));
	struct heap_live_key k, *prev = NULL;
	struct heap_live_val v;
	size_t i;
	__u32 s;

	if (!ix || !vals) {
		free(ix);
		free(vals);
		return -ENOMEM;
	}
	for (s = 0; s < HEAP_STAT_NR; s++) {
		h->stats[s] = 0;
		if (!bpf_map_lookup_elem(sfd, &s, vals))
			for (int c = 0; c < ncpu; c++)
				h->stats[s] += vals[c];
	}
	for (i = 0; i < h->allocs.n; i++) {
		h->allocs.v[i].live = false;
		ix[i] = (struct seq_ix){h->allocs.v[i].seq, i};
	}
	qsort(ix, h->allocs.n, sizeof(*ix), cmp_seq);
	h->live_unknown = 0;
	while (!bpf_map_get_next_key(fd, prev, &k)) {
		struct seq_ix key, *hit;

		prev = &k;
		if (bpf_map_lookup_elem(fd, &k, &v))
			continue;
		key.seq = v.seq;
		hit = h->allocs.n ? bsearch(&key, ix, h->allocs.n, sizeof(*ix), cmp_seq) : NULL;
		if (hit)
			h->allocs.v[hit->ix].live = true;
		else
			h->live_unknown++;
	}
	free(ix);
	free(vals);
	return 0;
}

void heap_window_end(struct heap *h)
{
	size_t i, n = 0;

	for (i = 0; i < h->allocs.n; i++)
		if (h->allocs.v[i].live)
			h->allocs.v[n++] = h->allocs.v[i];
	h->allocs.n = n;
	VEC_SHRINK(h->allocs);
	h->window++;
}

void heap_report(const struct heap *h)
{
	const uint64_t *st;

	if (!h)
		return;
	st = h->stats;
	info("--heap: %llu allocation calls (%llu bytes), %llu sampled at a mean of %llu bytes",
	     (unsigned long long)st[HEAP_STAT_CALLS], (unsigned long long)st[HEAP_STAT_BYTES],
	     (unsigned long long)st[HEAP_STAT_SAMPLED], (unsigned long long)h->cfg.rate);
	/* Never an empty profile without a word: an allocator not found (one
	 * loaded with dlopen, a static program's own) looks like this. */
	if (!st[HEAP_STAT_CALLS])
		warn("--heap: no allocation call seen: the targets did not allocate, or not "
		     "with the functions probed (%s's; the system's jemalloc and tcmalloc "
		     "when loaded later, not another allocator loaded with dlopen)",
		     heap_allocator(h));
	if (st[HEAP_STAT_LOST])
		warn("--heap: %llu sampled allocations lost: the ring buffer was full (raise "
		     "--ringbuf-size)",
		     (unsigned long long)st[HEAP_STAT_LOST]);
	if (st[HEAP_STAT_LIVE_FULL])
		warn("--heap: %llu sampled allocations not followed to their free: the map of "
		     "blocks in use was full; they count as allocated, not in use",
		     (unsigned long long)st[HEAP_STAT_LIVE_FULL]);
	if (h->bad_records)
		warn("--heap: %llu malformed records dropped", (unsigned long long)h->bad_records);
}

void heap_free(struct heap *h)
{
	if (!h)
		return;
	heap_detach(h);
	heap_bpf__destroy(h->skel);
	VEC_FREE(h->allocs);
	free(h);
}
