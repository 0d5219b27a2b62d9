#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "formats/cpuprofile.h"
#include "formats/pprof.h"
#include "user/output.h"
#include "user/proc.h"
#include "user/symbols.h"
#include "user/util.h"

/* The files of this run, for the summary. */
struct written {
	char name[64];
	char open_cmd[PATH_MAX + 128];
	pid_t pid;
};
static VEC(struct written) written;

/* Under sudo, files belong to the user who ran it. */
static void give_to_invoker(int fd, const char *path)
{
	const char *u = getenv("SUDO_UID"), *g = getenv("SUDO_GID");

	if (!u || !g || geteuid() != 0)
		return;
	if ((fd >= 0 ? fchown(fd, atoi(u), atoi(g)) : chown(path, atoi(u), atoi(g))))
		debug("chown %s: %s", path, strerror(errno));
}

/* Opens a temporary file in the output directory; commit_file renames it. */
static int open_tmp(const char *dir, const char *name, char *tmp, size_t tmplen)
{
	int fd;

	snprintf(tmp, tmplen, "%s/.%s.XXXXXX", dir, name);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		fprintf(stderr, "bpftrace-rec: create %s: %s\n", tmp, strerror(errno));
	else
		fchmod(fd, 0644);
	return fd;
}

static int commit_file(const char *dir, const char *name, const char *tmp, int fd, pid_t pid,
		       const char *open_cmd)
{
	char path[PATH_MAX];
	struct written w = {.pid = pid};

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	give_to_invoker(fd, tmp);
	if (rename(tmp, path)) {
		fprintf(stderr, "bpftrace-rec: rename %s to %s: %s\n", tmp, path, strerror(errno));
		unlink(tmp);
		return -errno;
	}
	snprintf(w.name, sizeof(w.name), "%s", name);
	snprintf(w.open_cmd, sizeof(w.open_cmd), "%s", open_cmd);
	return VEC_PUSH(written, w);
}

