#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "usdt.skel.h"
#include "bpf/events.h"
#include "formats/stapsdt.h"
#include "user/target.h"
#include "user/proc.h"
#include "user/trace.h"
#include "user/usdt.h"
#include "user/util.h"
#include "user/xray.h"

/* What a probe is to the trace. */
enum usdt_kind { U_INSTANT, U_START, U_END };

struct uprobe {
	char *provider, *name; /* as in the note, for attaching */
	char *path;	       /* the binary attached */
	enum usdt_kind kind;
	/* The XRay function: the pair's ("provider:STEM") or the instant's
	 * ("provider:name"); 0 when named by the arguments (by_args). */
	uint32_t func_id;
	/* The pair's continuation, "provider:STEM [cont.]": where an interval
	 * outlives one opened inside it, see usdt_on_event. */
	uint32_t cont_id;
	bool by_args;
	unsigned nargs; /* the probe's arguments */
	uint64_t fired; /* firings drained */
};

/* A string argument's text, by process and pointer (the latest sent). */
struct ustr {
	pid_t pid;
	uint64_t ptr;
	char *s; /* sanitized */
};

/* A function named by its arguments, by process and the two pointers. */
struct uname_id {
	pid_t pid;
	uint64_t p0, p1;
	uint32_t id;
};

/* The USDT intervals a thread has open, outermost first: key, the pair's
 * function; written, the function its entry was written as (the key, or
 * its continuation). A done that finds none of its pair open is an
 * instant (CPython 3.11's function__entry never fires, its
 * function__return does: CPython gh-98894). */
struct uframe {
	uint32_t key, written, cont;
};
struct uthread {
	uint32_t tid;
	VEC(struct uframe) open;
};

/* Strings kept at most (each at most USDT_STR_LEN bytes): memory stays
 * bounded whatever a process sends; beyond, names are "[unknown]". */
#define USDT_MAX_STRS (1u << 18)

/* An attached probe (per process where the kernel needs it), and whether
 * it is a done. */
struct ulink {
	struct bpf_link *l;
	bool end;
};

struct usdt {
	struct usdt_cfg cfg;
	struct usdt_bpf *skel;
	VEC(struct uprobe) probes;
	VEC(struct ulink) links;
	VEC(struct ustr) strs;
	struct idtab str_tab;
	VEC(struct uname_id) names;
	struct idtab name_tab;
	VEC(struct uthread) threads;
	struct idtab thread_tab;
	uint64_t lone_ends;    /* dones with no start open: instants */
	uint64_t cuts;	       /* intervals cut and continued (see usdt_on_event) */
	uint64_t strs_dropped; /* over USDT_MAX_STRS */
	uint64_t bad_probe;    /* records naming no probe of ours */
};

/* Suffixes that make a probe the start or the end of its STEM's pair. */
static const char *const start_sfx[] = {"__start", "__entry", "__begin", NULL};
static const char *const end_sfx[] = {"__done", "__return", "__end", "__commit", "__abort", NULL};

/* The length of name's stem when it ends in one of sfx, else 0. */
static size_t stem_len(const char *name, const char *const *sfx)
{
	size_t n = strlen(name), i;

	for (i = 0; sfx[i]; i++) {
		size_t k = strlen(sfx[i]);

		if (n > k && !strcmp(name + n - k, sfx[i]))
			return n - k;
	}
	return 0;
}

/* Probes named by their arguments: argument 0 the file, 1 the function
 * (CPython's function__entry and function__return). */
static bool named_by_args(const char *provider, const char *name)
{
	return !strcmp(provider, "python") &&
	       (!strcmp(name, "function__entry") || !strcmp(name, "function__return"));
}

/* The probes of one binary, from its .note.stapsdt: one entry per
 * (provider, name), whatever its sites. */
struct note_probe {
	char *provider, *name;
	uint64_t semaphore;
	unsigned nargs;
	bool want;
	bool named; /* by its own name, not a glob */
	bool lone;  /* a start or end without its partner: an instant */
};
struct notes {
	VEC(struct note_probe) v;
	bool pic; /* ET_DYN: a PIE or a library, mapped anywhere */
};

