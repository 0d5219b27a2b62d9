/* cpu-PID.prof (gperftools' CPU profile format, formats/cpuprofile.c) for
 * each process, one more per program it ran before an exec, and jit-PID.so,
 * the ELF image of its JIT code that the readers name those frames from. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "formats/cpuprofile.h"
#include "formats/jitdump.h"
#include "formats/jitelf.h"
#include "formats/procmaps.h"
#include "user/jit.h"
#include "user/outdir.h"
#include "user/proc.h"
#include "user/symbols.h"
#include "user/util.h"
#include "user/writers.h"

/* The program's path (exe: the process's, or an earlier image's), for the
 * command that opens its gperftools file. */
static void exe_path(const struct proc *p, const char *exe, char *buf, size_t len)
{
	size_t n;

	if (!exe) {
		snprintf(buf, len, "/proc/%d/exe", p->pid);
		return;
	}
	snprintf(buf, len, "%s", exe);
	n = strlen(buf);
	if (n > 10 && !strcmp(buf + n - 10, " (deleted)"))
		buf[n - 10] = 0;
}

/* The JIT code of a process for its gperftools file: an ELF image named
 * jit-PID.so and the mapping line that points the readers at it. */
struct jit_image {
	VEC(struct jitelf_func) funcs;
	uint64_t start, end, offset;
	char line[PATH_MAX + 128];
};

static int fill_jitelf(void *ctx, FILE *f, int fd)
{
	struct jit_image *ji = ctx;

	fflush(f);
	return jitelf_write(fd, ji->funcs.v, ji->funcs.n, &ji->start, &ji->end, &ji->offset);
}

/* The JIT functions the samples v[0..n) of p ran in, named as at their
 * times. */
static int collect_jit(struct proc *p, const struct sample *v, size_t n, struct jit_image *ji)
{
	size_t j;

	for (j = 0; j < n; j++) {
		const struct sample *s = &v[j];
		struct frame_iter it;

		frame_iter_init(&it, p, s, false);
		while (frame_iter_next(&it)) {
			struct jitelf_func fn = {0};
			struct jit_hit hit;
			size_t i;

			if (it.stable || !jit_find(p, it.f->pc, s->time_ns, &hit))
				continue;
			for (i = ji->funcs.n; i-- > 0;)
				if (ji->funcs.v[i].start == hit.start)
					break;
			if (i != (size_t)-1)
				continue;
			fn.start = hit.start;
			fn.size = hit.size;
			/* Mangled, as a compiler's symbol table has it: the
			 * readers of cpu-PID.prof demangle what they read. */
			fn.name = hit.system_name ? hit.system_name : hit.name;
			if (hit.nlines) {
				struct jitelf_line *l = calloc(hit.nlines, sizeof(*l));

				if (!l)
					return -ENOMEM;
				for (i = 0; i < hit.nlines; i++)
					l[i] = (struct jitelf_line){hit.lines[i].addr,
								    hit.lines[i].line,
								    hit.lines[i].file};
				fn.lines = l;
				fn.nlines = hit.nlines;
			}
			if (VEC_PUSH(ji->funcs, fn)) {
				free((void *)fn.lines);
				return -ENOMEM;
			}
		}
	}
	return 0;
}

/* Frames the readers of cpu-PID.prof cannot name from the files its mapping
 * lines point to, named as every other file names them: PLT stubs
 * (func@plt: no symbol table has them, so the readers took _init, the symbol
 * before .plt), an entry point with no symbol (_start), glibc's signal
 * trampoline where libc has no symbol for it (__restore_rt: pprof read
 * [libc.so.6]), a stripped binary's functions that only their FDE names
 * (libz.so.1+0x4710, each covering its FDE's range: pprof read
 * [libz.so.1.2.13], google-pprof the .dynsym symbol before it, a wrong
 * name), and the frame that ends a stack cut at --max-stack ([truncated],
 * at no address). Their names go into names-PID.so (as JIT code's into
 * jit-PID.so), each run of them at a slot of its own, and each cpu file's
 * mapping lines are cut around the code they name, a line of its own
 * pointing at the slot: no two lines may hold one address (pprof takes the
 * first that holds it, and moves the main program's line first).
 * A run is the adjoining functions around a sampled one (a PLT's stubs,
 * FDE-named functions with only alignment padding between them), so the
 * lines grow with the stretches of such code sampled, not with its
 * functions (a python3 zlib profile: 37 lines for 1,161 functions). One
 * range per library would not do: its exported functions lie among the
 * statics, and the range would take their names from the binary. */
