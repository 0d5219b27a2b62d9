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
#include "user/xray.h"

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

/* Writes one file: fn fills a temporary file in the output directory, which
 * is renamed to name once complete, so a failure leaves no half file. A
 * writer that returns -ENODATA had nothing to write: no file, no error. */
typedef int (*fill_fn)(void *ctx, FILE *f);

static int emit_file(const char *dir, const char *name, pid_t pid, const char *open_cmd,
		     fill_fn fn, void *ctx)
{
	char tmp[PATH_MAX], path[PATH_MAX];
	struct written w = {.pid = pid};
	FILE *f = NULL;
	int fd, err;

	snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", dir, name);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		fprintf(stderr, "bpftrace-rec: create %s: %s\n", tmp, strerror(-err));
		return err;
	}
	fchmod(fd, 0644);
	give_to_invoker(fd, tmp);
	f = fdopen(fd, "w");
	if (!f) {
		err = -errno;
		close(fd);
	} else {
		err = fn(ctx, f);
		if (fflush(f) && !err)
			err = -errno;
		if (fclose(f) && !err)
			err = -errno;
	}
	if (err) {
		unlink(tmp);
		if (err != -ENODATA)
			fprintf(stderr, "bpftrace-rec: write %s/%s: %s\n", dir, name, strerror(-err));
		return err == -ENODATA ? 0 : err;
	}
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (rename(tmp, path)) {
		err = -errno;
		fprintf(stderr, "bpftrace-rec: rename %s to %s: %s\n", tmp, path, strerror(-err));
		unlink(tmp);
		return err;
	}
	snprintf(w.name, sizeof(w.name), "%s", name);
	snprintf(w.open_cmd, sizeof(w.open_cmd), "%s", open_cmd);
	return VEC_PUSH(written, w);
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
	line.function = frame_name(f, buf, sizeof(buf));
	if (f->kind == FRAME_KERNEL && f->module)
		line.filename = f->module;
	return pprof_location(pp, mapping, f->pc, &line, 1);
}