static int add_note(void *ctx, const struct stapsdt_probe *p)
{
	struct notes *n = ctx;
	struct note_probe np;
	size_t i;

	for (i = 0; i < n->v.n; i++)
		if (!strcmp(n->v.v[i].provider, p->provider) && !strcmp(n->v.v[i].name, p->name))
			return 0;
	np = (struct note_probe){.provider = xstrdup(p->provider),
				 .name = xstrdup(p->name),
				 .semaphore = p->semaphore,
				 .nargs = p->nargs};
	return VEC_PUSH(n->v, np);
}

static void notes_free(struct notes *n)
{
	size_t i;

	for (i = 0; i < n->v.n; i++) {
		free(n->v.v[i].provider);
		free(n->v.v[i].name);
	}
	VEC_FREE(n->v);
}

/* The one place that reads a binary's probe names. 0, -ENOENT (no probe
 * notes) or -errno. */
static int read_notes(const char *path, struct notes *out)
{
	int fd = open_regular(path, 0), err = -ENOENT;
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	Elf *e;

	if (fd < 0)
		return fd;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	GElf_Ehdr eh;

	if (!e || elf_kind(e) != ELF_K_ELF || gelf_getclass(e) != ELFCLASS64 ||
	    elf_getshdrstrndx(e, &shstrndx) || !gelf_getehdr(e, &eh)) {
		err = -ENOEXEC;
		goto out;
	}
	out->pic = eh.e_type == ET_DYN;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *name;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		name = elf_strptr(e, shstrndx, sh.sh_name);
		if (!name || strcmp(name, ".note.stapsdt"))
			continue;
		d = elf_rawdata(scn, NULL);
		if (!d || !d->d_buf) {
			err = -ENOEXEC;
			break;
		}
		err = stapsdt_parse(d->d_buf, d->d_size, add_note, out);
		if (!err && !out->v.n)
			err = -ENOENT;
		break;
	}
out:
	if (e)
		elf_end(e);
	close(fd);
	return err;
}

/* The probes' names, for an error: "a, b, c" (the first few). */
static void list_probes(const struct notes *n, char *buf, size_t cap)
{
	size_t i, len = 0;

	buf[0] = 0;
	for (i = 0; i < n->v.n && len + 1 < cap; i++) {
		int w = snprintf(buf + len, cap - len, "%s%s", i ? ", " : "", n->v.v[i].name);

		if (w < 0 || (size_t)w >= cap - len || (i >= 12 && i + 1 < n->v.n)) {
			snprintf(buf + len, cap - len, ", ... (%zu in all)", n->v.n);
			return;
		}
		len += w;
	}
}

static struct note_probe *find_note(struct notes *n, const char *provider, const char *name,
				    size_t stem, const char *const *sfx)
{
	size_t i, j;

	for (i = 0; i < n->v.n; i++) {
		const char *nm = n->v.v[i].name;

		if (strcmp(n->v.v[i].provider, provider) || strncmp(nm, name, stem))
			continue;
		for (j = 0; sfx[j]; j++)
			if (!strcmp(nm + stem, sfx[j]))
				return &n->v.v[i];
	}
	return NULL;
}

/* Marks the pair partners of each wanted probe as wanted. A probe asked for
 * by its name whose partner the binary lacks is an error (-ENOENT after a
 * message); one a glob matched is recorded as an instant. */
static int want_pairs(struct notes *n, const char *spec, const char *path)
{
	size_t i, cnt = n->v.n, s;

	for (i = 0; i < cnt; i++) {
		struct note_probe *p = &n->v.v[i], *q;
		bool found = false;
		size_t j;

		if (!p->want)
			continue;
		if ((s = stem_len(p->name, start_sfx))) {
			for (j = 0; j < cnt; j++) {
				q = &n->v.v[j];
				if (!strcmp(q->provider, p->provider) &&
				    !strncmp(q->name, p->name, s) &&
				    stem_len(q->name, end_sfx) == s) {
					q->want = found = true;
				}
			}
			if (!found && !p->named) {
				p->lone = true;
			} else if (!found) {
				err("-t %s: %s:%s has no done/return probe to pair with in %s",
				    spec, p->provider, p->name, path);
				return -ENOENT;
			}
		} else if ((s = stem_len(p->name, end_sfx))) {
			q = find_note(n, p->provider, p->name, s, start_sfx);
			if (!q && !p->named) {
				p->lone = true;
				continue;
			}
			if (!q) {
				err("-t %s: %s:%s has no start/entry probe to pair with in %s",
				    spec, p->provider, p->name, path);
				return -ENOENT;
			}
			q->want = true;
		}
	}
	return 0;
}

