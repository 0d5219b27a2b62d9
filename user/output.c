#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <pwd.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "formats/cpuprofile.h"
#include "formats/jitdump.h"
#include "formats/jitelf.h"
#include "formats/pprof.h"
#include "formats/util.h"
#include "user/jit.h"
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

/* keep the first error */
#define FIRST(first, call)                                                                         \
	do {                                                                                       \
		int e_ = (call);                                                                   \
		if (e_ && !(first))                                                                \
			(first) = e_;                                                              \
	} while (0)

/* Under sudo, the directory and files belong to the user who ran it. */
static void give_to_invoker(int fd, const char *what)
{
	const char *u = getenv("SUDO_UID"), *g = getenv("SUDO_GID");

	if (!u || !g || geteuid() != 0)
		return;
	if (fchown(fd, atoi(u), atoi(g)))
		debug("chown %s: %s", what, strerror(errno));
}

/* The writer state a signal handler can reach: output_abort() takes no
 * argument, so outdir_open() leaves the opened directory here. */
static struct outdir *abort_od;

/* Six random name characters: a temporary name nobody can guess ahead. */
static void random_suffix(char out[7])
{
	static const char set[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	static uint64_t counter;
	unsigned char r[6];
	uint64_t x;
	int i;

	if (getrandom(r, sizeof(r), GRND_NONBLOCK) != sizeof(r)) {
		x = hash_u64(now_ns(CLOCK_MONOTONIC) ^ ((uint64_t)getpid() << 32) ^ ++counter);
		memcpy(r, &x, sizeof(r));
	}
	for (i = 0; i < 6; i++)
		out[i] = set[r[i] % (sizeof(set) - 1)];
	out[6] = 0;
}

/* Creates .BASE.XXXXXX in the directory, never through an existing name or
 * symlink, and records it as the file being written. Signals are blocked
 * meanwhile: a handler that ran between the creation and the record would
 * leave the file behind. The fd, or -errno. */
static int create_tmp(struct outdir *od, const char *base)
{
	sigset_t all, old;
	char sfx[7];
	int fd = -1, e = EEXIST, tries;

	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	for (tries = 0; tries < 100 && e == EEXIST; tries++) {
		random_suffix(sfx);
		snprintf(od->tmp, sizeof(od->tmp), ".%s.%s", base, sfx);
		fd = openat(od->fd, od->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			    0600);
		e = fd < 0 ? errno : 0;
	}
	if (fd >= 0) {
		atomic_signal_fence(memory_order_seq_cst); /* the name before the flag */
		od->writing = 1;
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	return fd >= 0 ? fd : -e;
}

/* Renames the temporary file to name, or removes it (name NULL, or a
 * failed rename). 0 or -errno of the rename. */
static int finish_tmp(struct outdir *od, const char *name)
{
	int err = 0;

	if (name && renameat(od->fd, od->tmp, od->fd, name))
		err = -errno;
	if (!name || err)
		unlinkat(od->fd, od->tmp, 0);
	od->writing = 0;
	return err;
}

void output_abort(void)
{
	struct outdir *od = abort_od;

	if (od && od->writing)
		unlinkat(od->fd, od->tmp, 0);
}

/* The stream the writers fill. stdio reports only that a write failed (and
 * the writers then return -EIO); the sink keeps the real errno (ENOSPC). */
struct sink {
	int fd;
	int err; /* the first failed write's errno */
};

static ssize_t sink_write(void *cookie, const char *buf, size_t n)
{
	struct sink *s = cookie;
	size_t done = 0;

	while (done < n) {
		ssize_t w = write(s->fd, buf + done, n - done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (!s->err)
				s->err = w < 0 ? errno : EIO;
			return done; /* fopencookie: short means failed */
		}
		done += w;
	}
	return done;
}

/* Writes one file: fn fills a temporary file in the output directory (by
 * the stream f, or by fd directly), which is renamed to name once complete,
 * so a failure leaves no half file. A writer that returns -ENODATA had
 * nothing to write: no file, no error. */
typedef int (*fill_fn)(void *ctx, FILE *f, int fd);

static int emit_file(struct outdir *od, const char *name, pid_t pid, const char *open_cmd,
		     fill_fn fn, void *ctx)
{
	static const cookie_io_functions_t io = {.write = sink_write};
	struct written w = {.pid = pid};
	struct sink s = {0};
	FILE *f;
	int fd, err, e;

	fd = create_tmp(od, name);
	if (fd < 0) {
		err("create %s/.%s.XXXXXX: %s", od->path, name, strerror(-fd));
		return fd;
	}
	fchmod(fd, 0644);
	give_to_invoker(fd, name);
	s.fd = fd;
	f = fopencookie(&s, "w", io);
	if (!f) {
		err = -errno;
	} else {
		errno = 0;
		err = fn(ctx, f, fd);
		e = errno;
		if (fflush(f) && !err)
			err = -EIO;
		fclose(f); /* not fd: io has no close */
		/* Name the real reason of a failed write, not stdio's or
		 * libelf's -EIO (libelf leaves the write's errno). */
		if (err == -EIO && s.err)
			err = -s.err;
		else if (err == -EIO && (e == ENOSPC || e == EDQUOT || e == EFBIG))
			err = -e;
	}
	if (close(fd) && !err)
		err = -errno;
	if (err) {
		finish_tmp(od, NULL);
		if (err != -ENODATA)
			err("write %s/%s: %s", od->path, name, strerror(-err));
		return err == -ENODATA ? 0 : err;
	}
	err = finish_tmp(od, name);
	if (err) {
		err("rename %s/%s to %s: %s", od->path, od->tmp, name, strerror(-err));
		return err;
	}
	snprintf(w.name, sizeof(w.name), "%s", name);
	snprintf(w.open_cmd, sizeof(w.open_cmd), "%s", open_cmd);
	return VEC_PUSH(written, w);
}

/* Root, us, or the user who ran sudo: anyone else could swap the files. */
static bool trusted_owner(uid_t uid)
{
	const char *u = getenv("SUDO_UID");
	char *end;
	unsigned long v;

	if (uid == 0 || uid == geteuid())
		return true;
	if (!u || !*u)
		return false;
	errno = 0;
	v = strtoul(u, &end, 10);
	return !errno && !*end && v == uid;
}

static const char *user_name(uid_t uid)
{
	struct passwd *pw = getpwuid(uid);

	return pw ? pw->pw_name : "no such user";
}

/* Creates, writes, renames and removes a file in the directory: what the
 * writing of the files will do, checked before anything is recorded
 * (read-only, immutable, append-only, full). Signals are blocked, as no
 * handler is there yet to remove the file. */
static int probe_outdir(struct outdir *od)
{
	char done[sizeof(od->tmp) + 2];
	const char *what = "create files";
	sigset_t all, old;
	int fd, err = 0;

	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	fd = create_tmp(od, "bpftrace-rec-probe");
	if (fd < 0) {
		err = fd;
		goto out;
	}
	if (write(fd, "probe\n", 6) != 6) {
		err = errno ? -errno : -EIO;
		what = "write files";
	}
	if (close(fd) && !err) {
		err = -errno;
		what = "write files";
	}
	snprintf(done, sizeof(done), "%s~", od->tmp);
	if (!err && renameat(od->fd, od->tmp, od->fd, done)) {
		err = -errno;
		what = "rename files";
	}
	if (err) {
		finish_tmp(od, NULL);
		goto out;
	}
	od->writing = 0;
	if (unlinkat(od->fd, done, 0)) {
		err = -errno;
		what = "remove files";
	}
out:
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (err)
		err("output directory %s: cannot %s in it: %s%s", od->path, what, strerror(-err),
		    err == -EPERM ? " (immutable or append-only? see lsattr -d)" : "");
	return err;
}

int outdir_open(struct outdir *od, const char *path)
{
	bool created = false;
	struct stat st;
	int err;

	od->path = path;
	od->fd = -1;
	od->writing = 0;
	if (!mkdir(path, 0755)) {
		created = true;
	} else if (errno == ENOENT) {
		char *copy = xstrdup(path);

		err("output directory %s: its parent %s does not exist (only the last component is "
		    "created: make the parent first, e.g. mkdir -p)",
		    path, dirname(copy));
		free(copy);
		return -ENOENT;
	} else if (errno != EEXIST) {
		err = -errno;
		err("output directory %s: cannot create it: %s", path, strerror(-err));
		return err;
	}
	/* Once, without following a symlink there: the files are then made
	 * relative to this fd, whatever happens to the path. */
	od->fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (od->fd < 0) {
		err = -errno;
		if (!lstat(path, &st) && S_ISLNK(st.st_mode))
			err("output directory %s is a symbolic link (owned by %s, uid %u); "
			    "refusing "
			    "to follow it: give the directory itself",
			    path, user_name(st.st_uid), (unsigned)st.st_uid);
		else if (err == -ENOTDIR)
			err("output directory %s: exists and is not a directory", path);
		else
			err("output directory %s: %s", path, strerror(-err));
		return err;
	}
	if (fstat(od->fd, &st)) {
		err = -errno;
		err("output directory %s: %s", path, strerror(-err));
		goto fail;
	}
	if (!trusted_owner(st.st_uid)) {
		err("output directory %s belongs to %s (uid %u), not to root or the invoking "
		    "user; refusing to write there",
		    path, user_name(st.st_uid), (unsigned)st.st_uid);
		err = -EPERM;
		goto fail;
	}
	if (created)
		give_to_invoker(od->fd, path);
	err = probe_outdir(od);
	if (err)
		goto fail;
	abort_od = od;
	return 0;
fail:
	close(od->fd);
	od->fd = -1;
	if (created) /* leave nothing behind */
		rmdir(path);
	return err;
}

static uint64_t kernel_mapping(struct pprof *pp)
{
	return pprof_mapping(pp, 0xffff800000000000ULL, UINT64_MAX, 0, "[kernel.kallsyms]", NULL,
			     true);
}

static uint64_t frame_location(struct pprof *pp, const struct frame *f, const char *name,
			       const char *file, int line, uint64_t *kmap)
{
	struct pprof_line l = {.function = name, .filename = file, .line = line};
	uint64_t mapping = 0;

	if (name == f->name) /* profile.proto: the mangled name is the system name */
		l.system_name = f->system_name;

	if (f->kind == FRAME_KERNEL) {
		if (!*kmap)
			*kmap = kernel_mapping(pp);
		mapping = *kmap;
		if (f->module)
			l.filename = f->module;
	} else if (f->map) {
		if (!f->map->out_id) {
			const char *bid = f->map->sym ? symfile_build_id(f->map->sym) : NULL;

			f->map->out_id = pprof_mapping(pp, f->map->start, f->map->end,
						       f->map->offset, f->map->path, bid, true);
		}
		mapping = f->map->out_id;
	}
	return pprof_location(pp, mapping, f->pc, &l, 1);
}

/* A program's mapping, kept for the profile's "File:" (set_program). */
struct program {
	uint64_t nsamples, start, end, offset;
	char *path, *build_id;
};

/* Under -a without per-process files, exited processes are written into
 * the profile and the summary as they are done with (output_fold): the
 * profile's part to a spill file, the summary's rows to another, both
 * nameless files in the output directory. Memory then stays flat however
 * many processes come and go; the files grow on disk instead. Frames get no
 * source lines then: reading a program's DWARF for them took 0.1 s and more
 * per program with debug info, in the middle of the drain (short-lived
 * processes then exited before their maps were read), and kept it all in
 * memory, so that the recorder grew with every program the host ran. */
struct fold {
	struct pprof *pp;
	uint64_t kmap;		/* the kernel's mapping in pp */
	int spill_fd;		/* pp's spill file */
	FILE *rows;		/* summary rows, a line each */
	long rows_end;		/* where the last complete row ends */
	struct program program; /* of the folded process with the most samples */
	const char *dir;	/* for messages */
	bool broken;		/* rows could not be written: fold no more */
	bool warned;
};

/* A process's samples into the profile, each frame a location; with their
 * source lines when lines is set. */
static int add_proc(struct pprof *pp, struct proc *p, uint64_t *kmap, bool lines)
{
	uint64_t locs[MAX_STACK_FRAMES];
	size_t j;
	int err = 0;

	for (j = 0; j < p->maps_all.n; j++)
		p->maps_all.v[j]->out_id = 0;
	for (j = 0; j < p->frames.n; j++)
		p->frames.v[j].out_id = 0;
	for (j = 0; j < p->samples.n && !err; j++) {
		const struct sample *s = &p->samples.v[j];
		uint32_t nk, nu, k, n;
		const uint32_t *ids = proc_stack(p, s->stack, &nk, &nu);
		const struct thread *t = proc_thread_find(p, s->tid);
		struct pprof_label labels[4] = {
		    /* Units keep value 0 (cpu 0, pid 0): pprof drops a
		     * numeric label that is 0 and has no unit. */
		    {.key = "pid", .num = p->pid, .num_unit = "pid"},
		    {.key = "tid", .num = s->tid, .num_unit = "tid"},
		    {.key = "comm", .str = t && t->comm[0] ? t->comm : p->comm},
		    {.key = "cpu", .num = s->cpu, .num_unit = "cpu"},
		};

		n = nk + nu;
		for (k = 0; k < n; k++) {
			struct frame *f = &p->frames.v[ids[k]];
			char buf[PATH_MAX + 4];
			const char *name, *file = NULL;
			int line = 0;

			if (f->name || f->kind != FRAME_USER) {
				if (!f->out_id) {
					if (lines)
						proc_srcline(f, &file, &line);
					f->out_id =
					    frame_location(pp, f, frame_name(f, buf, sizeof(buf)),
							   file, line, kmap);
				}
				locs[k] = f->out_id;
			} else { /* maybe JIT code: named as it was at the sample's time */
				name = frame_name_at(p, f, s->time_ns, buf, sizeof(buf),
						     lines ? &file : NULL, &line);
				locs[k] = frame_location(pp, f, name, file, line, kmap);
			}
			if (!locs[k])
				err = -ENOMEM;
		}
		if (!err)
			err = pprof_add_sample(pp, locs, n, s->count, labels, 4);
	}
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

static void set_program(struct pprof *pp, const struct program *folded, bool system_wide)
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

	for (i = 0; i < procs.v.n; i++)
		note_program(&live, procs.v.v[i]);
	best = folded && folded->nsamples > live.nsamples ? folded : &live;
	if (best->path && (id = pprof_mapping(pp, best->start, best->end, best->offset, best->path,
					      best->build_id, true)))
		pprof_set_main_mapping(pp, id);
	free(live.path);
	free(live.build_id);
}

static int fill_pprof(void *ctx, FILE *out, int fd)
{
	const struct run_info *ri = ctx;
	struct fold *fo = ri->fold;
	struct pprof *pp;
	uint64_t kmap = 0, *km = fo ? &fo->kmap : &kmap;
	size_t i;
	int err = 0;

	pp = fo ? fo->pp : pprof_new(1000000000LL / ri->freq, ri->start_realtime_ns, 0);
	if (!pp)
		return -ENOMEM;
	pprof_set_duration(pp, ri->duration_ns);
	set_program(pp, fo ? &fo->program : NULL, ri->system_wide);
	for (i = 0; i < procs.v.n && !err; i++)
		err = add_proc(pp, procs.v.v[i], km, !fo);
	if (!err) {
		fflush(out);
		err = pprof_write_fd(pp, fd);
	}
	if (!fo)
		pprof_free(pp);
	return err;
}

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
	uint32_t k;

	for (j = 0; j < p->samples.n; j++) {
		uint32_t nk, nu;
		const struct sample *s = &p->samples.v[j];
		const uint32_t *ids = proc_stack(p, s->stack, &nk, &nu);

		for (k = 0; k < nu; k++) {
			const struct frame *f = &p->frames.v[ids[nk + k]];
			struct jitelf_func fn = {0};
			struct jit_hit hit;
			size_t i;

			if (f->name || !jit_find(p, f->pc, s->time_ns, &hit))
				continue;
			for (i = ji->funcs.n; i-- > 0;)
				if (ji->funcs.v[i].start == hit.start)
					break;
			if (i != (size_t)-1)
				continue;
			fn.start = hit.start;
			fn.size = hit.size;
			fn.name = hit.name;
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

struct cpuprof_ctx {
	const struct run_info *ri;
	struct proc *p;
	const struct jit_image *jit; /* NULL: no JIT image */
	size_t first, end;	     /* the image's samples */
	const char *maps;	     /* the image's maps */
};

/* The process's mapping lines, with the anonymous ones that the JIT image
 * covers replaced by the image's line: the readers take the first mapping
 * that holds an address. */
static char *maps_with_jit(const char *maps, const struct jit_image *ji)
{
	size_t len = strlen(maps), n = 0;
	char *out = malloc(len + strlen(ji->line) + 1);
	const char *p = maps;
	bool placed = false;

	if (!out)
		return NULL;
	while (*p) {
		const char *nl = strchr(p, '\n'), *end = nl ? nl + 1 : p + strlen(p);
		unsigned long long a, b;
		char line[256], file[2] = "";
		size_t ll = end - p < (long)sizeof(line) - 1 ? (size_t)(end - p) : sizeof(line) - 1;

		memcpy(line, p, ll);
		line[ll] = 0;
		/* anonymous: no sixth field */
		if (sscanf(line, "%llx-%llx %*s %*s %*s %*s %1s", &a, &b, file) == 2 &&
		    a < ji->end && b > ji->start) {
			if (!placed) {
				memcpy(out + n, ji->line, strlen(ji->line));
				n += strlen(ji->line);
				placed = true;
			}
		} else {
			memcpy(out + n, p, end - p);
			n += end - p;
		}
		p = end;
	}
	if (!placed) {
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
		uint32_t nk, nu, k;
		const struct sample *s = &p->samples.v[j];
		const uint32_t *ids = proc_stack(p, s->stack, &nk, &nu);

		/* Stored verbatim: the readers subtract 1 from callers themselves. */
		for (k = 0; k < nu; k++) {
			const struct frame *fr = &p->frames.v[ids[nk + k]];

			pcs[k] = fr->caller ? fr->pc + 1 : fr->pc;
		}
		if (nu) {
			users++;
			err = cpuprof_add(c, pcs, nu, s->count);
		}
	}
	if (!err && !users)
		err = -ENODATA;
	if (!err) {
		char *maps = cc->jit && cc->maps ? maps_with_jit(cc->maps, cc->jit) : NULL;

		err = cpuprof_write(c, f, maps ? maps : cc->maps);
		free(maps);
	}
	cpuprof_free(c);
	return err;
}

/* The absolute path of the directory opened, not of whatever the path
 * names now. */
static bool outdir_realpath(const struct outdir *od, char *buf, size_t len)
{
	char link[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", od->fd);
	n = readlink(link, buf, len - 1);
	if (n <= 0 || buf[0] != '/')
		return false;
	buf[n] = 0;
	return true;
}

/* The per-process gperftools file, with the image of its JIT code; one
 * more for each program it ran before an exec (cpu-PID.N.prof, N from 0,
 * oldest first): a file has one maps section, and the readers could not
 * name an earlier program's addresses with the last one's. */
static int write_cpuprofile(const struct run_info *ri, struct proc *p)
{
	struct jit_image ji = {0};
	struct cpuprof_ctx cc = {ri, p, NULL, 0, p->samples.n, p->maps_text};
	char name[64], cmd[3 * PATH_MAX], exe[PATH_MAX], dir[PATH_MAX];
	int first = 0;
	size_t i;

	for (i = 0; i < p->images.n; i++) {
		struct cpuprof_ctx ic = {
		    ri, p, NULL, cc.first, p->images.v[i].samples_end, p->images.v[i].maps_text};

		cc.first = ic.end;
		if (!ic.maps || ic.end <= ic.first)
			continue;
		snprintf(name, sizeof(name), "cpu-%d.%zu.prof", p->pid, i);
		exe_path(p, p->images.v[i].exe, exe, sizeof(exe));
		snprintf(cmd, sizeof(cmd), "google-pprof --text %s %s/%s", exe, ri->outdir, name);
		FIRST(first, emit_file(ri->out, name, p->pid, cmd, fill_cpuprofile, &ic));
	}

	FIRST(first, collect_jit(p, &ji));
	if (ji.funcs.n && outdir_realpath(ri->out, dir, sizeof(dir))) {
		snprintf(name, sizeof(name), "jit-%d.so", p->pid);
		snprintf(cmd, sizeof(cmd), "nm -n %s/%s", ri->outdir, name);
		FIRST(first, emit_file(ri->out, name, p->pid, cmd, fill_jitelf, &ji));
		if (ji.end > ji.start) {
			snprintf(ji.line, sizeof(ji.line), "%llx-%llx r-xp %08llx 00:00 0 %s/%s\n",
				 (unsigned long long)ji.start, (unsigned long long)ji.end,
				 (unsigned long long)ji.offset, dir, name);
			cc.jit = &ji;
		}
	}
	snprintf(name, sizeof(name), "cpu-%d.prof", p->pid);
	exe_path(p, p->exe, exe, sizeof(exe));
	snprintf(cmd, sizeof(cmd), "google-pprof --text %s %s/%s", exe, ri->outdir, name);
	FIRST(first, emit_file(ri->out, name, p->pid, cmd, fill_cpuprofile, &cc));
	for (i = 0; i < ji.funcs.n; i++)
		free((void *)ji.funcs.v[i].lines);
	VEC_FREE(ji.funcs);
	return first;
}

/* A JSON string. Names are sanitized where they enter the model; the rest
 * (command line, output directory) is the user's, sanitized here as JSON
 * must be valid UTF-8. */
static void json_str(FILE *f, const char *raw)
{
	char *clean = fmt_sanitize_dup(raw, strlen(raw));
	const char *s = clean ? clean : "";

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
	free(clean);
}

/* A process's row of summary.json, on one line. */
static void summary_row(FILE *f, const struct proc *p)
{
	fprintf(f, "{\"pid\": %d, \"comm\": ", p->pid);
	json_str(f, p->comm);
	fprintf(f,
		", \"samples\": %" PRIu64 ", \"lost_samples\": %" PRIu64 ", \"threads\": %zu"
		", \"unwinding\": \"%s\", \"cfi_walked\": %" PRIu64
		", \"cfi_reached_root\": %" PRIu64 ", \"cfi_to_dwarf\": %" PRIu64
		", \"dwarf_unwound\": %" PRIu64 ", \"dwarf_truncated\": %" PRIu64
		", \"leaf_callers_added\": %" PRIu64 ", \"dwarf_unwind_ns\": %" PRIu64 "}",
		p->nsamples, p->lost, p->threads.n,
		p->cfi_walked > p->unwound ? "cfi"
		: p->unwound		   ? "dwarf"
					   : "fp",
		p->cfi_walked, p->cfi_root, p->cfi_to_dwarf, p->unwound, p->truncated,
		p->leaf_fixed, p->unwind_ns);
}

static int fill_summary(void *ctx, FILE *f, int fd)
{
	const struct run_info *ri = ctx;
	size_t i;
	int k;

	(void)fd;
	fprintf(f, "{\n  \"command_line\": [");
	for (k = 0; k < ri->argc; k++) {
		fputs(k ? ", " : "", f);
		json_str(f, ri->argv[k]);
	}
	fprintf(f, "],\n  \"event\": ");
	json_str(f, ri->event);
	fprintf(f,
		",\n  \"frequency_hz\": %d,\n  \"ringbuf_mib\": %u,\n  \"duration_s\": %.3f,\n  "
		"\"start_time_ns\": %" PRIu64 ",\n  \"samples\": %" PRIu64
		",\n  \"sample_bytes\": %" PRIu64 ",\n  \"lost_samples\": %" PRIu64
		",\n  \"lost_task_events\": %" PRIu64 ",\n  \"kernel_stack_errors\": %" PRIu64
		",\n  \"user_stack_errors\": %" PRIu64
		",\n  \"user_stacks_walked_by_kernel\": %" PRIu64 ",\n  \"traced_calls\": %" PRIu64
		",\n  \"lost_traced_calls\": %" PRIu64 ",\n  \"kernel\": ",
		ri->freq, ri->ringbuf_mb, ri->duration_ns / 1e9, ri->start_realtime_ns, ri->samples,
		ri->sample_bytes, ri->lost, ri->lost_tasks, ri->kstack_err, ri->ustack_err,
		ri->kernel_walks, ri->traced_calls, ri->lost_calls);
	json_str(f, ri->kernel ? ri->kernel : "");
	if (ri->cfi)
		fprintf(f,
			",\n  \"cfi_walk\": {\"walks\": %" PRIu64 ", \"reached_root\": %" PRIu64
			", \"truncated\": %" PRIu64 ", \"to_dwarf\": %" PRIu64
			", \"fp_steps_no_mapping\": %" PRIu64 ", \"fp_steps_no_cfi\": %" PRIu64
			", \"read_errors\": %" PRIu64 ", \"uretprobe_misses\": %" PRIu64
			", \"tables_built\": %" PRIu64 ", \"table_bytes_peak\": %" PRIu64
			", \"budget_bytes\": %" PRIu64 ", \"out_of_budget\": %" PRIu64 "}",
			ri->cfi_walks, ri->cfi_root, ri->cfi_trunc, ri->cfi_to_dwarf,
			ri->cfi_fp_nomap, ri->cfi_fp_nocfi, ri->cfi_read_err,
			ri->cfi_uretprobe_miss, ri->cfi_tables, ri->cfi_table_bytes,
			ri->cfi_budget_bytes, ri->cfi_out_of_budget);
	fprintf(f, ",\n  \"degraded\": [");
	for (i = 0; ri->degraded && i < ri->degraded->n; i++) {
		fprintf(f, "%s\n    {\"feature\": ", i ? "," : "");
		json_str(f, ri->degraded->what[i]);
		fprintf(f, ", \"why\": ");
		json_str(f, ri->degraded->why[i]);
		fputc('}', f);
	}
	fprintf(f, "%s],\n  \"processes\": [", i ? "\n  " : "");
	k = 0;
	if (ri->fold && !fseek(ri->fold->rows, 0, SEEK_SET)) {
		char *line = NULL;
		size_t cap = 0;
		ssize_t n;
		long at = 0;

		/* Complete rows only: a failed write may have left part of one. */
		while (at < ri->fold->rows_end && (n = getline(&line, &cap, ri->fold->rows)) > 0) {
			fprintf(f, "%s\n    %.*s", k++ ? "," : "", (int)(n - 1), line);
			at += n;
		}
		free(line);
		if (ferror(ri->fold->rows))
			warn("summary.json: the rows of exited processes set aside in %s could "
			     "not be read back: some are missing",
			     ri->out->path);
	}
	for (i = 0; i < procs.v.n; i++) {
		const struct proc *p = procs.v.v[i];

		if (!p->nsamples && !p->lost && !p->exact)
			continue;
		fprintf(f, "%s\n    ", k++ ? "," : "");
		summary_row(f, p);
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

/* A file in the output directory with no name, for what the run sets aside
 * until the end: O_TMPFILE, or where the file system has none, a random
 * name removed at once (signals blocked between: none is left behind).
 * The fd, or -errno. */
static int open_unnamed(struct outdir *od)
{
	sigset_t all, old;
	char name[32], sfx[7];
	int fd, e, tries;

	fd = openat(od->fd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL))
		return fd >= 0 ? fd : -errno;
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	for (tries = 0, e = EEXIST; tries < 100 && e == EEXIST; tries++) {
		random_suffix(sfx);
		snprintf(name, sizeof(name), ".spill.%s", sfx);
		fd = openat(od->fd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		e = fd < 0 ? errno : 0;
	}
	if (fd >= 0)
		unlinkat(od->fd, name, 0);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return fd >= 0 ? fd : -e;
}

struct fold *output_fold_new(const struct run_info *ri)
{
	struct fold *fo = calloc(1, sizeof(*fo));
	int rows_fd = -1;

	if (!fo)
		return NULL;
	fo->spill_fd = open_unnamed(ri->out);
	if (fo->spill_fd >= 0)
		rows_fd = open_unnamed(ri->out);
	if (rows_fd >= 0 && !(fo->rows = fdopen(rows_fd, "w+")))
		close(rows_fd);
	fo->pp = pprof_new(1000000000LL / ri->freq, ri->start_realtime_ns, 0);
	if (fo->pp)
		fo->kmap = kernel_mapping(fo->pp);
	if (fo->spill_fd < 0 || !fo->rows || !fo->pp || !fo->kmap) {
		warn("cannot set aside exited processes in %s (%s): they stay in memory to "
		     "the end",
		     ri->out->path, strerror(fo->spill_fd < 0 ? -fo->spill_fd : errno));
		output_fold_free(fo);
		return NULL;
	}
	pprof_spill_to(fo->pp, fo->spill_fd);
	fo->dir = ri->out->path;
	return fo;
}

bool output_fold(void *ctx, struct proc *p)
{
	struct fold *fo = ctx;
	int err;

	/* JIT frames are named from the runtime's files at the end; -t
	 * traces are written at the end. */
	if (p->exact || jit_has_files(p))
		return false;
	if (!p->nsamples && !p->lost)
		return true; /* nothing to write */
	if (fo->broken)
		return false;
	summary_row(fo->rows, p);
	if (fputc('\n', fo->rows) == EOF || fflush(fo->rows)) {
		if (!fo->warned)
			warn("cannot set aside exited processes in %s (%s): they stay in "
			     "memory to the end",
			     fo->dir, strerror(errno));
		fo->warned = fo->broken = true;
		return false;
	}
	fo->rows_end = ftell(fo->rows);
	note_program(&fo->program, p);
	pprof_scope_begin(fo->pp);
	err = add_proc(fo->pp, p, &fo->kmap, false);
	if (err) /* ENOMEM: what is in the scope goes; the rest is lost */
		warn("pid %d: %s; some of its samples are not in the profile", p->pid,
		     strerror(-err));
	err = pprof_scope_end(fo->pp);
	if (err && !fo->warned) {
		warn("cannot set aside exited processes' samples (%s): they stay in memory "
		     "to the end",
		     strerror(-err));
		fo->warned = true;
	}
	return true;
}

void output_fold_live(struct fold *fo)
{
	size_t i;
	int err;

	if (fo->broken)
		return;
	for (i = 0; i < procs.v.n; i++) {
		struct proc *p = procs.v.v[i];

		/* JIT frames are named at the end, from the runtime's files. */
		if (p->exited || !p->samples.n || p->exact || jit_has_files(p))
			continue;
		pprof_scope_begin(fo->pp);
		err = add_proc(fo->pp, p, &fo->kmap, false);
		if (err)
			warn("pid %d: %s; some of its samples are not in the profile", p->pid,
			     strerror(-err));
		if (pprof_scope_end(fo->pp) && !fo->warned) {
			warn("cannot set aside samples in %s: they stay in memory to the end",
			     fo->dir);
			fo->warned = true;
		}
		proc_drop_samples(p);
	}
}

void output_fold_free(struct fold *fo)
{
	if (!fo)
		return;
	pprof_free(fo->pp);
	if (fo->spill_fd >= 0)
		close(fo->spill_fd);
	if (fo->rows)
		fclose(fo->rows);
	free(fo->program.path);
	free(fo->program.build_id);
	free(fo);
}

static int fill_map(void *ctx, FILE *f, int fd)
{
	(void)ctx;
	fflush(f);
	return xray_write_map(fd);
}

static int fill_sampled(void *ctx, FILE *f, int fd)
{
	(void)fd;
	return xray_write_sampled(ctx, f);
}

static int fill_exact(void *ctx, FILE *f, int fd)
{
	(void)fd;
	return xray_write_exact(ctx, f);
}

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
		FIRST(first, emit_file(ri->out, name, p->pid, cmd, fill_sampled, p));
	}
	snprintf(name, sizeof(name), "xray-trace-%d%s.fdr", p->pid, suffix);
	snprintf(cmd, sizeof(cmd), "llvm-xray account -m %s/%s %s/%s", ri->outdir, map, ri->outdir,
		 name);
	FIRST(first, emit_file(ri->out, name, p->pid, cmd, fill_exact, p));
	/* Written after the traces: their writing gave the last ids names. */
	if (written.n > before) {
		snprintf(cmd, sizeof(cmd), "llvm-xray extract %s/%s", ri->outdir, map);
		FIRST(first, emit_file(ri->out, map, p->pid, cmd, fill_map, NULL));
	}
	return first;
}

int output_snapshot(const struct run_info *ri, unsigned n)
{
	char suffix[32];
	size_t i;
	int first = 0;

	snprintf(suffix, sizeof(suffix), ".snapshot-%u", n);
	for (i = 0; i < procs.v.n; i++)
		if (procs.v.v[i]->exact)
			FIRST(first, write_xray(ri, procs.v.v[i], suffix, false));
	return first;
}

int output_write(const struct run_info *ri)
{
	char cmd[3 * PATH_MAX];
	size_t i;
	int first = 0;

	/* Each file on its own: one failure does not cost the others. */
	snprintf(cmd, sizeof(cmd), "pprof -top %s/profile.pb.gz", ri->outdir);
	FIRST(first, emit_file(ri->out, "profile.pb.gz", 0, cmd, fill_pprof, (void *)ri));
	for (i = 0; ri->per_process && i < procs.v.n; i++) {
		struct proc *p = procs.v.v[i];
		FIRST(first, write_cpuprofile(ri, p));
		FIRST(first, write_xray(ri, p, "", true));
	}
	snprintf(cmd, sizeof(cmd), "cat %s/summary.json", ri->outdir);
	FIRST(first, emit_file(ri->out, "summary.json", 0, cmd, fill_summary, (void *)ri));
	if (msg_verbosity() >= 0) {
		char deg[512] = "";

		for (i = 0; ri->degraded && i < ri->degraded->n; i++)
			snprintf(deg + strlen(deg), sizeof(deg) - strlen(deg), "%s%s",
				 i ? ", " : "; degraded on this kernel: ", ri->degraded->what[i]);
		info("%" PRIu64 " samples (%" PRIu64 " lost) in %.1fs%s; files:", ri->samples,
		     ri->lost, ri->duration_ns / 1e9, deg);
		for (i = 0; i < written.n; i++)
			fprintf(stderr, "  %s\n", written.v[i].open_cmd); /* paths we chose */
	}
	VEC_FREE(written);
	return first;
}
