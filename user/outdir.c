/* The output directory: opened once, each file written in it under a
 * temporary name and renamed when complete, relative to the directory's fd,
 * never by path (see outdir.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <libgen.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "user/outdir.h"
#include "user/util.h"

static VEC(struct written) written;

const struct written *outdir_written(size_t *n)
{
	*n = written.n;
	return written.v;
}

int outdir_written_also(const char *name, const char *cmd)
{
	struct written *w = NULL;
	char **more, *c;
	size_t i;

	for (i = written.n; i-- > 0 && !w;)
		if (!strcmp(written.v[i].name, name))
			w = &written.v[i];
	if (!w)
		return -ENOENT;
	if (!(c = strdup(cmd)))
		return -ENOMEM;
	if (!(more = realloc(w->also, (w->nalso + 1) * sizeof(*more)))) {
		free(c);
		return -ENOMEM;
	}
	more[w->nalso++] = c;
	w->also = more;
	return 0;
}

void outdir_written_free(void)
{
	size_t i, j;

	for (i = 0; i < written.n; i++) {
		for (j = 0; j < written.v[i].nalso; j++)
			free(written.v[i].also[j]);
		free(written.v[i].also);
	}
	VEC_FREE(written);
}

/* Under sudo, the directory and files belong to the user who ran it. */
static void give_to_invoker(int fd, const char *what)
{
	const char *u = getenv("SUDO_UID"), *g = getenv("SUDO_GID");

	if (!u || !g || geteuid() != 0)
		return;
	if (fchown(fd, atoi(u), atoi(g)))
		debug("chown %s: %s", what, strerror(errno));
}

/* The writer state a signal handler can reach: outdir_abort() takes no
 * argument, so outdir_open() leaves the opened directory here. */
static struct outdir *abort_od;
/* What outdir_abort() says, made ahead by the message layer (the handler
 * can neither format nor sanitize): nothing written yet, some files
 * written, or the file being written (made as it is created). emitted
 * counts abort_od's files written. */
#define SAY_MAX 1200
static char say_none[SAY_MAX], say_partial[SAY_MAX], say_file[SAY_MAX];
static volatile sig_atomic_t emitted;

/* A say_ line: what of the files in path was not written. */
static void say_missing(char say[SAY_MAX], const char *path, const char *what)
{
	msg_line(say, SAY_MAX, MSG_ERR,
		 "second Ctrl-C: %s holds part of the recording: %s, summary.json among them, "
		 "were not written",
		 path, what);
}

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

/* Creates .BASE.XXXXXX in the directory with flags (O_CREAT | O_EXCL |
 * O_NOFOLLOW added), never through an existing name or symlink, its name
 * left in name. Signals are blocked by the caller. The fd, or -errno. */