/* The binary a spec names: mapped by a target, else as `--` runs it
 * (target_probe_object, the resolver -t uses too). */
static char *resolve_bin(const char *bin, const pid_t *pids, int npids, const char *exe)
{
	char *path;
	int i;

	for (i = 0; i < npids; i++)
		if ((path = target_probe_object(bin, pids[i], NULL)))
			return path;
	return target_probe_object(bin, 0, exe);
}

/* The processes to attach a probe of the binary to: every one (-1) where
 * the kernel has BPF cookies or the binary is mapped at a fixed address;
 * else (libbpf finds a firing's spec from its absolute address, which a
 * PIE's or a library's mapping moves) each target, and no other. */
static const pid_t every_process = -1;

static int attach_probe(struct usdt *u, const char *spec, const char *path,
			const struct note_probe *np, const pid_t *pids, int npids)
{
	struct uprobe p = {0};
	LIBBPF_OPTS(bpf_usdt_opts, o);
	struct bpf_link *l;
	unsigned want_args = u->cfg.trace_args, strs = 0;
	size_t s;
	int i;
	char name[512];
	int err;

	p.provider = xstrdup(np->provider);
	p.name = xstrdup(np->name);
	p.path = xstrdup(path);
	p.nargs = np->nargs;
	if (!np->lone && (s = stem_len(np->name, start_sfx)))
		p.kind = U_START;
	else if (!np->lone && (s = stem_len(np->name, end_sfx)))
		p.kind = U_END;
	else
		s = strlen(np->name);
	p.by_args = p.kind != U_INSTANT && named_by_args(np->provider, np->name);
	if (p.by_args) {
		strs = 3;
		if (want_args < 2)
			want_args = 2;
	} else {
		/* Names from the file, sanitized as every name from outside. */
		char raw[512];

		snprintf(raw, sizeof(raw), "%s:%.*s", np->provider, (int)s, np->name);
		fmt_sanitize(name, sizeof(name), raw, strlen(raw));
		p.func_id = xray_func_id(u->cfg.xray, name);
		char cont[sizeof(name) + 16];

		snprintf(cont, sizeof(cont), "%s [cont.]", name);
		p.cont_id = xray_func_id(u->cfg.xray, cont);
		if (!p.func_id || !p.cont_id) {
			err("-t %s: out of XRay function ids", spec);
			return -ENOSPC;
		}
	}
	if (want_args > np->nargs)
		want_args = np->nargs;
	if (want_args > MAX_TRACE_ARGS)
		want_args = MAX_TRACE_ARGS;
	o.usdt_cookie = USDT_COOKIE(u->probes.n, strs, want_args);
	/* Every process of the binary (BPF keeps the recorded ones), or each
	 * target's. */
	for (i = 0; i < npids; i++) {
		struct ulink ul;

		l = bpf_program__attach_usdt(u->skel->progs.on_usdt, pids[i], path, np->provider,
					     np->name, &o);
		if (!l) {
			err = -errno;
			err("-t %s: attach %s:%s in %s: %s", spec, np->provider, np->name, path,
			    strerror(-err));
			return err;
		}
		ul = (struct ulink){l, p.kind == U_END};
		if (VEC_PUSH(u->links, ul)) {
			bpf_link__destroy(l);
			return -ENOMEM;
		}
	}
	if (VEC_PUSH(u->probes, p))
		return -ENOMEM;
	debug("usdt %s:%s in %s (%s)", np->provider, np->name, path,
	      p.kind == U_START ? "start"
	      : p.kind == U_END ? "end"
				: "instant");
	return 0;
}

