/* JIT code named: perf jitdump files (found mapped in /proc/PID/maps, as V8
 * and perf's JVMTI agent map them, or given with --jitdump) and
 * /tmp/perf-PID.map of each recorded process, read again at the end of the
 * recording, when an exited runtime's files are complete.
 *
 * These files sit where other users can write, and we are root: each is
 * opened without following symlinks (relative to the process's root, or
 * through the mapping itself), used only if it is a regular file owned by
 * the target's user or root, read up to a bound, and parsed as untrusted. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>
#include "formats/jitdump.h"
#include "formats/perfmap.h"
#include "formats/util.h"
#include "user/jit.h"
#include "user/proc.h"
#include "user/symbols.h"
#include "user/util.h"

#define JIT_FILE_MAX (1u << 30)
/* Read in chunks: memory grows with what the file holds, not its size. */
#define JIT_CHUNK (1u << 20)

enum runtime { RT_UNKNOWN, RT_NODE, RT_JAVA, RT_DOTNET, RT_PYTHON };

struct jit_state {
	int dump_fd, map_fd;
	/* The process's root (O_PATH), kept while it has JIT-like code: its
	 * runtime may write its files as it exits (Java's DumpPerfMapAtExit),
	 * when /proc/PID is gone. */
	int root_fd;
	char *dump_path;
	struct jitdump dump;
	struct perfmap map;
	bool dump_ok, map_ok;
	/* The names shown for dump.syms and map.syms (demangle_cached()): C++ and
	 * Rust runtimes name their code as their symbols are named. */
	char **dump_names, **map_names;
	bool warned, dump_warned; /* about the perf map, the jitdump: once */
	/* About a former process's perf map: once, and apart, so that the map
	 * the process writes later is still warned about on its own. */
	bool stale_warned;
	enum runtime runtime;
	uint64_t anon_leaf; /* samples whose user leaf is in JIT-like code */
	bool guided;
	struct jit_guide guide;
};

static const char *explicit_dump; /* --jitdump */

/* TSC to CLOCK_MONOTONIC, for dumps with JITDUMP_FLAGS_ARCH_TIMESTAMP: two
 * points taken at the start and the end of the recording. */
static struct {
	uint64_t tsc0, ns0, tsc1, ns1;
} cal;

static void calibrate(uint64_t *tsc, uint64_t *ns)
{
	*tsc = __rdtsc();
	*ns = now_ns(CLOCK_MONOTONIC);
}

void jit_start(const char *jitdump_path)
{
	explicit_dump = jitdump_path;
	calibrate(&cal.tsc0, &cal.ns0);
}

static uint64_t tsc_to_ns(void *ctx, uint64_t tsc)
{
	double rate;

	(void)ctx;
	if (cal.tsc1 <= cal.tsc0)
		return 0;
	rate = (double)(cal.ns1 - cal.ns0) / (double)(cal.tsc1 - cal.tsc0);
	return cal.ns0 + (uint64_t)(((double)tsc - (double)cal.tsc0) * rate);
}

static struct jit_state *state(struct proc *p)
{
	if (!p->jit) {
		p->jit = calloc(1, sizeof(*p->jit));
		if (p->jit)
			p->jit->dump_fd = p->jit->map_fd = p->jit->root_fd = -1;
	}
	return p->jit;
}

/* A regular file owned by the target's user or by root; else a warning,
 * once per *warned (the files are looked for again as maps change, and as
 * the process exits). */
static bool acceptable(struct proc *p, int fd, const char *what, bool *warned)
{
	const char *why = NULL;
	char buf[96];
	struct stat st;

	if (fstat(fd, &st)) {
		why = strerror(errno);
	} else if (!S_ISREG(st.st_mode)) {
		why = "not a regular file";
	} else if (st.st_uid != 0 && st.st_uid != p->uid) {
		snprintf(buf, sizeof(buf),
			 "owned by uid %u, not by the process's user (uid %u) or root", st.st_uid,
			 p->uid);
		why = buf;
	}
	if (!why)
		return true;
	if (!warned || !*warned)
		warn("%s: %s; ignored", what, why);
	if (warned)
		*warned = true;
	return false;
}

