/* profile.pb.gz: every process's samples, with pid, tid, comm and cpu
 * labels, written with formats/pprof.c. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "formats/pprof.h"
#include "user/offcpu.h"
#include "user/outdir.h"
#include "user/proc.h"
#include "user/symbols.h"
#include "user/util.h"
#include "user/writers.h"

static uint64_t kernel_mapping(struct pprof *pp)
{
	return pprof_mapping(pp, 0xffff800000000000ULL, UINT64_MAX, 0, "[kernel.kallsyms]", NULL,
			     true);
}

static uint64_t frame_location(struct pprof *pp, const struct frame *f, const char *name,
			       const char *system_name, const char *file, int line, int start_line,
			       uint64_t *kmap)
{
	struct pprof_line l = {.function = name,
			       .system_name = system_name,
			       .filename = file,
			       .line = line,
			       .start_line = start_line};
	uint64_t mapping = 0;

	/* A name source's function (Python's <module>, <lambda>) has no system
	 * name. Written as its name too, it is one that pprof's reader takes
	 * for demangled C++, cutting the <...> out of it: <module> whole, a
	 * blank name (-top's <unknown>). An empty one says there is none, and
	 * the reader keeps the name. */
	if (f->kind == FRAME_USER && !f->map && f->pc >= SOURCE_PC_BASE && f->pc != TRUNCATED_PC &&
	    !system_name)
		l.system_name = "";
	if (f->kind == FRAME_KERNEL) {
		if (!*kmap)
			*kmap = kernel_mapping(pp);
		mapping = *kmap;
		if (f->module)
			l.filename = f->module;
	} else if (f->map) {
		const char *bid = f->map->sym ? symfile_build_id(f->map->sym) : NULL;

		/* The same mapping's id each time: pprof interns them. */
		mapping = pprof_mapping(pp, f->map->start, f->map->end, f->map->offset,
					f->map->path, bid, true);
		if (!mapping)
			return 0;
	}
	return pprof_location(pp, mapping, f->pc, &l, 1);
}

/* A program's mapping, kept for the profile's "File:" (set_program). */
struct program {
	uint64_t nsamples, start, end, offset;
	char *path, *build_id;
};

/* The profile of the processes folded as they go (output.c's fold): each
 * one a scope, spilled to a nameless file. Frames get no source lines
 * then: reading a program's DWARF for them took 0.1 s and more per program
 * with debug info, in the middle of the drain (short-lived processes then
 * exited before their maps were read), and kept it all in memory, so that
 * the recorder grew with every program the host ran. */
struct pprof_fold {
	struct pprof *pp;
	uint64_t kmap;		/* the kernel's mapping in pp */
	struct program program; /* of the folded process with the most samples */
	bool warned;
	const struct offcpu *offcpu; /* run_info's */
};

/* A sample's frames as locations, leaf first, into locs; with their source
 * lines when lines is set. loc_of keeps each frame's location by id (0:
 * not made yet). The number of them, or -ENOMEM. */
int pprof_stack_locs(struct pprof *pp, struct proc *p, const struct sample *s, uint64_t *loc_of,
		     uint64_t *locs, uint64_t *kmap, bool lines)
{
	struct frame_iter it;
	int n = 0;

	frame_iter_init(&it, p, s, false);
	while (frame_iter_next(&it)) {
		char buf[PATH_MAX + 4];
		const char *name, *system_name, *file = NULL;
		int line = 0;

		if (!it.stable || !loc_of[it.id]) {
			name = frame_iter_name(&it, buf, sizeof(buf), &system_name,
					       lines ? &file : NULL, &line);
			/* A source's frame (Python's): its function's first line. */
			locs[n] = frame_location(
			    pp, it.f, name, system_name, file, line,
			    lines && !it.stable ? frame_start_line(p, it.f, s->time_ns) : 0, kmap);
			if (it.stable)
				loc_of[it.id] = locs[n];
		} else {
			locs[n] = loc_of[it.id];
		}
		if (!locs[n++])
			return -ENOMEM;
	}
	return n;
}

/* --off-cpu: the process's waits, as offcpu time of their stacks, labelled
 * with their kind. */