static int attach_spec(struct usdt *u, const char *spec, const pid_t *pids, int npids,
		       const char *exe)
{
	const char *rest = spec + strlen("usdt:"), *colon = strrchr(rest, ':');
	char *bin, *globs, *g, *save = NULL, *path, list[1024];
	struct notes n = {0};
	bool need_sem = false;
	size_t i;
	int err;

	if (!colon || colon == rest || !colon[1]) {
		err("-t %s: expected usdt:BINARY:PROBE[,PROBE...]", spec);
		return -EINVAL;
	}
	bin = strndup(rest, colon - rest);
	globs = xstrdup(colon + 1);
	path = bin ? resolve_bin(bin, pids, npids, exe) : NULL;
	if (!path) {
		err("-t %s: %s: no such binary%s", spec, bin ? bin : "?",
		    npids ? " (as a path, a target's file or in PATH)" : " (as a path or in PATH)");
		err = -ENOENT;
		goto out;
	}
	err = read_notes(path, &n);
	if (err) {
		err("-t %s: %s: %s", spec, path,
		    err == -ENOENT ? "has no USDT probes (no .note.stapsdt)" : strerror(-err));
		goto out;
	}
	for (g = strtok_r(globs, ",", &save); g; g = strtok_r(NULL, ",", &save)) {
		bool any = false;

		for (i = 0; i < n.v.n; i++)
			if (!fnmatch(g, n.v.v[i].name, 0)) {
				n.v.v[i].want = any = true;
				n.v.v[i].named |= !strpbrk(g, "*?[");
			}
		if (!any) {
			list_probes(&n, list, sizeof(list));
			err("-t %s: %s has no probe %s (its probes: %s)", spec, path, g, list);
			err = -ENOENT;
			goto out;
		}
	}
	if ((err = want_pairs(&n, spec, path)))
		goto out;
	for (i = 0; i < n.v.n; i++)
		need_sem |= n.v.v[i].want && n.v.v[i].semaphore;
	if (need_sem && !u->cfg.ref_ctr) {
		struct utsname un;

		uname(&un);
		err("-t %s: kernel %s cannot set USDT semaphores (no uprobe reference counters, "
		    "Linux 4.20+), and %s's probes fire only when set",
		    spec, un.release, path);
		err = -EOPNOTSUPP;
		goto out;
	}
	if (!u->cfg.cookies && n.pic) {
		/* libbpf 1.1 refuses a PIE's or a library's probes for every
		 * process without BPF cookies; a command not started has no
		 * address space yet to attach to. */
		if (!npids) {
			err("-t %s: kernel without BPF cookies (5.15): the probes of %s, a "
			    "position-independent binary, attach only to running processes (-p)",
			    spec, path);
			err = -EOPNOTSUPP;
			goto out;
		}
		warn("-t %s: kernel without BPF cookies (5.15): %s's probes attached to the -p "
		     "processes only, not to the children they fork",
		     spec, path);
	} else {
		pids = &every_process;
		npids = 1;
	}
	for (i = 0; i < n.v.n && !err; i++)
		if (n.v.v[i].want)
			err = attach_probe(u, spec, path, &n.v.v[i], pids, npids);
out:
	notes_free(&n);
	free(bin);
	free(globs);
	free(path);
	return err;
}

int usdt_new(const struct usdt_cfg *c, struct usdt **out)
{
	struct usdt *u = calloc(1, sizeof(*u));
	struct usdt_bpf *s;
	int err;

	*out = NULL;
	if (!u) {
		err("usdt: %s", strerror(ENOMEM));
		return -1;
	}
	u->cfg = *c;
	s = u->skel = usdt_bpf__open();
	if (!s) {
		err("open BPF USDT program: %s", strerror(errno));
		free(u);
		return -1;
	}
	s->rodata->filter_pids = !c->all;
	s->rodata->self_tgid = getpid();
	s->rodata->wakeup_bytes = c->wakeup_bytes;
	err = bpf_map__reuse_fd(s->maps.events, c->events_fd);
	if (!err)
		err = bpf_map__reuse_fd(s->maps.targets, c->targets_fd);
	if (!err)
		err = bpf_map__reuse_fd(s->maps.stats, c->stats_fd);
	if (!err)
		err = usdt_bpf__load(s);
	if (err) {
		err("load BPF USDT program: %s", strerror(-err));
		usdt_free(u);
		return -1;
	}
	*out = u;
	return 0;
}

