#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "trace.skel.h"
#include "formats/procmaps.h"
#include "user/target.h"
#include "user/symbols.h"
#include "user/trace.h"
#include "user/util.h"
#include "user/xray.h"

/* Debian 12's libbpf 1.1 and its uapi headers predate uprobe_multi (Linux
 * 6.6); the kernel has it, so the link is created with the raw syscall. */
#define UPROBE_MULTI_RETURN 1u

struct link_create_uprobe_multi {
	__u32 prog_fd;
	__u32 target_fd;
	__u32 attach_type;
	__u32 flags;
	__u64 path;
	__u64 offsets;
	__u64 ref_ctr_offsets;
	__u64 cookies;
	__u32 cnt;
	__u32 umflags;
	__u32 pid;
	__u32 pad[7]; /* the rest of union bpf_attr's link_create, zeroed */
};

int uprobe_multi_link(int prog_fd, const char *path, const uint64_t *offsets,
		      const uint64_t *cookies, size_t n, bool ret, pid_t pid)
{
	struct link_create_uprobe_multi a;
	int fd;

	memset(&a, 0, sizeof(a));
	a.prog_fd = prog_fd;
	a.attach_type = ATTACH_TRACE_UPROBE_MULTI;
	a.path = (uintptr_t)path;
	a.offsets = (uintptr_t)offsets;
	a.cookies = (uintptr_t)cookies;
	a.cnt = n;
	a.umflags = ret ? UPROBE_MULTI_RETURN : 0;
	a.pid = pid > 0 ? (__u32)pid : 0;
	fd = syscall(SYS_bpf, BPF_LINK_CREATE, &a, sizeof(a));
	return fd < 0 ? -errno : fd;
}

struct matches {
	struct trace_links *links;
	const char *glob, *path;
	struct symfile *sf;
	dev_t dev;
	ino_t ino;
	size_t matched; /* functions matched, probed already or not */
	VEC(uint64_t) offsets;
	VEC(uint64_t) cookies;
};

/* Addresses probed already, by any pattern: a function two patterns name
 * (-t free -t __libc_free) is probed once, or each call would be recorded
 * twice. */
struct probed_addr {
	dev_t dev;
	ino_t ino;
	uint64_t off;
};
static VEC(struct probed_addr) probed_addrs;
static struct idtab probed_addr_tab;

static bool probed_addr_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct probed_addr *a = &probed_addrs.v[id], *b = key;

	(void)ctx;
	return a->dev == b->dev && a->ino == b->ino && a->off == b->off;
}

/* 1 when the address was probed already, else records it: 0, or -ENOMEM. */
static int probe_once(dev_t dev, ino_t ino, uint64_t off)
{
	struct probed_addr a = {dev, ino, off};
	uint64_t h = hash_u64(hash_u64(dev ^ (ino << 20)) ^ off);

	if (idtab_find(&probed_addr_tab, h, probed_addr_eq, NULL, &a) != UINT32_MAX)
		return 1;
	if (VEC_PUSH(probed_addrs, a))
		return -ENOMEM;
	if (idtab_insert(&probed_addr_tab, h, probed_addrs.n - 1)) {
		probed_addrs.n--;
		return -ENOMEM;
	}
	return 0;
}

/* Whether any name of the symbol matches: its own, its demangled one, and
 * with its version (free@GLIBC_2.2.5, and free@@GLIBC_2.2.5 for the
 * default one), as the symbol table or .gnu.version gives it; the version
 * is no part of the name otherwise. */
static bool sym_matches(const char *glob, const struct symfile_sym *s)
{
	size_t n = strcspn(s->name, "@");
	char buf[1024];

	if (!fnmatch(glob, s->name, 0) || !fnmatch(glob, s->display, 0))
		return true;
	if (s->name[n] && n < sizeof(buf)) { /* a .symtab name with its version */
		snprintf(buf, sizeof(buf), "%.*s", (int)n, s->name);
		if (!fnmatch(glob, buf, 0))
			return true;
	}
	if (!s->version)
		return false;
	snprintf(buf, sizeof(buf), "%s@%s", s->name, s->version);
	if (!fnmatch(glob, buf, 0))
		return true;
	snprintf(buf, sizeof(buf), "%s@@%s", s->name, s->version);
	return !s->hidden && !fnmatch(glob, buf, 0);
}

/* Adds a probed function to the list the end reports, and room for its
 * count. 0 or -ENOMEM. */
