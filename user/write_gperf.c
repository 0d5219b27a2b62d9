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

/* The JIT functions the samples of p ran in, named as at their times. */
static int collect_jit(struct proc *p, struct jit_image *ji)
{
	size_t j;

	for (j = 0; j < p->samples.n; j++) {
		const struct sample *s = &p->samples.v[j];
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

/* The vdso mapping p's samples ran in, or NULL. */
static const struct mapping *sampled_vdso(struct proc *p)
{
	size_t j;

	for (j = 0; j < p->samples.n; j++) {
		struct frame_iter it;

		frame_iter_init(&it, p, &p->samples.v[j], false);
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
	const struct jit_image *jit;  /* NULL: no JIT image */
	const struct vdso_file *vdso; /* NULL: no vdso file */
	size_t first, end;	      /* the image's samples */
	const char *maps;	      /* the image's maps */
};

/* The process's mapping lines, with the anonymous ones that the JIT image
 * covers replaced by the image's line (the readers take the first mapping
 * that holds an address), and the vdso's by vdso-PID.so's. Each line read
 * by procmaps_parse. */
static char *maps_with_jit(const char *maps, const struct jit_image *ji, const struct vdso_file *vf)
{
	size_t len = strlen(maps), n = 0;
	char *out = malloc(len + (ji ? strlen(ji->line) : 0) + (vf ? strlen(vf->line) : 0) + 1);
	const char *p = maps;
	bool placed = false;

	if (!out)
		return NULL;
	while (*p) {
		const char *nl = strchr(p, '\n'), *end = nl ? nl + 1 : p + strlen(p);
		struct procmaps_entry *e = NULL;
		const char *put = p;
		size_t ne = 0, put_len = end - p;

		if (procmaps_parse(p, end - p, &e, &ne)) {
			free(out);
			return NULL;
		}
		if (ne && vf && e->start == vf->start && !strcmp(e->path, "[vdso]")) {
			put = vf->line;
			put_len = strlen(vf->line);
		} else if (ne && ji && !e->path[0] && e->start < ji->end && e->end > ji->start) {
			put = placed ? NULL : ji->line;
			put_len = placed ? 0 : strlen(ji->line);
			placed = true;
		}
		procmaps_free(e, ne);
		if (put)
			memcpy(out + n, put, put_len);
		n += put_len;
		p = end;
	}
	if (ji && !placed) {
		memcpy(out + n, ji->line, strlen(ji->line));
		n += strlen(ji->line);
	}
	out[n] = 0;
	return out;
}

static int fill_cpuprofile(void *ctx, FILE *f, int fd)
{
	struct cpuprof_ctx *cc = ctx;
	const struct run_info *ri = cc->ri;
	struct proc *p = cc->p;
	struct cpuprof *c;
	uint64_t pcs[MAX_USER_FRAMES];
	size_t j, users = 0;
	int err = 0;

	(void)fd;
	c = cpuprof_new(1000000 / ri->freq ? 1000000 / ri->freq : 1);
	if (!c)
		return -ENOMEM;
	for (j = cc->first; j < cc->end && !err; j++) {
		const struct sample *s = &p->samples.v[j];
		struct frame_iter it;
		size_t nu = 0;

		/* User frames only, stored verbatim: the readers subtract 1
		 * from callers themselves. */
		frame_iter_init(&it, p, s, false);
		while (frame_iter_next(&it))
			if (it.f->kind == FRAME_USER && nu < MAX_USER_FRAMES)
				pcs[nu++] = it.f->caller ? it.f->pc + 1 : it.f->pc;
		if (nu) {
			users++;
			err = cpuprof_add(c, pcs, nu, s->count);
		}
	}
	if (!err && !users)
		err = -ENODATA;
	if (!err) {
		char *maps = (cc->jit || cc->vdso) && cc->maps
				 ? maps_with_jit(cc->maps, cc->jit, cc->vdso)
				 : NULL;

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
	const struct mapping *vm;
	struct cpuprof_ctx cc = {ri, p, NULL, NULL, 0, p->samples.n, p->maps_text};
	char name[64], cmd[3 * PATH_MAX], exe[PATH_MAX], dir[PATH_MAX];
	int first = 0;
	size_t i;

	for (i = 0; i < p->images.n; i++) {
		struct cpuprof_ctx ic = {ri,
					 p,
					 NULL,
					 NULL,
					 cc.first,
					 p->images.v[i].samples_end,
					 p->images.v[i].maps_text};

		cc.first = ic.end;
		if (!ic.maps || ic.end <= ic.first)
			continue;
		snprintf(name, sizeof(name), "cpu-%d.%zu.prof", p->pid, i);
		exe_path(p, p->images.v[i].exe, exe, sizeof(exe));
		gperf_cmd(ri, exe, name, cmd, sizeof(cmd));
		OUT_FIRST(first, outdir_emit(ri->out, name, p->pid, cmd, fill_cpuprofile, &ic));
	}

	OUT_FIRST(first, collect_jit(p, &ji));
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
	if ((vm = sampled_vdso(p)) && outdir_realpath(ri->out, dir, sizeof(dir))) {
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
	return first;
}
