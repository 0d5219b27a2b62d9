#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "user/target.h"
#include "formats/procmaps.h"
#include "user/util.h"

/* /proc/PID/stat's "pid (comm) S ppid pgrp session tty tpgid flags ...",
 * where comm (anyone's) may hold ')' and spaces: the fields are read after
 * the last ')'. The state, the parent and whether the task is a kernel
 * thread (PF_KTHREAD in flags); 0, or -1 when malformed. */
#define PF_KTHREAD 0x00200000 /* include/linux/sched.h */
static int stat_fields(const char *stat, char *state, int *ppid, bool *kthread)
{
	const char *rp = strrchr(stat, ')');
	unsigned flags;

	if (!rp || sscanf(rp + 1, " %c %d %*d %*d %*d %*d %u", state, ppid, &flags) != 3)
		return -1;
	*kthread = flags & PF_KTHREAD;
	return 0;
}

int target_check_pids(const pid_t *pids, int n)
{
	char path[64];
	int i;

	for (i = 0; i < n; i++) {
		char *stat = NULL, state;
		const char *comm;
		bool kthread;
		int ppid = 0;

		snprintf(path, sizeof(path), "/proc/%d/stat", pids[i]);
		if (read_path_all(path, 0, 4096, &stat, NULL)) {
			err("-p %d: no such process", pids[i]);
			return -ESRCH;
		}
		if (stat_fields(stat, &state, &ppid, &kthread)) {
			free(stat);
			continue;
		}
		if (state == 'Z') {
			err("-p %d: a zombie: it has exited, and its parent (pid %d) has not "
			    "reaped "
			    "it; nothing to record",
			    pids[i], ppid);
			free(stat);
			return -ESRCH;
		}
		/* A kernel thread has no user space: its samples are kernel
		 * stacks (as perf's are), and without a word -p 2 looked like
		 * a recording of nothing. kthreadd's children are kernel
		 * threads of their own, never followed (target_descendants,
		 * and the sampler's fork program). */
		if (kthread) {
			comm = strchr(stat, '(');
			*strrchr(stat, ')') = 0;
			info("-p %d (%s) is a kernel thread: its kernel stacks are recorded; the "
			     "kernel threads it starts are not followed",
			     pids[i], comm ? comm + 1 : "");
		}
		free(stat);
	}
	return 0;
}

/* Whether execve could run path: 0 or -errno. */
static int exec_check(const char *path)
{
	struct stat st;

	if (stat(path, &st))
		return -errno;
	if (S_ISDIR(st.st_mode))
		return -EISDIR; /* execve says EACCES; a shell says this */
	if (!S_ISREG(st.st_mode))
		return -EACCES;
	return access(path, X_OK) ? -errno : 0;
}

int target_resolve_cmd(const char *cmd, char **path)
{
	const char *env = getenv("PATH"), *p, *end;
	char buf[PATH_MAX];
	int e = -ENOENT, r;

	*path = NULL;
	if (!*cmd)
		return -ENOENT;
	if (strchr(cmd, '/')) {
		e = exec_check(cmd);
		snprintf(buf, sizeof(buf), "%s", cmd);
	} else {
		/* As execvp searches: glibc's default PATH, an empty entry
		 * is the current directory, and a file found but not
		 * executable is remembered while the search goes on. */
		for (p = env ? env : "/bin:/usr/bin"; e; p = end + 1) {
			end = strchrnul(p, ':');
			if ((size_t)snprintf(buf, sizeof(buf), "%.*s%s%s", (int)(end - p), p,
					     end > p ? "/" : "", cmd) < sizeof(buf)) {
				r = exec_check(buf);
				if (!r)
					e = 0;
				else if (r != -ENOENT && r != -ENOTDIR)
					e = -EACCES;
			}
			if (!*end)
				break;
		}
	}
	if (!e && !(*path = strdup(buf)))
		e = -ENOMEM;
	return e;
}

int target_check_cmd(const char *cmd)
{
	char *path;
	int e = target_resolve_cmd(cmd, &path);

	if (e)
		err("%s: %s", cmd, strerror(-e));
	free(path);
	return e;
}