static int list_func(struct trace_links *l, uint32_t id, const char *name, const char *path)
{
	const char *base = strrchr(path, '/');
	struct trace_func f = {id, strdup(name), strdup(base ? base + 1 : path)};
	size_t old = l->calls_cap;

	if (!f.name || !f.obj ||
	    fmt_grow((void **)&l->funcs, &l->funcs_cap, l->nlisted + 1, sizeof(f)) ||
	    fmt_grow((void **)&l->calls, &l->calls_cap, id + 1, sizeof(*l->calls))) {
		free(f.name);
		free(f.obj);
		return -ENOMEM;
	}
	memset(l->calls + old, 0, (l->calls_cap - old) * sizeof(*l->calls));
	l->funcs[l->nlisted++] = f;
	return 0;
}

void trace_count_call(struct trace_links *l, uint32_t id)
{
	if (id < l->calls_cap)
		l->calls[id]++;
}

uint64_t trace_calls_of(const struct trace_links *l, uint32_t id)
{
	return id < l->calls_cap ? l->calls[id] : 0;
}

static const struct trace_links *sort_links; /* qsort has no context */

static int cmp_by_calls(const void *a, const void *b)
{
	const struct trace_func *x = *(const struct trace_func *const *)a;
	const struct trace_func *y = *(const struct trace_func *const *)b;
	uint64_t cx = trace_calls_of(sort_links, x->id), cy = trace_calls_of(sort_links, y->id);

	if (cx != cy)
		return cx > cy ? -1 : 1;
	return strcmp(x->name, y->name);
}

size_t trace_funcs(const struct trace_links *l, const struct trace_func **out[])
{
	const struct trace_func **v = l->nlisted ? calloc(l->nlisted, sizeof(*v)) : NULL;
	bool *seen = l->calls_cap ? calloc(l->calls_cap, sizeof(*seen)) : NULL;
	size_t i, n = 0;

	*out = NULL;
	if (!v || !seen) {
		free(v);
		free(seen);
		return 0;
	}
	for (i = 0; i < l->nlisted; i++)
		if (!seen[l->funcs[i].id]) {
			seen[l->funcs[i].id] = true;
			v[n++] = &l->funcs[i];
		}
	free(seen);
	sort_links = l;
	qsort(v, n, sizeof(*v), cmp_by_calls);
	*out = v;
	return n;
}

/* At most this many lines of the list: -t 'libc.so.6:*' probes thousands. */
#define REPORT_MAX 20

void trace_report(const struct trace_links *l)
{
	const struct trace_func **v;
	size_t n = trace_funcs(l, &v), i, never = 0;

	for (i = 0; i < n; i++)
		never += !trace_calls_of(l, v[i]->id);
	if (n)
		info("-t: %zu functions traced, %zu of them called:", n, n - never);
	for (i = 0; i < n && i < REPORT_MAX && trace_calls_of(l, v[i]->id); i++)
		info("  %-40s %12llu calls  (%s)", v[i]->name,
		     (unsigned long long)trace_calls_of(l, v[i]->id), v[i]->obj);
	if (i < n - never)
		info("  ... and %zu more called (summary.json lists them all)", n - never - i);
	/* Never called: probed, yet no call seen. The usual reason is that
	 * the compiler inlined its callers' copies, which the probe on the
	 * function's own body never sees. */
	for (i = n - never; i < n && i < n - never + REPORT_MAX; i++)
		warn("-t: %s (%s) was never called: its callers may run an inlined copy, "
		     "which a uprobe on its own body does not see",
		     v[i]->name, v[i]->obj);
	if (never > REPORT_MAX)
		warn("-t: ... and %zu more functions never called (summary.json lists them)",
		     never - REPORT_MAX);
	free(v);
}

static int match_sym(void *ctx, const struct symfile_sym *s)
{
	struct matches *m = ctx;
	uint64_t off;
	int r;

	if (!sym_matches(m->glob, s))
		return 0;
	off = symfile_offset(m->sf, s->vaddr);
	if (off == UINT64_MAX)
		return 0;
	m->matched++;
	/* Aliases share an address: one probe. */
	if ((r = probe_once(m->dev, m->ino, off)))
		return r < 0 ? r : 0;
	/* Named as the samples name the address, whichever alias matched. */
	if (VEC_PUSH(m->offsets, off) ||
	    VEC_PUSH(m->cookies,
		     (uint64_t)xray_func_id_at(m->links->xray, s->primary, m->sf, off, m->path)))
		return -ENOMEM;
	if (list_func(m->links, m->cookies.v[m->cookies.n - 1], s->primary, m->path))
		return -ENOMEM;
	debug("-t %s: %s at %#llx (file offset) in %s", m->glob, s->primary,
	      (unsigned long long)off, m->path);
	return 0;
}