static const char *basename_of(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* Name of a frame without a symbol: its object, so time still adds up by
 * library ("[libfoo.so]"), or [unknown] for anonymous memory. */
static const char *unknown_name(const struct frame *f, char *buf, size_t len)
{
	if (f->kind == FRAME_KERNEL)
		return "[kernel]";
	if (f->map && f->map->path[0]) {
		snprintf(buf, len, "%s%s%s", f->map->path[0] == '[' ? "" : "[",
			 basename_of(f->map->path), f->map->path[0] == '[' ? "" : "]");
		return buf;
	}
	return "[unknown]";
}

static uint64_t frame_location(struct pprof *pp, const struct frame *f, uint64_t *kmap)
{
	struct pprof_line line = {0};
	char buf[PATH_MAX + 4];
	uint64_t mapping = 0;

	if (f->kind == FRAME_KERNEL) {
		/* Made on first use: pprof takes the first mapping as the main program. */
		if (!*kmap)
			*kmap = pprof_mapping(pp, 0xffff800000000000ULL, UINT64_MAX, 0,
					      "[kernel.kallsyms]", NULL, true);
		mapping = *kmap;
	} else if (f->map) {
		if (!f->map->out_id) {
			const char *bid = f->map->sym ? symfile_build_id(f->map->sym) : NULL;

			f->map->out_id = pprof_mapping(pp, f->map->start, f->map->end,
						       f->map->offset, f->map->path, bid, true);
		}
		mapping = f->map->out_id;
	}
	line.function = f->name ? f->name : unknown_name(f, buf, sizeof(buf));
	if (f->kind == FRAME_KERNEL && f->module)
		line.filename = f->module;
	return pprof_location(pp, mapping, f->pc, &line, 1);
}

static int write_pprof(const struct run_info *ri)
{
	struct pprof *pp;
	char tmp[PATH_MAX], cmd[PATH_MAX + 64];
	uint64_t kmap, locs[MAX_STACK_FRAMES];
	size_t i, j;
	int fd, err = 0;

	pp = pprof_new(1000000000LL / ri->freq, ri->start_realtime_ns, ri->duration_ns);
	if (!pp)
		return -ENOMEM;
	kmap = 0;
	for (i = 0; i < procs.v.n && !err; i++) {
		struct proc *p = procs.v.v[i];

		for (j = 0; j < p->maps_all.n; j++)
			p->maps_all.v[j]->out_id = 0;
		for (j = 0; j < p->frames.n; j++)
			p->frames.v[j].out_id = 0;
		for (j = 0; j < p->samples.n && !err; j++) {
			const struct sample *s = &p->samples.v[j];
			uint32_t nk, nu, k, n;
			const uint32_t *ids = proc_stack(p, s->stack, &nk, &nu);
			struct thread *t = proc_thread(p, s->tid);
			struct pprof_label labels[4] = {
				{.key = "pid", .num = p->pid},
				{.key = "tid", .num = s->tid},
				{.key = "comm", .str = t && t->comm[0] ? t->comm : p->comm},
				{.key = "cpu", .num = s->cpu},
			};

			n = nk + nu;
			for (k = 0; k < n; k++) {
				struct frame *f = &p->frames.v[ids[k]];

				if (!f->out_id)
					f->out_id = frame_location(pp, f, &kmap);
				locs[k] = f->out_id;
				if (!locs[k])
					err = -ENOMEM;
			}
			if (!err)
				err = pprof_add_sample(pp, locs, n, 1, labels, 4);
		}
	}
	if (err) {
		fprintf(stderr, "bpftrace-rec: profile.pb.gz: %s\n", strerror(-err));
		pprof_free(pp);
		return err;
	}
	fd = open_tmp(ri->outdir, "profile.pb.gz", tmp, sizeof(tmp));
	if (fd < 0) {
		pprof_free(pp);
		return -errno;
	}
	err = pprof_write_fd(pp, fd);
	pprof_free(pp);
	if (err) {
		fprintf(stderr, "bpftrace-rec: write %s: %s\n", tmp, strerror(-err));
		close(fd);
		unlink(tmp);
		return err;
	}
	snprintf(cmd, sizeof(cmd), "pprof -top %s/profile.pb.gz", ri->outdir);
	err = commit_file(ri->outdir, "profile.pb.gz", tmp, fd, 0, cmd);
	close(fd);
	return err;
}

/* The program's path as readers find it on this machine. */
static void exe_path(const struct proc *p, char *buf, size_t len)
{
	size_t i;

	for (i = 0; i < p->maps.n; i++) {
		const struct mapping *m = p->maps.v[i];

		if (m->path[0] == '/' && m->offset == 0) {
			snprintf(buf, len, "%s", m->path);
			return;
		}
	}
	snprintf(buf, len, "/proc/%d/exe", p->pid);
}

static int write_cpuprofile(const struct run_info *ri, struct proc *p)
{
	struct cpuprof *c;
	uint64_t pcs[MAX_USER_FRAMES];
	char name[64], tmp[PATH_MAX], exe[PATH_MAX], cmd[3 * PATH_MAX];
	size_t j, users = 0;
	FILE *f;
	int fd, err = 0;

	c = cpuprof_new(1000000 / ri->freq ? 1000000 / ri->freq : 1);
	if (!c)
		return -ENOMEM;
	for (j = 0; j < p->samples.n && !err; j++) {
		uint32_t nk, nu, k;
		const uint32_t *ids = proc_stack(p, p->samples.v[j].stack, &nk, &nu);

		/* Stored verbatim: the readers subtract 1 from callers themselves. */
		for (k = 0; k < nu; k++) {
			const struct frame *fr = &p->frames.v[ids[nk + k]];

			pcs[k] = fr->caller ? fr->pc + 1 : fr->pc;
		}
		if (nu) {
			users++;
			err = cpuprof_add(c, pcs, nu, 1);
		}
	}
	if (err || !users) {
		cpuprof_free(c);
		return err;
	}
	snprintf(name, sizeof(name), "cpu-%d.prof", p->pid);
	fd = open_tmp(ri->outdir, name, tmp, sizeof(tmp));
	if (fd < 0) {
		cpuprof_free(c);
		return -errno;
	}
	f = fdopen(fd, "w");
	if (!f) {
		err = -errno;
		close(fd);
	} else {
		err = cpuprof_write(c, f, p->maps_text);
		if (fflush(f) && !err)
			err = -errno;
	}
	cpuprof_free(c);
	if (!err) {
		exe_path(p, exe, sizeof(exe));
		snprintf(cmd, sizeof(cmd), "google-pprof --text %s %s/%s", exe, ri->outdir, name);
		err = commit_file(ri->outdir, name, tmp, fd, p->pid, cmd);
	} else {
		fprintf(stderr, "bpftrace-rec: write %s: %s\n", tmp, strerror(-err));
		unlink(tmp);
	}
	if (f)
		fclose(f);
	return err;
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static int write_summary(const struct run_info *ri)
{
	char tmp[PATH_MAX], cmd[PATH_MAX];
	size_t i;
	int fd, err = 0, k;
	FILE *f;

	fd = open_tmp(ri->outdir, "summary.json", tmp, sizeof(tmp));
	if (fd < 0)
		return -errno;
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		unlink(tmp);
		return -errno;
	}
	fprintf(f, "{\n  \"command_line\": [");
	for (k = 0; k < ri->argc; k++) {
		fputs(k ? ", " : "", f);
		json_str(f, ri->argv[k]);
	}
	fprintf(f, "],\n  \"event\": ");
	json_str(f, ri->event);
	fprintf(f,
		",\n  \"frequency_hz\": %d,\n  \"duration_s\": %.3f,\n  \"start_time_ns\": %" PRIu64
		",\n  \"samples\": %" PRIu64 ",\n  \"lost_samples\": %" PRIu64
		",\n  \"lost_task_events\": %" PRIu64 ",\n  \"kernel_stack_errors\": %" PRIu64
		",\n  \"user_stack_errors\": %" PRIu64 ",\n  \"processes\": [",
		ri->freq, ri->duration_ns / 1e9, ri->start_realtime_ns, ri->samples, ri->lost,
		ri->lost_tasks, ri->kstack_err, ri->ustack_err);
	for (i = 0, k = 0; i < procs.v.n; i++) {
		const struct proc *p = procs.v.v[i];

		if (!p->samples.n && !p->lost)
			continue;
		fprintf(f, "%s\n    {\"pid\": %d, \"comm\": ", k++ ? "," : "", p->pid);
		json_str(f, p->comm);
		fprintf(f, ", \"samples\": %zu, \"lost_samples\": %" PRIu64 ", \"threads\": %zu}",
			p->samples.n, p->lost, p->threads.n);
	}
	fprintf(f, "\n  ],\n  \"files\": [");
	for (i = 0; i < written.n; i++) {
		fprintf(f, "%s\n    {\"file\": ", i ? "," : "");
		json_str(f, written.v[i].name);
		if (written.v[i].pid)
			fprintf(f, ", \"pid\": %d", written.v[i].pid);
		fprintf(f, ", \"open\": ");
		json_str(f, written.v[i].open_cmd);
		fputc('}', f);
	}
	fprintf(f, "\n  ]\n}\n");
	if (fflush(f))
		err = -errno;
	snprintf(cmd, sizeof(cmd), "cat %s/summary.json", ri->outdir);
	if (!err)
		err = commit_file(ri->outdir, "summary.json", tmp, fd, 0, cmd);
	else
		unlink(tmp);
	fclose(f);
	return err;
}

static int make_outdir(const char *dir)
{
	struct stat st;

	if (mkdir(dir, 0755) == 0) {
		give_to_invoker(-1, dir);
		return 0;
	}
	if (errno == EEXIST && !stat(dir, &st) && S_ISDIR(st.st_mode))
		return 0;
	fprintf(stderr, "bpftrace-rec: output directory %s: %s\n", dir,
		errno == EEXIST ? "exists and is not a directory" : strerror(errno));
	return -ENOTDIR;
}

int output_write(const struct run_info *ri)
{
	size_t i;
	int err, first = 0;

	VEC_FREE(written);
	err = make_outdir(ri->outdir);
	if (err)
		return err;
	/* Each file on its own: one failure does not cost the others. */
	if ((err = write_pprof(ri)) && !first)
		first = err;
	for (i = 0; ri->gperftools && i < procs.v.n; i++)
		if ((err = write_cpuprofile(ri, procs.v.v[i])) && !first)
			first = err;
	if ((err = write_summary(ri)) && !first)
		first = err;
	if (verbosity >= 0) {
		fprintf(stderr, "bpftrace-rec: %" PRIu64 " samples (%" PRIu64 " lost) in %.1fs; files:\n",
			ri->samples, ri->lost, ri->duration_ns / 1e9);
		for (i = 0; i < written.n; i++)
			fprintf(stderr, "  %s\n", written.v[i].open_cmd);
	}
	VEC_FREE(written);
	return first;
}
