/* The output directory and its files: opened once before recording
 * (O_DIRECTORY|O_NOFOLLOW) and checked by writing a probe file in it; every
 * file is then created relative to its fd, never by path, so that nothing
 * swapped in under the path later (a symlink in /tmp) is followed. Each
 * file is written under a temporary name (.NAME.XXXXXX, O_EXCL|O_NOFOLLOW)
 * and renamed when complete. */
#ifndef USER_OUTDIR_H
#define USER_OUTDIR_H

#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

struct outdir {
	const char *path; /* as given: for messages */
	int fd;		  /* -1: not open */
	/* The temporary file being written, for outdir_abort() in a signal
	 * handler: tmp is complete before writing is set, and writing is
	 * cleared once the file is renamed or removed. */
	volatile sig_atomic_t writing;
	char tmp[256];
};

/* Creates the directory if missing (the last component only), opens it,
 * refuses a symlink or a directory owned by anyone but root or the invoking
 * user (SUDO_UID), locks it for this run (-EBUSY while another recording
 * holds it; the lock goes with the fd or the process), creates, writes,
 * renames and removes a probe file in it, and moves an earlier recording's
 * files to old/. 0, or -errno after a one-line error naming the directory. */
int outdir_open(struct outdir *od, const char *path);
/* Whether another recording holds the directory now, asked before the
 * set-up that outdir_open waits for (the kernel's BTF read and the feature
 * probes: over a second on a loaded host, which a refused second run spent
 * before saying so). Creates and moves nothing; outdir_open takes the lock.
 * 0 (free, or not there yet), or -EBUSY after the same one-line error. */
int outdir_check_free(const char *path);
/* Async-signal-safe: removes the temporary file being written, if any, and
 * says in one line on stderr what was not written (the file being written
 * and those after it). For a signal handler about to _exit, so that no
 * temporary file is left and a partial set of files is not taken for a
 * whole one. */
void outdir_abort(void);

/* Fills a file: by the stream f, or by fd directly (flush f first). */
typedef int (*fill_fn)(void *ctx, FILE *f, int fd);
/* Writes one file: fn fills a temporary file, which is renamed to name once
 * complete, so a failure leaves no half file; the real reason of a failed
 * write is named (ENOSPC, not stdio's EIO). A writer that returns -ENODATA
 * had nothing to write: no file, no error. The file is listed (with pid, 0
 * for the recording's, and open_cmd, the command that opens it) for the
 * summary, once however often it is written. 0, or -errno after reporting. */
int outdir_emit(struct outdir *od, const char *name, pid_t pid, const char *open_cmd, fill_fn fn,
		void *ctx);
/* A file with no name in the directory, for what the run sets aside until
 * the end (O_TMPFILE, or a random name removed at once). The fd, or -errno. */
int outdir_unnamed(struct outdir *od);
/* The absolute path of the directory opened, not of whatever the path
 * names now. */
bool outdir_realpath(const struct outdir *od, char *buf, size_t len);

/* The files written so far. */
struct written {
	char name[64];
	char open_cmd[PATH_MAX + 128];
	pid_t pid;
	/* More commands that open it (--off-cpu's views of profile.pb.gz),
	 * malloc'd: printed at the end and in summary.json as the first. */
	char **also;
	size_t nalso;
};
const struct written *outdir_written(size_t *n);
/* Adds a command to the file of this name written last. 0, -ENOENT (no
 * such file written), -ENOMEM. */
int outdir_written_also(const char *name, const char *cmd);
void outdir_written_free(void);

/* Keeps the first error of several writes: OUT_FIRST(first, call). */
#define OUT_FIRST(first, call)                                                                     \
	do {                                                                                       \
		int e_ = (call);                                                                   \
		if (e_ && !(first))                                                                \
			(first) = e_;                                                              \
	} while (0)

#endif
