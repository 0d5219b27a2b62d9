#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "formats/xray_fdr.h"
#include "formats/xray_map.h"
#include "user/outdir.h"
#include "user/run_info.h"
#include "user/offcpu.h"
#include "user/proc.h"
#include "user/symbols.h"
#include "user/util.h"
#include "user/xray.h"

/* Where each function is, for the map's DWARF (llvm-xray prints it before
 * the name): its source file and first line, or the object it is in and
 * line 0; file NULL until a frame or probe of it is seen. By id - 1. */
struct fsrc {
	char *file;
	uint32_t line;
};

struct xray {
	struct xray_cfg cfg;
	/* Function names and ids, shared by every process's trace and map. */
	VEC(char *) fnames;
	struct idtab fname_tab;
	VEC(struct fsrc) fsrcs;
};

int xray_new(struct xray **out)
{
	*out = calloc(1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	(*out)->cfg.version = 5;
	return 0;
}

void xray_configure(struct xray *x, const struct xray_cfg *c)
{
	x->cfg = *c;
}

static bool fname_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct xray *x = ctx;

	return !strcmp(x->fnames.v[id], key);
}

uint32_t xray_func_id(struct xray *x, const char *name)
{
	uint64_t h = hash_bytes(name, strlen(name));
	uint32_t id = idtab_find(&x->fname_tab, h, fname_eq, x, name);

	if (id != UINT32_MAX)
		return id + 1;
	if (x->fnames.n >= FDR_MAX_FUNC_ID || VEC_RESERVE(x->fsrcs, x->fnames.n + 1) ||
	    VEC_PUSH(x->fnames, xstrdup(name)))
		return 0;
	x->fsrcs.v[x->fsrcs.n++] = (struct fsrc){NULL, 0};
	if (idtab_insert(&x->fname_tab, h, x->fnames.n - 1))
		return 0;
	return x->fnames.n;
}

/* Sets id's source once: the source line at file offset start_off of sf
 * where it has debug info, else object. */
static void set_source(struct xray *x, uint32_t id, struct symfile *sf, uint64_t start_off,
		       const char *object)
{
	struct fsrc *s = id && id <= x->fsrcs.n ? &x->fsrcs.v[id - 1] : NULL;
	const char *file = NULL;
	int line = 0;

	if (!s || s->file)
		return;
	if (sf && start_off != UINT64_MAX && !symfile_srcline(sf, start_off, &file, &line) && file)
		s->line = line > 0 ? line : 0;
	else
		file = object && *object ? object : "[unknown]";
	s->file = xstrdup(file);
}

uint32_t xray_func_id_at(struct xray *x, const char *name, struct symfile *sf, uint64_t start_off,
			 const char *object)
{
	uint32_t id = xray_func_id(x, name);

	set_source(x, id, sf, start_off, object);
	return id;
}

/* The source of a sampled frame's function: at its symbol's start, as
 * llvm-symbolizer names the function's address in the binary itself. */
static void frame_source(struct xray *x, uint32_t id, const struct frame_iter *it)
{
	const struct frame *f = it->f;
	struct symfile *sf = f->kind == FRAME_USER && f->map ? f->map->sym : NULL;
	uint64_t vaddr, start, off = UINT64_MAX;
	struct fsrc *s = id && id <= x->fsrcs.n ? &x->fsrcs.v[id - 1] : NULL;

	/* A name source's frame (Python's): its file and first line. */
	if (s && !s->file && f->kind == FRAME_USER && !f->map && f->pc >= SOURCE_PC_BASE &&
	    f->pc != TRUNCATED_PC) {
		char buf[64];
		const char *file = NULL;
		int line = 0;

		frame_iter_name(it, buf, sizeof(buf), NULL, &file, &line);
		if (file) {
			s->file = xstrdup(file);
			line = frame_start_line(it->p, f, it->s->time_ns);
			s->line = line > 0 ? line : 0;
			return;
		}
	}
	if (f->kind == FRAME_KERNEL) {
		set_source(x, id, NULL, 0, f->module ? f->module : "[kernel.kallsyms]");
		return;
	}
	if (sf && f->name &&
	    symfile_lookup(sf, f->pc - f->map->start + f->map->offset, &vaddr, &start, NULL))
		off = symfile_offset(sf, start);
	set_source(x, id, sf, off, f->map && *f->map->path ? f->map->path : "[anon]");
}

static struct fdr *new_writer(const struct xray *x, const struct proc *p)
{
	struct fdr_opts o = {
	    .version = x->cfg.version,
	    .pid = p->pid,
	    .buffer_size = x->cfg.buffer_size,
	    .flight_recorder_bytes = x->cfg.flight_recorder,
	    .wall_sec = x->cfg.start_realtime_ns / 1000000000ULL,
	    .wall_usec = x->cfg.start_realtime_ns % 1000000000ULL / 1000,
	};