/* (file, pattern) pairs probed already: uprobes are per inode, and two -p
 * processes of one program would otherwise report each call twice. */
struct probed {
	dev_t dev;
	ino_t ino;
	const char *glob;
};
static VEC(struct probed) probed;

/* How many processes other than ours and those recorded map the file's
 * code: not those that map it only to read it (a profiler's symbol tables,
 * as libelf maps them), which never run into the probes. Recorded: in the
 * BPF targets (targets_fd), which hold the -p targets and, followed under
 * inheritance, their descendants (nginx's workers, PostgreSQL's backends),
 * not the -p pids alone. */
static size_t others_mapping(const struct stat *file, int targets_fd)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	size_t others = 0;

	while (d && (de = readdir(d))) {
		struct procmaps_entry *e = NULL;
		char path[64], *text, *end;
		size_t n = 0, i, len;
		long pid = strtol(de->d_name, &end, 10);
		bool maps = false;
		__u32 key = (__u32)pid;
		__u8 one;

		if (*end || pid <= 0 || pid > INT_MAX || pid == getpid() ||
		    !bpf_map_lookup_elem(targets_fd, &key, &one))
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/maps", pid);
		if (read_path_all(path, 0, 64 << 20, &text, &len))
			continue; /* gone, or a kernel thread's empty maps */
		if (!procmaps_parse(text, len, &e, &n))
			for (i = 0; i < n && !maps; i++)
				maps = e[i].exec && e[i].inode == file->st_ino &&
				       makedev(e[i].dev_major, e[i].dev_minor) == file->st_dev;
		procmaps_free(e, n);
		free(text);
		if (maps)
			debug("-t: pid %ld runs the file too", pid);
		others += maps;
	}
	if (d)
		closedir(d);
	return others;
}

/* path: the file opened and probed; name: the file's path as every output
 * names it (path's own but for /proc/PID/exe, see exe_name). */