static int create_random(struct outdir *od, const char *base, int flags, char *name, size_t len)
{
	char sfx[7];
	int fd = -1, e = EEXIST, tries;

	for (tries = 0; tries < 100 && e == EEXIST; tries++) {
		random_suffix(sfx);
		snprintf(name, len, ".%s.%s", base, sfx);
		fd = openat(od->fd, name, flags | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		e = fd < 0 ? errno : 0;
	}
	return fd >= 0 ? fd : -e;
}

/* A temporary file, recorded as the file being written. Signals are
 * blocked meanwhile: a handler that ran between the creation and the record
 * would leave the file behind. The fd, or -errno. */
static int create_tmp(struct outdir *od, const char *base)
{
	sigset_t all, old;
	int fd;

	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	fd = create_random(od, base, O_WRONLY, od->tmp, sizeof(od->tmp));
	if (fd >= 0 && od == abort_od) {
		char what[128];

		snprintf(what, sizeof(what), "%s and the files after it", base);
		say_missing(say_file, od->path, what);
	}
	if (fd >= 0) {
		atomic_signal_fence(memory_order_seq_cst); /* the name before the flag */
		od->writing = 1;
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	return fd;
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

void outdir_abort(void)
{
	struct outdir *od = abort_od;
	const char *say;

	if (!od)
		return; /* no directory yet: nothing written, nothing to say */
	if (od->writing) {
		unlinkat(od->fd, od->tmp, 0);
		say = say_file;
	} else {
		say = emitted ? say_partial : say_none;
	}
	if (write(STDERR_FILENO, say, strlen(say)) < 0)
		return; /* stderr gone: nothing else to tell it by */
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

int outdir_emit(struct outdir *od, const char *name, pid_t pid, const char *open_cmd, fill_fn fn,
		void *ctx)
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
	if (od == abort_od)
		emitted = emitted + 1;
	snprintf(w.name, sizeof(w.name), "%s", name);
	snprintf(w.open_cmd, sizeof(w.open_cmd), "%s", open_cmd);
	/* A file written again (xray-PID.map, at each -t snapshot and at the
	 * end) replaced the one before: one file, listed once. */
	for (size_t i = 0; i < written.n; i++)
		if (!strcmp(written.v[i].name, w.name)) {
			written.v[i] = w;
			return 0;
		}
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

/* The names a recording writes (user/output.c): in a directory used again,
 * these are an earlier recording's. */
static bool recording_file(const char *name)
{
	static const char *const pats[] = {
	    "profile.pb.gz",	"heap.pb.gz", "summary.json", "stacks*.folded",
	    "flamegraph*.html", "flame*.svg", "cpu-*.prof",   "jit-*.so",
	    "vdso-*.so",	"names-*.so", "xray-*.fdr",   "xray-*.map",
	};
	size_t i;

	for (i = 0; i < sizeof(pats) / sizeof(pats[0]); i++)
		if (!fnmatch(pats[i], name, FNM_PERIOD))
			return true;
	return false;
}

struct names {
	VEC_BODY(char *)
};

/* The recording files (regular files of recording_file's names) in the
 * directory dirfd, into names; their count, or -errno. */
static int recording_files(int dirfd, struct names *names)
{
	struct dirent *de;
	struct stat st;
	DIR *d;
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0 || !(d = fdopendir(fd))) {
		int err = -errno;

		if (fd >= 0)
			close(fd);
		return err;
	}
	while ((de = readdir(d)))
		if (recording_file(de->d_name) &&
		    !fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) && S_ISREG(st.st_mode) &&
		    VEC_PUSH(*names, xstrdup(de->d_name))) {
			closedir(d);
			return -ENOMEM;
		}
	closedir(d);
	return names->n;
}

/* A directory used again never mixes two recordings: as perf keeps
 * perf.data.old, the earlier recording's files move to DIR/old/ (replacing
 * the files of the one before there), and everything else in the directory
 * is left alone. All relative to the directories' fds, never following a
 * symlink. 0, or -errno after a one-line error. */
static int set_aside_earlier(struct outdir *od)
{
	struct names names = {0}, older = {0};
	const char *what = "list";
	bool created = false;
	struct stat st;
	int oldfd = -1, err;
	size_t i;

	err = recording_files(od->fd, &names);
	if (err <= 0)
		goto out;
	what = "create";
	if (!mkdirat(od->fd, "old", 0755))
		created = true;
	else if (errno != EEXIST)
		goto fail;
	what = "open";
	oldfd = openat(od->fd, "old", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (oldfd < 0 || fstat(oldfd, &st))
		goto fail;
	if (!trusted_owner(st.st_uid)) {
		errno = EPERM;
		goto fail;
	}
	if (created)
		give_to_invoker(oldfd, "old");
	what = "empty";
	err = recording_files(oldfd, &older);
	if (err < 0) {
		errno = -err;
		goto fail;
	}
	for (i = 0; i < older.n; i++)
		if (unlinkat(oldfd, older.v[i], 0))
			goto fail;
	what = "move files to";
	for (i = 0; i < names.n; i++)
		if (renameat(od->fd, names.v[i], oldfd, names.v[i]))
			goto fail;
	info("%s held an earlier recording: its %zu file%s moved to %s/old/", od->path, names.n,
	     names.n == 1 ? "" : "s", od->path);
	err = 0;
	goto out;
fail:
	err = errno ? -errno : -EIO;
	err("output directory %s holds an earlier recording, which moves to %s/old/: cannot %s "
	    "%s/old: %s",
	    od->path, od->path, what, od->path, strerror(-err));
out:
	if (oldfd >= 0)
		close(oldfd);
	for (i = 0; i < names.n; i++)
		free(names.v[i]);
	for (i = 0; i < older.n; i++)
		free(older.v[i]);
	VEC_FREE(names);
	VEC_FREE(older);
	return err;
}

/* The pid that holds a flock(2) on the inode ino, from /proc/locks ("1:
 * FLOCK  ADVISORY  WRITE PID MAJ:MIN:INO 0 EOF"); 0 when none is seen. The
 * device is not compared: btrfs gives stat a subvolume's device, not the
 * super block's that /proc/locks prints. */
static pid_t flock_holder(ino_t ino)
{
	FILE *f = fopen("/proc/locks", "re");
	char line[256], kind[16];
	unsigned long long i;
	pid_t holder = 0;
	int pid;

	if (!f)
		return 0;
	while (!holder && fgets(line, sizeof(line), f))
		if (sscanf(line, "%*d: %15s %*s %*s %d %*x:%*x:%llu", kind, &pid, &i) == 3 &&
		    !strcmp(kind, "FLOCK") && i == ino)
			holder = pid;
	fclose(f);
	return holder;
}

/* One recording a directory at a time: two runs into one directory mixed
 * their files, and the summary named one of them. An flock(2) on the
 * directory itself, held until the run ends: the kernel drops it when the
 * process dies, so a crashed run leaves no stale lock, and no lock file is
 * left in the directory. Taken before the earlier recording moves to old/,
 * so that a refused run moves and writes nothing. 0, or -errno after a
 * one-line error naming the other run's pid. */
static int lock_outdir(struct outdir *od, const struct stat *st)
{
	pid_t pid;
	int err;

	if (!flock(od->fd, LOCK_EX | LOCK_NB))
		return 0;
	err = -errno;
	if (err != -EWOULDBLOCK) {
		err("output directory %s: cannot lock it: %s", od->path, strerror(-err));
		return err;
	}
	pid = flock_holder(st->st_ino);
	if (pid > 0)
		err("output directory %s is in use by another recording (pid %d): give another "
		    "-o, or wait for it to end",
		    od->path, (int)pid);
	else
		err("output directory %s is in use by another recording: give another -o, or wait "
		    "for it to end",
		    od->path);
	return -EBUSY;
}

int outdir_check_free(const char *path)
{
	struct outdir od = {.path = path};
	struct stat st;
	int err;

	od.fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (od.fd < 0)
		return 0; /* outdir_open makes it, or says why not */
	err = fstat(od.fd, &st) ? 0 : lock_outdir(&od, &st);
	close(od.fd); /* and the lock with it */
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
	if (!*path) { /* mkdir("") fails as a missing parent would */
		err("output directory '': an empty name; give a directory");
		return -EINVAL;
	}
	if (!mkdir(path, 0755)) {
		created = true;
	} else if (errno == ENOENT) {
		char *copy = xstrdup(path);
		const char *parent = dirname(copy);

		/* A parent that is there but takes no new directory (/proc)
		 * gives ENOENT too: then the error is the real one. */
		if (!stat(parent, &st) && S_ISDIR(st.st_mode))
			err("output directory %s: cannot create it in %s: %s", path, parent,
			    strerror(ENOENT));
		else
			err("output directory %s: its parent %s does not exist (only the last "
			    "component is created: make the parent first, e.g. mkdir -p)",
			    path, parent);
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
	err = lock_outdir(od, &st);
	if (!err)
		err = probe_outdir(od);
	if (!err && !created)
		err = set_aside_earlier(od);
	if (err)
		goto fail;
	msg_line(say_none, sizeof(say_none), MSG_ERR,
		 "second Ctrl-C: stopped before any file was written to %s", path);
	say_missing(say_partial, path, "the rest of its files");
	emitted = 0;
	abort_od = od;
	return 0;
fail:
	close(od->fd);
	od->fd = -1;
	if (created) /* leave nothing behind */
		rmdir(path);
	return err;
}

/* A file in the output directory with no name, for what the run sets aside
 * until the end: O_TMPFILE, or where the file system has none, a random
 * name removed at once (signals blocked between: none is left behind). */
int outdir_unnamed(struct outdir *od)
{
	sigset_t all, old;
	char name[32];
	int fd;

	fd = openat(od->fd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL))
		return fd >= 0 ? fd : -errno;
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	fd = create_random(od, "spill", O_RDWR, name, sizeof(name));
	if (fd >= 0)
		unlinkat(od->fd, name, 0);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return fd;
}

bool outdir_realpath(const struct outdir *od, char *buf, size_t len)
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