struct name_run {
	uint64_t start, end; /* at run time */
	uint64_t slot;	     /* its start in names-PID.so */
	size_t file;	     /* the cpu file: p->images' index, p->images.n the last */
};

struct src_fn {
	const char *name;
	uint64_t at;
};

struct names_image {
	VEC(struct jitelf_func) funcs; /* at their slots */
	VEC(struct name_run) runs;     /* sorted by file then start, when written */
	VEC(char *) owned;	       /* the names made here (the FDE-named, the sources') */
	/* A name source's frames (Python's: no address of the process, pc
	 * SOURCE_PC_BASE and up): where cpu-PID.prof puts each, by frame id
	 * (0: none), from GPERF_SOURCE on, 16 bytes each. */
	VEC(uint64_t) src_at;
	uint64_t nsrc;
	/* Their functions, one a name (a frame is a function at a line:
	 * the readers would tell same-named functions apart as name@ADDR). */
	VEC(struct src_fn) src_fns;
	uint64_t next;		     /* the next free slot */
	uint64_t start, end, offset; /* the image's, from jitelf_write */
	char path[PATH_MAX + 64];    /* absolute: the readers run elsewhere */
};

/* [truncated]'s address in cpu-PID.prof: TRUNCATED_PC would read as the
 * kernel's. Above user space with 4- and 5-level page tables alike (2^47,
 * 2^56) and below the kernel's half: no mapping ever holds it. */
#define GPERF_TRUNCATED 0x0100000000000000ULL
/* The same for a name source's frames, above it: each its own function in
 * names-PID.so (its name, as profile.pb.gz names it), since a reader would
 * name a pc that no mapping holds after whatever function is nearest. */
#define GPERF_SOURCE 0x0200000000000000ULL

static int fill_names(void *ctx, FILE *f, int fd)
{
	struct names_image *ni = ctx;

	fflush(f);
	return jitelf_write(fd, ni->funcs.v, ni->funcs.n, &ni->start, &ni->end, &ni->offset);
}

/* The run being collected: the mapping it is in, its first function's start. */
struct run_ctx {
	struct names_image *ni;
	struct mapping *m;
	struct name_run run;
	uint64_t vend; /* the ELF vaddr where its last function ends */
};

static int add_run_sym(void *ctx, const struct symfile_sym *s)
{
	struct run_ctx *rc = ctx;
	uint64_t off = symfile_offset(rc->m->sym, s->vaddr), at;
	struct jitelf_func fn = {0};

	if (off == UINT64_MAX || off < rc->m->offset ||
	    (at = rc->m->start + (off - rc->m->offset)) >= rc->m->end || s->size > rc->m->end - at)
		return 0;
	if (rc->run.end == rc->run.start) {
		rc->run.start = rc->run.end = at;
		rc->vend = s->vaddr;
	}
	/* Adjoining at run time as in the file (an FDE run's functions
	 * have their alignment padding between them, which runs no code),
	 * else no longer one run. */
	if (s->vaddr < rc->vend || at - rc->run.end != s->vaddr - rc->vend)
		return 1;
	fn.start = rc->run.slot + (at - rc->run.start);
	fn.size = s->size;
	fn.name = s->name; /* as in a symbol table: the readers demangle */
	rc->run.end = at + s->size;
	rc->vend = s->vaddr + s->size;
	return VEC_PUSH(rc->ni->funcs, fn) ? -ENOMEM : 0;
}

/* A function of an FDE run (symfile_fde_run), named as profile.pb.gz names
 * it (frame_name: file+0xSTART). */
static int add_fde_sym(void *ctx, const struct symfile_sym *s)
{
	struct run_ctx *rc = ctx;
	struct frame fr = {.kind = FRAME_USER, .map = rc->m, .func = s->vaddr};
	struct symfile_sym y = *s;
	char buf[PATH_MAX + 32], *name = strdup(frame_name(&fr, buf, sizeof(buf)));

	if (!name || VEC_PUSH(rc->ni->owned, name)) {
		free(name);
		return -ENOMEM;
	}
	y.name = name;
	return add_run_sym(ctx, &y);
}

