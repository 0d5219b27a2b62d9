/* What is recorded: -p PIDs, -a, or a command started by us (-- CMD). */
#ifndef USER_TARGET_H
#define USER_TARGET_H

#include <poll.h>
#include <stdbool.h>
#include <sys/types.h>

struct target {
	pid_t child;	 /* -- CMD: the command, held before exec until released */
	char *path;	 /* the file it runs (target_resolve_cmd), NULL before */
	int go_fd;	 /* write end: releases the child */
	int err_fd;	 /* read end: the child's exec errno, or EOF on success */
	int pidfds[256]; /* -p: one per pid, readable when it exits */
	int npidfds;
	int child_pidfd; /* the command's, readable when it exits; -1 without */
	bool child_exited;
	int child_status; /* wait status */
};

/* Checks that every -p pid exists and is no zombie, and says which are
 * kernel threads. 0, or -ESRCH after printing which. */
int target_check_pids(const pid_t *pids, int n);
/* The file execvp would run for cmd, malloc'd into *path: cmd itself when
 * it has a '/', else the first executable file in PATH as execvp searches
 * it (glibc's default PATH, an empty entry the current directory). 0, or
 * -errno: -ENOENT when none is found, -EACCES or -EISDIR when one was found
 * but cannot run. The one resolution of a command: the child runs this
 * file, and -t probes it. */
int target_resolve_cmd(const char *cmd, char **path);
/* Checks, before anything is recorded or written, that the command (looked
 * up in PATH as execvp does) exists and can be executed, since the exec
 * itself waits for the recording to start. 0, or -errno after printing
 * "CMD: reason": -ENOENT when not found (a shell exits 127), else 126's. */
int target_check_cmd(const char *cmd);
/* Forks the command; it waits for target_release before exec. 0 or -errno. */
int target_spawn(struct target *t, char **cmd);
/* Lets the command exec; returns 0, or -errno of a failed exec (reported). */
int target_release(struct target *t, const char *cmd0);
/* The processes descended from pids now (by /proc/PID/stat's parent), the
 * pids left out; *out is malloc'd (NULL when none). 0 or -errno. */
int target_descendants(const pid_t *pids, int n, pid_t **out, size_t *nout);
/* Opens pidfds for -p targets (to notice their exit). */
void target_watch_pids(struct target *t, const pid_t *pids, int n);
/* The descriptors that become readable as a target exits (the -p pids', the
 * command's), for poll(2), into fds (at most max). Returns their count;
 * *all: every target has one (otherwise only target_done, polled, tells). */
int target_pollfds(const struct target *t, struct pollfd *fds, int max, bool *all);
/* True once every -p target, or the command, has exited. Never blocks. */
bool target_done(struct target *t);
/* Forwards a signal to the command, if any. */
void target_signal(struct target *t, int sig);
/* Waits up to ms milliseconds for the command to exit: 0, or -ETIMEDOUT. */
int target_wait_timeout(struct target *t, int ms);
/* Waits for the command to exit (after the recording) and returns its exit
 * code as a shell would (128 + signal). */
int target_wait(struct target *t);
void target_close(struct target *t);

/* The one resolution of an object a probe names (-t OBJ:, -t usdt:OBJ:),
 * as the kernel resolves it. In a running process: the first mapped file
 * whose name starts with obj, or that is obj (a path: compared by device
 * and inode, so a symlink names the file it points to), as a path through
 * /proc/PID/root; NULL when none. */
char *target_find_object(pid_t pid, const char *obj);
/* For a command not started yet: obj itself when it is a path, else the
 * first of the usual library directories that has it; NULL when none. */
char *target_find_library(const char *obj);
/* The object a probe names (-t OBJ:FUNC and -t usdt:OBJ:PROBE resolve it
 * here, alike): in process pid (> 0) as target_find_object; for the command
 * `--` runs (pid 0, exe its resolved path): exe when obj names it (its
 * base name starts with obj), else a path as given, a command as `--` would
 * find it on PATH, or a library as target_find_library. NULL when none. */
char *target_probe_object(const char *obj, pid_t pid, const char *exe);

#endif