static int attach_one(struct trace_bpf *skel, const char *path, const char *name, const char *glob,
		      struct trace_links *out)
{
	struct matches m = {.links = out, .glob = glob, .path = name};
	struct probed pr = {.glob = glob};
	struct stat st;
	bool first = true; /* the file's first pattern */
	int fd, err = 0;
	size_t i, others;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		err = fd < 0 ? -errno : -EINVAL;
		err("-t %s: %s: %s", glob, path, fd < 0 ? strerror(-err) : "not a regular file");
		if (fd >= 0)
			close(fd);
		return err;
	}
	for (i = 0; i < probed.n; i++) {
		if (probed.v[i].dev != st.st_dev || probed.v[i].ino != st.st_ino)
			continue;
		first = false;
		if (!strcmp(probed.v[i].glob, glob)) {
			close(fd);
			return 0;
		}
	}
	pr.dev = st.st_dev;
	pr.ino = st.st_ino;
	if (VEC_PUSH(probed, pr)) {
		close(fd);
		return -ENOMEM;
	}
	m.dev = st.st_dev;
	m.ino = st.st_ino;
	m.sf = symfile_get(fd, path);
	close(fd);
	if (!m.sf) {
		err("-t %s: %s: not an ELF file", glob, path);
		return -ENOEXEC;
	}
	err = symfile_foreach(m.sf, match_sym, &m);
	if (err)
		goto out;
	if (!m.matched) {
		err("-t %s: no function matches in %s", glob, name);
		err = -ENOENT;
		goto out;
	}
	if (!m.offsets.n) {
		debug("-t %s: its functions in %s are traced already", glob, name);
		goto out;
	}
	/* A uprobe is on the file, not on a process: every process that runs
	 * the function takes the probe's trap (libc's write in every server
	 * on the machine), though only the targets' calls are recorded. */
	if (first && (others = others_mapping(&st, bpf_map__fd(skel->maps.targets))))
		warn("-t %s: %s is mapped by %zu other process%s: uprobes are per file, so "
		     "their calls of the probed functions are slowed too (not recorded)",
		     glob, name, others, others == 1 ? "" : "es");
	if (out->multi != 0 && !out->by_ip) {
		int e = uprobe_multi_link(bpf_program__fd(skel->progs.on_entry_multi), path,
					  m.offsets.v, m.cookies.v, m.offsets.n, false, 0);
		int r = e >= 0
			    ? uprobe_multi_link(bpf_program__fd(skel->progs.on_return_multi), path,
						m.offsets.v, m.cookies.v, m.offsets.n, true, 0)
			    : e;

		if (e >= 0 && r >= 0) {
			/* Grown in place or not at all: detach closes the
			 * nfds it has, which must stay readable. */
			if (fmt_grow((void **)&out->fds, &out->fds_cap, out->nfds + 2,
				     sizeof(*out->fds))) {
				close(e);
				close(r);
				err = -ENOMEM;
				goto out;
			}
			out->fds[out->nfds++] = e;
			out->fds[out->nfds++] = r;
			out->multi = 1;
			out->nfuncs += m.offsets.n;
			debug("traced %zu functions in %s with uprobe_multi", m.offsets.n, path);
			goto out;
		}
		if (e >= 0)
			close(e);
		if (out->multi == 1) { /* worked before: a real error */
			err = e < 0 ? e : r;
			err("-t %s: uprobe_multi on %s: %s", glob, path, strerror(-err));
			goto out;
		}
		debug("uprobe_multi: %s; one uprobe per function", strerror(-(e < 0 ? e : r)));
		out->multi = 0;
	}
	for (i = 0; i < m.offsets.n; i++) {
		LIBBPF_OPTS(bpf_uprobe_opts, o, .bpf_cookie = out->by_ip ? 0 : m.cookies.v[i]);
		struct bpf_program *entry =
		    out->by_ip ? skel->progs.on_entry_ip : skel->progs.on_entry;
		struct bpf_program *ret =
		    out->by_ip ? skel->progs.on_return_ip : skel->progs.on_return;
		struct bpf_link *l[2];
		int k;

		if (out->by_ip) {
			struct traced_fn fn = {st.st_dev, st.st_ino, m.offsets.v[i],
					       m.cookies.v[i]};

			if (fmt_grow((void **)&out->fns, &out->fns_cap, out->nfns + 1,
				     sizeof(fn))) {
				err = -ENOMEM;
				goto out;
			}
			out->fns[out->nfns++] = fn;
		}
		l[0] = bpf_program__attach_uprobe_opts(entry, -1, path, m.offsets.v[i], &o);
		o.retprobe = true;
		l[1] = l[0] ? bpf_program__attach_uprobe_opts(ret, -1, path, m.offsets.v[i], &o)
			    : NULL;
		if (!l[0] || !l[1]) {
			err = -errno;
			bpf_link__destroy(l[0]);
			err("attach uprobe %s:0x%llx: %s", path, (unsigned long long)m.offsets.v[i],
			    strerror(-err));
			goto out;
		}
		if (fmt_grow((void **)&out->links, &out->links_cap, out->nlinks + 2,
			     sizeof(*out->links))) {
			bpf_link__destroy(l[0]);
			bpf_link__destroy(l[1]);
			err = -ENOMEM;
			goto out;
		}
		for (k = 0; k < 2; k++)
			out->links[out->nlinks++] = l[k];
	}
	out->nfuncs += m.offsets.n;
out:
	VEC_FREE(m.offsets);
	VEC_FREE(m.cookies);
	return err;
}

static int cmp_fn(const void *a, const void *b);

/* The file a process runs, by the path /proc/PID/exe links to: the link's
 * own name, "exe", would name the program in the list at the end,
 * summary.json and the XRay map. A replaced file's " (deleted)" is left
 * out, as /proc/PID/maps's paths are read. The link itself if unreadable. */
static char *exe_name(const char *link)
{
	char buf[PATH_MAX];
	ssize_t n = readlink(link, buf, sizeof(buf) - 1);

	if (n <= 0)
		return xstrdup(link);
	buf[n] = 0;
	if (n > 10 && !strcmp(buf + n - 10, " (deleted)"))
		buf[n - 10] = 0;
	return xstrdup(buf);
}

