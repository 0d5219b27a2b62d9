/* The recording's files: which are written, in what order, and the fold
 * that writes exited processes as they go under -a. Each file has its
 * writer (writers.h, xray.h); the directory and atomic writing are
 * outdir.c's. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include "user/offcpu.h"
#include "user/outdir.h"
#include "user/output.h"
#include "user/target.h"
#include "user/proc.h"
#include "user/trace.h"
#include "user/util.h"
#include "user/writers.h"
#include "user/xray.h"

/* Under -a without per-process files, exited processes are written into
 * the profile and the summary as they are done with (output_fold): the
 * profile's part to a spill file, the summary's rows to another, both
 * nameless files in the output directory. Memory then stays flat however
 * many processes come and go; the files grow on disk instead. */
struct fold {
	struct pprof_fold *pf;
	int spill_fd;	 /* pf's spill file */
	FILE *rows;	 /* summary rows, a line each */
	long rows_end;	 /* where the last complete row ends */
	const char *dir; /* for messages */
	bool broken;	 /* rows could not be written: fold no more */
	bool warned;
	/* ri's: output_fold_live has no run_info to reach them by. */
	struct procs *procs;
	struct flame_views *flame;
	const struct offcpu *offcpu;
};

struct fold *output_fold_new(const struct run_info *ri)
{
	struct fold *fo = calloc(1, sizeof(*fo));
	int rows_fd = -1;

	if (!fo)
		return NULL;
	fo->spill_fd = outdir_unnamed(ri->out);
	if (fo->spill_fd >= 0)
		rows_fd = outdir_unnamed(ri->out);
	if (rows_fd >= 0 && !(fo->rows = fdopen(rows_fd, "w+")))
		close(rows_fd);
	if (fo->spill_fd >= 0 && fo->rows)
		fo->pf = pprof_fold_new(ri, fo->spill_fd);
	if (!fo->pf) {
		warn("cannot set aside exited processes in %s (%s): they stay in memory to "
		     "the end",
		     ri->out->path, strerror(fo->spill_fd < 0 ? -fo->spill_fd : errno));
		output_fold_free(fo);
		return NULL;
	}
	fo->dir = ri->out->path;
	fo->procs = ri->procs;
	fo->flame = ri->flame;
	fo->offcpu = ri->offcpu;
	return fo;
}

bool output_fold(struct fold *fo, struct proc *p)
{
	/* JIT frames are named from the runtime's files at the end; -t
	 * traces are written at the end. */
	if (p->exact || proc_named_by_time(p))
		return false;
	/* Nothing to write; a process that only waited has its waits. */
	if (!p->nsamples && !p->lost && !offcpu_proc_ns(fo->offcpu, p))
		return true;
	if (fo->broken)
		return false;
	summary_row(fo->rows, p, fo->offcpu);
	if (fputc('\n', fo->rows) == EOF || fflush(fo->rows)) {
		if (!fo->warned)
			warn("cannot set aside exited processes in %s (%s): they stay in "
			     "memory to the end",
			     fo->dir, strerror(errno));
		fo->warned = fo->broken = true;
		return false;
	}
	fo->rows_end = ftell(fo->rows);
	pprof_fold_add(fo->pf, p);
	flame_fold_add(fo->flame, p, fo->offcpu);
	return true;
}

void output_fold_live(struct fold *fo)
{
	size_t i;

	/* --off-cpu's sums name the processes' stacks by index until the
	 * end: a stack forgotten here would be another's. Running processes
	 * then keep their stacks to the end (or their exit). */
	if (fo->broken || fo->offcpu)
		return;
	for (i = 0; i < fo->procs->v.n; i++) {
		struct proc *p = fo->procs->v.v[i];

		/* JIT frames are named at the end, from the runtime's files. */
		if (p->exited || !p->samples.n || p->exact || proc_named_by_time(p))
			continue;
		pprof_fold_add(fo->pf, p);
		flame_fold_add(fo->flame, p, fo->offcpu);
		proc_drop_samples(p);
	}
}

void output_fold_free(struct fold *fo)
{
	if (!fo)
		return;
	pprof_fold_free(fo->pf);
	if (fo->spill_fd >= 0)
		close(fo->spill_fd);
	if (fo->rows)
		fclose(fo->rows);
	free(fo);
}

/* pprof where `make deps` builds it, tools/pprof beside the binary (the
 * repository's ./bpftrace-rec): the README's set-up, where no pprof is on
 * PATH. NULL when there is none. */
static char *pprof_beside_binary(void)
{
	char exe[PATH_MAX], *slash;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n <= 0)
		return NULL;
	exe[n] = 0;
	if (!(slash = strrchr(exe, '/')))
		return NULL;
	snprintf(slash, sizeof(exe) - (slash - exe), "/tools/pprof");
	return access(exe, X_OK) ? NULL : xstrdup(exe);
}

/* NAME itself when it is on PATH (as the user will type it), else NULL. */
static char *on_path(const char *name)
{
	char *found = NULL;

	/* The same search as the command's (execvp's), so that what is
	 * printed runs as printed. */
	if (target_resolve_cmd(name, &found))
		return NULL;
	free(found);
	return xstrdup(name);
}

/* How to run this binary again: "bpftrace-rec" when that is what PATH
 * finds, else its path (./bpftrace-rec of the tree, a build elsewhere).
 * NULL when /proc/self/exe cannot be read. */