static bool in_runs(const struct names_image *ni, size_t file, uint64_t pc)
{
	size_t i;

	for (i = 0; i < ni->runs.n; i++)
		if (ni->runs.v[i].file == file && pc >= ni->runs.v[i].start &&
		    pc < ni->runs.v[i].end)
			return true;
	return false;
}

/* A name source's frame (the iterator's), in names-PID.so: its function,
 * once, and the run that puts it at its place in this file. */
static int add_source_frame(struct proc *p, struct names_image *ni, const struct frame_iter *it,
			    struct name_run *run)
{
	char buf[PATH_MAX + 32], *name;
	struct jitelf_func fn = {.size = 16};

	if (VEC_RESERVE(ni->src_at, p->frames.n))
		return -ENOMEM;
	while (ni->src_at.n < p->frames.n)
		ni->src_at.v[ni->src_at.n++] = 0;
	if (!ni->src_at.v[it->id]) {
		const char *nm = frame_iter_name(it, buf, sizeof(buf), NULL, NULL, NULL);

		for (size_t i = 0; i < ni->src_fns.n; i++)
			if (!strcmp(ni->src_fns.v[i].name, nm)) {
				ni->src_at.v[it->id] = ni->src_fns.v[i].at;
				return 0; /* its run is there */
			}
		name = strdup(nm);
		if (!name || VEC_PUSH(ni->owned, name)) {
			free(name);
			return -ENOMEM;
		}
		fn.start = ni->next;
		fn.name = name;
		if (VEC_PUSH(ni->funcs, fn))
			return -ENOMEM;
		ni->src_at.v[it->id] = GPERF_SOURCE + 16 * ni->nsrc++;
		if (VEC_PUSH(ni->src_fns, ((struct src_fn){name, ni->src_at.v[it->id]})))
			return -ENOMEM;
	} else {
		/* Its function is there already (another file's run): found by its
		 * address. */
		for (size_t i = 0; i < ni->runs.n; i++)
			if (ni->runs.v[i].start == ni->src_at.v[it->id]) {
				run->start = ni->runs.v[i].start;
				run->end = ni->runs.v[i].end;
				run->slot = ni->runs.v[i].slot;
				return 0;
			}
		return 0;
	}
	run->start = ni->src_at.v[it->id];
	run->end = run->start + fn.size;
	return 0;
}

/* The runs of named code that file's samples (v[first..end)) ran in. */
static int collect_names(struct proc *p, struct names_image *ni, size_t file,
			 const struct sample *v, size_t first, size_t end)
{
	uint8_t *seen = calloc(p->frames.n ? p->frames.n : 1, 1);
	size_t j;
	int err = 0;

	if (!seen)
		return -ENOMEM;
	for (j = first; j < end && !err; j++) {
		struct frame_iter it;

		frame_iter_init(&it, p, &v[j], false);
		while (frame_iter_next(&it) && !err) {
			const struct frame *f = it.f;
			struct run_ctx rc = {ni, f->map, {0, 0, ni->next, file}, 0};

			if (f->kind != FRAME_USER || seen[it.id])
				continue;
			seen[it.id] = 1;
			if (f->pc >= SOURCE_PC_BASE && f->pc != TRUNCATED_PC && !f->map) {
				err = add_source_frame(p, ni, &it, &rc.run);
			} else if (f->pc == TRUNCATED_PC && !f->caller && !f->map && f->name) {
				struct jitelf_func fn = {
				    .start = ni->next, .size = 16, .name = f->name};

				rc.run.start = GPERF_TRUNCATED;
				rc.run.end = GPERF_TRUNCATED + fn.size;
				err = VEC_PUSH(ni->funcs, fn);
			} else if ((f->name || f->func) && f->map && f->map->sym &&
				   !in_runs(ni, file, f->pc)) {
				struct symfile_sym y = {.vaddr = f->func,
							.size = SYMFILE_RESTORE_RT_SIZE,
							.name = f->name};
				uint64_t off = f->pc - f->map->start + f->map->offset;

				/* A code named by its FDE alone (file+0xSTART),
				 * by its FDE and bytes (__restore_rt), else by a
				 * symbol made here, if it is. */
				if (!f->name)
					err = symfile_fde_run(f->map->sym, off, add_fde_sym, &rc);
				else if (f->func)
					err = add_run_sym(&rc, &y);
				else
					err = symfile_synth_run(f->map->sym, off, add_run_sym, &rc);
				err = err > 0 ? 0 : err;
			}
			if (err || rc.run.end == rc.run.start)
				continue;
			err = VEC_PUSH(ni->runs, rc.run);
			if (rc.run.slot == ni->next) /* a new one, not a source frame's again */
				ni->next =
				    (rc.run.slot + (rc.run.end - rc.run.start) + 15) & ~15ULL;
		}
	}
	free(seen);
	return err;
}