int trace_attach(struct trace_bpf *skel, char *const *specs, int nspecs, const pid_t *pids,
		 int npids, const char *exe, struct trace_links *out)
{
	int i, j, err;

	out->multi = out->by_ip ? 0 : -1; /* -1: unknown, try it */
	for (i = 0; i < nspecs; i++) {
		const char *colon = strrchr(specs[i], ':');
		char obj[PATH_MAX] = "";
		const char *glob = specs[i];

		if (colon) {
			snprintf(obj, sizeof(obj), "%.*s", (int)(colon - specs[i]), specs[i]);
			glob = colon + 1;
		}
		if (!*glob) {
			err("-t %s: empty function pattern", specs[i]);
			return -EINVAL;
		}
		if (exe) {
			char *path = *obj ? target_probe_object(obj, 0, exe) : xstrdup(exe);

			if (!path) {
				err("-t %s: library %s not found", specs[i], obj);
				return -ENOENT;
			}
			err = attach_one(skel, path, path, glob, out);
			free(path);
			if (err == -ENOMEM)
				err("-t %s: out of memory", specs[i]);
			if (err)
				return err;
			continue;
		}
		for (j = 0; j < npids; j++) {
			char buf[64], *path, *name = NULL;

			if (*obj) {
				path = target_probe_object(obj, pids[j], NULL);
			} else {
				/* Opened through the link: a container's path is
				 * not this host's. */
				snprintf(buf, sizeof(buf), "/proc/%d/exe", pids[j]);
				path = xstrdup(buf);
				name = exe_name(buf);
			}
			if (!path) {
				err("-t %s: %s is not mapped in pid %d", specs[i], obj, pids[j]);
				return -ENOENT;
			}
			err = attach_one(skel, path, name ? name : path, glob, out);
			free(path);
			free(name);
			if (err == -ENOMEM)
				err("-t %s: out of memory", specs[i]);
			if (err)
				return err;
		}
	}
	if (out->nfns) /* fns is NULL with cookies; qsort wants a pointer */
		qsort(out->fns, out->nfns, sizeof(*out->fns), cmp_fn);
	return 0;
}

void trace_prepare(struct trace_bpf *t, bool uprobes, bool cookies, struct trace_links *l)
{
	struct bpf_program *progs[] = {t->progs.on_entry,	t->progs.on_return,
				       t->progs.on_entry_multi, t->progs.on_return_multi,
				       t->progs.on_entry_ip,	t->progs.on_return_ip};
	size_t i;

	bpf_program__set_expected_attach_type(t->progs.on_entry_multi, ATTACH_TRACE_UPROBE_MULTI);
	bpf_program__set_expected_attach_type(t->progs.on_return_multi, ATTACH_TRACE_UPROBE_MULTI);
	l->by_ip = !cookies;
	for (i = 0; i < sizeof(progs) / sizeof(progs[0]); i++) {
		/* Attached by hand, with cookies; only the tracepoint autoattaches. */
		bpf_program__set_autoattach(progs[i], false);
		/* The _ip pair (the last two) where the kernel has no cookies. */
		bpf_program__set_autoload(progs[i], uprobes && (i >= 4) == l->by_ip);
	}
}

static int cmp_fn(const void *a, const void *b)
{
	const struct traced_fn *x = a, *y = b;

	/* Not by device: overlayfs (containers, the kernel matrix's guests)
	 * gives stat() another st_dev than /proc/PID/maps shows. */
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

uint32_t trace_func_at(const struct trace_links *l, uint64_t dev, uint64_t ino, uint64_t off)
{
	struct traced_fn k = {.dev = dev, .ino = ino, .off = off};
	const struct traced_fn *f =
	    l->nfns ? bsearch(&k, l->fns, l->nfns, sizeof(k), cmp_fn) : NULL;

	return f ? f->id : 0;
}

void trace_detach(struct trace_links *l)
{
	int i;

	/* Entries first: no call starts once the stop has begun. (Pairs are
	 * stored entry, return.) Returns that still come are dropped after
	 * the stop's time, and the calls still open closed at it. */
	for (i = 0; i < l->nlinks; i += 2)
		bpf_link__destroy(l->links[i]);
	for (i = 1; i < l->nlinks; i += 2)
		bpf_link__destroy(l->links[i]);
	for (i = 0; i < l->nfds; i += 2)
		close(l->fds[i]);
	for (i = 1; i < l->nfds; i += 2)
		close(l->fds[i]);
	free(l->links);
	free(l->fds);
	l->links = NULL;
	l->fds = NULL;
	l->nlinks = l->nfds = 0;
	l->links_cap = l->fds_cap = 0;
	VEC_FREE(probed);
	VEC_FREE(probed_addrs);
	idtab_free(&probed_addr_tab);
}

void trace_free(struct trace_links *l)
{
	size_t i;

	trace_detach(l);
	free(l->fns);
	for (i = 0; i < l->nlisted; i++) {
		free(l->funcs[i].name);
		free(l->funcs[i].obj);
	}
	free(l->funcs);
	free(l->calls);
	memset(l, 0, sizeof(*l));
}