static char *self_command(void)
{
	char exe[PATH_MAX], *found = NULL;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	struct stat a, b;
	bool same;

	if (n <= 0)
		return NULL;
	exe[n] = 0;
	if (target_resolve_cmd("bpftrace-rec", &found))
		return xstrdup(exe);
	same = !stat(found, &a) && !stat("/proc/self/exe", &b) && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
	free(found);
	return xstrdup(same ? "bpftrace-rec" : exe);
}

void output_readers_find(struct readers *rd)
{
	rd->pprof = on_path("pprof");
	if (!rd->pprof)
		rd->pprof = pprof_beside_binary();
	rd->self = self_command();
	rd->google_pprof = on_path("google-pprof");
	rd->llvm_xray = on_path("llvm-xray");
	rd->flamegraph = on_path("flamegraph.pl");
	rd->xdg_open = on_path("xdg-open");
	rd->nm = on_path("nm");
}

void output_readers_free(struct readers *rd)
{
	free(rd->pprof);
	free(rd->self);
	free(rd->google_pprof);
	free(rd->llvm_xray);
	free(rd->flamegraph);
	free(rd->xdg_open);
	free(rd->nm);
	memset(rd, 0, sizeof(*rd));
}

int output_snapshot(const struct run_info *ri, unsigned n)
{
	char suffix[32];
	size_t i;
	int first = 0;

	snprintf(suffix, sizeof(suffix), ".snapshot-%u", n);
	for (i = 0; i < ri->procs->v.n; i++)
		if (ri->procs->v.v[i]->exact)
			OUT_FIRST(first, xray_write_files(ri, ri->procs->v.v[i], suffix, false));
	return first;
}

int output_write(const struct run_info *ri)
{
	struct fold *fo = ri->fold;
	const struct written *written;
	size_t i, nwritten;
	int first = 0;
	/* Where the files' CPU goes, for -v (what the user waits for at the
	 * stop): profile.pb.gz, the flame graphs, the per-process files. CPU,
	 * not the clock: the host's load is not theirs (test_startup's
	 * stop_flat). */
	uint64_t t[5] = {now_ns(CLOCK_THREAD_CPUTIME_ID)}, cpuprof = 0, xray = 0;

	/* Each file on its own: one failure does not cost the others. */
	OUT_FIRST(first, write_profile(ri, fo ? fo->pf : NULL));
	t[1] = now_ns(CLOCK_THREAD_CPUTIME_ID);
	OUT_FIRST(first, write_flame(ri));
	if (ri->heap) {
		OUT_FIRST(first, write_heap(ri));
		OUT_FIRST(first, write_heap_flame(ri));
	}
	t[2] = now_ns(CLOCK_THREAD_CPUTIME_ID);
	for (i = 0; ri->per_process && i < ri->procs->v.n; i++) {
		struct proc *p = ri->procs->v.v[i];
		uint64_t t0 = now_ns(CLOCK_THREAD_CPUTIME_ID), t1;

		OUT_FIRST(first, write_cpuprofile(ri, p));
		t1 = now_ns(CLOCK_THREAD_CPUTIME_ID);
		OUT_FIRST(first, xray_write_files(ri, p, "", true));
		cpuprof += t1 - t0;
		xray += now_ns(CLOCK_THREAD_CPUTIME_ID) - t1;
	}
	t[3] = now_ns(CLOCK_THREAD_CPUTIME_ID);
	OUT_FIRST(first, write_summary(ri, fo ? fo->rows : NULL, fo ? fo->rows_end : 0));
	t[4] = now_ns(CLOCK_THREAD_CPUTIME_ID);
	debug("files' CPU %.1f ms: profile.pb.gz %.1f, flame graphs %.1f, cpu-PID.prof %.1f, "
	      "xray-PID %.1f, summary.json %.1f",
	      (t[4] - t[0]) / 1e6, (t[1] - t[0]) / 1e6, (t[2] - t[1]) / 1e6, cpuprof / 1e6,
	      xray / 1e6, (t[4] - t[3]) / 1e6);
	/* --window: a line each, for a service's journal; the files are the
	 * same in every window's directory. */
	if (ri->window && msg_verbosity() >= 0)
		info("window %" PRIu64 ": %" PRIu64 " samples (%" PRIu64 " lost) in %.1fs: %s",
		     ri->window->index, ri->samples, ri->lost, ri->duration_ns / 1e9, ri->outdir);
	else if (msg_verbosity() >= 0) {
		char deg[512] = "";

		for (i = 0; ri->degraded && i < ri->degraded->n; i++)
			snprintf(deg + strlen(deg), sizeof(deg) - strlen(deg), "%s%s",
				 i ? ", " : "; degraded on this kernel: ", ri->degraded->what[i]);
		info("%" PRIu64 " samples (%" PRIu64 " lost) in %.1fs%s; files:", ri->samples,
		     ri->lost, ri->duration_ns / 1e9, deg);
		written = outdir_written(&nwritten);
		/* summary.json's commands, each as listed there. */
		for (i = 0; i < nwritten; i++) {
			size_t j;

			fprintf(stderr, "  %s\n", written[i].open_cmd); /* paths we chose */
			for (j = 0; j < written[i].nalso; j++)
				fprintf(stderr, "  %s\n", written[i].also[j]);
		}
	}
	outdir_written_free();
	return first;
}