int target_spawn(struct target *t, char **cmd)
{
	int go[2], err[2], e;

	if ((e = target_resolve_cmd(cmd[0], &t->path)))
		return e;
	if (pipe2(go, O_CLOEXEC) || pipe2(err, O_CLOEXEC))
		return -errno;
	t->child = fork();
	if (t->child < 0)
		return -errno;
	if (t->child == 0) {
		char c;
		int e;

		close(go[1]);
		close(err[0]);
		/* Wait until the sampler is attached, so the start is recorded. */
		if (read(go[0], &c, 1) != 1)
			_exit(127);
		/* The file -t probed: resolved once, here and for it. A
		 * file with no #! and not ELF is run as execvp runs it (by
		 * /bin/sh). */
		execv(t->path, cmd);
		if (errno == ENOEXEC)
			execvp(cmd[0], cmd);
		e = errno;
		if (write(err[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(err[1]);
	t->go_fd = go[1];
	t->err_fd = err[0];
	/* Its exit then wakes the drain (target_pollfds); without one, it is
	 * seen by target_done's waitpid at the drain's pace. */
	t->child_pidfd = syscall(SYS_pidfd_open, t->child, 0);
	return 0;
}

int target_release(struct target *t, const char *cmd0)
{
	int e = 0;
	ssize_t n;

	if (write(t->go_fd, "g", 1) != 1)
		return -errno;
	close(t->go_fd);
	t->go_fd = -1;
	do
		n = read(t->err_fd, &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(t->err_fd);
	t->err_fd = -1;
	if (n == sizeof(e)) {
		err("%s: %s", cmd0, strerror(e));
		return -e;
	}
	return 0;
}

/* A process's parent from /proc/PID/stat; -1 when gone or unreadable, and
 * for a kernel thread, which is never a descendant to follow: kthreadd's
 * children are kernel threads of their own. */
static pid_t stat_ppid(long pid)
{
	char path[64], *buf = NULL, state;
	size_t len;
	bool kthread;
	int ppid = -1;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	if (read_path_all(path, 0, 4096, &buf, &len))
		return -1;
	if (stat_fields(buf, &state, &ppid, &kthread) || kthread)
		ppid = -1;
	free(buf);
	return ppid;
}

int target_descendants(const pid_t *pids, int n, pid_t **out, size_t *nout)
{
	struct pp {
		pid_t pid, ppid;
		bool in;
	};
	VEC(struct pp) all = {0};
	VEC(pid_t) found = {0};
	struct dirent *de;
	size_t i, q;
	DIR *d = opendir("/proc");
	int err = 0, k;

	*out = NULL;
	*nout = 0;
	if (!d)
		return -errno;
	while (!err && (de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		pid_t ppid;

		if (*end || pid <= 0 || pid > INT_MAX || (ppid = stat_ppid(pid)) < 0)
			continue;
		err = VEC_PUSH(all, ((struct pp){(pid_t)pid, ppid, false}));
	}
	closedir(d);
	for (k = 0; k < n && !err; k++)
		for (i = 0; i < all.n; i++)
			if (all.v[i].pid == pids[k])
				all.v[i].in = true;
	/* Breadth first from the targets: found grows as it is walked. */
	for (k = 0; k < n && !err; k++)
		err = VEC_PUSH(found, pids[k]);
	for (q = 0; q < found.n && !err; q++)
		for (i = 0; i < all.n && !err; i++)
			if (!all.v[i].in && all.v[i].ppid == found.v[q]) {
				all.v[i].in = true;
				err = VEC_PUSH(found, all.v[i].pid);
			}
	VEC_FREE(all);
	if (err) {
		VEC_FREE(found);
		return err;
	}
	/* The targets themselves first: left out. */
	if (found.n > (size_t)n)
		memmove(found.v, found.v + n, (found.n - n) * sizeof(*found.v));
	*nout = found.n - n;
	*out = found.v;
	return 0;
}

void target_watch_pids(struct target *t, const pid_t *pids, int n)
{
	int i;

	for (i = 0; i < n && t->npidfds < (int)(sizeof(t->pidfds) / sizeof(t->pidfds[0])); i++) {
		int fd = syscall(SYS_pidfd_open, pids[i], 0);

		if (fd < 0)
			warn("pid %d: pidfd_open: %s; its exit will not stop the recording",
			     pids[i], strerror(errno));
		else
			t->pidfds[t->npidfds++] = fd;
	}
}

int target_pollfds(const struct target *t, struct pollfd *fds, int max, bool *all)
{
	int i, n = 0, targets = t->npidfds + (t->child > 0);

	if (t->child > 0 && t->child_pidfd >= 0 && n < max)
		fds[n++] = (struct pollfd){.fd = t->child_pidfd, .events = POLLIN};
	for (i = 0; i < t->npidfds && n < max; i++)
		fds[n++] = (struct pollfd){.fd = t->pidfds[i], .events = POLLIN};
	*all = n == targets;
	return n;
}

bool target_done(struct target *t)
{
	int i, live = 0;

	if (t->child > 0) {
		if (!t->child_exited && waitpid(t->child, &t->child_status, WNOHANG) == t->child)
			t->child_exited = true;
		return t->child_exited;
	}
	if (!t->npidfds)
		return false;
	for (i = 0; i < t->npidfds; i++) {
		struct pollfd pfd = {.fd = t->pidfds[i], .events = POLLIN};

		if (poll(&pfd, 1, 0) == 0)
			live++;
	}
	return live == 0;
}

void target_signal(struct target *t, int sig)
{
	if (t->child > 0 && !t->child_exited)
		kill(t->child, sig);
}

int target_wait_timeout(struct target *t, int ms)
{
	int i;

	/* Polled every 10 ms: only at a stop, and without the pidfd too. */
	for (i = 0; i < ms / 10; i++) {
		if (target_done(t))
			return 0;
		usleep(10000);
	}
	return target_done(t) ? 0 : -ETIMEDOUT;
}

int target_wait(struct target *t)
{
	if (t->child <= 0)
		return 0;
	while (!t->child_exited) {
		if (waitpid(t->child, &t->child_status, 0) == t->child)
			t->child_exited = true;
		else if (errno != EINTR)
			return 1;
	}
	if (WIFEXITED(t->child_status))
		return WEXITSTATUS(t->child_status);
	if (WIFSIGNALED(t->child_status))
		return 128 + WTERMSIG(t->child_status);
	return 1;
}

void target_close(struct target *t)
{
	int i;

	for (i = 0; i < t->npidfds; i++)
		close(t->pidfds[i]);
	t->npidfds = 0;
	if (t->go_fd >= 0)
		close(t->go_fd);
	if (t->err_fd >= 0)
		close(t->err_fd);
	if (t->child_pidfd >= 0)
		close(t->child_pidfd);
	t->go_fd = t->err_fd = t->child_pidfd = -1;
	free(t->path);
	t->path = NULL;
}

/* A library of a running process: the first mapped file whose name starts
 * with obj, or that is obj (a path: compared as the kernel resolves it, by
 * device and inode, so a symlink such as /usr/bin/redis-server names the
 * redis-check-rdb the process maps). The returned path goes through
 * /proc/PID/root. */
char *target_find_object(pid_t pid, const char *obj)
{
	struct procmaps_entry *e = NULL;
	struct stat want, st;
	char path[64], buf[PATH_MAX + 64], *text, *found = NULL;
	bool by_file = strchr(obj, '/') && !stat(obj, &want);
	size_t n = 0, i, len;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	if (read_path_all(path, 0, 64 << 20, &text, &len))
		return NULL;
	if (procmaps_parse(text, len, &e, &n))
		n = 0;
	for (i = 0; i < n && !found; i++) {
		const char *base = strrchr(e[i].path, '/');

		if (e[i].path[0] != '/' || e[i].deleted)
			continue;
		snprintf(buf, sizeof(buf), "/proc/%d/root%s", pid, e[i].path);
		if (!strncmp(base + 1, obj, strlen(obj)) || !strcmp(e[i].path, obj) ||
		    (by_file && !stat(buf, &st) && st.st_dev == want.st_dev &&
		     st.st_ino == want.st_ino))
			found = xstrdup(buf);
	}
	procmaps_free(e, n);
	free(text);
	return found;
}

/* A library for a command not started yet: the loader's dirs. */
char *target_find_library(const char *obj)
{
	char buf[PATH_MAX];
	int i;

	if (obj[0] == '/')
		return access(obj, R_OK) ? NULL : xstrdup(obj);
	for (i = 0; loader_lib_dirs[i]; i++) {
		snprintf(buf, sizeof(buf), "%s/%s", loader_lib_dirs[i], obj);
		if (!access(buf, R_OK))
			return xstrdup(buf);
	}
	return NULL;
}

char *target_probe_object(const char *obj, pid_t pid, const char *exe)
{
	const char *base = exe ? strrchr(exe, '/') : NULL;
	char *path = NULL;

	if (pid > 0)
		return target_find_object(pid, obj);
	if (exe && !strncmp(base ? base + 1 : exe, obj, strlen(obj)))
		return xstrdup(exe);
	if (strchr(obj, '/'))
		return access(obj, R_OK) ? NULL : xstrdup(obj);
	if (!target_resolve_cmd(obj, &path))
		return path;
	return target_find_library(obj);
}