/* When the live process pid started, in CLOCK_REALTIME seconds (its
 * /proc/PID/stat starttime, in ticks since boot), or 0 if unknown. */
static double process_start(pid_t pid)
{
	char path[64], *buf = NULL, *q;
	struct timespec real, boot;
	unsigned long long ticks = 0;
	size_t len;
	int i;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (read_path_all_at(AT_FDCWD, path, O_RDONLY, 4096, &buf, &len))
		return 0;
	/* The fields after the comm's last ')' (the comm is the process's own
	 * text): state is field 3, starttime field 22. */
	q = strrchr(buf, ')');
	for (i = 3; q && i <= 22; i++)
		q = strchr(q + 1, ' ');
	if (q)
		ticks = strtoull(q + 1, NULL, 10);
	free(buf);
	if (!ticks || clock_gettime(CLOCK_REALTIME, &real) || clock_gettime(CLOCK_BOOTTIME, &boot))
		return 0;
	return (double)real.tv_sec + real.tv_nsec / 1e9 -
	       ((double)boot.tv_sec + boot.tv_nsec / 1e9 - (double)ticks / sysconf(_SC_CLK_TCK));
}

/* A perf map last written before its process started is another's: a
 * process of the same pid before (pids wrap at 32,768 on a default kernel,
 * and nothing removes /tmp/perf-PID.map), whose names would be given to
 * this one's code. A second's slack for the clocks' rounding. */
static bool perf_map_current(struct proc *p, int fd, const char *what, bool *warned)
{
	double start = p->exited ? 0 : process_start(p->pid), written;
	struct stat st;

	if (!start || fstat(fd, &st))
		return true;
	written = st.st_mtim.tv_sec + st.st_mtim.tv_nsec / 1e9;
	if (written >= start - 1)
		return true;
	if (!*warned)
		warn("%s: last written %.0f s before the process started (a former process's of "
		     "that pid); ignored",
		     what, start - written);
	*warned = true;
	return false;
}

/* path (relative) inside the root rfd, no symlink on the way. */
static int open_in_root(int rfd, const char *path)
{
	struct open_how how = {
	    .flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
	    .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};

	return syscall(SYS_openat2, rfd, path, &how, sizeof(how));
}

/* /tmp/perf-PID.map as the process sees it: inside its root, the one kept
 * or /proc/PID/root while it lives. */