static int add_offcpu(struct pprof *pp, const struct offcpu *oc, struct proc *p, uint64_t *loc_of,
		      uint64_t *kmap, bool lines)
{
	uint64_t locs[MAX_STACK_FRAMES];
	size_t n, j;
	const struct offcpu_sum *s = offcpu_sums_of(oc, p, &n);
	int nl = 0;

	for (j = 0; j < n && nl >= 0; j++) {
		const struct thread *t = proc_thread_find(p, s[j].tid);
		struct pprof_label labels[4] = {
		    {.key = "pid", .num = p->pid, .num_unit = "pid"},
		    {.key = "tid", .num = s[j].tid, .num_unit = "tid"},
		    {.key = "comm", .str = t && t->comm[0] ? t->comm : p->comm},
		    {.key = "offcpu", .str = offcpu_kind_name(s[j].kind)},
		};
		struct sample smp = {.stack = s[j].stack, .tid = s[j].tid};

		/* A stack forgotten since (output_fold_live) or never sent
		 * (its record lost, or the sums' map full): a frame that
		 * says so, since pprof leaves samples without a location out
		 * of its views (-top's rows, -tags), and the wait's time
		 * would then be missing from them. */
		if (s[j].stack < p->stack_off.n) {
			nl = pprof_stack_locs(pp, p, &smp, loc_of, locs, kmap, lines);
		} else {
			struct pprof_line l = {.function = "[off-cpu] stack not recorded"};

			locs[0] = pprof_location(pp, 0, 0, &l, 1);
			nl = locs[0] ? 1 : -ENOMEM;
		}
		if (nl >= 0)
			nl = pprof_add_offcpu(pp, locs, nl, s[j].ns, s[j].count, labels, 4);
	}
	return nl < 0 ? nl : 0;
}

/* A process's samples into the profile, each frame a location; with their
 * source lines when lines is set. */
static int add_proc(struct pprof *pp, const struct offcpu *oc, struct proc *p, uint64_t *kmap,
		    bool lines)
{
	uint64_t locs[MAX_STACK_FRAMES];
	uint64_t *loc_of = calloc(p->frames.n ? p->frames.n : 1, sizeof(*loc_of));
	struct sample *ms = malloc((p->samples.n ? p->samples.n : 1) * sizeof(*ms));
	ssize_t nm = ms ? proc_samples_merged(p, 0, p->samples.n, ms) : -ENOMEM;
	size_t j;
	int err = nm < 0 ? (int)nm : 0, n;

	if (!loc_of)
		err = -ENOMEM;
	/* Each distinct stack once: the profile adds them up anyway. */
	for (j = 0; !err && j < (size_t)nm; j++) {
		const struct sample *s = &ms[j];
		const struct thread *t = proc_thread_find(p, s->tid);
		struct pprof_label labels[4] = {
		    /* Units keep value 0 (cpu 0, pid 0): pprof drops a
		     * numeric label that is 0 and has no unit. */
		    {.key = "pid", .num = p->pid, .num_unit = "pid"},
		    {.key = "tid", .num = s->tid, .num_unit = "tid"},
		    {.key = "comm", .str = t && t->comm[0] ? t->comm : p->comm},
		    {.key = "cpu", .num = s->cpu, .num_unit = "cpu"},
		};

		n = pprof_stack_locs(pp, p, s, loc_of, locs, kmap, lines);
		err = n < 0 ? n : pprof_add_sample(pp, locs, n, s->count, labels, 4);
	}
	if (!err && oc)
		err = add_offcpu(pp, oc, p, loc_of, kmap, lines);
	free(ms);
	free(loc_of);
	return err;
}

/* The program of the process with the most samples: pprof shows the first
 * mapping as the profile's ("File:"), which would otherwise be whatever
 * came first (often the kernel, in exec). Its mapping of the program, with
 * symbols loaded (its frames were named, and the build id is known). */
static const struct mapping *program_mapping(const struct proc *p)
{
	size_t i;

	for (i = 0; p->exe && i < p->maps_all.n; i++) {
		const struct mapping *m = p->maps_all.v[i];

		if (m->exec && m->sym && !strcmp(m->path, p->exe))
			return m;
	}
	return NULL;
}

static void note_program(struct program *best, const struct proc *p)
{
	const struct mapping *m = program_mapping(p);
	const char *bid;

	if (!m || p->nsamples <= best->nsamples)
		return;
	bid = symfile_build_id(m->sym);
	free(best->path);
	free(best->build_id);
	*best = (struct program){p->nsamples, m->start,	       m->end,
				 m->offset,   strdup(m->path), bid ? strdup(bid) : NULL};
}

static void set_program(struct pprof *pp, const struct program *folded, bool system_wide,
			const struct procs *procs)
{
	struct program live = {0};
	const struct program *best;
	uint64_t id;
	size_t i;

	/* A profile of many programs has none to name: a first mapping with
	 * no file, which pprof shows as no "File:" line (it names the first
	 * mapping's file, whatever covers most samples). */
	if (system_wide) {
		if ((id = pprof_mapping(pp, 0, 0, 0, "", NULL, true)))
			pprof_set_main_mapping(pp, id);
		return;
	}

	for (i = 0; i < procs->v.n; i++)
		note_program(&live, procs->v.v[i]);
	best = folded && folded->nsamples > live.nsamples ? folded : &live;
	if (best->path && (id = pprof_mapping(pp, best->start, best->end, best->offset, best->path,
					      best->build_id, true)))
		pprof_set_main_mapping(pp, id);
	free(live.path);
	free(live.build_id);
}