	return fdr_new(&o);
}

int xray_on_call(struct xray *x, struct proc *p, const struct ev_call *c, uint32_t func_id,
		 unsigned kind)
{
	uint64_t args[MAX_TRACE_ARGS];
	unsigned i, n = c->nargs > MAX_TRACE_ARGS ? MAX_TRACE_ARGS : c->nargs;

	if (!p->exact && !(p->exact = new_writer(x, p)))
		return -ENOMEM;
	for (i = 0; i < n; i++)
		args[i] = c->args[i];
	if (kind == CALL_ENTRY)
		return fdr_func(p->exact, c->hdr.tid, c->hdr.cpu, c->hdr.time_ns, FDR_ENTRY,
				func_id, args, n);
	return fdr_func(p->exact, c->hdr.tid, c->hdr.cpu, c->hdr.time_ns, FDR_EXIT, func_id, NULL,
			0);
}

void xray_close_calls(struct procs *procs, uint64_t ts)
{
	size_t i;

	for (i = 0; i < procs->v.n; i++)
		if (procs->v.v[i]->exact && fdr_close_open(procs->v.v[i]->exact, ts))
			warn("pid %d: out of memory closing its traced calls", procs->v.v[i]->pid);
}

int xray_on_migrate(struct proc *p, const struct ev_hdr *h)
{
	struct migration m = {h->tid, h->cpu, h->time_ns};
	int err;

	if (p->exact && (err = fdr_cpu(p->exact, h->tid, h->cpu, h->time_ns)))
		return err;
	return VEC_PUSH(p->migrations, m);
}

/* A thread's timeline, in time order: samples, migrations and off-CPU
 * waits (their start; the end is the wait's). */
struct tl_ev {
	uint64_t ts;
	uint32_t tid;
	uint32_t idx; /* sample index, or migration index | MIGRATION, or wait index | WAIT */
};
#define MIGRATION 0x80000000u
#define WAIT	  0x40000000u