int usdt_attach(struct usdt *u, const pid_t *pids, int npids, const char *exe)
{
	int i;

	for (i = 0; i < u->cfg.nspecs; i++)
		if (attach_spec(u, u->cfg.specs[i], pids, npids, exe))
			return -1;
	info("tracing %zu USDT probes", u->probes.n);
	return 0;
}

void usdt_detach(struct usdt *u)
{
	size_t i;

	if (!u)
		return;
	/* Starts first: no interval begins once the stop has. */
	for (i = 0; i < u->links.n; i++)
		if (!u->links.v[i].end)
			bpf_link__destroy(u->links.v[i].l);
	for (i = 0; i < u->links.n; i++)
		if (u->links.v[i].end)
			bpf_link__destroy(u->links.v[i].l);
	VEC_FREE(u->links);
}

static uint64_t str_hash(pid_t pid, uint64_t ptr)
{
	return hash_u64(ptr ^ hash_u64((uint64_t)pid));
}

static bool str_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct usdt *u = ctx;
	const struct ustr *k = key;

	return u->strs.v[id].pid == k->pid && u->strs.v[id].ptr == k->ptr;
}

static const char *str_at(const struct usdt *u, pid_t pid, uint64_t ptr)
{
	struct ustr k = {.pid = pid, .ptr = ptr};
	uint32_t id = idtab_find(&u->str_tab, str_hash(pid, ptr), str_eq, u, &k);

	return id == UINT32_MAX ? NULL : u->strs.v[id].s;
}

static bool name_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct usdt *u = ctx;
	const struct uname_id *k = key, *v = &u->names.v[id];

	return v->pid == k->pid && v->p0 == k->p0 && v->p1 == k->p1;
}

static int on_str(struct usdt *u, const struct ev_usdt_str *e, size_t size)
{
	size_t fixed = sizeof(*e) - USDT_STR_LEN, n;
	struct ustr k = {.pid = e->hdr.pid, .ptr = e->ptr};
	uint64_t h = str_hash(k.pid, k.ptr);
	uint32_t id;
	char *s;

	if (size < fixed + (e->len < USDT_STR_LEN ? e->len : USDT_STR_LEN))
		return 0;
	n = strnlen(e->s, e->len < USDT_STR_LEN ? e->len : USDT_STR_LEN);
	if (!(s = fmt_sanitize_dup(e->s, n)))
		return -ENOMEM;
	id = idtab_find(&u->str_tab, h, str_eq, u, &k);
	if (id != UINT32_MAX) {
		/* Another string at a pointer seen before: the names made
		 * from the old one are forgotten. */
		free(u->strs.v[id].s);
		u->strs.v[id].s = s;
		u->names.n = 0;
		idtab_clear(&u->name_tab);
		return 0;
	}
	if (u->strs.n >= USDT_MAX_STRS) {
		u->strs_dropped++;
		free(s);
		return 0;
	}
	k.s = s;
	if (VEC_PUSH(u->strs, k) || idtab_insert(&u->str_tab, h, u->strs.n - 1)) {
		free(s);
		return -ENOMEM;
	}
	return 0;
}

/* The XRay function of a call named by its arguments: "file:function". */
static uint32_t id_by_args(struct usdt *u, pid_t pid, uint64_t p0, uint64_t p1)
{
	struct uname_id k = {pid, p0, p1, 0};
	uint64_t h = hash_u64(p1 ^ hash_u64(p0 ^ hash_u64((uint64_t)pid)));
	uint32_t i = idtab_find(&u->name_tab, h, name_eq, u, &k);
	const char *file, *fn;
	char name[2 * USDT_STR_LEN + 2];

	if (i != UINT32_MAX)
		return u->names.v[i].id;
	file = str_at(u, pid, p0);
	fn = str_at(u, pid, p1);
	snprintf(name, sizeof(name), "%s:%s", file ? file : "[unknown]", fn ? fn : "[unknown]");
	k.id = xray_func_id(u->cfg.xray, name);
	/* Not kept when a name is missing: its string may come later. */
	if (k.id && file && fn && !VEC_PUSH(u->names, k))
		idtab_insert(&u->name_tab, h, u->names.n - 1);
	return k.id;
}