struct pprof_fold *pprof_fold_new(const struct run_info *ri, int spill_fd)
{
	struct pprof_fold *pf = calloc(1, sizeof(*pf));

	if (!pf)
		return NULL;
	pf->pp = pprof_new(1000000000LL / ri->freq, ri->start_realtime_ns, 0);
	pf->offcpu = ri->offcpu;
	if (pf->pp && ri->offcpu)
		pprof_enable_offcpu(pf->pp);
	if (pf->pp)
		pf->kmap = kernel_mapping(pf->pp);
	if (!pf->pp || !pf->kmap) {
		pprof_fold_free(pf);
		return NULL;
	}
	pprof_spill_to(pf->pp, spill_fd);
	return pf;
}

int pprof_fold_add(struct pprof_fold *pf, struct proc *p)
{
	int err;

	if (p->exited)
		note_program(&pf->program, p);
	pprof_scope_begin(pf->pp);
	err = add_proc(pf->pp, pf->offcpu, p, &pf->kmap, false);
	if (err) /* ENOMEM: what is in the scope goes; the rest is lost */
		warn("pid %d: %s; some of its samples are not in the profile", p->pid,
		     strerror(-err));
	err = pprof_scope_end(pf->pp);
	if (err && !pf->warned) {
		warn("cannot set aside samples in the output directory (%s): they stay in "
		     "memory to the end",
		     strerror(-err));
		pf->warned = true;
	}
	return err;
}

void pprof_fold_free(struct pprof_fold *pf)
{
	if (!pf)
		return;
	pprof_free(pf->pp);
	free(pf->program.path);
	free(pf->program.build_id);
	free(pf);
}

struct profile_ctx {
	const struct run_info *ri;
	struct pprof_fold *pf;
};

static int fill_pprof(void *ctx, FILE *out, int fd)
{
	const struct profile_ctx *pc = ctx;
	const struct run_info *ri = pc->ri;
	struct pprof_fold *pf = pc->pf;
	struct pprof *pp;
	uint64_t kmap = 0, *km = pf ? &pf->kmap : &kmap;
	size_t i;
	int err = 0;

	pp = pf ? pf->pp : pprof_new(1000000000LL / ri->freq, ri->start_realtime_ns, 0);
	if (!pp)
		return -ENOMEM;
	if (ri->offcpu && !pf)
		pprof_enable_offcpu(pp);
	pprof_set_duration(pp, ri->duration_ns);
	set_program(pp, pf ? &pf->program : NULL, ri->system_wide, ri->procs);
	/* Source lines read each program's DWARF: once at the end, not in
	 * every --window's close, which the drain waits for (nor in the
	 * fold's, see pprof_fold). */
	for (i = 0; i < ri->procs->v.n && !err; i++)
		err = add_proc(pp, ri->offcpu, ri->procs->v.v[i], km, !pf && !ri->window);
	if (!err) {
		fflush(out);
		err = pprof_write_fd(pp, fd);
	}
	if (!pf)
		pprof_free(pp);
	return err;
}

/* The commands that open it: pprof's where there is one; else this
 * tool's own report, which shows every sample type at once (Debian
 * packages no pprof). */
int write_profile(const struct run_info *ri, struct pprof_fold *pf)
{
	static const char *const views[] = {"offcpu", "wall"};
	struct profile_ctx pc = {ri, pf};
	char cmd[2 * PATH_MAX + 64];
	size_t i;
	int err;

	if (ri->readers.pprof)
		snprintf(cmd, sizeof(cmd), "%s -top %s/profile.pb.gz", ri->readers.pprof,
			 ri->outdir);
	else if (ri->readers.self)
		snprintf(cmd, sizeof(cmd), "%s report %s", ri->readers.self, ri->outdir);
	else
		snprintf(cmd, sizeof(cmd), "%s/profile.pb.gz", ri->outdir);
	err = outdir_emit(ri->out, "profile.pb.gz", 0, cmd, fill_pprof, &pc);
	/* The waits' views of the same file. */
	for (i = 0; !err && ri->offcpu && ri->readers.pprof && i < 2; i++) {
		snprintf(cmd, sizeof(cmd), "%s -sample_index=%s -top %s/profile.pb.gz",
			 ri->readers.pprof, views[i], ri->outdir);
		if (outdir_written_also("profile.pb.gz", cmd))
			warn("out of memory: the command '%s' is not listed", cmd);
	}
	return err;
}
