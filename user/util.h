/* Small shared helpers of the loader: messages and bounded file reading
 * (the growable array and the hash table are formats/util.h's). */
#ifndef USER_UTIL_H
#define USER_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "formats/util.h"

/* The one message layer: every line on stderr goes through msg(), prefixed
 * "bpftrace-rec: " (and "warning: " / "debug: "), with control characters and
 * invalid UTF-8 escaped, since names from outside (comm, JIT names, paths)
 * reach it. Errors and warnings always print; info unless -q; debug with -v.
 * stderr may be a closed pipe: a failed write is ignored (SIGPIPE is). */
enum msg_level { MSG_ERR, MSG_WARN, MSG_INFO, MSG_DEBUG };
void msg_set_verbosity(int v); /* -1 (-q), 0, or the -v count */
int msg_verbosity(void);
void msg(enum msg_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The line msg() would print (its "\n" included), into line (cap bytes),
 * printed whatever the verbosity: for a line made ahead and written later
 * where msg() cannot run (a signal handler). */
void msg_line(char *line, size_t cap, enum msg_level level, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
#define err(...)   msg(MSG_ERR, __VA_ARGS__)
#define warn(...)  msg(MSG_WARN, __VA_ARGS__)
#define info(...)  msg(MSG_INFO, __VA_ARGS__)
#define debug(...) msg(MSG_DEBUG, __VA_ARGS__)
/* Appends s to dst (a buffer of cap bytes, NUL-terminated), as valid UTF-8
 * with control characters and invalid bytes escaped as \xNN: formats/util.h's
 * fmt_sanitize, the one sanitizer of names from outside. */
void sanitize_append(char *dst, size_t cap, const char *s);

/* Reads all of fd (at most max bytes; -EFBIG beyond) into a NUL-terminated
 * malloc'd buffer. 0 or -errno. */
int read_fd_all(int fd, size_t max, char **buf, size_t *len);
/* The same for a path, opened with O_RDONLY|O_CLOEXEC (plus extra flags). */
int read_path_all(const char *path, int flags, size_t max, char **buf, size_t *len);
/* ... relative to the directory open at dirfd (AT_FDCWD: as above). */
int read_path_all_at(int dirfd, const char *path, int flags, size_t max, char **buf, size_t *len);

/* Opens a file that others may have planted (a FIFO would block the open or
 * the reads, a device would be read from): read-only, without blocking,
 * close-on-exec, not as a controlling terminal, plus extra flags (such as
 * O_NOFOLLOW); only a regular file is kept. An fd, or -errno (-EINVAL: not
 * a regular file). */
int open_regular(const char *path, int flags);
/* The dynamic loader's default library dirs (Debian's multiarch ones
 * first), NULL-terminated: where a library named without a directory is
 * looked for (-t's LIB:FUNC before the command runs, an exit-time
 * mapping's bare name). */
extern const char *const loader_lib_dirs[];

uint64_t now_ns(int clock);   /* clock_gettime in ns */
char *xstrdup(const char *s); /* aborts on ENOMEM: only for small, bounded strings */
/* Whether the comma-separated list (NULL: empty) has name as an item. */
bool list_has(const char *list, const char *name);
/* The value of item name@VALUE in such a list, or NULL. */
const char *list_value(const char *list, const char *name);
/* A size in bytes, with an optional K, M or G suffix, above 0 and at most
 * 2^40: 0, or -EINVAL. */
int parse_size_bytes(const char *s, uint64_t *v);

/* The defined symbols of an ELF's .dynsym, each given to fn (name, link-time
 * value, size): the exported symbols a runtime is recognized by (CPython's
 * _PyRuntime, HotSpot's gHotSpotVMStructs). Names are bounded by their
 * string table; the 64-bit symbols are read in place (no copy per symbol:
 * every binary of every process is read under -a). */
typedef struct Elf Elf;
void elf_scan_dynsym(Elf *elf,
		     void (*fn)(void *ctx, const char *name, uint64_t value, uint64_t size),
		     void *ctx);

/* A VEC of a few per-process entries, each with a pid_t member named pid: a
 * scan. VEC_PID_FIND(a, pid): its entry, or NULL; VEC_PID_DROP(a, pid):
 * removed, the last entry moved to its place. */
void *vec_pid_find(const void *v, size_t n, size_t size, size_t off, pid_t pid);
void vec_pid_drop(void *v, size_t *n, size_t size, size_t off, pid_t pid);
#define VEC_PID_FIND(a, key)                                                                       \
	((__typeof__((a).v))vec_pid_find((a).v, (a).n, sizeof(*(a).v),                             \
					 offsetof(__typeof__(*(a).v), pid), (key)))
#define VEC_PID_DROP(a, key)                                                                       \
	vec_pid_drop((a).v, &(a).n, sizeof(*(a).v), offsetof(__typeof__(*(a).v), pid), (key))

/* What a runtime reads once a recording from each file it meets mapped (an
 * interpreter, a libjvm, a node): entries of size bytes, each beginning
 * with the file's uint64_t dev, ino (struct file_memo_key), found by them.
 * file_memo_get: mapping m's entry, read the first time by fn (the entry
 * zeroed but its key) from the file opened through /proc/PID/map_files
 * (the mapped file itself, in any mount namespace, even deleted or
 * replaced since); NULL when it does not open (gone, or not ours to read:
 * tried again next time) or on ENOMEM. The pointer lasts until the next
 * entry is added. */
struct procmaps_entry;
struct file_memo_key {
	uint64_t dev, ino;
};
struct file_memo {
	char *v; /* n entries of size bytes */
	size_t n, cap, size;
	struct idtab by_file;
};
typedef void (*file_memo_read_fn)(void *ctx, int fd, const struct procmaps_entry *m, void *entry);
void *file_memo_get(struct file_memo *fm, pid_t pid, const struct procmaps_entry *m,
		    file_memo_read_fn fn, void *ctx);
void file_memo_free(struct file_memo *fm);

#endif