static int open_perf_map(struct proc *p, char *what, size_t len)
{
	char rel[64], root[64];
	int rfd = p->jit->root_fd, fd;

	snprintf(root, sizeof(root), "/proc/%d/root", p->pid);
	snprintf(rel, sizeof(rel), "tmp/perf-%d.map", p->pid);
	snprintf(what, len, "%s/%s", root, rel);
	/* /proc/PID of an exited process may be another's by now. */
	if (rfd < 0 && (p->exited || (rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0))
		return -1;
	fd = open_in_root(rfd, rel);
	if (rfd != p->jit->root_fd)
		close(rfd);
	if (fd < 0 && errno != ENOENT && errno != ESRCH && !p->jit->warned) {
		warn("%s: %s; ignored", what, strerror(errno));
		p->jit->warned = true; /* it is looked for again as maps change */
	}
	return fd;
}

static bool is_jitdump_name(const char *path)
{
	const char *b = strrchr(path, '/');
	char *end;

	b = b ? b + 1 : path;
	if (strncmp(b, "jit-", 4))
		return false;
	strtoul(b + 4, &end, 10);
	return end > b + 4 && !strcmp(end, ".dump");
}

/* Executable memory that no file backs: where runtimes put JIT code (.NET's
 * W^X double mapping is a memfd). */
static bool jit_like(const struct mapping *m)
{
	return m && m->exec &&
	       (!m->path[0] || !strncmp(m->path, "[anon", 5) || !strncmp(m->path, "/memfd:", 7));
}

static enum runtime runtime_of(const char *path)
{
	const char *b = strrchr(path, '/');

	b = b ? b + 1 : path;
	if (!strcmp(b, "node") || !strcmp(b, "nodejs") || !strncmp(b, "libnode.so", 10))
		return RT_NODE;
	if (!strcmp(b, "java") || !strcmp(b, "libjvm.so"))
		return RT_JAVA;
	if (!strcmp(b, "dotnet") || !strcmp(b, "libcoreclr.so"))
		return RT_DOTNET;
	if (!strncmp(b, "python3", 7) || !strncmp(b, "libpython3", 10))
		return RT_PYTHON;
	return RT_UNKNOWN;
}

/* The jitdump the process maps, opened through the mapping while it lives;
 * after it exited, by its path inside the root kept, if that is still the
 * file it mapped (device and inode). */
static int open_mapped_dump(struct proc *p, const struct mapping *m, char *what, size_t len)
{
	struct stat st;
	int fd;

	if (!p->exited) {
		snprintf(what, len, "/proc/%d/map_files/%llx-%llx", p->pid,
			 (unsigned long long)m->start, (unsigned long long)m->end);
		return open(what, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	}
	if (p->jit->root_fd < 0 || (fd = open_in_root(p->jit->root_fd, m->path)) < 0)
		return -1;
	if (fstat(fd, &st) || st.st_ino != m->inode || major(st.st_dev) != m->dev_major ||
	    minor(st.st_dev) != m->dev_minor) {
		close(fd);
		return -1;
	}
	return fd;
}

static bool jit_has_files(const struct proc *p);

/* Looks for the process's jitdump (mapped) and perf map, and keeps them
 * open: after the process exits they can still be read. */
static void jit_scan(struct proc *p)
{
	struct jit_state *j = state(p);
	char what[PATH_MAX + 64];
	bool jit_code = false;
	size_t i;

	if (!j)
		return;
	for (i = 0; i < p->maps.n; i++) {
		const struct mapping *m = p->maps.v[i];

		jit_code |= jit_like(m);
		if (!j->runtime && m->exec && m->path[0] == '/')
			j->runtime = runtime_of(m->path);
	}
	if (!j->runtime && p->exe)
		j->runtime = runtime_of(p->exe);
	if (jit_code && j->root_fd < 0 && !p->exited) {
		snprintf(what, sizeof(what), "/proc/%d/root", p->pid);
		j->root_fd = open(what, O_PATH | O_DIRECTORY | O_CLOEXEC);
	}
	if (j->dump_fd < 0) {
		for (i = 0; i < p->maps.n; i++) {
			const struct mapping *m = p->maps.v[i];
			int fd;

			if (!m->path[0] || !is_jitdump_name(m->path))
				continue;
			/* The very file the runtime writes. */
			fd = open_mapped_dump(p, m, what, sizeof(what));
			if (fd < 0)
				continue;
			if (!acceptable(p, fd, m->path, &j->dump_warned)) {
				close(fd);
				break;
			}
			j->dump_fd = fd;
			j->dump_path = xstrdup(m->path);
			debug("pid %d: jitdump %s", p->pid, m->path);
			break;
		}
	}
	if (j->map_fd < 0) {
		int fd = open_perf_map(p, what, sizeof(what));

		if (fd >= 0) {
			if (acceptable(p, fd, what, &j->warned) &&
			    perf_map_current(p, fd, what, &j->stale_warned)) {
				j->map_fd = fd;
				debug("pid %d: perf map %s", p->pid, what);
			} else {
				close(fd);
			}
		}
	}
}

static void jit_count_leaf(struct proc *p, const struct frame *leaf)
{
	struct jit_state *j;

	if (!leaf->name && jit_like(leaf->map) && (j = state(p)))
		j->anon_leaf++;
}

void jit_on_exit(struct proc *p)
{
	struct jit_state *j = p->jit;

	if (!j)
		return;
	if (!jit_has_files(p) && j->anon_leaf)
		jit_scan(p); /* written as it exited? */
	if (!jit_has_files(p) && !j->anon_leaf)
		jit_proc_free(p); /* nothing to name, nor to say */
}

static bool all_nul(const char *p, size_t n)
{
	return n && !p[0] && !memcmp(p, p + 1, n - 1);
}

/* Reads a JIT file of up to JIT_FILE_MAX bytes (a larger one is refused
 * with a warning) in JIT_CHUNK pieces, as far as its data goes: the first
 * hole (SEEK_DATA, or a whole chunk of NULs where the file system cannot
 * tell) ends it. A runtime writes these files in order, so a hole is never
 * content, while a sparse file would otherwise cost its size in memory and
 * time. 0 or -errno. */
static int read_all(int fd, const char *what, char **buf, size_t *len)
{
	size_t cap = 0, n = 0;
	struct stat st;
	char *b = NULL;
	int err = 0;

	if (fstat(fd, &st))
		err = -errno;
	else if ((uint64_t)st.st_size > JIT_FILE_MAX)
		err = -EFBIG;
	while (!err && n < JIT_FILE_MAX) {
		off_t data = lseek(fd, n, SEEK_DATA);
		size_t want = JIT_FILE_MAX - n < JIT_CHUNK ? JIT_FILE_MAX - n : JIT_CHUNK;
		ssize_t r;

		if ((data < 0 && errno == ENXIO) || (data >= 0 && (size_t)data != n))
			break; /* a hole to the end, or up to more data */
		if (fmt_grow((void **)&b, &cap, n + want + 1, 1)) {
			err = -ENOMEM;
			break;
		}
		r = pread(fd, b + n, want, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			err = -errno;
		if (r <= 0 || ((size_t)r == want && want == JIT_CHUNK && all_nul(b + n, r)))
			break;
		n += r;
	}
	if (err == -EFBIG)
		warn("%s: %lld bytes, more than the %u-byte cap; ignored", what,
		     (long long)st.st_size, JIT_FILE_MAX);
	else if (err)
		warn("%s: %s; ignored", what, strerror(-err));
	if (err) {
		free(b);
		return err;
	}
	if (!b && !(b = malloc(1)))
		return -ENOMEM;
	b[n] = 0;
	*buf = b;
	*len = n;
	return 0;
}

static void load_dump(struct proc *p, struct jit_state *j)
{
	const char *err;
	char *buf;
	size_t len;
	int r;

	if (read_all(j->dump_fd, j->dump_path, &buf, &len))
		return;
	r = jitdump_parse(buf, len, tsc_to_ns, NULL, &j->dump, &err);
	free(buf);
	if (r) {
		warn("%s: %s; its JIT frames stay unnamed", j->dump_path,
		     r == -ENOMEM ? "out of memory" : err);
		return;
	}
	j->dump_ok = true;
	if (j->dump.truncated_bytes)
		warn("%s: ends in an incomplete record (%llu bytes ignored; is the runtime "
		     "still writing it?)",
		     j->dump_path, (unsigned long long)j->dump.truncated_bytes);
	info("pid %d: %zu JIT functions from %s", p->pid, j->dump.nsyms, j->dump_path);
}

static void load_map(struct proc *p, struct jit_state *j)
{
	char what[64], *buf;
	size_t len;

	snprintf(what, sizeof(what), "perf-%d.map", p->pid);
	if (read_all(j->map_fd, what, &buf, &len))
		return;
	/* A text file: NULs at its end are the rest of a hole's block. */
	while (len && !buf[len - 1])
		len--;
	if (perfmap_parse(buf, len, &j->map) == 0) {
		j->map_ok = true;
		if (j->map.bad_lines)
			warn("%s: %zu lines that are not START SIZE NAME; skipped", what,
			     j->map.bad_lines);
	}
	free(buf);
}

/* --jitdump PATH: for the recorded process whose pid the dump names, or
 * the only recorded one. */
static void load_explicit(struct procs *procs)
{
	struct proc *p = NULL;
	char hdr[40];
	uint32_t pid = 0;
	size_t i, n = 0;
	int fd;

	fd = open(explicit_dump, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		warn("--jitdump %s: %s; ignored", explicit_dump, strerror(errno));
		return;
	}
	if (pread(fd, hdr, sizeof(hdr), 0) == sizeof(hdr))
		memcpy(&pid, hdr + 20, 4);
	for (i = 0; i < procs->v.n; i++) {
		if (procs->v.v[i]->nsamples)
			n++, p = p ? p : procs->v.v[i];
		if (procs->v.v[i]->pid == (pid_t)pid) {
			p = procs->v.v[i];
			n = 1;
			break;
		}
	}
	if (!p || n != 1) {
		warn("--jitdump %s: names pid %u, which was not recorded; ignored", explicit_dump,
		     pid);
		close(fd);
		return;
	}
	if (!state(p) || !acceptable(p, fd, explicit_dump, NULL)) {
		close(fd);
		return;
	}
	if (p->jit->dump_fd >= 0)
		close(p->jit->dump_fd);
	free(p->jit->dump_path);
	p->jit->dump_fd = fd;
	p->jit->dump_path = xstrdup(explicit_dump);
}

void jit_load_all(struct procs *procs)
{
	size_t i;

	calibrate(&cal.tsc1, &cal.ns1);
	for (i = 0; i < procs->v.n; i++) {
		struct proc *p = procs->v.v[i];

		if (!p->nsamples)
			continue;
		/* Still running, its files may have appeared; exited, it may have
		 * written them as it exited. */
		if (!p->exited || (p->jit && p->jit->anon_leaf))
			jit_scan(p);
	}
	if (explicit_dump)
		load_explicit(procs);
	for (i = 0; i < procs->v.n; i++) {
		struct proc *p = procs->v.v[i];
		struct jit_state *j = p->jit;

		if (!j)
			continue;
		if (j->dump_fd >= 0 && !j->dump_ok)
			load_dump(p, j);
		if (j->map_fd >= 0 && !j->map_ok)
			load_map(p, j);
	}
}

/* The hit's name as shown, its raw one the system name when they differ. */
static void name_hit(struct jit_hit *hit, char ***names, size_t n, size_t i, const char *raw)
{
	hit->name = demangle_cached(names, n, i, raw);
	if (hit->name != raw)
		hit->system_name = raw;
}

static bool lookup(struct jit_state *j, uint64_t pc, uint64_t t, struct jit_hit *hit)
{
	memset(hit, 0, sizeof(*hit));
	if (!j)
		return false;
	if (j->dump_ok) {
		const struct jit_sym *s = jitdump_lookup(&j->dump, pc, t);

		if (s) {
			const struct jit_line *l = jitdump_line(s, pc);

			if (l && l->file[0]) {
				hit->file = l->file;
				hit->line = l->line;
			}
			name_hit(hit, &j->dump_names, j->dump.nsyms, s - j->dump.syms, s->name);
			hit->start = s->start;
			hit->size = s->size;
			hit->lines = s->lines;
			hit->nlines = s->nlines;
			return true;
		}
	}
	if (j->map_ok) {
		const struct perfmap_sym *s = perfmap_lookup(&j->map, pc);

		if (s) {
			name_hit(hit, &j->map_names, j->map.nsyms, s - j->map.syms, s->name);
			hit->start = s->start;
			hit->size = s->size;
			return true;
		}
	}
	return false;
}

bool jit_find(struct proc *p, uint64_t pc, uint64_t t, struct jit_hit *hit)
{
	return lookup(p->jit, pc, t, hit);
}

static bool jit_has_files(const struct proc *p)
{
	return p->jit && (p->jit->dump_fd >= 0 || p->jit->map_fd >= 0);
}

/* How each runtime names its JIT code for profilers. */
static void fix_for(enum runtime rt, pid_t pid, char *buf, size_t len)
{
	switch (rt) {
	case RT_NODE:
		snprintf(buf, len,
			 "run node with --perf-basic-prof (a perf map; or --perf-prof for a "
			 "jitdump), and --interpreted-frames-native-stack");
		break;
	case RT_JAVA:
		snprintf(buf, len,
			 "jcmd %d Compiler.perfmap while it runs, or start java with "
			 "-XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit; with "
			 "-XX:+PreserveFramePointer",
			 (int)pid);
		break;
	case RT_DOTNET:
		snprintf(buf, len, "set DOTNET_PerfMapEnabled=1 in its environment");
		break;
	case RT_PYTHON:
		snprintf(buf, len, "run Python 3.12+ with -X perf (or PYTHONPERFSUPPORT=1)");
		break;
	default:
		snprintf(buf, len,
			 "have its runtime write a perf map, /tmp/perf-%d.map (a line \"START "
			 "SIZE NAME\" in hex per function), or a perf jitdump file it maps "
			 "(jit-%d.dump)",
			 (int)pid, (int)pid);
	}
}

const struct jit_guide *jit_guide(const struct proc *p)
{
	static const char *const names[] = {"unknown", "node", "java", "dotnet", "python"};
	struct jit_state *j = p->jit;
	struct jit_guide *g;
	uint64_t unnamed;
	size_t i;

	if (!j || !p->nsamples || p->jit_walked)
		return NULL;
	g = &j->guide;
	if (j->guided)
		return g->share > JIT_GUIDE_SHARE ? g : NULL;
	j->guided = true;
	/* Samples not kept (folded into the profile before the files were
	 * found) stay counted: they were written unnamed. */
	unnamed = j->anon_leaf;
	for (i = 0; (j->dump_ok || j->map_ok) && i < p->samples.n && unnamed; i++) {
		const struct sample *s = &p->samples.v[i];
		const uint32_t *ids;
		const struct frame *f;
		struct jit_hit hit;
		uint32_t nk, nu;

		ids = proc_stack(p, s->stack, &nk, &nu);
		if (!nu)
			continue;
		f = &p->frames.v[ids[nk]];
		if (!f->name && jit_like(f->map) && lookup(j, f->pc, s->time_ns, &hit))
			unnamed -= s->count < unnamed ? s->count : unnamed;
	}
	g->share = (double)unnamed / (double)p->nsamples;
	if (g->share <= JIT_GUIDE_SHARE)
		return NULL;
	g->runtime = names[j->runtime];
	fix_for(j->runtime, p->pid, g->fix, sizeof(g->fix));
	warn("%s (pid %d): %.0f%% of its samples are in JIT code that no perf map or jitdump "
	     "names (runtime: %s); to name it: %s",
	     p->comm, p->pid, 100 * g->share, g->runtime, g->fix);
	return g;
}

void jit_proc_free(struct proc *p)
{
	struct jit_state *j = p->jit;

	if (!j)
		return;
	if (j->dump_fd >= 0)
		close(j->dump_fd);
	if (j->map_fd >= 0)
		close(j->map_fd);
	if (j->root_fd >= 0)
		close(j->root_fd);
	if (j->dump_ok) {
		demangle_cache_free(j->dump_names, j->dump.nsyms);
		jitdump_free(&j->dump);
	}
	if (j->map_ok) {
		demangle_cache_free(j->map_names, j->map.nsyms);
		perfmap_free(&j->map);
	}
	free(j->dump_path);
	free(j);
	p->jit = NULL;
}

static void source_maps_read(void *ctx, struct proc *p)
{
	(void)ctx;
	jit_scan(p);
}

static bool source_find(void *ctx, struct proc *p, uint64_t pc, uint64_t t, struct name_hit *hit)
{
	struct jit_hit h;

	(void)ctx;
	if (!jit_find(p, pc, t, &h))
		return false;
	*hit = (struct name_hit){
	    .name = h.name, .system_name = h.system_name, .file = h.file, .line = h.line};
	return true;
}

static bool source_by_time(void *ctx, const struct proc *p)
{
	(void)ctx;
	return jit_has_files(p);
}

static void source_leaf(void *ctx, struct proc *p, const struct frame *leaf)
{
	(void)ctx;
	jit_count_leaf(p, leaf);
}

void jit_name_source(struct name_source *out)
{
	*out = (struct name_source){.maps_read = source_maps_read,
				    .find = source_find,
				    .by_time = source_by_time,
				    .leaf = source_leaf};
}