static bool thread_eq(const void *ctx, uint32_t i, const void *key)
{
	const struct usdt *u = ctx;

	return u->threads.v[i].tid == *(const uint32_t *)key;
}

/* The thread's open intervals, found or added (NULL on ENOMEM). */
static struct uthread *thread_of(struct usdt *u, uint32_t tid)
{
	uint64_t h = hash_u64(tid);
	uint32_t i = idtab_find(&u->thread_tab, h, thread_eq, u, &tid);
	struct uthread t = {.tid = tid};

	if (i != UINT32_MAX)
		return &u->threads.v[i];
	if (VEC_PUSH(u->threads, t) || idtab_insert(&u->thread_tab, h, u->threads.n - 1))
		return NULL;
	return &u->threads.v[u->threads.n - 1];
}

/* A done of the pair key, whose start is open at index k of the thread's
 * intervals. XRay nests a thread's calls, and USDT pairs need not: a
 * PostgreSQL transaction starts inside its BEGIN query and outlives it.
 * The intervals opened inside k and still open are exited here, k with
 * them, and they are entered again at once as their continuations
 * ("provider:STEM [cont.]"): each pair is counted once under its name,
 * and its time is the sum of both names'. (-t calls open inside are
 * exited by the writer, and not entered again.) */
static int end_at(struct usdt *u, struct proc *pr, struct uthread *t, size_t k, struct ev_call *c)
{
	size_t j;
	int err = 0;

	c->nargs = 0;
	for (j = t->open.n; j-- > k && !err;)
		err = xray_on_call(u->cfg.xray, pr, c, t->open.v[j].written, CALL_EXIT);
	for (j = k + 1; j < t->open.n && !err; j++) {
		t->open.v[j].written = t->open.v[j].cont;
		err = xray_on_call(u->cfg.xray, pr, c, t->open.v[j].written, CALL_ENTRY);
		u->cuts++;
	}
	memmove(&t->open.v[k], &t->open.v[k + 1], (t->open.n - k - 1) * sizeof(t->open.v[0]));
	t->open.n--;
	return err;
}

int usdt_on_event(struct usdt *u, struct procs *procs, const struct ev_hdr *h, size_t size,
		  uint64_t stop_ns)
{
	const struct ev_usdt *e = (const void *)h;
	size_t fixed = sizeof(*e) - sizeof(e->args);
	struct ev_call c = {.hdr = *h};
	struct uprobe *p;
	struct uthread *t = NULL;
	size_t k;
	struct proc *pr;
	uint32_t id;
	unsigned n;

	if (!u || (stop_ns && h->time_ns > stop_ns))
		return 0;
	if (h->type == EV_USDT_STR)
		return size >= sizeof(*h) ? on_str(u, (const void *)h, size) : 0;
	if (size < fixed || e->nargs > MAX_TRACE_ARGS || size < fixed + e->nargs * sizeof(__u64))
		return 0;
	if (e->probe >= u->probes.n) {
		u->bad_probe++;
		return 0;
	}
	p = &u->probes.v[e->probe];
	p->fired++;
	if (!(pr = proc_get(procs, h->pid, h->tid == h->pid ? e->comm : NULL)))
		return -ENOMEM;
	id = p->func_id;
	if (p->by_args)
		id = e->nargs >= 2 ? id_by_args(u, h->pid, e->args[0], e->args[1]) : 0;
	if (!id)
		return 0;
	/* The arguments asked for (--trace-args), at a start or an instant. */
	n = u->cfg.trace_args < e->nargs ? u->cfg.trace_args : e->nargs;
	memcpy(c.args, e->args, n * sizeof(__u64));
	c.nargs = n;
	c.func_id = id;
	if (p->kind != U_INSTANT && !(t = thread_of(u, h->tid)))
		return -ENOMEM;
	if (p->kind == U_END) {
		for (k = t->open.n; k-- > 0;)
			if (t->open.v[k].key == id)
				return end_at(u, pr, t, k, &c);
		u->lone_ends++;
	}
	if (p->kind == U_START) {
		struct uframe f = {id, id, p->by_args ? id : p->cont_id};

		if (VEC_PUSH(t->open, f))
			return -ENOMEM;
	}
	if (xray_on_call(u->cfg.xray, pr, &c, id, CALL_ENTRY))
		return -ENOMEM;
	return p->kind != U_START ? xray_on_call(u->cfg.xray, pr, &c, id, CALL_EXIT) : 0;
}