static int cmp_tl(const void *a, const void *b)
{
	const struct tl_ev *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Each sample's stack, root first, as function ids; only its user frames
 * with user_only. */
static int stack_ids(struct xray *x, struct proc *p, const struct sample *s, uint32_t *ids,
		     bool user_only)
{
	struct frame_iter it;
	char buf[PATH_MAX + 4];
	int n = 0;

	frame_iter_init(&it, p, s, true);
	while (frame_iter_next(&it)) {
		uint32_t id;

		if (user_only && it.f->kind == FRAME_KERNEL)
			continue;
		id = xray_func_id(x, frame_iter_name(&it, buf, sizeof(buf), NULL, NULL, NULL));

		if (id && !x->fsrcs.v[id - 1].file)
			frame_source(x, id, &it);
		if (id)
			ids[n++] = id;
	}
	return n;
}

/* A sample's stack_ids, looked up once per stable stack
 * (proc_stack_stable): a deep stack's 600 frames were named and looked up
 * again for every sample, at the stop, in time that grew with the
 * recording. at[stack]: 0 not seen, UINT32_MAX not stable (each sample
 * named at its time), else 1 + the place in ids of its count, then its
 * ids. */
struct ids_memo {
	uint32_t *at;
	size_t nat;
	VEC(uint32_t) ids;
};

static int sample_ids(struct xray *x, struct proc *p, const struct sample *s, uint32_t *ids,
		      struct ids_memo *m)
{
	uint32_t *at = m->at && s->stack < m->nat ? &m->at[s->stack] : NULL;
	int n;

	if (at && *at && *at != UINT32_MAX) {
		n = (int)m->ids.v[*at - 1];
		memcpy(ids, &m->ids.v[*at], n * sizeof(*ids));
		return n;
	}
	n = stack_ids(x, p, s, ids, false);
	if (at && !*at && !proc_stack_stable(p, s->stack))
		*at = UINT32_MAX;
	else if (at && !*at && !VEC_RESERVE(m->ids, m->ids.n + n + 1)) {
		m->ids.v[m->ids.n++] = (uint32_t)n;
		*at = (uint32_t)m->ids.n;
		memcpy(&m->ids.v[m->ids.n], ids, n * sizeof(*ids));
		m->ids.n += n;
	}
	return n;
}

/* Sampled timeline: per thread, compare consecutive samples' stacks from
 * the root down; frames that went away exit, frames that appeared enter, at
 * the sample's kernel timestamp. */
/* An off-CPU wait: the thread's user frames, then a frame that names the
 * wait ("[off-cpu] do_nanosleep"), from its start to its end. */
static int wait_ids(struct xray *x, struct proc *p, const struct offcpu_wait *wt, uint32_t *ids)
{
	struct sample s = {.stack = wt->stack, .tid = wt->tid, .time_ns = wt->start_ns};
	int n = wt->stack < p->stack_off.n ? stack_ids(x, p, &s, ids, true) : 0;
	uint32_t id = xray_func_id(x, wt->what);

	set_source(x, id, NULL, 0, "[off-cpu]");
	if (id && n < MAX_STACK_FRAMES)
		ids[n++] = id;
	return n;
}

static int write_sampled(struct xray *x, const struct offcpu *oc, struct proc *p, FILE *f)
{
	struct tl_ev *ev;
	size_t nw, i, k = 0;
	const struct offcpu_wait *waits = offcpu_waits_of(oc, p, &nw);
	size_t n = p->samples.n + p->migrations.n + nw;
	uint32_t prev[MAX_STACK_FRAMES], cur[MAX_STACK_FRAMES];
	int np = 0, nc, j, err = 0, c;
	/* The thread's last event: its frames end there (one period after a
	 * sample, at the end of a wait). */
	uint32_t last_tid = 0, last_cpu = 0;
	uint64_t last_end = 0, exit_ts;
	bool after_wait = false; /* the thread's last event was a wait */
	struct fdr *w;
	struct ids_memo memo = {0}; /* without its memory: each sample looked up */

	if (!p->samples.n && !nw)
		return -ENODATA;
	ev = calloc(n, sizeof(*ev));
	w = new_writer(x, p);
	if (!ev || !w) {
		free(ev);
		fdr_free(w);
		return -ENOMEM;
	}
	if ((memo.at = calloc(p->stack_off.n ? p->stack_off.n : 1, sizeof(*memo.at))))
		memo.nat = p->stack_off.n;
	for (i = 0; i < p->samples.n; i++)
		ev[k++] = (struct tl_ev){p->samples.v[i].time_ns, p->samples.v[i].tid, i};
	for (i = 0; i < p->migrations.n; i++)
		ev[k++] = (struct tl_ev){p->migrations.v[i].time_ns, p->migrations.v[i].tid,
					 i | MIGRATION};
	for (i = 0; i < nw; i++)
		ev[k++] = (struct tl_ev){waits[i].start_ns, waits[i].tid, (uint32_t)i | WAIT};
	qsort(ev, n, sizeof(*ev), cmp_tl);
	for (i = 0; i <= n && !err; i++) {
		const struct sample *s;

		/* A thread's events are done: its frames end one period after
		 * its last sample. */
		if (np && (i == n || ev[i].tid != last_tid)) {
			for (j = np; j-- > 0 && !err;)
				err = fdr_func(w, last_tid, last_cpu, last_end, FDR_EXIT, prev[j],
					       NULL, 0);
			np = 0;
		}
		if (i < n && ev[i].tid != last_tid)
			after_wait = false;
		if (i == n)
			break;
		if (ev[i].idx & MIGRATION) {
			/* Only inside a thread's sampled span: it has no CPU before. */
			if (np)
				err =
				    fdr_cpu(w, ev[i].tid,
					    p->migrations.v[ev[i].idx & ~MIGRATION].cpu, ev[i].ts);
			continue;
		}
		if (ev[i].idx & WAIT) {
			const struct offcpu_wait *wt = &waits[ev[i].idx & ~WAIT];

			nc = wait_ids(x, p, wt, cur);
			last_cpu = wt->cpu;
		} else {
			s = &p->samples.v[ev[i].idx];
			nc = sample_ids(x, p, s, cur, &memo);
			last_cpu = s->cpu;
		}
		/* After a wait, the frames this event does not share with it
		 * end where the wait ended, at its exact time: the on-CPU
		 * stretch from there to this event is the shared frames'
		 * (the thread left the wait's system call at its end). */
		exit_ts = after_wait && last_end < ev[i].ts ? last_end : ev[i].ts;
		last_tid = ev[i].tid;
		for (c = 0; c < np && c < nc && prev[c] == cur[c]; c++)
			;
		for (j = np; j-- > c && !err;)
			err = fdr_func(w, last_tid, last_cpu, exit_ts, FDR_EXIT, prev[j], NULL, 0);
		for (j = c; j < nc && !err; j++)
			err = fdr_func(w, last_tid, last_cpu, ev[i].ts, FDR_ENTRY, cur[j], NULL, 0);
		memcpy(prev, cur, nc * sizeof(*cur));
		np = nc;
		after_wait = ev[i].idx & WAIT;
		if (ev[i].idx & WAIT) {
			/* The wait's frame ends with it; its callers stay open
			 * until the thread's next event, and those it does not
			 * share end at this end (exit_ts). */
			last_end = waits[ev[i].idx & ~WAIT].end_ns;
			if (np && !err)
				err = fdr_func(w, last_tid, last_cpu, last_end, FDR_EXIT,
					       prev[--np], NULL, 0);
		} else {
			last_end = ev[i].ts + x->cfg.period_ns;
		}
	}
	if (!err)
		err = fdr_write(w, f);
	free(memo.at);
	VEC_FREE(memo.ids);
	fdr_free(w);
	free(ev);
	return err;
}

static int write_exact(struct proc *p, FILE *f)
{
	return p->exact ? fdr_write(p->exact, f) : -ENODATA;
}

static int write_map(const struct xray *x, int fd)
{
	struct xray_map_func *fn = calloc(x->fnames.n ? x->fnames.n : 1, sizeof(*fn));
	size_t i;
	int err;

	if (!fn)
		return -ENOMEM;
	for (i = 0; i < x->fnames.n; i++) {
		fn[i].name = x->fnames.v[i];
		fn[i].file = x->fsrcs.v[i].file;
		fn[i].line = x->fsrcs.v[i].line;
	}
	err = xray_map_write(fd, fn, x->fnames.n);
	free(fn);
	return err;
}

static int fill_map(void *ctx, FILE *f, int fd)
{
	fflush(f);
	return write_map(ctx, fd);
}

/* A process's sampled timeline, with the registry that names its frames. */
struct sampled_ctx {
	struct xray *x;
	const struct offcpu *oc;
	struct proc *p;
};

static int fill_sampled(void *ctx, FILE *f, int fd)
{
	const struct sampled_ctx *c = ctx;

	(void)fd;
	return write_sampled(c->x, c->oc, c->p, f);
}

static int fill_exact(void *ctx, FILE *f, int fd)
{
	(void)fd;
	return write_exact(ctx, f);
}

/* The command that opens a trace: llvm-xray account where it is there,
 * else the trace's path alone. */
static void xray_cmd(const struct run_info *ri, const char *map, const char *name, char *cmd,
		     size_t len)
{
	if (ri->readers.llvm_xray)
		snprintf(cmd, len, "llvm-xray account -m %s/%s %s/%s", ri->outdir, map, ri->outdir,
			 name);
	else
		snprintf(cmd, len, "%s/%s", ri->outdir, name);
}

/* The XRay trace(s) of a process and the map that names their ids. */
int xray_write_files(const struct run_info *ri, struct proc *p, const char *suffix, bool sampled)
{
	char name[96], map[96], cmd[3 * PATH_MAX];
	size_t before, after;
	int first = 0;

	outdir_written(&before);
	snprintf(map, sizeof(map), "xray-%d.map", p->pid);
	if (sampled) {
		struct sampled_ctx sc = {ri->xray, ri->offcpu, p};

		snprintf(name, sizeof(name), "xray-%d%s.fdr", p->pid, suffix);
		xray_cmd(ri, map, name, cmd, sizeof(cmd));
		OUT_FIRST(first, outdir_emit(ri->out, name, p->pid, cmd, fill_sampled, &sc));
	}
	snprintf(name, sizeof(name), "xray-trace-%d%s.fdr", p->pid, suffix);
	xray_cmd(ri, map, name, cmd, sizeof(cmd));
	OUT_FIRST(first, outdir_emit(ri->out, name, p->pid, cmd, fill_exact, p));
	/* Written after the traces: their writing gave the last ids names. */
	if (outdir_written(&after), after > before) {
		snprintf(cmd, sizeof(cmd), "%s%s/%s",
			 ri->readers.llvm_xray ? "llvm-xray extract " : "", ri->outdir, map);
		OUT_FIRST(first, outdir_emit(ri->out, map, p->pid, cmd, fill_map, ri->xray));
	}
	return first;
}

void xray_proc_free(struct proc *p)
{
	fdr_free(p->exact);
	p->exact = NULL;
	VEC_FREE(p->migrations);
}

void xray_free(struct xray *x)
{
	size_t i;

	if (!x)
		return;
	for (i = 0; i < x->fnames.n; i++) {
		free(x->fnames.v[i]);
		free(x->fsrcs.v[i].file);
	}
	VEC_FREE(x->fnames);
	VEC_FREE(x->fsrcs);
	idtab_free(&x->fname_tab);
	free(x);
}