static int fill_pprof(void *ctx, FILE *out)
{
	const struct run_info *ri = ctx;
	struct pprof *pp;
	uint64_t kmap, locs[MAX_STACK_FRAMES];
	size_t i, j;
	int err = 0;

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
	if (!err) {
		fflush(out);
		err = pprof_write_fd(pp, fileno(out));
	}
	pprof_free(pp);
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

static int fill_cpuprofile(void *ctx, FILE *f)
{
	const struct run_info *ri = ((void **)ctx)[0];
	struct proc *p = ((void **)ctx)[1];
	struct cpuprof *c;
	uint64_t pcs[MAX_USER_FRAMES];
	size_t j, users = 0;
	int err = 0;

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
	if (!err)
		err = users ? cpuprof_write(c, f, p->maps_text) : -ENODATA;
	cpuprof_free(c);
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

static int fill_summary(void *ctx, FILE *f)
{
	const struct run_info *ri = ctx;
	size_t i;
	int k;

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
		",\n  \"user_stack_errors\": %" PRIu64 ",\n  \"traced_calls\": %" PRIu64
		",\n  \"lost_traced_calls\": %" PRIu64 ",\n  \"processes\": [",
		ri->freq, ri->duration_ns / 1e9, ri->start_realtime_ns, ri->samples, ri->lost,
		ri->lost_tasks, ri->kstack_err, ri->ustack_err, ri->traced_calls, ri->lost_calls);
	for (i = 0, k = 0; i < procs.v.n; i++) {
		const struct proc *p = procs.v.v[i];

		if (!p->samples.n && !p->lost && !p->exact)
			continue;
		fprintf(f, "%s\n    {\"pid\": %d, \"comm\": ", k++ ? "," : "", p->pid);
		json_str(f, p->comm);
		fprintf(f,
			", \"samples\": %zu, \"lost_samples\": %" PRIu64 ", \"threads\": %zu"
			", \"unwinding\": \"%s\", \"dwarf_unwound\": %" PRIu64
			", \"dwarf_truncated\": %" PRIu64 ", \"leaf_callers_added\": %" PRIu64 "}",
			p->samples.n, p->lost, p->threads.n, p->dwarf ? "dwarf" : "fp", p->unwound,
			p->truncated, p->leaf_fixed);
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
	return 0;
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

static int fill_map(void *ctx, FILE *f)
{
	(void)ctx;
	fflush(f);
	return xray_write_map(fileno(f));
}

static int fill_sampled(void *ctx, FILE *f)
{
	return xray_write_sampled(ctx, f);
}

static int fill_exact(void *ctx, FILE *f)
{
	return xray_write_exact(ctx, f);
}

/* keep the first error */
#define FIRST(first, call)                                                                         \
	do {                                                                                       \
		int e_ = (call);                                                                   \
		if (e_ && !(first))                                                                \
			(first) = e_;                                                              \
	} while (0)

/* The XRay trace(s) of a process and the map that names their ids. */
static int write_xray(const struct run_info *ri, struct proc *p, const char *suffix, bool sampled)
{
	char name[96], map[96], cmd[3 * PATH_MAX];
	size_t before = written.n;
	int first = 0;

	snprintf(map, sizeof(map), "xray-%d.map", p->pid);
	if (sampled) {
		snprintf(name, sizeof(name), "xray-%d%s.fdr", p->pid, suffix);
		snprintf(cmd, sizeof(cmd), "llvm-xray account -m %s/%s %s/%s", ri->outdir, map,
			 ri->outdir, name);
		FIRST(first, emit_file(ri->outdir, name, p->pid, cmd, fill_sampled, p));
	}
	snprintf(name, sizeof(name), "xray-trace-%d%s.fdr", p->pid, suffix);
	snprintf(cmd, sizeof(cmd), "llvm-xray account -m %s/%s %s/%s", ri->outdir, map, ri->outdir,
		 name);
	FIRST(first, emit_file(ri->outdir, name, p->pid, cmd, fill_exact, p));
	/* Written after the traces: their writing gave the last ids names. */
	if (written.n > before) {
		snprintf(cmd, sizeof(cmd), "llvm-xray extract %s/%s", ri->outdir, map);
		FIRST(first, emit_file(ri->outdir, map, p->pid, cmd, fill_map, NULL));
	}
	return first;
}

int output_snapshot(const struct run_info *ri, unsigned n)
{
	char suffix[32];
	size_t i;
	int first = 0;

	if (make_outdir(ri->outdir))
		return -ENOTDIR;
	snprintf(suffix, sizeof(suffix), ".snapshot-%u", n);
	for (i = 0; i < procs.v.n; i++)
		if (procs.v.v[i]->exact)
			FIRST(first, write_xray(ri, procs.v.v[i], suffix, false));
	return first;
}

int output_write(const struct run_info *ri)
{
	char name[64], cmd[3 * PATH_MAX], exe[PATH_MAX];
	size_t i;
	int first = 0;

	if (make_outdir(ri->outdir))
		return -ENOTDIR;
	/* Each file on its own: one failure does not cost the others. */
	snprintf(cmd, sizeof(cmd), "pprof -top %s/profile.pb.gz", ri->outdir);
	FIRST(first, emit_file(ri->outdir, "profile.pb.gz", 0, cmd, fill_pprof, (void *)ri));
	for (i = 0; ri->per_process && i < procs.v.n; i++) {
		struct proc *p = procs.v.v[i];
		void *ctx[2] = {(void *)ri, p};

		snprintf(name, sizeof(name), "cpu-%d.prof", p->pid);
		exe_path(p, exe, sizeof(exe));
		snprintf(cmd, sizeof(cmd), "google-pprof --text %s %s/%s", exe, ri->outdir, name);
		FIRST(first, emit_file(ri->outdir, name, p->pid, cmd, fill_cpuprofile, ctx));
		FIRST(first, write_xray(ri, p, "", true));
	}
	snprintf(cmd, sizeof(cmd), "cat %s/summary.json", ri->outdir);
	FIRST(first, emit_file(ri->outdir, "summary.json", 0, cmd, fill_summary, (void *)ri));
	if (verbosity >= 0) {
		fprintf(stderr, "bpftrace-rec: %" PRIu64 " samples (%" PRIu64 " lost) in %.1fs; files:\n",
			ri->samples, ri->lost, ri->duration_ns / 1e9);
		for (i = 0; i < written.n; i++)
			fprintf(stderr, "  %s\n", written.v[i].open_cmd);
	}
	VEC_FREE(written);
	return first;
}