void usdt_report(const struct usdt *u, const uint64_t *st)
{
	size_t i, j;

	if (!u)
		return;
	if (st[STAT_USDT_LOST])
		warn("%" PRIu64 " USDT probe firings lost: the ring buffer was full (raise "
		     "--ringbuf-size); their intervals are missing or end at the stop",
		     st[STAT_USDT_LOST]);
	if (st[STAT_USDT_STR_FAULT])
		warn("%" PRIu64 " USDT string arguments could not be read (paged out or not "
		     "strings): their names are [unknown]",
		     st[STAT_USDT_STR_FAULT]);
	if (u->strs_dropped)
		warn("%" PRIu64 " USDT string arguments not kept (over %u distinct): their "
		     "names are [unknown]",
		     u->strs_dropped, USDT_MAX_STRS);
	/* A pair whose start never fired while its done did: its dones were
	 * instants, without durations. CPython 3.11's function__entry is
	 * such a probe (its interpreter never reaches it: gh-98894). */
	for (i = 0; i < u->probes.n; i++) {
		const struct uprobe *e = &u->probes.v[i];

		if (e->kind != U_END || !e->fired)
			continue;
		for (j = 0; j < u->probes.n; j++) {
			const struct uprobe *s = &u->probes.v[j];
			size_t n = stem_len(s->name, start_sfx);

			if (s->kind == U_START && !s->fired && !strcmp(s->provider, e->provider) &&
			    !strcmp(s->path, e->path) && n == stem_len(e->name, end_sfx) &&
			    !strncmp(s->name, e->name, n))
				warn("usdt %s:%s fired %" PRIu64 " times and %s never: each was "
				     "written as an instant, without a duration%s",
				     e->provider, e->name, e->fired, s->name,
				     !strcmp(e->provider, "python")
					 ? " (CPython 3.11's function__entry never fires: "
					   "CPython gh-98894)"
					 : "");
		}
	}
}

int usdt_probe_stat(const struct usdt *u, size_t i, struct usdt_probe_stat *out)
{
	const struct uprobe *p;

	if (!u || i >= u->probes.n)
		return -ENOENT;
	p = &u->probes.v[i];
	*out = (struct usdt_probe_stat){p->provider, p->name, p->path, p->fired};
	return 0;
}

uint64_t usdt_strs_dropped(const struct usdt *u)
{
	return u ? u->strs_dropped : 0;
}

uint64_t usdt_lone_ends(const struct usdt *u)
{
	return u ? u->lone_ends : 0;
}

uint64_t usdt_cuts(const struct usdt *u)
{
	return u ? u->cuts : 0;
}

void usdt_free(struct usdt *u)
{
	size_t i;

	if (!u)
		return;
	usdt_detach(u);
	usdt_bpf__destroy(u->skel);
	for (i = 0; i < u->probes.n; i++) {
		free(u->probes.v[i].provider);
		free(u->probes.v[i].name);
		free(u->probes.v[i].path);
	}
	VEC_FREE(u->probes);
	for (i = 0; i < u->strs.n; i++)
		free(u->strs.v[i].s);
	VEC_FREE(u->strs);
	idtab_free(&u->str_tab);
	VEC_FREE(u->names);
	idtab_free(&u->name_tab);
	for (i = 0; i < u->threads.n; i++)
		VEC_FREE(u->threads.v[i].open);
	VEC_FREE(u->threads);
	idtab_free(&u->thread_tab);
	free(u);
}