static int cmp_run(const void *a, const void *b)
{
	const struct name_run *x = a, *y = b;

	if (x->file != y->file)
		return x->file < y->file ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* The vdso, which has no file: its image (procs->vdsos) written as
 * vdso-PID.so for the readers to name its functions from, where samples
 * ran in it, and the mapping line that points them at it. */
struct vdso_file {
	int fd; /* the image's memfd */
	uint64_t start;
	char line[PATH_MAX + 128];
};

static int fill_vdso(void *ctx, FILE *f, int fd)
{
	const struct vdso_file *v = ctx;
	char buf[8192];
	off_t off = 0;
	ssize_t n;

	(void)f;
	while ((n = pread(v->fd, buf, sizeof(buf), off)) > 0) {
		ssize_t w = write(fd, buf, n);

		if (w != n)
			return w < 0 ? -errno : -EIO;
		off += n;
	}
	return n < 0 ? -errno : 0;
}

/* The vdso mapping p's samples v[0..n) ran in, or NULL. */
static const struct mapping *sampled_vdso(struct proc *p, const struct sample *v, size_t n)
{
	size_t j;

	for (j = 0; j < n; j++) {
		struct frame_iter it;

		frame_iter_init(&it, p, &v[j], false);
		while (frame_iter_next(&it))
			if (it.f->kind == FRAME_USER && it.f->map && it.f->map->vdso &&
			    it.f->map->vdso <= p->set->vdsos.n)
				return it.f->map;
	}
	return NULL;
}

struct cpuprof_ctx {
	const struct run_info *ri;
	struct proc *p;
	const struct jit_image *jit;	 /* NULL: no JIT image */
	const struct vdso_file *vdso;	 /* NULL: no vdso file */
	const struct names_image *names; /* NULL: no names image */
	size_t file;			 /* which cpu file: its runs in names */
	const struct sample *v;		 /* p's samples, merged (proc_samples_merged) */
	size_t first, end;		 /* the image's: v[first..end) */
	const char *maps;		 /* the image's maps */
};

static void put_str(struct fmt_buf *b, const char *s)
{
	fmt_put(b, s, strlen(s));
}

/* A mapping line start-end with the fields of line (parsed as e) but its
 * offset moved there; NULL fields: one of names-PID.so's, at slot. */
static void put_line(struct fmt_buf *b, uint64_t start, uint64_t end, const char *fields,
		     const char *fields_end, const struct procmaps_entry *e,
		     const struct names_image *ni, uint64_t slot)
{
	char buf[2 * PATH_MAX];

	if (!fields) {
		snprintf(buf, sizeof(buf), "%llx-%llx r-xp %08llx 00:00 0 %s\n",
			 (unsigned long long)start, (unsigned long long)end,
			 (unsigned long long)(ni->offset + slot - ni->start), ni->path);
		put_str(b, buf);
		return;
	}
	/* fields: "PERMS OFFSET REST" (put_cut checked) */
	const char *off = memchr(fields, ' ', fields_end - fields);
	const char *rest = memchr(off + 1, ' ', fields_end - off - 1);

	snprintf(buf, sizeof(buf), "%llx-%llx ", (unsigned long long)start,
		 (unsigned long long)end);
	put_str(b, buf);
	fmt_put(b, fields, off + 1 - fields);
	snprintf(buf, sizeof(buf), "%08llx", (unsigned long long)(e->offset + (start - e->start)));
	put_str(b, buf);
	fmt_put(b, rest, fields_end - rest);
	if (fields_end[-1] != '\n')
		put_str(b, "\n");
}

/* Line p..end (parsed as e), cut around the runs of file's named code it
 * holds (runs sorted by file, then start); verbatim when it holds none. */
static void put_cut(struct fmt_buf *b, const char *p, const char *end,
		    const struct procmaps_entry *e, const struct names_image *ni, size_t file)
{
	const char *fields = memchr(p, ' ', end - p), *off = NULL;
	uint64_t at = e->start;
	size_t i;

	/* "START-END PERMS OFFSET REST": else left whole. */
	if (fields && (off = memchr(fields + 1, ' ', end - fields - 1)) &&
	    !memchr(off + 1, ' ', end - off - 1))
		off = NULL;
	for (i = 0; off && ni && i < ni->runs.n; i++) {
		const struct name_run *r = &ni->runs.v[i];

		if (r->file != file || r->start < at || r->end > e->end)
			continue;
		if (r->start > at)
			put_line(b, at, r->start, fields + 1, end, e, ni, 0);
		put_line(b, r->start, r->end, NULL, NULL, e, ni, r->slot);
		at = r->end;
	}
	if (at == e->start)
		fmt_put(b, p, end - p);
	else if (at < e->end)
		put_line(b, at, e->end, fields + 1, end, e, ni, 0);
}

/* The process's mapping lines for the readers: the anonymous ones that the
 * JIT image covers replaced by the image's line (the readers take the first
 * mapping that holds an address), the vdso's by vdso-PID.so's, and the
 * lines that hold named code cut around it (put_cut). Each line read by
 * procmaps_parse. */
static char *maps_for_readers(const struct cpuprof_ctx *cc)
{
	const struct jit_image *ji = cc->jit;
	const struct vdso_file *vf = cc->vdso;
	const struct names_image *ni = cc->names;
	struct fmt_buf b = {0};
	const char *p = cc->maps;
	bool placed = false;
	size_t i;

	while (*p) {
		const char *nl = strchr(p, '\n'), *end = nl ? nl + 1 : p + strlen(p);
		struct procmaps_entry *e = NULL;
		size_t ne = 0;

		if (procmaps_parse(p, end - p, &e, &ne)) {
			free(b.p);
			return NULL;
		}
		if (ne && vf && e->start == vf->start && !strcmp(e->path, "[vdso]")) {
			put_str(&b, vf->line);
		} else if (ne && ji && !e->path[0] && e->start < ji->end && e->end > ji->start) {
			if (!placed)
				put_str(&b, ji->line);
			placed = true;
		} else if (ne) {
			put_cut(&b, p, end, e, ni, cc->file);
		} else {
			fmt_put(&b, p, end - p);
		}
		procmaps_free(e, ne);
		p = end;
	}
	if (ji && !placed)
		put_str(&b, ji->line);
	for (i = 0; ni && i < ni->runs.n; i++)
		if (ni->runs.v[i].file == cc->file && ni->runs.v[i].start >= GPERF_TRUNCATED)
			put_line(&b, ni->runs.v[i].start, ni->runs.v[i].end, NULL, NULL, NULL, ni,
				 ni->runs.v[i].slot);
	fmt_put(&b, "", 1);
	if (b.err) {
		free(b.p);
		return NULL;
	}
	return (char *)b.p;
}

/* Where cpu-PID.prof puts [truncated]: GPERF_TRUNCATED where names-PID.so
 * names it, else where it was. */
static bool truncated_named(const struct cpuprof_ctx *cc)
{
	size_t i;

	for (i = 0; cc->names && i < cc->names->runs.n; i++)
		if (cc->names->runs.v[i].file == cc->file &&
		    cc->names->runs.v[i].start == GPERF_TRUNCATED)
			return true;
	return false;
}

static int fill_cpuprofile(void *ctx, FILE *f, int fd)
{
	struct cpuprof_ctx *cc = ctx;
	const struct run_info *ri = cc->ri;
	struct proc *p = cc->p;
	struct cpuprof *c;
	uint64_t pcs[MAX_USER_FRAMES];
	size_t j, users = 0;
	bool trunc = truncated_named(cc);
	int err = 0;

	(void)fd;
	c = cpuprof_new(1000000 / ri->freq ? 1000000 / ri->freq : 1);
	if (!c)
		return -ENOMEM;
	for (j = cc->first; j < cc->end && !err; j++) {
		const struct sample *s = &cc->v[j];
		struct frame_iter it;
		size_t nu = 0;

		/* User frames only, stored verbatim: the readers subtract 1
		 * from callers themselves. */
		frame_iter_init(&it, p, s, false);
		while (frame_iter_next(&it)) {
			if (it.f->kind != FRAME_USER || nu >= MAX_USER_FRAMES)
				continue;
			if (trunc && it.f->pc == TRUNCATED_PC && !it.f->caller && !it.f->map &&
			    it.f->name)
				/* The root: the readers take 1 off a caller. */
				pcs[nu] = GPERF_TRUNCATED + (nu > 0);
			else if (cc->names && it.id < cc->names->src_at.n &&
				 cc->names->src_at.v[it.id])
				pcs[nu] = cc->names->src_at.v[it.id] + (nu > 0);
			else
				pcs[nu] = it.f->caller ? it.f->pc + 1 : it.f->pc;
			nu++;
		}
		if (nu) {
			users++;
			err = cpuprof_add(c, pcs, nu, s->count);
		}
	}
	if (!err && !users)
		err = -ENODATA;
	if (!err) {
		char *maps =
		    (cc->jit || cc->vdso || cc->names) && cc->maps ? maps_for_readers(cc) : NULL;

		err = cpuprof_write(c, f, maps ? maps : cc->maps);
		free(maps);
	}
	cpuprof_free(c);
	return err;
}

/* The command that opens a gperftools profile: google-pprof, else pprof
 * (which reads the format too), else the file's path alone. */
static void gperf_cmd(const struct run_info *ri, const char *exe, const char *name, char *cmd,
		      size_t len)
{
	if (ri->readers.google_pprof)
		snprintf(cmd, len, "google-pprof --text %s %s/%s", exe, ri->outdir, name);
	else if (ri->readers.pprof)
		snprintf(cmd, len, "%s -top %s %s/%s", ri->readers.pprof, exe, ri->outdir, name);
	else
		snprintf(cmd, len, "%s/%s", ri->outdir, name);
}

/* The per-process gperftools file, with the image of its JIT code; one
 * more for each program it ran before an exec (cpu-PID.N.prof, N from 0,
 * oldest first): a file has one maps section, and the readers could not
 * name an earlier program's addresses with the last one's. */
int write_cpuprofile(const struct run_info *ri, struct proc *p)
{
	struct jit_image ji = {0};
	struct vdso_file vf = {0};
	struct names_image ni = {0};
	const struct mapping *vm;
	/* The samples of each image (p->images' samples_end, then the
	 * current one's) merged, into ms[mend[i - 1]..mend[i]): each
	 * distinct stack is walked once, the file adds them up anyway. */
	struct sample *ms = malloc((p->samples.n ? p->samples.n : 1) * sizeof(*ms));
	size_t *mend = calloc(p->images.n + 1, sizeof(*mend));
	struct cpuprof_ctx cc = {ri, p, NULL, NULL, NULL, p->images.n, ms, 0, 0, p->maps_text};
	char name[64], cmd[3 * PATH_MAX], exe[PATH_MAX], dir[PATH_MAX];
	int first = ms && mend ? 0 : -ENOMEM;
	size_t i, from = 0;

	for (i = 0; i <= p->images.n && !first; i++) {
		size_t end = i < p->images.n ? p->images.v[i].samples_end : p->samples.n;
		ssize_t n = end > from ? proc_samples_merged(p, from, end, ms + cc.end) : 0;

		if (n < 0)
			first = (int)n;
		cc.end += n > 0 ? (size_t)n : 0;
		mend[i] = cc.end;
		from = end > from ? end : from;
	}
	if (first) {
		free(ms);
		free(mend);
		return first;
	}
	/* Named code first: every cpu file's lines point at names-PID.so. */
	for (i = 0; i <= p->images.n && !first; i++)
		if (mend[i] > (i ? mend[i - 1] : 0))
			OUT_FIRST(first,
				  collect_names(p, &ni, i, ms, i ? mend[i - 1] : 0, mend[i]));
	if (ni.runs.n && outdir_realpath(ri->out, dir, sizeof(dir))) {
		snprintf(name, sizeof(name), "names-%d.so", p->pid);
		snprintf(cmd, sizeof(cmd), "%s%s/%s", ri->readers.nm ? "nm -n " : "", ri->outdir,
			 name);
		snprintf(ni.path, sizeof(ni.path), "%s/%s", dir, name);
		qsort(ni.runs.v, ni.runs.n, sizeof(*ni.runs.v), cmp_run);
		int e = outdir_emit(ri->out, name, p->pid, cmd, fill_names, &ni);

		OUT_FIRST(first, e);
		if (!e)
			cc.names = &ni;
	}
	for (i = 0; i < p->images.n; i++) {
		struct cpuprof_ctx ic = {ri, p,	 NULL,	   NULL,    cc.names,
					 i,  ms, cc.first, mend[i], p->images.v[i].maps_text};

		cc.first = ic.end;
		if (!ic.maps || ic.end <= ic.first)
			continue;
		snprintf(name, sizeof(name), "cpu-%d.%zu.prof", p->pid, i);
		exe_path(p, p->images.v[i].exe, exe, sizeof(exe));
		gperf_cmd(ri, exe, name, cmd, sizeof(cmd));
		OUT_FIRST(first, outdir_emit(ri->out, name, p->pid, cmd, fill_cpuprofile, &ic));
	}

	OUT_FIRST(first, collect_jit(p, ms, cc.end, &ji));
	if (ji.funcs.n && outdir_realpath(ri->out, dir, sizeof(dir))) {
		snprintf(name, sizeof(name), "jit-%d.so", p->pid);
		snprintf(cmd, sizeof(cmd), "%s%s/%s", ri->readers.nm ? "nm -n " : "", ri->outdir,
			 name);
		OUT_FIRST(first, outdir_emit(ri->out, name, p->pid, cmd, fill_jitelf, &ji));
		if (ji.end > ji.start) {
			snprintf(ji.line, sizeof(ji.line), "%llx-%llx r-xp %08llx 00:00 0 %s/%s\n",
				 (unsigned long long)ji.start, (unsigned long long)ji.end,
				 (unsigned long long)ji.offset, dir, name);
			cc.jit = &ji;
		}
	}
	if ((vm = sampled_vdso(p, ms, cc.end)) && outdir_realpath(ri->out, dir, sizeof(dir))) {
		vf.fd = p->set->vdsos.v[vm->vdso - 1].fd;
		vf.start = vm->start;
		snprintf(name, sizeof(name), "vdso-%d.so", p->pid);
		snprintf(cmd, sizeof(cmd), "nm -D -n %s/%s", ri->outdir, name);
		snprintf(vf.line, sizeof(vf.line), "%llx-%llx r-xp 00000000 00:00 0 %s/%s\n",
			 (unsigned long long)vm->start, (unsigned long long)vm->end, dir, name);
		int e = outdir_emit(ri->out, name, p->pid, cmd, fill_vdso, &vf);

		OUT_FIRST(first, e);
		if (!e)
			cc.vdso = &vf;
	}
	snprintf(name, sizeof(name), "cpu-%d.prof", p->pid);
	exe_path(p, p->exe, exe, sizeof(exe));
	gperf_cmd(ri, exe, name, cmd, sizeof(cmd));
	OUT_FIRST(first, outdir_emit(ri->out, name, p->pid, cmd, fill_cpuprofile, &cc));
	for (i = 0; i < ji.funcs.n; i++)
		free((void *)ji.funcs.v[i].lines);
	VEC_FREE(ji.funcs);
	VEC_FREE(ni.funcs);
	VEC_FREE(ni.runs);
	for (i = 0; i < ni.owned.n; i++)
		free(ni.owned.v[i]);
	VEC_FREE(ni.owned);
	VEC_FREE(ni.src_at);
	VEC_FREE(ni.src_fns);
	free(ms);
	free(mend);
	return first;
}
